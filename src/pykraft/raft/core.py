"""RaftCore: the sans-I/O KRaft replica (KIP-595, KIP-630, KIP-996).

Theory of operation. The driver feeds inputs -- ``step`` (a request or response from a peer, or
``RequestFailed``), ``poll`` (time passed), ``append`` / ``create_snapshot`` / ``shutdown``
(the application) and ``on_flushed`` (the log reached disk) -- and after each input drains
``ready()``: what to flush, what to send, what became committed, when to poll next.

Inside, every input ends with ``_drive(now)``: fire the timers of the current role (which may
change role through ``QuorumState``), then send whatever requests the role needs and does not
have in flight. Requests are tracked by id; a transition forgets them all, so a response to a
request sent in an older role, epoch or generation is dropped as stale (B12). Replication
(Fetch, FetchSnapshot, the high watermark) lives in ``replication.py``; elections and the
epoch-changing requests (Vote, BeginQuorumEpoch, EndQuorumEpoch) live here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from pykraft.raft import replication
from pykraft.raft.config import (
    IllegalStateError,
    InvalidSnapshotError,
    NotLeaderError,
    RaftConfig,
)
from pykraft.raft.interfaces import (
    LeaderAndEpoch,
    QuorumStateStore,
    RandomSource,
    Ready,
    ReplicatedLog,
    SnapshotStore,
)
from pykraft.raft.messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    Inbound,
    Outbound,
    RaftRequest,
    RaftResponse,
    RequestFailed,
    VoteRequest,
    VoteResponse,
)
from pykraft.raft.quorum import VoteResult, vote_result
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
from pykraft.raft.snapshots import RaftSnapshotWriter
from pykraft.raft.state import QuorumState
from pykraft.raft.types import NO_LEADER, Endpoint, OffsetAndEpoch, ReplicaKey
from pykraft.raft.voters import VoterSet

RETRY_BACKOFF_BASE_MS = 100  # Kafka's base for the candidate's exponential backoff
_MAX_TIMER_ROUNDS = 8  # bound on role changes fired by one input (each needs a new timer)


@dataclass(slots=True)
class _Request:
    """A request in flight. Invariant: present in ``_inflight`` until answered, failed, timed
    out, or forgotten by a transition."""

    dst: int
    kind: str  # "vote" | "begin" | "end" | "fetch" | "snapshot"
    deadline_ms: int
    pre_vote: bool = False


class RaftCore:
    """One KRaft replica. See the module docstring and docs/CONTRACTS.md."""

    __slots__ = (
        "_backoff",
        "_busy",
        "_endpoints",
        "_hwm_dirty",
        "_inflight",
        "_must_flush",
        "_next_request_id",
        "_notified",
        "_out",
        "_qs",
        "_rng",
        "_snapshot_loaded",
        "bootstrap_cursor",
        "config",
        "fetch_request_id",
        "fetch_retry_at_ms",
        "high_watermark",
        "local_key",
        "log",
        "on_transition",
        "purgatory",
        "snapshot_fetch",
        "snapshot_retention",
        "snapshots",
    )

    def __init__(
        self,
        *,
        config: RaftConfig,
        local_key: ReplicaKey,
        voters: VoterSet,
        log: ReplicatedLog,
        quorum_state: QuorumStateStore,
        snapshots: SnapshotStore,
        rng: RandomSource,
        now_ms: int,
        endpoints: tuple[Endpoint, ...] = (),
        on_transition: Callable[[Role, Role], None] | None = None,
    ) -> None:
        self.config = config
        self.local_key = local_key
        self.log = log
        self.snapshots = snapshots
        self._rng = rng
        self._endpoints = endpoints or voters.endpoints(local_key.id)
        self._qs = QuorumState(
            config=config,
            local_key=local_key,
            voters=voters,
            store=quorum_state,
            log=log,
            rng=rng,
            now_ms=now_ms,
        )
        self._qs.on_transition = self._on_transition
        # Invariant: never decreases while this object lives; <= log end offset on a leader.
        self.high_watermark = log.start_offset
        self._out: list[Outbound] = []
        self._must_flush = False
        self._hwm_dirty = False
        self._snapshot_loaded: OffsetAndEpoch | None = None
        self._notified: LeaderAndEpoch | None = None
        self._inflight: dict[int, _Request] = {}
        self._busy: dict[tuple[int, str], int] = {}  # (dst, kind) -> request id in flight
        self._backoff: dict[tuple[int, str], int] = {}  # (dst, kind) -> earliest retry
        self._next_request_id = 1
        self.fetch_request_id: int | None = None  # the one Fetch/FetchSnapshot in flight
        self.fetch_retry_at_ms = 0
        self.bootstrap_cursor = 0
        self.purgatory: dict[tuple[int, int], replication.ParkedFetch] = {}
        self.snapshot_fetch: replication.SnapshotFetch | None = None
        # Policy hook: may the log start advance to a snapshot just frozen? (KIP-630 retention)
        self.snapshot_retention: Callable[[OffsetAndEpoch, ReplicatedLog], bool] = (
            lambda _sid, _log: True
        )
        # Optional observer of every role change (simulator traces, tests, metrics).
        self.on_transition = on_transition
        self._drive(now_ms)

    # -- read-only observation ------------------------------------------------------------

    @property
    def role(self) -> str:
        return self._qs.role.name

    @property
    def state(self) -> Role:
        return self._qs.role

    @property
    def quorum(self) -> QuorumState:
        return self._qs

    @property
    def is_observer(self) -> bool:
        return self._qs.is_observer

    @property
    def epoch(self) -> int:
        return self._qs.epoch

    @property
    def leader_id(self) -> int:
        return self._qs.leader_id

    @property
    def voted_key(self) -> ReplicaKey | None:
        return self._qs.voted_key

    @property
    def voters(self) -> VoterSet:
        return self._qs.voters

    # -- inputs ---------------------------------------------------------------------------

    def step(self, message: Inbound | RequestFailed, now_ms: int) -> None:
        if isinstance(message, RequestFailed):
            self._request_failed(message.request_id, now_ms)
        elif isinstance(
            message.body,
            VoteResponse
            | BeginQuorumEpochResponse
            | EndQuorumEpochResponse
            | FetchResponse
            | FetchSnapshotResponse,
        ):
            self._on_response(message.src, message.request_id, message.body, now_ms)
        else:
            self._on_request(message.src, message.request_id, message.body, now_ms)
        self._drive(now_ms)

    def poll(self, now_ms: int) -> None:
        expired = [rid for rid, r in self._inflight.items() if r.deadline_ms <= now_ms]
        for rid in expired:
            self._request_failed(rid, now_ms)
        replication.expire_purgatory(self, now_ms)
        self._drive(now_ms)

    def append(self, values: Sequence[bytes], now_ms: int) -> int:
        """Append one batch of records as leader; returns its last offset."""
        role = self._qs.role
        if not isinstance(role, Leader):
            raise NotLeaderError(self._qs.leader_id, self._qs.epoch)
        if not values:
            raise ValueError("append needs at least one record")
        return replication.leader_append(self, role, values, now_ms)

    def on_flushed(self, now_ms: int) -> None:
        """The driver flushed the log (``Ready.must_flush``)."""
        role = self._qs.role
        if isinstance(role, Leader):
            replication.update_high_watermark(self, role, now_ms)
        self._drive(now_ms)

    def create_snapshot(self, end_offset: int, now_ms: int) -> RaftSnapshotWriter:
        """A writer for a snapshot of everything below ``end_offset`` (committed, B11)."""
        log = self.log
        if not log.start_offset < end_offset <= self.high_watermark:
            raise InvalidSnapshotError(
                f"snapshot end offset {end_offset} outside ({log.start_offset}, "
                f"{self.high_watermark}] (log start, high watermark)"
            )
        epoch = log.epoch_at(end_offset - 1)
        assert epoch is not None, end_offset
        sid = OffsetAndEpoch(end_offset, epoch)
        return RaftSnapshotWriter(self.snapshots.create(sid), sid, now_ms, self._snapshot_frozen)

    def shutdown(self, now_ms: int) -> None:
        """Graceful shutdown: a leader resigns and sends EndQuorumEpoch (B8)."""
        role = self._qs.role
        if isinstance(role, Leader):
            self._qs.to_resigned(now_ms, role.successors_by_progress())
        self._drive(now_ms)

    # -- outputs --------------------------------------------------------------------------

    def ready(self, now_ms: int) -> Ready:
        """Drain the pending outputs (see ``Ready`` for the order the driver follows). After
        ``on_flushed`` call ``ready`` again: flushing may commit and release more."""
        ready = Ready(
            must_flush=self._must_flush,
            messages=self._out,
            snapshot_loaded=self._snapshot_loaded,
            high_watermark=self.high_watermark if self._hwm_dirty else None,
            leader_change=self._leader_change(),
            next_deadline_ms=self._next_deadline_ms(now_ms),
        )
        self._out = []
        self._must_flush = self._hwm_dirty = False
        self._snapshot_loaded = None
        return ready

    def _leader_change(self) -> LeaderAndEpoch | None:
        """Kafka's rule: a remote (or unknown) leader is reported at once; the local leader
        only once its epoch start offset is committed, so the application has seen every
        committed record before it starts writing."""
        current = LeaderAndEpoch(self._qs.leader_id, self._qs.epoch)
        if current == self._notified:
            return None
        role = self._qs.role
        if isinstance(role, Leader) and self.high_watermark <= role.epoch_start_offset:
            return None
        self._notified = current
        return current

    def _next_deadline_ms(self, now_ms: int) -> int:
        deadline = _role_deadline(self._qs.role)
        for r in self._inflight.values():
            deadline = min(deadline, r.deadline_ms)
        for parked in self.purgatory.values():
            deadline = min(deadline, parked.deadline_ms)
        for at in self._backoff.values():
            if at > now_ms:
                deadline = min(deadline, at)
        if self.fetch_retry_at_ms > now_ms:
            deadline = min(deadline, self.fetch_retry_at_ms)
        return max(deadline, now_ms)

    # -- plumbing used by replication.py ----------------------------------------------------

    def send(
        self, dst: int, body: RaftRequest, kind: str, now_ms: int, endpoint: Endpoint | None = None
    ) -> int:
        rid = self._next_request_id
        self._next_request_id += 1
        pre_vote = isinstance(body, VoteRequest) and body.pre_vote
        self._inflight[rid] = _Request(dst, kind, now_ms + self.config.request_timeout_ms, pre_vote)
        self._busy[(dst, kind)] = rid
        self._out.append(Outbound(dst, rid, body, endpoint))
        return rid

    def respond(self, dst: int, request_id: int, body: RaftResponse) -> None:
        self._out.append(Outbound(dst, request_id, body))

    def request_flush(self) -> None:
        self._must_flush = True

    def set_high_watermark(self, offset: int) -> bool:
        """Raise the high watermark (never lowers it, B7). True when it moved."""
        if offset <= self.high_watermark:
            return False
        self.high_watermark = offset
        self._hwm_dirty = True
        return True

    def snapshot_installed(self, sid: OffsetAndEpoch) -> None:
        self._snapshot_loaded = sid

    def leader_endpoints(self) -> tuple[Endpoint, ...]:
        role = self._qs.role
        if isinstance(role, Leader | Resigned):
            return self._endpoints
        if isinstance(role, Follower):
            return role.leader_endpoints
        return ()

    def cluster_ok(self, cluster_id: str | None) -> bool:
        """B12: a non-null ClusterId must equal ours."""
        return (
            cluster_id is None
            or self.config.cluster_id is None
            or (cluster_id == self.config.cluster_id)
        )

    def follow(
        self, epoch: int, leader_id: int, endpoints: tuple[Endpoint, ...], now_ms: int
    ) -> None:
        """Follow ``leader_id`` in ``epoch`` (>= ours), going through Unattached where the
        table has no direct edge (a leader learning of a newer leader)."""
        qs = self._qs
        role = qs.role
        if isinstance(role, Follower) and role.epoch == epoch and role.leader_id == leader_id:
            return
        if isinstance(role, Leader | Resigned) and epoch == role.epoch:
            return  # two leaders in one epoch cannot be: the sender is wrong, ignore it
        if isinstance(role, Follower) and epoch == role.epoch:
            return  # a different leader in our epoch: bad input, ignore it
        if isinstance(role, Leader):
            qs.to_unattached(epoch, now_ms)
        qs.to_follower(epoch, leader_id, endpoints, now_ms)

    def on_response_epoch(
        self, epoch: int, leader_id: int, endpoints: tuple[Endpoint, ...], now_ms: int
    ) -> bool:
        """Kafka's ``maybeHandleCommonResponse``: learn a newer epoch or the leader of ours
        from any response. True when the role changed (or the response is from an older
        epoch): the caller must ignore the rest of the response."""
        qs = self._qs
        if epoch < qs.epoch:
            return True
        local = self.local_key.id
        if epoch > qs.epoch:
            if leader_id not in (NO_LEADER, local):
                self.follow(epoch, leader_id, endpoints, now_ms)
            else:
                qs.to_unattached(epoch, now_ms)
            return True
        # Same epoch: only a leader we did not know is news. A Prospective that remembers
        # the leader of its epoch keeps counting pre-votes whose answer still names that
        # leader (else two followers that lost the leader ping-pong forever, seed 001).
        role = qs.role
        unknown = isinstance(role, Unattached | Candidate) or (
            isinstance(role, Prospective) and role.leader_id == NO_LEADER
        )
        if leader_id not in (NO_LEADER, local) and unknown:
            self.follow(epoch, leader_id, endpoints, now_ms)
            return True
        return False

    # -- request dispatch -----------------------------------------------------------------

    def _on_request(
        self, src: int, rid: int, body: RaftResponse | RaftRequest, now_ms: int
    ) -> None:
        if isinstance(body, FetchRequest):
            replication.handle_fetch_request(self, src, rid, body, now_ms)
        elif isinstance(body, FetchSnapshotRequest):
            replication.handle_fetch_snapshot_request(self, src, rid, body, now_ms)
        elif isinstance(body, VoteRequest):
            self.respond(src, rid, self._handle_vote(body, now_ms))
        elif isinstance(body, BeginQuorumEpochRequest):
            self.respond(src, rid, self._handle_begin(body, now_ms))
        elif isinstance(body, EndQuorumEpochRequest):
            self.respond(src, rid, self._handle_end(body, now_ms))

    def _on_response(self, src: int, rid: int, body: RaftResponse, now_ms: int) -> None:
        req = self._inflight.pop(rid, None)
        if req is None or req.dst != src:
            return  # stale: sent before a transition, or never sent by us (B12)
        self._release(rid, req)
        if isinstance(body, FetchResponse):
            replication.handle_fetch_response(self, src, body, now_ms)
        elif isinstance(body, FetchSnapshotResponse):
            replication.handle_fetch_snapshot_response(self, src, body, now_ms)
        elif isinstance(body, VoteResponse):
            self._handle_vote_response(src, req, body, now_ms)
        elif isinstance(body, BeginQuorumEpochResponse | EndQuorumEpochResponse):
            self._handle_begin_end_response(src, req, body, now_ms)

    def _release(self, rid: int, req: _Request) -> None:
        if self._busy.get((req.dst, req.kind)) == rid:
            del self._busy[(req.dst, req.kind)]
        if self.fetch_request_id == rid:
            self.fetch_request_id = None

    def _request_failed(self, rid: int, now_ms: int) -> None:
        req = self._inflight.pop(rid, None)
        if req is None:
            return
        self._release(rid, req)
        retry_at = now_ms + self.config.retry_backoff_ms
        if req.kind in ("fetch", "snapshot"):
            self.fetch_retry_at_ms = retry_at
        else:
            self._backoff[(req.dst, req.kind)] = retry_at

    def backoff_fetch(self, now_ms: int) -> None:
        self.fetch_retry_at_ms = now_ms + self.config.retry_backoff_ms

    # -- Vote (B3, C2-C4) -----------------------------------------------------------------

    def _vote_response(self, error: ErrorCode, granted: bool, pre_vote: bool) -> VoteResponse:
        return VoteResponse(
            error, self._qs.epoch, self._qs.leader_id, granted, self.leader_endpoints(), pre_vote
        )

    def _addressed_to_us(self, key: ReplicaKey) -> bool:
        mine = self.local_key
        return key.id == mine.id and (
            key.directory_id is None
            or mine.directory_id is None
            or key.directory_id == mine.directory_id
        )

    def _handle_vote(self, req: VoteRequest, now_ms: int) -> VoteResponse:
        if not self.cluster_ok(req.cluster_id):
            return self._vote_response(ErrorCode.inconsistent_cluster_id, False, req.pre_vote)
        if not self._addressed_to_us(req.voter_key):
            return self._vote_response(ErrorCode.invalid_voter_key, False, req.pre_vote)
        qs = self._qs
        if req.candidate_epoch < qs.epoch:
            return self._vote_response(ErrorCode.fenced_leader_epoch, False, req.pre_vote)
        if req.candidate_epoch > qs.epoch:
            # A higher epoch, standard vote or pre-vote, moves us to Unattached first (B3, C3).
            qs.to_unattached(req.candidate_epoch, now_ms)
        log = self.log
        log_ok = (req.last_offset_epoch, req.last_offset) >= (
            log.last_fetched_epoch(),
            log.end_offset,
        )
        role = qs.role
        granted = req.candidate_key.id != self.local_key.id and role.can_grant_vote(
            req.candidate_key, log_ok, req.pre_vote
        )
        if granted and not req.pre_vote and qs.voted_key is None:
            qs.add_vote(req.candidate_key, now_ms)  # durable before the answer leaves (B2)
        return self._vote_response(ErrorCode.none, granted, req.pre_vote)

    def _handle_vote_response(
        self, src: int, req: _Request, resp: VoteResponse, now_ms: int
    ) -> None:
        role = self._qs.role
        if (
            req.pre_vote
            and isinstance(role, Prospective)
            and (
                resp.error == ErrorCode.unsupported_version
                or (resp.error == ErrorCode.none and not resp.pre_vote)
            )
        ):
            self._qs.to_candidate(now_ms)  # the peer predates KIP-996: old behaviour (C4)
            self._check_election(now_ms)
            return
        if self.on_response_epoch(resp.epoch, resp.leader_id, resp.leader_endpoints, now_ms):
            return
        if resp.error != ErrorCode.none:
            self._backoff[(src, "vote")] = now_ms + self.config.retry_backoff_ms
            return
        if (isinstance(role, Prospective) and req.pre_vote) or (
            isinstance(role, Candidate) and not req.pre_vote
        ):
            (role.granted if resp.vote_granted else role.rejected).add(src)
        else:
            return  # e.g. a pre-vote answer reaching a Candidate: ignored (C4)
        self._check_election(now_ms)

    def _check_election(self, now_ms: int) -> None:
        """Act on a decided (pre-)vote: Prospective -> Candidate or back; Candidate -> Leader
        or backoff."""
        qs = self._qs
        role = qs.role
        if isinstance(role, Prospective):
            result = vote_result(role.granted, role.rejected, len(qs.voters))
            if result is VoteResult.WON:
                qs.to_candidate(now_ms)
                self._check_election(now_ms)
            elif result is VoteResult.LOST:
                self._prospective_lost(role, now_ms)
        elif isinstance(role, Candidate) and role.backoff_until_ms is None:
            result = vote_result(role.granted, role.rejected, len(qs.voters))
            if result is VoteResult.WON:
                replication.become_leader(self, now_ms)
            elif result is VoteResult.LOST:
                role.backoff_until_ms = now_ms + self._election_backoff_ms(role.retries)

    def _prospective_lost(self, role: Prospective, now_ms: int) -> None:
        """C2: pre-vote lost or timed out -> Follower of the known leader, else Unattached."""
        if role.leader_id != NO_LEADER and (
            role.leader_endpoints or role.leader_id in self._qs.voters.ids
        ):
            self._qs.to_follower(role.epoch, role.leader_id, role.leader_endpoints, now_ms)
        else:
            self._qs.to_unattached(role.epoch, now_ms)

    def _election_backoff_ms(self, retries: int) -> int:
        """Kafka's binary exponential backoff after a lost election, capped (B10)."""
        spread = 2 << min(20, max(retries, 1) - 1)
        return min(
            RETRY_BACKOFF_BASE_MS * self._rng.randrange(0, spread),
            self.config.election_backoff_max_ms,
        )

    def _start_prospective(self, now_ms: int) -> None:
        self._qs.to_prospective(now_ms)
        if not self.config.pre_vote:
            self._qs.to_candidate(now_ms)  # measuring KIP-996: skip the canvassing
        self._check_election(now_ms)

    # -- BeginQuorumEpoch / EndQuorumEpoch (B8) -------------------------------------------

    def _begin_end_error(self, cluster_id: str | None, epoch: int) -> ErrorCode | None:
        if not self.cluster_ok(cluster_id):
            return ErrorCode.inconsistent_cluster_id
        if epoch < self._qs.epoch:
            return ErrorCode.fenced_leader_epoch
        return None

    def _handle_begin(self, req: BeginQuorumEpochRequest, now_ms: int) -> BeginQuorumEpochResponse:
        error = self._begin_end_error(req.cluster_id, req.leader_epoch)
        if error is None and not self._addressed_to_us(req.voter_key):
            error = ErrorCode.invalid_voter_key
        if error is None and req.leader_id == self.local_key.id:
            error = ErrorCode.invalid_request
        if error is None:
            self.follow(req.leader_epoch, req.leader_id, req.leader_endpoints, now_ms)
        qs = self._qs
        return BeginQuorumEpochResponse(
            error or ErrorCode.none, qs.epoch, qs.leader_id, self.leader_endpoints()
        )

    def _handle_end(self, req: EndQuorumEpochRequest, now_ms: int) -> EndQuorumEpochResponse:
        error = self._begin_end_error(req.cluster_id, req.leader_epoch)
        if error is None and req.leader_id != self.local_key.id:
            self.follow(req.leader_epoch, req.leader_id, req.leader_endpoints, now_ms)
            role = self._qs.role
            if (
                isinstance(role, Follower)
                and role.leader_id == req.leader_id
                and (not self._qs.is_observer)
            ):
                # The leader is gone: elect a successor after a delay by rank (B8), and stop
                # refusing pre-votes on its behalf.
                role.fetch_deadline_ms = now_ms + self._successor_delay_ms(req.preferred_successors)
                role.fetched_from_leader = False
        qs = self._qs
        return EndQuorumEpochResponse(
            error or ErrorCode.none, qs.epoch, qs.leader_id, self.leader_endpoints()
        )

    def _successor_delay_ms(self, successors: tuple[ReplicaKey, ...]) -> int:
        """Kafka's strict exponential delay by position: first 0, then 100, 200, 400... ms;
        not listed -> the maximum backoff."""
        position = next(
            (i for i, k in enumerate(successors) if self._addressed_to_us(k)), len(successors)
        )
        if position == 0:
            return 0
        if position >= len(successors):
            return self.config.election_backoff_max_ms
        return min(
            self.config.election_backoff_max_ms, RETRY_BACKOFF_BASE_MS * (1 << (position - 1))
        )

    def _handle_begin_end_response(
        self,
        src: int,
        req: _Request,
        resp: BeginQuorumEpochResponse | EndQuorumEpochResponse,
        now_ms: int,
    ) -> None:
        if self.on_response_epoch(resp.epoch, resp.leader_id, resp.leader_endpoints, now_ms):
            return
        if resp.error != ErrorCode.none:
            self._backoff[(src, req.kind)] = now_ms + self.config.retry_backoff_ms
            return
        role = self._qs.role
        if isinstance(role, Resigned) and req.kind == "end":
            role.unacked.discard(src)

    # -- timers and outgoing requests -----------------------------------------------------

    def _drive(self, now_ms: int) -> None:
        for _ in range(_MAX_TIMER_ROUNDS):
            if not self._fire_timers(now_ms):
                break
        self._send_requests(now_ms)

    def _fire_timers(self, now_ms: int) -> bool:
        """Fire the current role's expired timer; True when that changed the role."""
        qs = self._qs
        role = qs.role
        generation = qs.generation
        if isinstance(role, Unattached):
            # A single voter needs nobody: it campaigns at once (Kafka does the same).
            if (role.election_deadline_ms <= now_ms or qs.is_only_voter) and not qs.is_observer:
                self._start_prospective(now_ms)
        elif isinstance(role, Prospective):
            if role.election_deadline_ms <= now_ms:
                self._prospective_lost(role, now_ms)
        elif isinstance(role, Candidate):
            due = (
                role.backoff_until_ms
                if role.backoff_until_ms is not None
                else (role.election_deadline_ms)
            )
            if due <= now_ms:  # no exponential backoff on a timeout (C5)
                self._start_prospective(now_ms)
        elif isinstance(role, Follower):
            if role.fetch_deadline_ms <= now_ms:
                if qs.is_observer:
                    role.bootstrap_fetching = True
                    role.fetch_deadline_ms = now_ms + self.config.fetch_timeout_ms
                else:
                    self._start_prospective(now_ms)
        elif isinstance(role, Leader):
            if role.check_quorum_deadline_ms <= now_ms:
                qs.to_resigned(now_ms, role.successors_by_progress())  # check quorum (B9)
        elif role.election_deadline_ms <= now_ms:  # Resigned: Unattached at epoch + 1 (C5)
            qs.to_unattached(role.epoch + 1, now_ms, deadline_ms=now_ms)
        return qs.generation != generation

    def _send_requests(self, now_ms: int) -> None:
        role = self._qs.role
        if isinstance(role, Prospective | Candidate):
            if isinstance(role, Candidate) and role.backoff_until_ms is not None:
                return
            self._send_votes(role, now_ms)
        elif isinstance(role, Leader):
            replication.send_begin_quorum(self, role, now_ms)
        elif isinstance(role, Resigned):
            for dst in sorted(role.unacked):
                if self._can_send(dst, "end", now_ms):
                    self.send(
                        dst,
                        EndQuorumEpochRequest(
                            self.config.cluster_id,
                            role.epoch,
                            self.local_key.id,
                            role.preferred_successors,
                            self._endpoints,
                        ),
                        "end",
                        now_ms,
                    )
        else:
            replication.send_fetch(self, role, now_ms)

    def _can_send(self, dst: int, kind: str, now_ms: int) -> bool:
        return (dst, kind) not in self._busy and self._backoff.get((dst, kind), 0) <= now_ms

    def _send_votes(self, role: Prospective | Candidate, now_ms: int) -> None:
        pre_vote = isinstance(role, Prospective)
        log = self.log
        for dst in self._qs.voters.others(self.local_key.id):
            if (
                dst in role.granted
                or dst in role.rejected
                or not self._can_send(dst, "vote", now_ms)
            ):
                continue
            voter_key = self._qs.voters.voters[dst].key
            self.send(
                dst,
                VoteRequest(
                    self.config.cluster_id,
                    role.epoch,
                    self.local_key,
                    voter_key,
                    log.last_fetched_epoch(),
                    log.end_offset,
                    pre_vote,
                ),
                "vote",
                now_ms,
            )

    # -- transitions ------------------------------------------------------------------------

    def _on_transition(self, old: Role, new: Role) -> None:
        # Kafka's RequestManager reset: answers to anything sent before are now stale.
        self._inflight.clear()
        self._busy.clear()
        self._backoff.clear()
        self.fetch_request_id = None
        self.fetch_retry_at_ms = 0
        if isinstance(old, Leader):
            replication.drain_purgatory(self, ErrorCode.not_leader_or_follower)
        if self.snapshot_fetch is not None and not isinstance(new, Follower):
            self.snapshot_fetch.writer.abort()
            self.snapshot_fetch = None
        if self.on_transition is not None:
            self.on_transition(old, new)

    def _snapshot_frozen(self, sid: OffsetAndEpoch) -> None:
        if sid.offset > self.log.start_offset and self.snapshot_retention(sid, self.log):
            self.log.delete_before(sid)
            self.snapshots.delete_before(sid)

    def check_invariants(self) -> None:
        """Cheap self-checks for tests and the simulator."""
        log = self.log
        assert log.start_offset <= log.flushed_offset <= log.end_offset
        if isinstance(self._qs.role, Leader):
            assert self.high_watermark <= log.end_offset
        if self._qs.is_observer and self._qs.role.name not in ("unattached", "follower"):
            raise IllegalStateError(f"observer in role {self._qs.role.name}")


def _role_deadline(role: Role) -> int:
    if isinstance(role, Unattached | Prospective | Resigned):
        return role.election_deadline_ms
    if isinstance(role, Candidate):
        return (
            role.backoff_until_ms
            if role.backoff_until_ms is not None
            else (role.election_deadline_ms)
        )
    if isinstance(role, Follower):
        return role.fetch_deadline_ms
    if isinstance(role, Leader):
        return min(role.check_quorum_deadline_ms, role.begin_quorum_deadline_ms)
    return FOREVER
