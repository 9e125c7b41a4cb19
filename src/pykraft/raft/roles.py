"""One class per role (Kafka's ``*State.java``): the data a replica holds while in that role.

Roles hold data and answer questions about it (``election``, ``can_grant_vote``); they never
change role themselves. Only ``QuorumState`` creates them and switches between them.
Timers are absolute deadlines in the caller's clock (``*_ms``); ``FOREVER`` means none.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pykraft.raft.progress import FOREVER, LeaderProgress, ReplicaProgress
from pykraft.raft.types import NO_LEADER, ElectionState, Endpoint, ReplicaKey

__all__ = [
    "FOREVER",
    "Candidate",
    "Follower",
    "Leader",
    "Prospective",
    "ReplicaProgress",
    "Resigned",
    "Role",
    "Unattached",
]


@dataclass(slots=True)
class Unattached:
    """No leader known in ``epoch``; maybe voted. Voters start an election on timeout."""

    epoch: int
    voted_key: ReplicaKey | None
    election_deadline_ms: int  # FOREVER for observers (they never campaign)
    name = "unattached"

    def timer_ms(self) -> int:
        """When this role's timer fires (``elections.fire_timers``)."""
        return self.election_deadline_ms

    def wakeup_ms(self) -> int:
        """When the driver must poll at the latest for this role's timers."""
        return self.election_deadline_ms

    def election(self, local: ReplicaKey) -> ElectionState:
        return ElectionState(self.epoch, NO_LEADER, self.voted_key)

    def can_grant_vote(self, candidate: ReplicaKey, log_ok: bool, pre_vote: bool) -> bool:
        if pre_vote:
            return log_ok
        if self.voted_key is not None:
            return _same_replica(self.voted_key, candidate)
        return log_ok


@dataclass(slots=True)
class Prospective:
    """Canvassing with pre-votes in ``epoch`` (not bumped). ``leader_id`` is the leader last
    known in this epoch, to go back to if the pre-vote is lost.

    Invariant: ``granted`` and ``rejected`` are disjoint voter ids; ``granted`` holds the local id.
    """

    epoch: int
    voted_key: ReplicaKey | None
    leader_id: int
    leader_endpoints: tuple[Endpoint, ...]
    election_deadline_ms: int
    retries: int  # elections lost in a row (candidate backoff), carried to Candidate
    granted: set[int] = field(default_factory=set)
    rejected: set[int] = field(default_factory=set)
    name = "prospective"

    def timer_ms(self) -> int:
        """When this role's timer fires (``elections.fire_timers``)."""
        return self.election_deadline_ms

    def wakeup_ms(self) -> int:
        """When the driver must poll at the latest for this role's timers."""
        return self.election_deadline_ms

    def election(self, local: ReplicaKey) -> ElectionState:
        return ElectionState(self.epoch, self.leader_id, self.voted_key)

    def can_grant_vote(self, candidate: ReplicaKey, log_ok: bool, pre_vote: bool) -> bool:
        if pre_vote:
            return log_ok
        if self.voted_key is not None:
            return _same_replica(self.voted_key, candidate)
        if self.leader_id != NO_LEADER:
            return False  # like a follower: a leader is known in this epoch
        return log_ok


@dataclass(slots=True)
class Candidate:
    """Asking for standard votes in ``epoch`` (bumped on entry); voted for itself.

    Invariant: ``granted`` and ``rejected`` are disjoint; ``granted`` holds the local id.
    ``backoff_until_ms`` is set only after the election was lost.
    """

    epoch: int
    election_deadline_ms: int
    retries: int
    granted: set[int] = field(default_factory=set)
    rejected: set[int] = field(default_factory=set)
    backoff_until_ms: int | None = None
    name = "candidate"

    def timer_ms(self) -> int:
        """When this role's timer fires: the backoff after a lost election, else the
        election timeout."""
        backoff = self.backoff_until_ms
        return self.election_deadline_ms if backoff is None else backoff

    def wakeup_ms(self) -> int:
        return self.timer_ms()

    def election(self, local: ReplicaKey) -> ElectionState:
        return ElectionState(self.epoch, NO_LEADER, local)

    def can_grant_vote(self, candidate: ReplicaKey, log_ok: bool, pre_vote: bool) -> bool:
        return log_ok if pre_vote else False  # our standard vote went to ourselves


