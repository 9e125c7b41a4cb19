"""A formatted replica's directory laid down as if its log had been compacted into a snapshot
(``lay_down_compacted``): how a quorum that ran a long time has it, for the tests and
benchmarks that start controllers from a large image (tests/node/test_scale.py,
bench/bench_scale.py) without writing that history through the log first."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pykraft.raft.types import ElectionState, OffsetAndEpoch
from pykraft.storage.log import FileLog
from pykraft.storage.quorum_state import FileQuorumStateStore
from pykraft.storage.snapshots import FileSnapshotStore, write_snapshot

__all__ = ["lay_down_compacted"]


def lay_down_compacted(
    partition: Path, sid: OffsetAndEpoch, values: Sequence[bytes], voter_ids: tuple[int, ...]
) -> None:
    """In the metadata partition directory ``partition``: the snapshot ``sid`` of ``values``,
    the log starting after it, and the (static, kraft.version 0) quorum at its epoch."""
    write_snapshot(
        FileSnapshotStore.open(partition),
        sid,
        values,
        timestamp_ms=0,
        last_contained_log_timestamp_ms=0,
    )
    log = FileLog.open(partition)
    try:
        log.reset_to_snapshot(sid)
    finally:
        log.close()
    FileQuorumStateStore(partition).write(
        ElectionState(epoch=sid.epoch), kraft_version=0, voter_ids=voter_ids
    )
