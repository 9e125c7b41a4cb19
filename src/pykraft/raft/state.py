"""QuorumState: the only place where a replica changes role.

Theory of operation. A replica is always in exactly one role (``roles.py``). Every change goes
through one of the ``to_*`` methods below, which builds the new role, checks the change against
``TRANSITIONS`` (KIP-996's table, reproduced here and normative), writes the new election state
durably through ``QuorumStateStore.write`` *before* switching in memory (B2: never act on a
vote or candidacy that a crash could forget), then switches and bumps ``generation`` so that
responses to requests sent in the old role are recognised as stale (B12).

Transition table (KIP-996 "Proposed Changes"; "voted" = same epoch, a standard vote added;
"same"/"higher"/"next" compare the new epoch with the current one):

    Resigned    -> Unattached   higher epoch learnt, or its election timeout (epoch + 1)
                -> Follower     a leader with a larger epoch
    Unattached  -> Unattached   higher epoch learnt; or "voted" (granting a standard vote)
                -> Prospective  election timeout (voters only)
                -> Follower     a leader with an equal or larger epoch
    Prospective -> Unattached   higher epoch learnt; or (same epoch) pre-vote lost/timed out
                                without a known leader
                -> Prospective  "voted" (granting a standard vote)
                -> Candidate    majority of pre-votes granted (epoch + 1)
                -> Follower     a leader with an equal or larger epoch (incl. pre-vote lost or
                                timed out while a leader was known)
    Candidate   -> Unattached   higher epoch learnt
                -> Prospective  election timeout or election lost (after the backoff)
                -> Leader       majority of standard votes
                -> Follower     a leader with an equal or larger epoch
    Leader      -> Unattached   higher epoch learnt
                -> Resigned     graceful shutdown, or check quorum failed
    Follower    -> Unattached   higher epoch learnt
                -> Prospective  fetch timeout (voters only)
                -> Follower     a leader with a larger epoch

Observers (not in the voter set) are only ever Unattached or Follower, except a leader that
removed itself from the voter set (D5): it leads until the removal commits, then resigns; and a
replica still in the latest *committed* voter set whose removal is not committed yet
(``may_campaign``, the Raft dissertation's rule; bug 9 in tests/sim/test_regressions.py): it
may campaign and lead like a removed leader, its own vote not counting toward a set it is
not in. Only Prospective becomes Candidate. A standard vote, once cast in an epoch, is kept by
every role of that epoch.

Startup (B2), from the stored election state and the log: stored epoch below the log's last
epoch -> Unattached at the log's epoch; we were the leader -> Resigned; we voted for ourselves
-> Candidate; a leader is known -> Follower; otherwise Unattached (keeping the vote).
"""

from __future__ import annotations

from collections.abc import Callable

from pykraft.raft.config import IllegalStateError, RaftConfig
from pykraft.raft.interfaces import QuorumStateStore, RandomSource, ReplicatedLog
from pykraft.raft.progress import LeaderProgress
from pykraft.raft.roles import (
    FOREVER,
    Candidate,
    Follower,
    Leader,
    Prospective,
    Resigned,
    Role,
    Unattached,
)
from pykraft.raft.types import NO_LEADER, ElectionState, Endpoint, ReplicaKey
from pykraft.raft.voters import VoterSet

SAME, NEXT, HIGHER, VOTED = "same", "next", "higher", "voted"

