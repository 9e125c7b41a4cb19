"""``pykraft metadata-recovery``: offline tools for a quorum that lost its majority (issue 48).

``survey`` reads the surviving controllers' metadata log directories -- pykraft's or Kafka's
own controllers', the format is the same -- without changing them, and names the one to seed
the recovered quorum (``storage/survey.py``: the highest last epoch, then the longest log).

``rewrite-endpoints`` gives voters new endpoints in the seed's log the same way (KIP-1347's
case), after the same refusals and a new endpoint already listening.

``force-standalone`` makes the seed a quorum of itself alone (``storage/recovery.py``), after
three refusals: while any voter of the voter set in force accepts connections on its endpoint
(a running controller: the quorum may be alive, or the seed itself is running), when another
surviving directory named with ``--survivor`` is more up to date (unless
``--allow-less-up-to-date-seed``), and on a static quorum (kraft.version 0).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pykraft.cli._common import command_group

if TYPE_CHECKING:
    from collections.abc import Callable

    from pykraft.raft.types import Endpoint
    from pykraft.storage.recovery import RecoveryNote
    from pykraft.storage.survey import DirectorySurvey

    Write = Callable[[DirectorySurvey, Path, int, list[DirectorySurvey]], RecoveryNote]


def register(sub: Any) -> None:
    _, commands = command_group(
        sub,
        "metadata-recovery",
        help="recover a quorum that lost its majority (offline, on the controllers' directories)",
        dest="recovery_command",
    )
    survey = commands.add_parser(
        "survey",
        help="describe the surviving controllers' metadata log directories and name the seed",
    )
    survey.add_argument(
        "directories", nargs="*", type=Path, metavar="METADATA_LOG_DIR", help="metadata.log.dir"
    )
    survey.add_argument(
        "--config",
        "-c",
        action="append",
        default=[],
        type=Path,
        help="a controller's .properties (its metadata.log.dir is surveyed); repeatable",
    )
    survey.add_argument("--json", action="store_true", help="print JSON")
    survey.set_defaults(func=_survey)
    force = commands.add_parser(
        "force-standalone",
        help="make a stopped controller the only voter of its quorum (backed up first)",
    )
    _seed_options(force)
    force.set_defaults(func=_force_standalone)
    rewrite = commands.add_parser(
        "rewrite-endpoints",
        help="give voters new endpoints in a stopped seed's log (KIP-1347's case)",
    )
    _seed_options(rewrite)
    rewrite.add_argument(
        "--endpoint",
        action="append",
        required=True,
        metavar="ID=NAME://HOST:PORT[,NAME://HOST:PORT]",
        help="voter ID's new endpoints; repeatable, one per voter",
    )
    rewrite.set_defaults(func=_rewrite_endpoints)


def _seed_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("directory", type=Path, metavar="SEED_METADATA_LOG_DIR")
    parser.add_argument(
        "--survivor",
        action="append",
        default=[],
        type=Path,
        metavar="METADATA_LOG_DIR",
        help=(
            "another surviving controller's directory, compared with the seed (the new epoch "
            "is above every epoch it knew); repeatable"
        ),
    )
    parser.add_argument(
        "--backup-dir",
        type=Path,
        default=None,
        help="where the seed's directory is copied first (default: beside it, dated)",
    )
    parser.add_argument("--allow-less-up-to-date-seed", action="store_true")
    parser.add_argument(
        "--probe-timeout-ms",
        type=int,
        default=2_000,
        help="how long to try each voter's endpoint (default 2000)",
    )


def _directories(args: argparse.Namespace) -> list[Path]:
    from pykraft.storage.properties import load_properties

    found = list(args.directories)
    for config in args.config:
        props = load_properties(config)
        found.append(Path(props.get("metadata.log.dir") or props["log.dirs"].split(",")[0]))
    return found


def _survey(args: argparse.Namespace) -> int:
    from pykraft.storage import ConfigError, StorageError
    from pykraft.storage.survey import recommend, survey_directory

    try:
        directories = _directories(args)
    except (OSError, KeyError, ConfigError, StorageError) as e:
        print(f"error: cannot read a controller's config: {e}", file=sys.stderr)
        return 2
    if not directories:
        print("error: name at least one metadata log directory (or --config)", file=sys.stderr)
        return 2
    surveys = [survey_directory(d) for d in directories]
    advice = recommend(surveys)
    if args.json:
        seed = None if advice.seed is None else str(advice.seed.path)
        report = {
            "directories": [s.as_json() for s in surveys],
            "seed": seed,
            "reasons": list(advice.reasons),
        }
        print(json.dumps(report, indent=2))
    else:
        for s in surveys:
            print("\n".join(_describe(s)))
        name = "none" if advice.seed is None else f"node {advice.seed.node_id} ({advice.seed.path})"
        print(f"seed: {name}")
        for reason in advice.reasons:
            print(f"  {reason}")
    return 0 if advice.seed is not None else 1


def _describe(s: DirectorySurvey) -> list[str]:
    from pykraft.storage.meta import uuid_to_kafka

    lines = [
        f"node {s.node_id if s.node_id is not None else '?'}: {s.path}",
        f"  cluster.id {s.cluster_id}, directory.id {s.directory_id}",
    ]
    if s.quorum_epoch is not None:
        lines.append(
            f"  quorum-state: epoch {s.quorum_epoch}, leader {s.leader_id}, voted {s.voted_id}"
        )
    lines.append(
        f"  log: offsets [{s.log_start_offset}, {s.log_end_offset}), last epoch {s.last_epoch}"
        + (f", {s.torn_bytes} torn bytes after it" if s.torn_bytes else "")
    )
    lines.append(f"  high watermark: at least {s.committed_at_least} (the newest snapshot's end)")
    for offset, epoch, size in s.snapshots:
        lines.append(f"  snapshot {offset}-{epoch}: {size} bytes")
    for name in s.refused_snapshots:
        lines.append(f"  snapshot {name}: REFUSED (corrupt)")
    if s.voters is None:
        lines.append("  voter set: static (controller.quorum.voters; no VotersRecord)")
    else:
        lines.append(f"  voter set (written at offset {s.voters_offset}):")
        for v in s.voters:
            directory = "-" if v.directory_id is None else uuid_to_kafka(v.directory_id)
            endpoints = " ".join(f"{e.name}://{e.host}:{e.port}" for e in v.endpoints)
            lines.append(f"    voter {v.voter_id} directory.id {directory} {endpoints}")
    if s.kraft_version is not None:
        lines.append(f"  kraft.version {s.kraft_version}")
    lines.extend(f"  problem: {p}" for p in s.problems)
    return lines


def _on_seed(args: argparse.Namespace, write: Write) -> RecoveryNote | None:
    """The refusals a new run must pass (a running voter, a more up-to-date survivor), the
    backup's path, then ``write`` (given the survivors' surveys: the new epoch is above every
    epoch they knew); None (the error printed) when refused."""
    import time

    from pykraft.storage.recovery import RecoveryError, read_note, seed_entry
    from pykraft.storage.survey import survey_directory

    seed = survey_directory(args.directory)
    survivors = [survey_directory(d) for d in args.survivor]
    try:
        seed_entry(seed)
        if read_note(args.directory) is None:
            _refuse_running(seed, args.probe_timeout_ms / 1000)
            _refuse_less_up_to_date(seed, survivors, args)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        backup = args.backup_dir or args.directory.with_name(
            f"{args.directory.name}.before-recovery-{stamp}"
        )
        return write(seed, backup, int(time.time() * 1000), survivors)
    except RecoveryError as e:
        print(f"error: {e}", file=sys.stderr)
        return None


def _force_standalone(args: argparse.Namespace) -> int:
    from pykraft.storage.recovery import force_standalone, voter_from_json

    note = _on_seed(args, force_standalone)
    if note is None:
        return 1
    voters = [voter_from_json(v) for v in note.voters]
    endpoints = " ".join(_endpoint(e) for v in voters for e in v.endpoints)
    print(
        f"Node {note.node_id} ({args.directory}) is now the only voter, at epoch {note.epoch} "
        f"(VotersRecord at offset {note.offset}; {endpoints}).\n"
        f"Backup: {note.backup}\n"
        f"Former voters: {', '.join(f'{i} ({d})' for i, d in note.old_voters)}\n"
        "Next: start it; grow the quorum back with add-controller (new controllers formatted "
        "with --no-initial-controllers). Do not start a former voter with its old directory "
        "as a voter: it follows the seed and stays an observer until added."
    )
    return 0


def _endpoint(e: Endpoint) -> str:
    return f"{e.name}://{e.host}:{e.port}"


def parse_endpoints(items: list[str]) -> dict[int, tuple[Endpoint, ...]]:
    """``ID=NAME://HOST:PORT[,NAME://HOST:PORT]`` options, one per voter."""
    from pykraft.cli._common import UsageError
    from pykraft.raft.types import Endpoint

    found: dict[int, tuple[Endpoint, ...]] = {}
    for item in items:
        voter, sep, listed = item.partition("=")
        try:
            if not sep or not voter.strip().isdigit():
                raise ValueError("expected ID=NAME://HOST:PORT")
            endpoints = []
            for text in listed.split(","):
                name, sep2, address = text.strip().partition("://")
                host, _, port = address.rpartition(":")
                if not sep2 or not name or not host or not port.isdigit():
                    raise ValueError(f"{text!r}: expected NAME://HOST:PORT")
                endpoints.append(Endpoint(name, host.strip("[]"), int(port)))
        except ValueError as e:
            raise UsageError(f"--endpoint {item!r}: {e}") from None
        if int(voter) in found:
            raise UsageError(f"--endpoint: voter {voter} named twice")
        found[int(voter)] = tuple(endpoints)
    return found