@dataclass(slots=True)
class Leader:
    """Leader of ``epoch``; its epoch started at ``epoch_start_offset`` (the LeaderChange
    record). The high watermark may only advance past that offset (B4). What it knows of the
    replicas fetching from it, and its check-quorum window, is ``progress``."""

    epoch: int
    epoch_start_offset: int
    granting_voters: frozenset[int]
    begin_quorum_deadline_ms: int
    progress: LeaderProgress
    name = "leader"

    def timer_ms(self) -> int:
        """When this role's timer fires: the check-quorum deadline (B9)."""
        return self.progress.check_quorum_deadline_ms

    def wakeup_ms(self) -> int:
        """Check quorum, or the next BeginQuorumEpoch round (B8)."""
        return min(self.progress.check_quorum_deadline_ms, self.begin_quorum_deadline_ms)

    def election(self, local: ReplicaKey) -> ElectionState:
        return ElectionState(self.epoch, local.id, local)

    def can_grant_vote(self, candidate: ReplicaKey, log_ok: bool, pre_vote: bool) -> bool:
        return False


@dataclass(slots=True)
class Follower:
    """Following ``leader_id`` in ``epoch``; keeps the standard vote cast in the epoch.

    ``fetched_from_leader``: a fetch from the leader succeeded in this epoch; from then on
    pre-votes are rejected (KIP-996) until the leader resigns (EndQuorumEpoch).
    """

    epoch: int
    leader_id: int
    leader_endpoints: tuple[Endpoint, ...]
    voted_key: ReplicaKey | None
    fetch_deadline_ms: int
    fetched_from_leader: bool = False
    # Observers whose fetch timed out look for the leader through the voters (bootstrap).
    bootstrap_fetching: bool = False
    # D6: this voter's UpdateRaftVoter was acknowledged by this leader in this epoch; asked
    # again from ``update_voter_again_ms`` on only while its entry differs from itself.
    update_voter_acked: bool = False
    update_voter_again_ms: int = 0
    name = "follower"

    def timer_ms(self) -> int:
        """When this role's timer fires: the fetch timeout."""
        return self.fetch_deadline_ms

    def wakeup_ms(self) -> int:
        return self.fetch_deadline_ms

    def election(self, local: ReplicaKey) -> ElectionState:
        return ElectionState(self.epoch, self.leader_id, self.voted_key)

    def can_grant_vote(self, candidate: ReplicaKey, log_ok: bool, pre_vote: bool) -> bool:
        if pre_vote:
            return log_ok and not self.fetched_from_leader
        return False


@dataclass(slots=True)
class Resigned:
    """Former leader of ``epoch`` that stepped down (graceful shutdown, check quorum, or a
    restart). Sends EndQuorumEpoch; after its election timeout moves to Unattached at
    ``epoch + 1`` (KIP-996)."""

    epoch: int
    election_deadline_ms: int
    preferred_successors: tuple[ReplicaKey, ...]
    unacked: set[int] = field(default_factory=set)  # voters yet to ack EndQuorumEpoch
    name = "resigned"

    def timer_ms(self) -> int:
        """When this role's timer fires (``elections.fire_timers``)."""
        return self.election_deadline_ms

    def wakeup_ms(self) -> int:
        """When the driver must poll at the latest for this role's timers."""
        return self.election_deadline_ms

    def election(self, local: ReplicaKey) -> ElectionState:
        return ElectionState(self.epoch, local.id, local)

    def can_grant_vote(self, candidate: ReplicaKey, log_ok: bool, pre_vote: bool) -> bool:
        return log_ok if pre_vote else False


Role = Unattached | Prospective | Candidate | Leader | Follower | Resigned


def _same_replica(voted: ReplicaKey, candidate: ReplicaKey) -> bool:
    """Kafka's rule: same id, and same directory id unless the vote did not record one."""
    return voted.id == candidate.id and (
        voted.directory_id is None or voted.directory_id == candidate.directory_id
    )
