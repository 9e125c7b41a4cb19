"""``pykraft demo``: the storage layer end to end on a real directory.

Formats a standalone controller's metadata dir (meta.properties + bootstrap checkpoint),
writes the quorum-state of a node that elected itself, appends a LeaderChange control batch
and data batches to the FileLog with fsync, snapshots the committed prefix, reopens
everything (recovery) and prints what is on disk. Re-running reuses the directory and
appends one more round in a new epoch.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pykraft.raft.types import ReplicaKey


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "demo", help="format, write and recover a metadata log directory"
    )
    parser.add_argument("--dir", type=Path, default=Path("pykraft-demo"))
    parser.set_defaults(func=_demo)


def _demo(args: argparse.Namespace) -> int:
    from pykraft.storage import StorageError
    from pykraft.storage.inspect import describe_log_dir

    root: Path = args.dir
    root.mkdir(parents=True, exist_ok=True)
    config_path = root / "controller.properties"
    if not config_path.exists():
        config_path.write_text(
            "process.roles=controller\nnode.id=1\n"
            f"metadata.log.dir={(root / 'metadata').resolve()}\n"
            "listeners=CONTROLLER://localhost:9093\ncontroller.listener.names=CONTROLLER\n"
        )
    try:
        log_dir = _one_more_epoch(config_path)
        print("\nreopening (recovery) and describing:\n")
        print(describe_log_dir(log_dir, show_batches=True), end="")
    except (StorageError, ValueError) as exc:
        print(f"error: {exc}")
        return 1
    return 0


def _append_epoch(partition: Path, epoch: int, me: ReplicaKey, now_ms: int) -> int:
    """The leader's LeaderChangeMessage and five batches of records in ``epoch``, flushed
    once; the log end offset after them."""
    from pykraft.records import build_batch, leader_change_batch
    from pykraft.storage import FileLog

    with FileLog.open(partition, segment_bytes=64 * 1024) as log:
        log.append(leader_change_batch(log.end_offset, epoch, now_ms, me.id, [me], [me]))
        for i in range(5):
            values = [f"epoch {epoch} record {i}.{j}".encode() for j in range(100)]
            log.append(build_batch(log.end_offset, epoch, values, now_ms))
        log.flush()  # one fsync for all six batches
        print(f"appended 6 batches in epoch {epoch}; log end offset {log.end_offset}")
        return log.end_offset


def _one_more_epoch(config_path: Path) -> Path:
    """Format (first run), lead one more epoch, append and snapshot; the metadata dir."""
    from pykraft.node.config import load_config
    from pykraft.raft.types import ElectionState, OffsetAndEpoch, ReplicaKey
    from pykraft.storage import (
        PARTITION_DIR_NAME,
        FileQuorumStateStore,
        FileSnapshotStore,
        format_storage,
        random_uuid,
        read_meta_properties,
        read_snapshot,
        uuid_to_kafka,
        write_snapshot,
    )

    config = load_config(config_path, require_quorum=False)
    meta = format_storage(
        config, uuid_to_kafka(random_uuid()), standalone=True, ignore_formatted=True
    )
    print(
        f"formatted {config.metadata_log_dir}"
        if meta
        else f"reusing {config.metadata_log_dir} (already formatted)"
    )
    meta = read_meta_properties(config.metadata_log_dir)
    assert meta is not None
    partition = config.metadata_log_dir / PARTITION_DIR_NAME
    me = ReplicaKey(meta.node_id, meta.directory_id)

    # One more epoch: vote for ourselves (durable first), then lead.
    states = FileQuorumStateStore(partition)
    previous = states.read()
    epoch = (previous.epoch if previous else 0) + 1
    states.write(ElectionState(epoch=epoch, voted_key=me))
    states.write(ElectionState(epoch=epoch, leader_id=me.id, voted_key=me))

    now_ms = int(time.time() * 1000)
    end = _append_epoch(partition, epoch, me, now_ms)
    snapshots = FileSnapshotStore.open(partition)
    snapshot_id = OffsetAndEpoch(end, epoch)
    write_snapshot(
        snapshots,
        snapshot_id,
        [f"state after offset {end - 1}".encode()],
        timestamp_ms=now_ms,
        last_contained_log_timestamp_ms=now_ms,
        kraft_version=1,
        voters=read_snapshot(snapshots, OffsetAndEpoch(0, 0)).voters,
    )
    print(f"wrote snapshot {snapshot_id.offset}-{snapshot_id.epoch}")
    return config.metadata_log_dir