# from role -> to role -> allowed epoch relations. NEXT (epoch + 1) is also HIGHER.
TRANSITIONS: dict[str, dict[str, frozenset[str]]] = {
    "resigned": {"unattached": frozenset({HIGHER}), "follower": frozenset({HIGHER})},
    "unattached": {
        "unattached": frozenset({HIGHER, VOTED}),
        "prospective": frozenset({SAME}),
        "follower": frozenset({SAME, HIGHER}),
    },
    "prospective": {
        "unattached": frozenset({HIGHER, SAME}),
        "prospective": frozenset({VOTED}),
        "candidate": frozenset({NEXT}),
        "follower": frozenset({SAME, HIGHER}),
    },
    "candidate": {
        "unattached": frozenset({HIGHER}),
        "prospective": frozenset({SAME}),
        "leader": frozenset({SAME}),
        "follower": frozenset({SAME, HIGHER}),
    },
    "leader": {"unattached": frozenset({HIGHER}), "resigned": frozenset({SAME})},
    "follower": {
        "unattached": frozenset({HIGHER}),
        "prospective": frozenset({SAME}),
        "follower": frozenset({HIGHER}),
    },
}
OBSERVER_ROLES = frozenset({"unattached", "follower"})


def relation(old: Role, new: Role) -> str:
    if new.epoch == old.epoch:
        same_kind = old.name == new.name
        if same_kind and _voted(old) is None and _voted(new) is not None:
            return VOTED
        return SAME
    if new.epoch == old.epoch + 1:
        return NEXT
    return HIGHER if new.epoch > old.epoch else "lower"


def is_allowed(old: Role, new: Role) -> bool:
    allowed = TRANSITIONS.get(old.name, {}).get(new.name, frozenset())
    rel = relation(old, new)
    return rel in allowed or (rel == NEXT and HIGHER in allowed)


def _voted(role: Role) -> ReplicaKey | None:
    return role.voted_key if isinstance(role, Unattached | Prospective | Follower) else None