def _rewrite_endpoints(args: argparse.Namespace) -> int:
    from pykraft.storage.recovery import rewrite_endpoints, voter_from_json

    endpoints = parse_endpoints(args.endpoint)

    def write(
        seed: DirectorySurvey, backup: Path, now_ms: int, survivors: list[DirectorySurvey]
    ) -> RecoveryNote:
        _refuse_listening(endpoints, args.probe_timeout_ms / 1000)
        return rewrite_endpoints(seed, endpoints, backup, now_ms, survivors)

    note = _on_seed(args, write)
    if note is None:
        return 1
    changed = ", ".join(
        f"voter {v.voter_id} {' '.join(_endpoint(e) for e in v.endpoints)}"
        for v in map(voter_from_json, note.voters)
        if v.voter_id in endpoints
    )
    print(
        f"Node {note.node_id} ({args.directory}): the voter set in force now gives {changed}, "
        f"at epoch {note.epoch} (VotersRecord at offset {note.offset}).\n"
        f"Backup: {note.backup}\n"
        "Next: start every voter with its new listeners, this one too: this log, the most up to "
        "date at a higher epoch, is elected, and the others learn the new endpoints from it. "
        "Do not run the same command on another voter's directory."
    )
    return 0


def _refuse_listening(endpoints: dict[int, tuple[Endpoint, ...]], timeout_s: float) -> None:
    """A new endpoint that accepts connections is a controller running already."""
    import socket

    from pykraft.storage.recovery import RecoveryError

    for voter, listed in sorted(endpoints.items()):
        for e in listed:
            try:
                with socket.create_connection((e.host, e.port), timeout=timeout_s):
                    pass
            except OSError:
                continue
            raise RecoveryError(
                f"voter {voter}'s new endpoint {_endpoint(e)} accepts connections: stop every "
                "controller first"
            )


