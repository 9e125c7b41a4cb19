"""RaftCore unit behaviours from Kafka's raft tests: fetch purgatory, stale responses,
votes once per epoch, NotLeaderError, snapshot creation bounds."""

from __future__ import annotations

import random

import pytest
from kio.schema.errors import ErrorCode

from pykraft.raft.config import InvalidSnapshotError, NotLeaderError, RaftConfig
from pykraft.raft.core import RaftCore
from pykraft.raft.messages import (
    HIGH_WATERMARK_UNSUPPORTED,
    BeginQuorumEpochRequest,
    FetchRequest,
    FetchResponse,
    Inbound,
    VoteResponse,
)
from pykraft.raft.outputs import IdleReady
from pykraft.raft.types import ReplicaKey
from pykraft.raft.voters import VoterSet
from pykraft.records import build_batch
from pykraft.sim.memory import MemoryLog, MemoryQuorumStateStore, MemorySnapshotStore


def core(local: int = 1, voters: tuple[int, ...] = (1, 2, 3)) -> RaftCore:
    return RaftCore(
        config=RaftConfig(),
        local_key=ReplicaKey(local),
        voters=VoterSet.from_ids(voters),
        log=MemoryLog(),
        quorum_state=MemoryQuorumStateStore(),
        snapshots=MemorySnapshotStore(),
        rng=random.Random(1),
        now_ms=0,
    )


def leader_of_three() -> RaftCore:
    """Node 1 elected leader of epoch 1 by granting responses fed by hand."""
    c = core()
    c.poll(2000)  # election timeout -> Prospective (pre-votes out)
    for m in c.ready(2000).messages:
        c.step(
            Inbound(m.dst, m.request_id, VoteResponse(ErrorCode.none, 0, -1, True, pre_vote=True)),
            2000,
        )
    assert c.role == "candidate" and c.epoch == 1
    for m in c.ready(2000).messages:
        c.step(Inbound(m.dst, m.request_id, VoteResponse(ErrorCode.none, 1, -1, True)), 2000)
    assert c.role == "leader"
    c.log.flush()
    c.on_flushed(2000)
    c.ready(2000)
    return c


def fetch(
    c: RaftCore,
    *,
    src: int,
    request_id: int,
    offset: int,
    epoch: int,
    now_ms: int,
    high_watermark: int = HIGH_WATERMARK_UNSUPPORTED,
) -> list[FetchResponse]:
    """Step a Fetch from ``src`` (at ``offset``, last fetched ``epoch``, 500 ms long poll,
    knowing ``high_watermark``: by default a pre-v18 peer's "not supported") and return the
    answers to it in the next Ready (empty while the leader holds it)."""
    request = FetchRequest(None, ReplicaKey(src), 1, offset, epoch, 500, 8 << 20, high_watermark)
    c.step(Inbound(src, request_id, request), now_ms)
    return [
        m.body
        for m in c.ready(now_ms).messages
        if isinstance(m.body, FetchResponse) and m.request_id == request_id
    ]


def answers_to(c: RaftCore, request_id: int, now_ms: int) -> list[FetchResponse]:
    return [
        m.body
        for m in c.ready(now_ms).messages
        if isinstance(m.body, FetchResponse) and m.request_id == request_id
    ]


def leader_with_hwm_at_one() -> RaftCore:
    """A leader of three whose high watermark reached 1 (its LeaderChange) by follower 2."""
    c = leader_of_three()
    first = fetch(c, src=2, request_id=1, offset=1, epoch=1, now_ms=2000)
    assert first and first[0].high_watermark == 1  # moved the HWM: answered at once
    return c


def test_fetch_with_nothing_new_is_held_then_answered_on_new_data() -> None:
    c = leader_with_hwm_at_one()
    assert fetch(c, src=2, request_id=5, offset=1, epoch=1, now_ms=2000) == []  # long poll
    c.append([b"a"], 2001)
    got = answers_to(c, 5, 2001)
    assert len(got) == 1 and got[0].records


def test_fetch_is_answered_at_once_when_the_high_watermark_moved() -> None:
    c = leader_with_hwm_at_one()
    c.append([b"a"], 2001)
    fetch(c, src=2, request_id=5, offset=1, epoch=1, now_ms=2001)  # follower 2 takes "a"
    c.log.flush()
    c.on_flushed(2001)  # the leader's own offset counts once flushed (B13): HWM 2
    assert fetch(c, src=3, request_id=2, offset=2, epoch=1, now_ms=2002) != []


