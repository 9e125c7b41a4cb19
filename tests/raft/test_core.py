"""RaftCore unit behaviours from Kafka's raft tests: fetch purgatory, stale responses,
votes once per epoch, NotLeaderError, snapshot creation bounds."""

from __future__ import annotations

import random

import pytest
from kio.schema.errors import ErrorCode

from pykraft.raft.config import InvalidSnapshotError, NotLeaderError, RaftConfig
from pykraft.raft.core import RaftCore
from pykraft.raft.messages import FetchRequest, FetchResponse, Inbound, VoteResponse
from pykraft.raft.types import ReplicaKey
from pykraft.raft.voters import VoterSet
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
    c: RaftCore, src: int, rid: int, offset: int, epoch: int, now: int
) -> list[FetchResponse]:
    c.step(Inbound(src, rid, FetchRequest(None, ReplicaKey(src), 1, offset, epoch, 500)), now)
    return [
        m.body
        for m in c.ready(now).messages
        if isinstance(m.body, FetchResponse) and m.request_id == rid
    ]


def test_fetch_purgatory_new_data_timeout_and_transition() -> None:
    c = leader_of_three()
    first = fetch(c, 2, 1, 1, 1, 2000)  # moves the HWM to 1: answered at once
    assert first and first[0].high_watermark == 1
    assert fetch(c, 2, 5, 1, 1, 2000) == []  # nothing new: held (long poll)
    c.append([b"a"], 2001)
    got = [m for m in c.ready(2001).messages if m.request_id == 5]
    assert len(got) == 1 and got[0].body.records  # answered on new data
    c.log.flush()
    c.on_flushed(2001)
    assert fetch(c, 3, 2, 2, 1, 2002) != []  # HWM moved to 2: answered immediately
    assert fetch(c, 3, 3, 2, 1, 2003) == []  # held again
    c.poll(2503)
    assert [m.request_id for m in c.ready(2503).messages if m.request_id == 3] == [3]  # timeout
    assert fetch(c, 2, 4, 2, 1, 2504) == []
    c.shutdown(2505)  # leaving the leader state answers held fetches
    answers = [m.body for m in c.ready(2505).messages if m.request_id == 4]
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


def test_not_leader_error_and_snapshot_bounds() -> None:
    c = core()
    with pytest.raises(NotLeaderError):
        c.append([b"x"], 0)
    single = core(voters=(1,))
    assert single.role == "leader"
    single.log.flush()
    single.on_flushed(0)
    with pytest.raises(InvalidSnapshotError):
        single.create_snapshot(2, 0)
    w = single.create_snapshot(1, 0)
    w.freeze()
    assert single.log.start_offset == 1 and single.snapshots.latest() == w.snapshot_id