def _refuse_running(seed: DirectorySurvey, timeout_s: float) -> None:
    import socket

    from pykraft.storage.recovery import RecoveryError

    for voter in seed.voters or ():
        for endpoint in voter.endpoints:
            try:
                with socket.create_connection((endpoint.host, endpoint.port), timeout=timeout_s):
                    pass
            except OSError:
                continue
            who = (
                "this seed itself" if voter.voter_id == seed.node_id else f"voter {voter.voter_id}"
            )
            raise RecoveryError(
                f"{who} accepts connections at {endpoint.host}:{endpoint.port}: a running "
                "controller (the quorum may still have a leader); stop it, or make sure that "
                "address is not a controller of this cluster, before forcing a standalone voter"
            )


def _refuse_less_up_to_date(
    seed: DirectorySurvey, survivors: list[DirectorySurvey], args: argparse.Namespace
) -> None:
    from pykraft.storage.recovery import RecoveryError
    from pykraft.storage.survey import recommend

    advice = recommend([seed, *survivors])
    if advice.seed is None:
        raise RecoveryError("; ".join(advice.reasons))
    if advice.seed is not seed and advice.seed.rank > seed.rank:
        message = (
            f"node {advice.seed.node_id} ({advice.seed.path}) is more up to date (last epoch "
            f"{advice.seed.last_epoch}, log end offset {advice.seed.log_end_offset}) than this "
            f"seed ({seed.last_epoch}, {seed.log_end_offset}): what it holds beyond would be lost"
        )
        if not args.allow_less_up_to_date_seed:
            raise RecoveryError(message + " (--allow-less-up-to-date-seed to go on anyway)")
        print(f"warning: {message}", file=sys.stderr)
