"""When the controller writes a metadata snapshot (node/snapshot_policy.py), alone."""

from __future__ import annotations

from pykraft.node.snapshot_policy import SnapshotPolicy

MAX_BYTES = 1000
INTERVAL_MS = 60_000


def policy() -> SnapshotPolicy:
    return SnapshotPolicy(max_bytes=MAX_BYTES, interval_ms=INTERVAL_MS, last_ms=0)


def test_due_after_max_bytes_of_records() -> None:
    p = policy()
    p.applied(MAX_BYTES - 1)
    assert not p.due(now_ms=1)
    p.applied(1)
    assert p.due(now_ms=1)


def test_due_after_the_interval_only_when_records_came() -> None:
    p = policy()
    assert not p.due(now_ms=INTERVAL_MS * 5)  # nothing new: no snapshot by time
    p.applied(1)
    assert not p.due(now_ms=INTERVAL_MS - 1)
    assert p.due(now_ms=INTERVAL_MS)


def test_interval_zero_turns_the_timer_off() -> None:
    p = SnapshotPolicy(max_bytes=MAX_BYTES, interval_ms=0)
    p.applied(1)
    assert not p.due(now_ms=10**9)


def test_a_request_is_due_at_once() -> None:
    p = policy()
    p.request()
    assert p.due(now_ms=0)


def test_one_snapshot_at_a_time_and_counting_restarts() -> None:
    p = policy()
    p.applied(MAX_BYTES)
    p.started(now_ms=5)
    assert (p.bytes_since, p.last_ms, p.requested) == (0, 5, False)
    p.applied(MAX_BYTES)
    p.request()
    assert not p.due(now_ms=6)  # still writing the first
    p.finished()
    assert p.due(now_ms=6)
