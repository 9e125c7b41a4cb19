"""The raft-metrics values a running quorum rarely shows long enough to scrape (SPEC I3):
current-state prospective, prospective-voted and unattached-voted, the voter-change gauges,
is-observer and ignored-static-voters; read off cores driven by hand (no sockets)."""

from __future__ import annotations

import random
import uuid

from kio.schema.errors import ErrorCode

from pykraft.node.metrics import RaftMetrics, current_state, snapshot_of
from pykraft.raft.config import RaftConfig
from pykraft.raft.core import RaftCore
from pykraft.raft.messages import Inbound, VoteRequest, VoteResponse
from pykraft.raft.types import Endpoint, OffsetAndEpoch, ReplicaKey
from pykraft.raft.voters import VoterSet
from pykraft.records import (
    VoterRecordEntry,
    kraft_version_batch,
    snapshot_footer_batch,
    snapshot_header_batch,
    voters_batch,
)
from pykraft.sim.memory import MemoryLog, MemoryQuorumStateStore, MemorySnapshotStore


def core(voters: VoterSet | None = None, local: ReplicaKey | None = None) -> RaftCore:
    return RaftCore(
        config=RaftConfig(),
        local_key=local or ReplicaKey(1),
        voters=voters or VoterSet.from_ids([1, 2, 3]),
        log=MemoryLog(),
        quorum_state=MemoryQuorumStateStore(),
        snapshots=MemorySnapshotStore(),
        rng=random.Random(1),
        now_ms=0,
    )


def dynamic_single_voter_leader() -> RaftCore:
    """A kraft.version-1 voter (bootstrap checkpoint as ``--standalone`` writes it), elected
    and with its epoch committed."""
    local = ReplicaKey(1, uuid.uuid4())
    snapshots = MemorySnapshotStore()
    entries = [VoterRecordEntry(1, local.directory_id, (Endpoint("CONTROLLER", "h", 1),))]
    parts = [
        snapshot_header_batch(0, 0, 0, -1),
        kraft_version_batch(1, 0, 0, 1),
        voters_batch(2, 0, 0, entries),
        snapshot_footer_batch(3, 0, 0),
    ]
    writer = snapshots.create(OffsetAndEpoch(0, 0))
    writer.append(b"".join(parts))
    writer.freeze()
    c = RaftCore(
        config=RaftConfig(),
        local_key=local,
        voters=None,
        log=MemoryLog(),
        quorum_state=MemoryQuorumStateStore(),
        snapshots=snapshots,
        rng=random.Random(1),
        now_ms=0,
    )
    now = 0
    while c.role != "leader" or c.high_watermark <= 0:
        now += 100
        c.poll(now)
        c.ready(now)
        c.log.flush()
        c.on_flushed(now)
        c.ready(now)
        assert now < 10_000, c.role
    assert c.kraft_version == 1
    return c


def vote_request(candidate: int, epoch: int, *, pre_vote: bool) -> VoteRequest:
    return VoteRequest(None, epoch, ReplicaKey(candidate), ReplicaKey(1), 0, 0, pre_vote)


def test_prospective_and_prospective_voted() -> None:
    c = core()
    c.poll(2_000)  # election timeout: Prospective, pre-votes out
    assert c.role == "prospective" and current_state(c) == "prospective"

    # A voter that voted in this epoch and then lost touch is "prospective-voted".
    voted = core()
    voted.step(Inbound(2, 1, vote_request(2, 1, pre_vote=False)), 10)  # grants its vote
    voted.ready(10)
    assert voted.voted_key is not None and current_state(voted) == "unattached-voted"
    voted.poll(5_000)
    assert voted.role == "prospective"
    assert current_state(voted) == "prospective-voted"


def test_unattached_voted() -> None:
    c = core()
    c.step(Inbound(3, 1, vote_request(3, 4, pre_vote=False)), 10)
    ready = c.ready(10)
    outbound = ready.messages + ready.messages_after_flush
    [answer] = [m.body for m in outbound if isinstance(m.body, VoteResponse)]
    assert isinstance(answer, VoteResponse) and answer.vote_granted
    assert c.epoch == 4 and current_state(c) == "unattached-voted"
    snap = snapshot_of(c, RaftMetrics(0, 2_000), 10)
    assert snap.state == "unattached-voted" and snap.vote == 3 and snap.epoch == 4
    assert answer.error == ErrorCode.none


def test_is_observer_and_ignored_static_voters() -> None:
    # Not in the voter set: an observer (is-observer 1, current-state "observer").
    c = core(local=ReplicaKey(9))
    snap = snapshot_of(c, RaftMetrics(0, 2_000), 0, static_voters=True)
    assert snap.is_observer == 1 and snap.state == "observer"
    # controller.quorum.voters set, kraft.version 0: the setting is in use.
    assert snap.ignored_static_voters == 0


def test_voter_change_gauges_while_an_add_waits_for_catch_up() -> None:
    """uncommitted-voter-change and pending-add-voter are 1 from the moment the leader takes
    an AddRaftVoter on, also while it waits for the new voter to catch up."""
    leader = dynamic_single_voter_leader()
    metrics = RaftMetrics(0, 2_000)
    before = snapshot_of(leader, metrics, 3_000)
    assert (before.uncommitted_voter_change, before.pending_add_voter) == (0, 0)
    leader.add_voter(ReplicaKey(4, uuid.uuid4()), (Endpoint("CONTROLLER", "h", 1),), 3_000)
    waiting = snapshot_of(leader, metrics, 3_000)
    assert waiting.uncommitted_voter_change == 1
    assert (waiting.pending_add_voter, waiting.pending_remove_voter) == (1, 0)


def test_add_raft_voter_without_directory_id_or_listeners_is_refused_at_once() -> None:
    from pykraft.raft.messages import AddRaftVoterRequest, AddRaftVoterResponse

    leader = dynamic_single_voter_leader()
    for key, listeners in (
        (ReplicaKey(4), (Endpoint("CONTROLLER", "h", 1),)),  # no directory id
        (ReplicaKey(4, uuid.uuid4()), ()),  # no listeners
    ):
        leader.step(Inbound(-1, 7, AddRaftVoterRequest(None, 30_000, key, listeners)), 3_000)
        ready = leader.ready(3_000)
        [answer] = [m.body for m in ready.messages if isinstance(m.body, AddRaftVoterResponse)]
        assert answer.error == ErrorCode.invalid_request, answer
        assert leader.voter_change is None
