"""KIP-853 / KIP-642 core behaviours from Kafka's reconfiguration unit tests
(KafkaRaftClientReconfigTest), plus the voter-set history and pykraft's target record."""

from __future__ import annotations

import uuid

from kio.schema.errors import ErrorCode

from pykraft.raft.control import ControlState, LogHistory, target_voters_batch
from pykraft.raft.core import RaftCore
from pykraft.raft.messages import (
    AddRaftVoterRequest,
    AddRaftVoterResponse,
    ApiVersionsRequest,
    ApiVersionsResponse,
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    Inbound,
    Outbound,
    RemoveRaftVoterRequest,
    RemoveRaftVoterResponse,
    UpdateRaftVoterRequest,
    UpdateRaftVoterResponse,
)
from pykraft.raft.roles import FOREVER, Leader
from pykraft.raft.types import Endpoint, ReplicaKey
from pykraft.raft.voters import VoterInfo, VoterSet
from pykraft.sim.memory import MemoryLog, MemorySnapshotStore

from .commands import run
from .harness import Cluster, endpoint_of

EP = (Endpoint("CONTROLLER", "n9", 9009),)


def cluster(script: str) -> Cluster:
    c: Cluster | None = None
    for line in script.strip().splitlines():
        c, _ = run(c, line.strip())
    assert c is not None
    return c


def leader_core(c: Cluster, i: int = 1) -> RaftCore:
    core = c.nodes[i].core
    assert core is not None and core.role == "leader"
    return core


def answers(c: Cluster, i: int, request_id: int) -> list[object]:
    """Step node ``i``'s Ready and return the bodies answering ``request_id`` (others flow)."""
    taken = c.take(i, lambda m: m.request_id == request_id and m.dst == 99)
    return [m.body for m in taken]


def test_add_while_another_change_is_pending_times_out_at_once() -> None:
    c = cluster("init voters=1,2,3 observers=4,5 kraft=1 fast=1\ntick 1000\ncrash 4")
    core = leader_core(c)
    core.add_voter(c.key(4), (endpoint_of(4),), c.now)  # waits: 4 is down
    core.step(Inbound(99, 7, AddRaftVoterRequest(None, 5000, c.key(5), (endpoint_of(5),))), c.now)
    (body,) = answers(c, 1, 7)
    assert isinstance(body, AddRaftVoterResponse)
    assert body.error == ErrorCode.request_timed_out and "in progress" in (body.error_message or "")


def test_add_with_no_high_watermark_in_the_epoch_waits_then_times_out() -> None:
    # 1 leads epoch 1 and crashes; neither 2 nor 3 flushes, so the new leader's epoch
    # cannot commit (its own offset counts once flushed, B13; 1 is down).
    c = cluster(
        "init voters=1,2,3 observers=4 kraft=1 fast=1\ntick 1000\ncrash 1\n"
        "noflush 2\nnoflush 3\ntick 5000"
    )
    core = next(n.core for n in c.nodes.values() if n.core is not None and n.core.role == "leader")
    assert core.high_watermark <= core.state.epoch_start_offset  # type: ignore[union-attr]
    op = core.add_voter(c.key(4), (endpoint_of(4),), c.now, timeout_ms=100)
    core.poll(c.now + 100)
    (result,) = [r for r in core.ready(c.now + 100).completed if r.op_id == op]
    assert result.error == ErrorCode.request_timed_out
    assert "commit its epoch" in (result.message or "")
    assert core.voters.ids == {1, 2, 3}


def test_api_versions_from_the_wrong_node_is_ignored_and_bad_range_refused() -> None:
    c = cluster("init voters=1,2,3 observers=4 kraft=1 fast=1\ntick 1000")
    core = leader_core(c)
    op = core.add_voter(c.key(4), (endpoint_of(4),), c.now)
    probes = [m for m in core.ready(c.now).messages if isinstance(m.body, ApiVersionsRequest)]
    assert [(m.dst, m.endpoint) for m in probes] == [(4, endpoint_of(4))]
    rid = probes[0].request_id
    core.step(Inbound(2, rid, ApiVersionsResponse(ErrorCode.none, (0, 1))), c.now)  # not 4
    assert core.voter_change is not None and core.voter_change.phase == "probing"
    core.step(Inbound(4, rid, ApiVersionsResponse(ErrorCode.none, (0, 0))), c.now)
    (result,) = [r for r in core.ready(c.now).completed if r.op_id == op]
    assert result.error == ErrorCode.invalid_request and core.voters.ids == {1, 2, 3}