def test_fetch_from_a_replica_behind_the_high_watermark_is_answered_at_once() -> None:
    """KIP-1166 (Fetch v18), as Kafka 4.4's leader: a replica at the log end that was sent
    records before they committed states the high watermark it knows; a lower one than the
    leader's is answered at once (with the leader's), an equal one is held. Before this a
    broker learned a commit up to fetch.max.wait.ms (500 ms) after the others (issue 46)."""
    c = leader_with_hwm_at_one()
    c.append([b"a"], 2001)
    got = fetch(c, src=2, request_id=5, offset=1, epoch=1, now_ms=2001, high_watermark=1)
    assert got and got[0].records  # "a", not yet committed: follower 2 knows HWM 1
    c.log.flush()
    c.on_flushed(2001)  # the leader's own offset counts once flushed (B13)
    fetch(c, src=3, request_id=1, offset=2, epoch=1, now_ms=2001, high_watermark=1)
    assert c.high_watermark == 2  # committed by follower 3 while 2 still knows 1
    behind = fetch(c, src=2, request_id=6, offset=2, epoch=1, now_ms=2002, high_watermark=1)
    assert [a.high_watermark for a in behind] == [2] and not behind[0].records
    assert fetch(c, src=2, request_id=7, offset=2, epoch=1, now_ms=2003, high_watermark=2) == []
    # A peer of an older version states no high watermark: held, as Kafka holds it.
    assert fetch(c, src=3, request_id=8, offset=2, epoch=1, now_ms=2004) == []


def test_held_fetch_is_answered_when_its_wait_ends() -> None:
    c = leader_with_hwm_at_one()
    assert fetch(c, src=3, request_id=3, offset=1, epoch=1, now_ms=2003) == []
    c.poll(2503)  # 500 ms later
    assert [m.request_id for m in c.ready(2503).messages if m.request_id == 3] == [3]


def test_leaving_the_leader_state_answers_held_fetches() -> None:
    c = leader_with_hwm_at_one()
    assert fetch(c, src=2, request_id=4, offset=1, epoch=1, now_ms=2004) == []
    c.shutdown(2005)
    answers = answers_to(c, 4, 2005)
    assert answers[0].error == ErrorCode.not_leader_or_follower


def test_stale_vote_response_after_transition_is_ignored() -> None:
    c = core()
    c.poll(2000)
    old = c.ready(2000).messages
    assert c.role == "prospective"
    c.poll(5000)  # pre-vote timed out: back to Unattached, then Prospective again later
    assert c.role == "unattached"
    for m in old:
        c.step(
            Inbound(m.dst, m.request_id, VoteResponse(ErrorCode.none, 0, -1, True, pre_vote=True)),
            5000,
        )
    assert c.role == "unattached" and c.epoch == 0


def test_append_on_a_non_leader_raises_not_leader() -> None:
    c = core()
    with pytest.raises(NotLeaderError):
        c.append([b"x"], 0)


def test_snapshot_must_end_at_or_below_the_high_watermark() -> None:
    single = core(voters=(1,))
    assert single.role == "leader"
    single.log.flush()
    single.on_flushed(0)
    with pytest.raises(InvalidSnapshotError):
        single.create_snapshot(2, 0)
    w = single.create_snapshot(1, 0)
    w.freeze()
    assert single.log.start_offset == 1 and single.snapshots.latest() == w.snapshot_id


def test_idle_ready_is_shared_and_read_only() -> None:
    c = leader_of_three()
    idle = c.ready(2000)
    assert isinstance(idle, IdleReady) and not idle.must_flush and not idle.messages
    assert c.ready(2000) is idle  # same deadline: the same object
    with pytest.raises(AttributeError):
        idle.next_deadline_ms = 0
    with pytest.raises(AttributeError):
        idle.messages.append(idle.messages[0])  # type: ignore[attr-defined]
    c.append([b"a"], 2001)
    busy = c.ready(2001)
    assert busy.must_flush and not isinstance(busy, IdleReady)
    c.log.flush()
    c.on_flushed(2001)
    assert fetch(
        c, src=2, request_id=1, offset=2, epoch=1, now_ms=2100
    )  # moves the HWM: answered at once
    assert (
        fetch(c, src=2, request_id=2, offset=2, epoch=1, now_ms=2100) == []
    )  # nothing new: parked until 2600
    later = c.ready(2100)
    assert isinstance(later, IdleReady) and later is not idle
    assert (idle.next_deadline_ms, later.next_deadline_ms) == (3000, 2600)


