"""``pykraft metadata``: back up a controller's metadata log and restore a quorum from it
(issue 48 item 4; ``pykraft.backup``).

``backup`` copies what a controller's ``metadata.log.dir`` holds -- pykraft's or Kafka's own
controller's, while it runs -- into a backup directory laid out as a metadata log directory
(every snapshot and the whole log, kept past the controller's retention); ``--follow`` goes on
every ``--interval-ms``. ``restore`` writes a new controller's directory from a backup, at a
chosen offset or time, beyond anything the old quorum's brokers saw (``backup/restore.py``).
With ``--s3`` a backup is also mirrored to an S3-compatible bucket, and ``restore`` reads one
from there (``backup/s3.py``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pykraft.cli._common import command_group

if TYPE_CHECKING:
    from pykraft.backup.take import BackupRound


def register(sub: Any) -> None:
    _, commands = command_group(
        sub,
        "metadata",
        help="back up the metadata log; restore a new quorum from a backup",
        dest="metadata_command",
    )
    backup = commands.add_parser(
        "backup", help="copy a controller's metadata log (snapshots and log) into a backup"
    )
    backup.add_argument("source", type=Path, nargs="?", metavar="METADATA_LOG_DIR")
    backup.add_argument("--config", "-c", type=Path, help="the controller's .properties instead")
    backup.add_argument("--to", required=True, type=Path, metavar="BACKUP_DIR")
    backup.add_argument("--follow", action="store_true", help="go on until stopped")
    backup.add_argument("--interval-ms", type=int, default=5_000, help="with --follow (5000)")
    backup.add_argument("--segment-bytes", type=int, default=None, help="backup segment size")
    backup.add_argument(
        "--s3", metavar="s3://BUCKET/PREFIX", help="also mirror the backup to this bucket"
    )
    _add_endpoint(backup)
    backup.set_defaults(func=_backup)
    restore = commands.add_parser(
        "restore", help="write a new controller's directory from a backup (offline)"
    )
    restore.add_argument("backup", metavar="BACKUP_DIR|s3://BUCKET/PREFIX")
    _add_endpoint(restore)
    restore.add_argument(
        "--download-to", type=Path, help="with an s3:// backup: keep the download here"
    )
    restore.add_argument(
        "--config", "-c", type=Path, help="the new controller's .properties (required to write)"
    )
    point = restore.add_mutually_exclusive_group()
    point.add_argument("--to-offset", type=int, help="restore every record below this offset")
    point.add_argument(
        "--to-time", help="restore every batch appended by then (ISO 8601, or ms since epoch)"
    )
    restore.add_argument("--offset-gap", type=int, default=None)
    restore.add_argument("--epoch-gap", type=int, default=None)
    restore.add_argument("--producer-id-gap", type=int, default=None)
    restore.add_argument(
        "--release-version",
        metavar="VERSION",
        help="write the restored state at this lower metadata.version (e.g. 4.0-IV3)",
    )
    restore.add_argument(
        "--allow-loss",
        action="store_true",
        help="with --release-version: go on although the lower level cannot hold everything",
    )
    restore.add_argument("--dry-run", action="store_true", help="print the plan, write nothing")
    restore.add_argument("--json", action="store_true", help="print the plan as JSON")
    restore.set_defaults(func=_restore)


def _add_endpoint(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--s3-endpoint-url", help="an S3-compatible endpoint (default: AWS_ENDPOINT_URL or AWS)"
    )


def _source(args: argparse.Namespace) -> Path:
    from pykraft.cli._common import UsageError
    from pykraft.storage.properties import load_properties

    if (args.source is None) == (args.config is None):
        raise UsageError("name the metadata log directory or --config, one of them")
    if args.source is not None:
        return Path(args.source)
    props = load_properties(args.config)
    return Path(props.get("metadata.log.dir") or props["log.dirs"].split(",")[0])


def _backup(args: argparse.Namespace) -> int:
    from pykraft.backup.take import DEFAULT_SEGMENT_BYTES, BackupError, backup_round

    source = _source(args)
    segment_bytes = args.segment_bytes or DEFAULT_SEGMENT_BYTES
    stop: list[int] = []
    if args.follow:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda number, _frame: stop.append(number))
    mirror = _mirror(args)
    while True:
        try:
            done = backup_round(source, args.to, _now_ms(), segment_bytes=segment_bytes)
            if done.batches or done.snapshots or done.truncated_at is not None or not args.follow:
                print(_describe_round(done), flush=True)
            if mirror is not None:
                mirror()
        except (BackupError, OSError) as e:
            print(f"error: {e}", file=sys.stderr)
            if not args.follow:
                return 1
        if not args.follow:
            return 0
        deadline = time.monotonic() + args.interval_ms / 1000
        while not stop and time.monotonic() < deadline:
            time.sleep(min(0.1, args.interval_ms / 1000))
        if stop:
            return 0


def _mirror(args: argparse.Namespace) -> Callable[[], None] | None:
    """With ``--s3``: a function mirroring the backup directory to the bucket."""
    if args.s3 is None:
        return None
    from botocore.exceptions import BotoCoreError, ClientError

    from pykraft.backup.s3 import S3Location, mirror, s3_client
    from pykraft.backup.take import BackupError

    where = S3Location.parse(args.s3)
    client = s3_client(args.s3_endpoint_url)

    def go() -> None:
        try:
            done = mirror(args.to, where, client)
        except (BotoCoreError, ClientError) as e:
            raise BackupError(f"{where}: {e}") from None
        if done.uploaded or done.deleted:
            print(
                f"mirrored to {where}: {len(done.uploaded)} files uploaded, "
                f"{len(done.deleted)} objects deleted",
                flush=True,
            )

    return go


def _describe_round(done: BackupRound) -> str:
    parts = [f"backed up {done.batches} batches ({done.bytes} bytes)"]
    parts.append(f"log end offset {done.end_offset}, last epoch {done.last_epoch}")
    if done.snapshots:
        parts.append(f"snapshots {', '.join(done.snapshots)}")
    if done.truncated_at is not None:
        parts.append(f"cut back to {done.truncated_at} (a tail the source no longer holds)")
    if done.resumed_after_gap is not None:
        parts.append(f"the source's log resumes at {done.resumed_after_gap}")
    return "; ".join(parts)


def _now_ms() -> int:
    return int(time.time() * 1000)


def parse_time_ms(text: str) -> int:
    """Milliseconds since the epoch, or an ISO 8601 time (UTC unless it names a zone)."""
    if text.isdigit():
        return int(text)
    moment = datetime.datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return int(moment.timestamp() * 1000)


def _restore(args: argparse.Namespace) -> int:
    from pykraft.backup.restore import Gaps, RestoreError, RestorePoint, plan_restore, write_restore
    from pykraft.backup.take import BackupError
    from pykraft.cli._common import UsageError

    if args.config is None and not args.dry_run:
        raise UsageError("--config (the new controller's .properties) or --dry-run")
    defaults = Gaps()
    gaps = Gaps(
        offset=defaults.offset if args.offset_gap is None else args.offset_gap,
        epoch=defaults.epoch if args.epoch_gap is None else args.epoch_gap,
        producer_id=defaults.producer_id if args.producer_id_gap is None else args.producer_id_gap,
    )
    try:
        at = None if args.to_time is None else parse_time_ms(args.to_time)
    except ValueError as e:
        raise UsageError(f"--to-time: {e}") from None
    level = None
    if args.release_version is not None:
        from pykraft.metadata.versions import parse_release_version

        try:
            level = parse_release_version(args.release_version).level
        except ValueError as e:
            raise UsageError(f"--release-version: {e}") from None
    try:
        backup = _local_backup(args)
        plan, values = plan_restore(backup, RestorePoint(args.to_offset, at), gaps, level)
        refused = plan.losses and not args.allow_loss and not args.dry_run
        if refused:
            print("\n".join(_describe_plan(plan)))
            print("error: the lower metadata.version cannot hold the above (--allow-loss)")
            return 1
        if not args.dry_run:
            from pykraft.node.config import load_config

            config = load_config(args.config, require_quorum=False)
            meta = write_restore(plan, values, config, _now_ms())
    except (RestoreError, BackupError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(plan.as_json(), indent=2))
    else:
        print("\n".join(_describe_plan(plan)))
    if not args.dry_run:
        print(
            f"Wrote {config.metadata_log_dir}: node {meta.node_id}, the only voter. Start it, "
            "then start the brokers (stopped first), then add controllers with add-controller."
        )
    return 0


def _local_backup(args: argparse.Namespace) -> Path:
    """The backup directory: the one named, or an s3:// backup downloaded first."""
    if not str(args.backup).startswith("s3://"):
        return Path(args.backup)
    import tempfile

    from botocore.exceptions import BotoCoreError, ClientError

    from pykraft.backup.s3 import S3Location, download, s3_client
    from pykraft.backup.take import BackupError

    where = S3Location.parse(args.backup)
    target = args.download_to or Path(tempfile.mkdtemp(prefix="pykraft-backup-"))
    if target.exists() and any(target.iterdir()):
        raise BackupError(f"--download-to {target}: not empty")
    try:
        count = download(where, s3_client(args.s3_endpoint_url), target)
    except (BotoCoreError, ClientError) as e:
        raise BackupError(f"{where}: {e}") from None
    print(f"downloaded {count} files of {where} to {target}", file=sys.stderr)
    return target


def _describe_plan(plan: Any) -> list[str]:
    base = plan.base_snapshot
    when = datetime.datetime.fromtimestamp(plan.point_time_ms / 1000, datetime.UTC)
    lines = [
        f"cluster.id {plan.cluster_id}, backup {plan.backup} (log end offset {plan.backup_end})",
        f"restore point: every record below offset {plan.point} (appended by "
        f"{when.isoformat(timespec='milliseconds')})",
        f"from: {'the log start' if base is None else f'snapshot {base.offset}-{base.epoch}'}"
        f", then {plan.records_replayed} records",
        f"restored: metadata.version {plan.metadata_version}, kraft.version "
        f"{plan.kraft_version}, {plan.topics} topics, {plan.partitions} partitions",
        f"written as snapshot {plan.snapshot_id.offset}-{plan.snapshot_id.epoch} (past the "
        "backup's end: brokers ahead of the point follow it)",
    ]
    if plan.source_metadata_version is not None:
        lines.append(
            f"downgraded from metadata.version {plan.source_metadata_version}: "
            f"{len(plan.losses)} things the lower level cannot hold"
        )
    lines.extend(f"lost: {loss}" for loss in plan.losses)
    lines.extend(f"warning: {w}" for w in plan.warnings)
    return lines
