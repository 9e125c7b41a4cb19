"""MemoryLog / MemoryQuorumStateStore / MemorySnapshotStore: protocol behaviour and crashes."""

from __future__ import annotations

import pytest

from pykraft.raft.types import ElectionState, OffsetAndEpoch, ReplicaKey
from pykraft.records import build_batch
from pykraft.sim.memory import MemoryLog, MemoryQuorumStateStore, MemorySnapshotStore


def batch(base: int, epoch: int, n: int = 1) -> bytes:
    return build_batch(base, epoch, [b"v%d" % i for i in range(n)], 0)


def make_log(spec: list[tuple[int, int]]) -> MemoryLog:
    """A log with one batch of ``n`` records per (epoch, n), appended in order."""
    log = MemoryLog()
    for epoch, n in spec:
        log.append(batch(log.end_offset, epoch, n))
    return log


def test_append_read_and_offsets() -> None:
    log = make_log([(1, 2), (1, 3), (2, 1)])
    assert (log.start_offset, log.end_offset, log.flushed_offset) == (0, 6, 0)
    assert log.last_fetched_epoch() == 2
    assert log.epoch_at(0) == 1 and log.epoch_at(4) == 1 and log.epoch_at(5) == 2
    assert log.epoch_at(6) is None
    assert log.read(6, 1000) == b""
    # At least one batch even when it exceeds max_bytes; the batch holding the offset first.
    one = log.read(3, 1)
    assert one == batch(2, 1, 3)
    assert log.read(0, 10**6) == batch(0, 1, 2) + batch(2, 1, 3) + batch(5, 2, 1)


def test_append_rejects_gaps_epoch_regression_and_bad_crc() -> None:
    log = make_log([(2, 1)])
    with pytest.raises(ValueError):
        log.append(batch(5, 2))
    with pytest.raises(ValueError):
        log.append(batch(1, 1))
    bad = bytearray(batch(1, 2))
    bad[-1] ^= 0xFF
    with pytest.raises(ValueError):
        log.append(bytes(bad))
    # A multi-batch append that fails half way leaves the log unchanged.
    with pytest.raises(ValueError):
        log.append(batch(1, 2) + batch(3, 2))
    assert log.end_offset == 1


def test_end_offset_for_epoch() -> None:
    log = make_log([(1, 2), (3, 2), (3, 1), (5, 1)])
    assert log.end_offset_for_epoch(1) == OffsetAndEpoch(2, 1)
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(2, 1)
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(5, 3)
    assert log.end_offset_for_epoch(4) == OffsetAndEpoch(5, 3)
    assert log.end_offset_for_epoch(9) == OffsetAndEpoch(6, 5)
    assert log.end_offset_for_epoch(0) == OffsetAndEpoch(0, 0)


def test_truncate_and_crash_drop_unflushed() -> None:
    log = make_log([(1, 2), (2, 2)])
    log.flush()
    log.append(batch(4, 2, 3))
    assert log.end_offset == 7
    log.crash()
    assert (log.end_offset, log.flushed_offset) == (4, 4)
    log.truncate_to(2)
    assert (log.end_offset, log.flushed_offset, log.last_fetched_epoch()) == (2, 2, 1)
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(2, 1)
    log.append(batch(2, 4))
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(2, 1)
    log.wipe()
    assert (log.start_offset, log.end_offset, log.last_fetched_epoch()) == (0, 0, 0)


def test_delete_before_and_reset_to_snapshot() -> None:
    log = make_log([(1, 2), (2, 3), (3, 1)])
    log.flush()
    log.delete_before(OffsetAndEpoch(3, 2))  # straddles the (2, 3) batch at [2, 5)
    assert (log.start_offset, log.end_offset) == (3, 6)
    assert log.read(3, 1) == batch(2, 2, 3)
    assert log.epoch_at(2) is None and log.epoch_at(3) == 2
    assert log.end_offset_for_epoch(1) == OffsetAndEpoch(3, 2)
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(5, 2)
    log.truncate_to(3)
    assert (log.end_offset, log.last_fetched_epoch()) == (3, 2)
    log.append(batch(3, 4))
    log.reset_to_snapshot(OffsetAndEpoch(10, 4))
    assert (log.start_offset, log.end_offset, log.flushed_offset) == (10, 10, 10)
    assert log.last_fetched_epoch() == 4
    log.append(batch(10, 5))
    assert log.end_offset == 11


def test_quorum_state_store_survives_crash_not_wipe() -> None:
    store = MemoryQuorumStateStore()
    assert store.read() is None
    state = ElectionState(3, voted_key=ReplicaKey(2))
    store.write(state)
    store.crash()
    assert store.read() == state and store.writes == 1
    store.wipe()
    assert store.read() is None


def test_snapshot_store_crash_loses_open_writers() -> None:
    store = MemorySnapshotStore()
    sid = OffsetAndEpoch(5, 1)
    w = store.create(sid)
    w.append(batch(0, 1))
    w.freeze()
    assert store.latest() == sid and store.size(sid) == len(batch(0, 1))
    assert store.read(sid, 2, 3) == batch(0, 1)[2:5]
    w2 = store.create(OffsetAndEpoch(9, 1))
    w2.append(batch(0, 1))
    store.crash()
    with pytest.raises(ValueError):
        w2.freeze()
    assert store.latest() == sid
    bad = store.create(OffsetAndEpoch(12, 1))
    bad.append(b"garbage")
    with pytest.raises(ValueError):
        bad.freeze()
    store.delete_before(OffsetAndEpoch(6, 1))
    assert store.latest() is None
    store.create(sid).freeze()
    store.wipe()
    assert store.latest() is None