def test_leadership_lost_during_add_answers_not_leader() -> None:
    c = cluster("init voters=1,2,3 observers=4 kraft=1 fast=1\ntick 1000\ncrash 4")
    core = leader_core(c)
    core.step(Inbound(99, 8, AddRaftVoterRequest(None, 5000, c.key(4), (endpoint_of(4),))), c.now)
    core.shutdown(c.now)  # resigns
    (body,) = answers(c, 1, 8)
    assert isinstance(body, AddRaftVoterResponse)
    assert body.error == ErrorCode.not_leader_or_follower


def test_requests_at_a_non_leader() -> None:
    c = cluster("init voters=1,2,3 kraft=1 fast=1\ntick 1000")
    follower = c.nodes[2].core
    assert follower is not None
    follower.step(Inbound(99, 3, RemoveRaftVoterRequest(None, c.key(3))), c.now)
    follower.step(Inbound(99, 4, DescribeQuorumRequest()), c.now)
    bodies = answers(c, 2, 3) + answers(c, 2, 4)
    assert isinstance(bodies[0], RemoveRaftVoterResponse)
    assert bodies[0].error == ErrorCode.not_leader_or_follower
    d = follower.describe_quorum(c.now)
    assert isinstance(d, DescribeQuorumResponse)
    assert (d.error, d.leader_id, d.leader_epoch) == (ErrorCode.not_leader_or_follower, 1, 1)


def test_update_voter_epochs_and_directory_fill_in() -> None:
    c = cluster("init voters=1,2,3 kraft=1 fast=1\ntick 1000")
    core = leader_core(c)
    new_ep = (Endpoint("CONTROLLER", "moved", 1234),)

    def update(epoch: int, rid: int) -> UpdateRaftVoterResponse:
        req = UpdateRaftVoterRequest(None, epoch, c.key(2), new_ep, 0, 1)
        core.step(Inbound(99, rid, req), c.now)
        (body,) = answers(c, 1, rid)
        assert isinstance(body, UpdateRaftVoterResponse)
        return body

    assert update(0, 11).error == ErrorCode.fenced_leader_epoch
    assert update(2, 12).error == ErrorCode.unknown_leader_epoch
    ok = update(1, 13)
    assert (ok.error, ok.leader_id, ok.leader_epoch) == (ErrorCode.none, 1, 1)
    assert core.voters.endpoints(2) == new_ep
    # An unknown voter, or another directory id: VOTER_NOT_FOUND.
    other = ReplicaKey(2, uuid.uuid4())
    core.step(Inbound(99, 14, UpdateRaftVoterRequest(None, 1, other, new_ep, 0, 1)), c.now)
    (body,) = answers(c, 1, 14)
    assert isinstance(body, UpdateRaftVoterResponse) and body.error == ErrorCode.voter_not_found


def test_voters_send_update_voter_after_a_leader_change() -> None:
    c = cluster("init voters=1,2,3 kraft=1 fast=1")
    sent: list[Outbound] = []
    original = c.deliver_one

    def spy(src: int, m: Outbound) -> None:
        if isinstance(m.body, UpdateRaftVoterRequest):
            sent.append(m)
        original(src, m)

    c.deliver_one = spy  # type: ignore[method-assign]
    run(c, "tick 1000")
    assert sorted(m.body.voter_key.id for m in sent) == [2, 3]  # type: ignore[union-attr]


def test_history_truncation_reverts_and_old_entries_are_forgotten() -> None:
    h: LogHistory[str] = LogHistory()
    for offset, value in ((-1, "boot"), (5, "a"), (9, "b")):
        h.add_at(offset, value)
    assert h.value_at_or_before(8) == "a" and h.last_entry() == (9, "b")
    h.truncate_new_entries(9)
    assert h.last_entry() == (5, "a")
    h.truncate_old_entries(7)
    assert h.entries == [(5, "a")]