def test_check_invariants_two_voter_records_above_the_hwm() -> None:
    c = core(voters=(1,))
    c.log.flush()
    c.on_flushed(0)
    hwm = c.high_watermark
    assert c.role == "leader" and hwm > c.quorum.role.epoch_start_offset  # type: ignore[attr-defined]
    entries = c.voter_history.entries
    entries.append((hwm, c.voters))
    c.check_invariants()  # one change above the HWM: allowed
    entries.append((hwm + 1, c.voters))
    with pytest.raises(AssertionError, match=rf"\[{hwm}, {hwm + 1}\]"):
        c.check_invariants()
    del entries[-2:]
    c.check_invariants()


def follower_after_fetch(now: int) -> RaftCore:
    """Node 2 following 1 in epoch 1; its first Fetch answered with one record at ``now``."""
    c = core(local=2)
    c.ready(0)  # Unattached: fetching from the voters in turn (D8)
    c.step(Inbound(1, 1, BeginQuorumEpochRequest(None, 1, 1, ReplicaKey(2))), 100)
    (rid,) = [m.request_id for m in c.ready(100).messages if isinstance(m.body, FetchRequest)]
    batch = build_batch(0, 1, [b"a"], 100)
    c.step(Inbound(1, rid, FetchResponse(ErrorCode.none, 1, 1, 0, 0, batch)), now)
    return c


def test_follower_flush_releases_its_next_fetch() -> None:
    """The Fetch stating the new offset waits for the flush; the flush itself sends nothing
    more (the follower's drive at the same time already sent it)."""
    c = follower_after_fetch(150)
    ready = c.ready(150)
    assert ready.must_flush and not ready.messages
    (held,) = ready.messages_after_flush
    assert isinstance(held.body, FetchRequest) and held.body.fetch_offset == 1
    c.log.flush()
    c.on_flushed(150)
    assert isinstance(c.ready(150), IdleReady) and c.role == "follower"


def test_follower_flush_later_fires_its_timers() -> None:
    """A flush that completes after the fetch timeout drives the follower like a poll."""
    c = follower_after_fetch(150)
    c.ready(150)
    c.log.flush()
    c.on_flushed(150 + RaftConfig().fetch_timeout_ms)
    assert c.role == "prospective"


def fetches(c: RaftCore, now: int) -> list[int]:
    return [m.request_id for m in c.ready(now).messages if isinstance(m.body, FetchRequest)]


def test_a_fetch_retry_past_due_is_polled_at_once() -> None:
    """Issue 13's observer stall, found on real processes (tests/faults/test_observer_rejoin):
    the driver's timer fired a millisecond before the retry time, that poll sent nothing, and
    the Ready computed just after the retry time said "never" (an observer's role has no
    timer): the observer fetched nothing again. A retry that is due and not yet served makes
    the deadline now."""
    c = core(local=4)  # an observer of voters 1-3
    (rid,) = fetches(c, 0)
    c.step(Inbound(1, rid, FetchResponse(ErrorCode.not_leader_or_follower, 0, -1, -1, -1)), 10)
    retry = 10 + c.config.retry_backoff_ms
    assert c.ready(10).next_deadline_ms == retry
    c.poll(retry - 1)  # the timer fired early: nothing is due yet
    assert fetches(c, retry - 1) == []
    assert c.ready(retry + 1).next_deadline_ms == retry + 1  # due: poll now
    c.poll(retry + 1)
    assert len(fetches(c, retry + 1)) == 1
    assert c.ready(retry + 2).next_deadline_ms > retry + 2  # served: nothing due


def test_observer_backs_off_after_an_answer_from_a_starting_node() -> None:
    """Issue 13: a voter still building its core answers BROKER_NOT_AVAILABLE (a top-level
    error: epoch -1). The observer waits the retry backoff before its next Fetch instead of
    going round the voters at once, and still follows the leader a later answer names."""
    c = core(local=4)  # an observer of voters 1-3
    (rid,) = fetches(c, 0)
    c.step(Inbound(1, rid, FetchResponse(ErrorCode.broker_not_available, -1, -1, -1, -1)), 10)
    backoff = c.config.retry_backoff_ms
    assert fetches(c, 10) == []
    assert c.ready(10).next_deadline_ms == 10 + backoff
    c.poll(10 + backoff - 1)
    assert fetches(c, 10 + backoff - 1) == []
    c.poll(10 + backoff)
    (rid,) = fetches(c, 10 + backoff)
    c.step(Inbound(2, rid, FetchResponse(ErrorCode.not_leader_or_follower, 1, 3, -1, -1)), 200)
    assert (c.role, c.leader_id, c.epoch) == ("follower", 3, 1)
    assert len(fetches(c, 200)) == 1  # to the leader at once: no backoff across a transition