class QuorumState:
    """Owns the current role and every transition (see the module docstring's table)."""

    __slots__ = (
        "_config",
        "_kraft_version",
        "_log",
        "_persisted",
        "_rng",
        "_store",
        "_voters",
        "committed_voter",
        "generation",
        "is_observer",
        "leader_id",
        "local_key",
        "on_transition",
        "role",
    )

    def __init__(
        self,
        *,
        config: RaftConfig,
        local_key: ReplicaKey,
        voters: VoterSet,
        store: QuorumStateStore,
        log: ReplicatedLog,
        rng: RandomSource,
        now_ms: int,
        kraft_version: Callable[[], int] = lambda: 1,
    ) -> None:
        self._config = config
        self._store = store
        # The finalized kraft.version: it decides the quorum-state file's data_version.
        self._kraft_version = kraft_version
        self._log = log
        self._rng = rng
        self.local_key = local_key
        # Invariant: ``is_observer`` is ``not voters.is_voter(local_key)`` (kept by the
        # ``voters`` setter) and ``leader_id`` is the current role's leader (kept by
        # ``_switch``): both are read on every input, so they are stored, not derived.
        self.is_observer = False
        # In the latest committed voter set (at or below the high watermark), kept by the
        # core; only read when ``is_observer`` (see ``may_campaign``).
        self.committed_voter = False
        self.voters = voters
        self.generation = 0  # bumped on every transition: older responses are stale
        # Optional observer of transitions (tests, simulator traces, metrics).
        self.on_transition: Callable[[Role, Role], None] | None = None
        self._persisted = store.read()
        self.role: Role = self._initial_role(self._persisted or ElectionState(0), now_ms)
        self.leader_id = self._leader_of(self.role)
        self._persist(self.role)

    # -- queries ------------------------------------------------------------------------

    @property
    def store(self) -> QuorumStateStore:
        """Where the election state (and ``RaftCore.was_voter``) is kept."""
        return self._store

    @property
    def voters(self) -> VoterSet:
        return self._voters

    @voters.setter
    def voters(self, voters: VoterSet) -> None:
        self._voters = voters
        self.is_observer = not voters.is_voter(self.local_key)

    @property
    def may_campaign(self) -> bool:
        """May become Prospective, Candidate or Leader: a voter in the latest voter set, or
        one whose removal from it is not committed yet (still in the latest committed set;
        bug 9 in tests/sim/test_regressions.py: else a leader that appended its own removal
        and lost leadership before it committed deadlocks the quorum). Everything else reads
        ``is_observer``."""
        return not self.is_observer or self.committed_voter

    @property
    def is_only_voter(self) -> bool:
        return len(self.voters) == 1 and not self.is_observer

    @property
    def epoch(self) -> int:
        return self.role.epoch

    def _leader_of(self, role: Role) -> int:
        if isinstance(role, Follower):
            return role.leader_id
        if isinstance(role, Leader):
            return self.local_key.id
        return NO_LEADER

    @property
    def voted_key(self) -> ReplicaKey | None:
        return self.role.election(self.local_key).voted_key

    def random_election_timeout_ms(self) -> int:
        """Uniform in [election_timeout_ms, 2 x election_timeout_ms) (B10)."""
        t = self._config.election_timeout_ms
        return t + self._rng.randrange(0, t)

    # -- transitions ----------------------------------------------------------------------

    def to_unattached(self, epoch: int, now_ms: int, *, deadline_ms: int | None = None) -> None:
        """Unattached at ``epoch`` (a higher epoch, or Prospective's lost pre-vote). The vote
        is kept when the epoch does not change."""
        role = self.role
        voted = _voted(role) if epoch == self.epoch else None
        if deadline_ms is None and epoch > self.epoch and self._keeps_election_time(role):
            # Kafka's transitionToUnattached: a higher epoch does not restart a running
            # election timer, or a voter that keeps campaigning (and losing) with ever higher
            # epochs would keep everyone else from ever campaigning (a liveness bug without
            # pre-vote, found by the simulator).
            assert isinstance(role, Unattached | Prospective | Candidate)
            deadline_ms = role.election_deadline_ms
        if deadline_ms is None:
            deadline_ms = self._election_deadline(now_ms)
        self._switch(Unattached(epoch, voted, deadline_ms))

    def _keeps_election_time(self, role: Role) -> bool:
        """Unattached, Candidate, and a Prospective whose pre-vote is not lost yet."""
        if isinstance(role, Unattached | Candidate):
            return True
        if isinstance(role, Prospective):
            return len(self.voters) - len(role.rejected) >= self.voters.majority_size
        return False

    def add_vote(self, candidate: ReplicaKey, now_ms: int) -> None:
        """Record a standard vote granted in the current epoch (Unattached or Prospective)."""
        role = self.role
        if candidate.id == self.local_key.id:
            raise IllegalStateError("a replica never grants a standard vote to itself")
        if isinstance(role, Unattached):
            self._switch(Unattached(role.epoch, candidate, self._election_deadline(now_ms)))
        elif isinstance(role, Prospective):
            self._switch(
                Prospective(
                    role.epoch,
                    candidate,
                    role.leader_id,
                    role.leader_endpoints,
                    role.election_deadline_ms,
                    role.retries,
                    set(role.granted),
                    set(role.rejected),
                )
            )
        else:
            raise IllegalStateError(f"cannot record a vote while {role.name}")

    def to_prospective(self, now_ms: int) -> None:
        role = self.role
        leader_id, endpoints, retries = NO_LEADER, tuple[Endpoint, ...](), 0
        if isinstance(role, Follower):
            leader_id, endpoints = role.leader_id, role.leader_endpoints
        elif isinstance(role, Candidate):
            retries = role.retries
        self._switch(
            Prospective(
                role.epoch,
                self.voted_key,
                leader_id,
                endpoints,
                now_ms + self.random_election_timeout_ms(),
                retries,
                granted={self.local_key.id},
            )
        )

    def to_candidate(self, now_ms: int) -> None:
        role = self.role
        retries = role.retries + 1 if isinstance(role, Prospective) else 1
        self._switch(
            Candidate(
                role.epoch + 1,
                now_ms + self.random_election_timeout_ms(),
                retries,
                granted={self.local_key.id},
            )
        )

    def to_leader(self, now_ms: int, epoch_start_offset: int, check_quorum_ms: int) -> Leader:
        role = self.role
        if not isinstance(role, Candidate):
            raise IllegalStateError(f"only a candidate becomes leader, not {role.name}")
        leader = Leader(
            role.epoch,
            epoch_start_offset,
            frozenset(role.granted),
            begin_quorum_deadline_ms=now_ms,
            progress=LeaderProgress.start(self.voters, self.local_key.id, now_ms + check_quorum_ms),
        )
        self._switch(leader)
        return leader

    def to_follower(
        self, epoch: int, leader_id: int, endpoints: tuple[Endpoint, ...], now_ms: int
    ) -> None:
        if leader_id == self.local_key.id:
            raise IllegalStateError("cannot follow ourselves")
        voted = _voted(self.role) if epoch == self.epoch else None
        if isinstance(self.role, Candidate) and epoch == self.epoch:
            voted = self.local_key  # our vote in this epoch went to ourselves
        endpoints = endpoints or self.voters.endpoints(leader_id)
        self._switch(
            Follower(epoch, leader_id, endpoints, voted, now_ms + self._config.fetch_timeout_ms)
        )

    def to_resigned(self, now_ms: int, successors: tuple[ReplicaKey, ...]) -> None:
        role = self.role
        self._switch(
            Resigned(
                role.epoch,
                now_ms + self.random_election_timeout_ms(),
                successors,
                unacked={k.id for k in successors},
            )
        )

    # -- internals ------------------------------------------------------------------------

    def _election_deadline(self, now_ms: int) -> int:
        if not self.may_campaign:
            return FOREVER
        return now_ms + self.random_election_timeout_ms()

    def _switch(self, new: Role) -> None:
        old = self.role
        if not is_allowed(old, new):
            raise IllegalStateError(
                f"illegal transition {old.name}(epoch {old.epoch}) -> {new.name}(epoch {new.epoch})"
            )
        # A leader that removed itself (D5) is an observer still leading until it resigns; a
        # replica whose removal is not committed yet may still campaign (``may_campaign``).
        removed_leader = isinstance(old, Leader) and isinstance(new, Resigned)
        if not self.may_campaign and new.name not in OBSERVER_ROLES and not removed_leader:
            raise IllegalStateError(f"an observer cannot become {new.name}")
        old_vote, new_vote = (
            old.election(self.local_key).voted_key,
            new.election(self.local_key).voted_key,
        )
        # Invariant: at most one standard vote per epoch, never forgotten within the epoch.
        assert new.epoch != old.epoch or old_vote is None or old_vote == new_vote, (old, new)
        self._persist(new)  # durable before acting on it (B2)
        self.role = new
        self.leader_id = self._leader_of(new)
        self.generation += 1
        if self.on_transition is not None:
            self.on_transition(old, new)

    def _persist(self, role: Role) -> None:
        election = role.election(self.local_key)
        if election != self._persisted:
            self._store.write(
                election,
                kraft_version=self._kraft_version(),
                voter_ids=tuple(sorted(self.voters.ids)),
            )
            self._persisted = election

    def _initial_role(self, stored: ElectionState, now_ms: int) -> Role:
        log_epoch = self._log.last_fetched_epoch()
        local = self.local_key
        voter = not self.is_observer
        if stored.epoch < log_epoch:
            return Unattached(log_epoch, None, self._election_deadline(now_ms))
        if stored.leader_id == local.id and voter:
            return Resigned(stored.epoch, now_ms + self.random_election_timeout_ms(), ())
        voted_self = stored.voted_key is not None and stored.voted_key.id == local.id
        if voted_self and voter and stored.leader_id == NO_LEADER:
            return Candidate(
                stored.epoch, now_ms + self.random_election_timeout_ms(), 1, {local.id}
            )
        if stored.has_leader and stored.leader_id != local.id:
            return Follower(
                stored.epoch,
                stored.leader_id,
                self.voters.endpoints(stored.leader_id),
                stored.voted_key,
                now_ms + self._config.fetch_timeout_ms,
            )
        return Unattached(stored.epoch, stored.voted_key, self._election_deadline(now_ms))