def test_target_record_round_trip_and_snapshot_replay() -> None:
    target = VoterSet({4: VoterInfo(ReplicaKey(4, uuid.uuid4()), EP, 0, 1)})
    log = MemoryLog()
    state = ControlState(VoterSet.from_ids([1]))
    batch = target_voters_batch(0, 1, 0, target, leader_id=1, voters=VoterSet.from_ids([1]))
    log.append(batch)
    state.apply_batches(batch)
    assert state.target == (0, target)
    cleared = target_voters_batch(1, 1, 0, None, leader_id=1, voters=VoterSet.from_ids([1]))
    log.append(cleared)
    state.apply_batches(cleared)
    assert state.target is None
    log.truncate_to(1)
    state.truncate(1)
    assert state.target == (0, target)  # truncation reverts to the previous target
    # A fresh reader replays the same from the log.
    fresh = ControlState(VoterSet.from_ids([1]))
    fresh.load(log, MemorySnapshotStore())
    assert fresh.target == (0, target) and fresh.next_offset == log.end_offset


def test_snapshot_carries_kraft_version_voters_and_target() -> None:
    c = cluster(
        "init voters=1,2,3 observers=4,5 kraft=1 fast=1\ntick 1000\ncrash 5\ntarget 1 1,2,5"
    )
    core = leader_core(c)
    assert core.target_voters is not None
    writer = core.create_snapshot(core.high_watermark, c.now)
    writer.freeze(c.now)
    replay = ControlState(VoterSet({}))
    replay.load(MemoryLog(), c.nodes[1].snaps)
    assert replay.kraft_version == 1 and replay.voters.ids == {1, 2, 3}
    assert replay.target is not None and replay.target[1].ids == {1, 2, 5}


def test_check_quorum_is_armed_when_a_lone_leader_gains_a_voter() -> None:
    """B9 after a voter change (membership.sync_progress): a leader alone in its voter set
    has no check-quorum timer; once a second voter joins, the timer runs, a full period from
    the change (here the period ends after the last tick: nothing fetched late)."""
    c = cluster("init voters=1 observers=2 kraft=1 autojoin=true\ncrash 2\ntick 1000")
    core = leader_core(c)
    leader = core.state
    assert isinstance(leader, Leader)
    assert leader.progress.check_quorum_deadline_ms == FOREVER
    run(c, "restart 2")
    run(c, "tick 5000")  # 2 catches up and adds itself (AddRaftVoter)
    assert core.voters.ids == {1, 2} and core.state is leader
    assert c.now < leader.progress.check_quorum_deadline_ms <= c.now + core.config.check_quorum_ms


def test_a_removed_voter_never_adds_itself_back_across_restarts_and_snapshots() -> None:
    """KAFKA-19850: with auto-join on, a controller the operator removed re-added itself at
    once (Kafka 4.4 only documents it). Here a replica key that was in a committed voter set
    remembers it (the store's ``remember_voter``, kept apart from the quorum state): removed,
    it stays an observer, also after a restart and a snapshot that no longer shows it as a
    voter; the same node with a new disk (a new replica key) joins once."""
    c = cluster("init voters=1 observers=2 kraft=1 autojoin=true\ntick 5000")
    core = leader_core(c)
    assert core.voters.ids == {1, 2}  # 2 added itself
    two = c.nodes[2]
    assert two.core is not None and two.core.was_voter and two.qstore.was_voter()
    removed = two.core.local_key
    run(c, "remove-voter 1 2")
    run(c, "tick 5000")
    assert core.voters.ids == {1}
    run(c, "append 1 a b c")
    run(c, "tick 1000")
    run(c, f"snapshot 1 {core.high_watermark}")  # the new snapshot shows voters {1} only
    run(c, "crash 2")
    run(c, "restart 2")
    run(c, "tick 10000")
    assert core.voters.ids == {1} and c.nodes[2].core is not None
    assert c.nodes[2].core.role == "follower" and c.nodes[2].core.was_voter
    for step in ("crash 2", "wipe 2", "restart 2"):  # a new disk: a new key, never a voter
        run(c, step)
    run(c, "tick 10000")
    assert core.voters.ids == {1, 2} and core.voters.voters[2].key != removed
