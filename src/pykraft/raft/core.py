"""RaftCore: the sans-I/O KRaft replica (KIP-595, KIP-630, KIP-996).

Theory of operation. The driver feeds inputs -- ``step`` (a request or response from a peer, or
``RequestFailed``), ``poll`` (time passed), ``append`` / ``create_snapshot`` / ``shutdown``
(the application) and ``on_flushed`` (the log reached disk) -- and after each input drains
``ready()``: what to flush, what to send, what became committed, when to poll next.

Inside, every input ends with ``_drive(now)``: fire the timers of the current role (which may
change role through ``QuorumState``), then send whatever requests the role needs and does not
have in flight (a non-leader's ``on_flushed`` at the time of its last drive skips it: nothing
it reads changed). Requests are tracked by id (``requests.py``, Kafka's RequestManager); a
transition forgets them all, so a response to a request sent in an older role, epoch or
generation is dropped as stale (B12). ``dispatch.py`` routes each message to its handler.
Replication (Fetch, FetchSnapshot, the high watermark) lives in ``replication.py``; elections,
the epoch-changing requests (Vote, BeginQuorumEpoch, EndQuorumEpoch) and the role timers live
in ``elections.py``; which messages wait for the flush, in ``outputs.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pykraft.raft import (
    admin,
    describe,
    dispatch,
    elections,
    invariants,
    membership,
    reassignment,
    replication,
)
from pykraft.raft.config import InvalidSnapshotError, NotLeaderError, RaftConfig
from pykraft.raft.control import ControlState, LogHistory
from pykraft.raft.interfaces import (
    QuorumStateStore,
    RandomSource,
    Ready,
    ReplicatedLog,
    SnapshotStore,
    SnapshotWriter,
)
from pykraft.raft.messages import (
    AnyRequest,
    AnyResponse,
    DescribeQuorumResponse,
    Inbound,
    Outbound,
    RequestFailed,
    VoteRequest,
)
from pykraft.raft.outputs import Outbox
from pykraft.raft.requests import RequestKind, RequestManager, SentRequest
from pykraft.raft.roles import (
    Follower,
    Leader,
    Resigned,
    Role,
)
from pykraft.raft.snapshots import RaftSnapshotWriter
from pykraft.raft.state import QuorumState
from pykraft.raft.types import Endpoint, OffsetAndEpoch, ReplicaKey
from pykraft.raft.voters import VoterInfo, VoterSet

_MAX_TIMER_ROUNDS = 8  # bound on role changes fired by one input (each needs a new timer)


LogObserver = Callable[[str, int, bytes], None]
SnapshotRetention = Callable[[OffsetAndEpoch, ReplicatedLog], "OffsetAndEpoch | None"]


def _committed_at_start(log: ReplicatedLog, snapshots: SnapshotStore) -> int:
    """What is known committed at start: the log start, or the newest snapshot's end (a
    snapshot holds only committed records; the log may start below it when kept within
    metadata.max.retention.*)."""
    latest = snapshots.latest()
    return max(log.start_offset, 0 if latest is None else latest.offset)


class RaftCore:
    """One KRaft replica. See the module docstring and docs/CONTRACTS.md."""

    __slots__ = (
        "_driven_ms",
        "_outbox",
        "_qs",
        "_requests",
        "_scheduled",
        "bootstrap_servers",
        "changes",
        "config",
        "control",
        "endpoints",
        "fetch",
        "high_watermark",
        "local_key",
        "log",
        "on_log",
        "on_transition",
        "rng",
        "snapshot_retention",
        "snapshots",
        "was_voter",
    )

    def __init__(
        self,
        *,
        config: RaftConfig,
        local_key: ReplicaKey,
        voters: VoterSet | None,
        log: ReplicatedLog,
        quorum_state: QuorumStateStore,
        snapshots: SnapshotStore,
        rng: RandomSource,
        now_ms: int,
        endpoints: tuple[Endpoint, ...] = (),
        on_transition: Callable[[Role, Role], None] | None = None,
        bootstrap_servers: tuple[Endpoint, ...] = (),
    ) -> None:
        self.config = config
        self.local_key = local_key
        self.log = log
        self.snapshots = snapshots
        self.rng = rng
        # kraft.version, voter set and target voter set with their histories (D2); the
        # static ``voters`` only count at kraft.version 0.
        self.control = ControlState(voters if voters is not None else VoterSet({}))
        self.control.load(log, snapshots)
        current = self.control.voters
        self.endpoints = endpoints or current.endpoints(local_key.id)
        # D8: where to look for the leader when none is known (negative destination ids).
        self.bootstrap_servers = bootstrap_servers
        # Voter changes (KIP-853, KIP-642): at most one in progress, see ``VoterChanges``.
        self.changes = membership.VoterChanges()
        self._qs = QuorumState(
            config=config,
            local_key=local_key,
            voters=current,
            store=quorum_state,
            log=log,
            rng=rng,
            now_ms=now_ms,
            kraft_version=lambda: self.control.kraft_version,
        )
        self._qs.on_transition = self._on_transition
        # Invariant: never decreases while this object lives; <= log end offset on a leader.
        self.high_watermark = _committed_at_start(log, snapshots)
        # In a committed voter set once (durable: ``remember_voter``): no auto-join back.
        self.was_voter = quorum_state.was_voter()
        self._refresh_committed_voter()
        self._outbox = Outbox()
        self._driven_ms = -1  # the time of the last _drive
        self._requests = RequestManager()
        self.fetch = replication.FetchState()
        # Records scheduled by schedule_append, not yet in the log (Kafka's BatchAccumulator),
        # for the offsets after the log end, in order; empty unless this replica leads.
        self._scheduled: list[bytes] = []
        # Policy hook (KIP-630 retention), given a snapshot just frozen: the kept snapshot to
        # move the log start to, or None. By default the new one (a node keeps the log within
        # metadata.max.retention.*: node/log_retention.py).
        self.snapshot_retention: SnapshotRetention = lambda sid, _log: sid
        self.on_transition = on_transition  # sees every role change (traces, tests, metrics)
        self.on_log: LogObserver | None = None  # every log, hwm and voters change (spec_steps)
        self._drive(now_ms)

    # -- read-only observation ------------------------------------------------------------

    # The properties read the quorum state's stored fields directly: the simulator reads
    # them after every event.

    @property
    def role(self) -> str:
        return self._qs.role.name

    @property
    def state(self) -> Role:
        return self._qs.role

    @property
    def leader_epoch_start_offset(self) -> int | None:
        role = self._qs.role
        return role.epoch_start_offset if isinstance(role, Leader) else None

    @property
    def quorum(self) -> QuorumState:
        return self._qs

    @property
    def is_observer(self) -> bool:
        return self._qs.is_observer

    @property
    def epoch(self) -> int:
        return self._qs.role.epoch

    @property
    def leader_id(self) -> int:
        return self._qs.leader_id

    @property
    def voted_key(self) -> ReplicaKey | None:
        return self._qs.voted_key

    @property
    def caught_up_ms(self) -> int:
        return self.fetch.caught_up_ms

    @property
    def voters(self) -> VoterSet:
        """The voter set in force: the latest VotersRecord, committed or not (D2)."""
        return self._qs.voters

    @property
    def kraft_version(self) -> int:
        return self.control.kraft_version

    @property
    def voter_history(self) -> LogHistory[VoterSet]:
        """(offset, voter set) per VotersRecord read; -1 is the bootstrap checkpoint."""
        return self.control.voter_history

    @property
    def voter_change(self) -> membership.PendingChange | None:
        """The voter change in progress at this leader, if any."""
        return self.changes.pending

    @property
    def uncommitted_voter_change(self) -> bool:
        """A VotersRecord at or above the high watermark is in force."""
        offset = self.control.voters_offset
        return offset is not None and offset >= self.high_watermark

    @property
    def target_voters(self) -> VoterSet | None:
        """The KIP-642 target voter set in force (committed or not), if any."""
        target = self.control.target
        return None if target is None else target[1]

    def reassignment_progress(self) -> reassignment.ReassignmentProgress | None:
        return reassignment.progress(self)

    def describe_quorum(self, now_ms: int) -> DescribeQuorumResponse:
        """DescribeQuorum v2's data (D11); NOT_LEADER_OR_FOLLOWER away from the leader."""
        return describe.describe_quorum(self, now_ms)

    # -- inputs ---------------------------------------------------------------------------

    def step(self, message: Inbound | RequestFailed, now_ms: int) -> None:
        if isinstance(message, RequestFailed):
            self._request_failed(message.request_id, now_ms)
        elif dispatch.is_request(message.body):
            dispatch.on_request(self, message.src, message.request_id, message.body, now_ms)
        else:
            self._on_response(message.src, message.request_id, message.body, now_ms)
        self._drive(now_ms)

    def poll(self, now_ms: int) -> None:
        for rid in self._requests.expired(now_ms):
            self._request_failed(rid, now_ms)
        replication.expire_purgatory(self, now_ms)
        self._drive(now_ms)

    def append(self, values: Sequence[bytes], now_ms: int) -> int:
        """Append one batch of records as leader (after any scheduled ones); returns its last
        offset."""
        role = self._qs.role
        if not isinstance(role, Leader):
            raise NotLeaderError(self._qs.leader_id, self._qs.epoch)
        if not values:
            raise ValueError("append needs at least one record")
        self.drain_scheduled(now_ms)
        return replication.leader_append(self, role, values, now_ms)

    def schedule_append(self, values: Sequence[bytes]) -> int:
        """Kafka's ``RaftClient.scheduleAppend``: as leader, take ``values`` for the next
        batch without writing the log; returns the offset the last of them will have. The
        records reach the log at the next :meth:`drain_scheduled` (the driver's linger), or
        before anything else is appended; they are dropped if this replica stops leading
        first (their offsets then hold another leader's records: the application checks the
        epoch of what commits, as Kafka's does)."""
        if not isinstance(self._qs.role, Leader):
            raise NotLeaderError(self._qs.leader_id, self._qs.epoch)
        if not values:
            raise ValueError("append needs at least one record")
        scheduled = self._scheduled
        scheduled.extend(values)
        return self.log.end_offset + len(scheduled) - 1

    @property
    def scheduled_count(self) -> int:
        """Records taken by :meth:`schedule_append` and not yet in the log."""
        return len(self._scheduled)

    def drain_scheduled(self, now_ms: int) -> int | None:
        """Append the scheduled records as one batch; their last offset, or None if none."""
        if not self._scheduled:
            return None
        role = self._qs.role
        assert isinstance(role, Leader), "records scheduled on a replica that does not lead"
        values, self._scheduled = self._scheduled, []
        return replication.leader_append(self, role, values, now_ms)

    def on_flushed(self, now_ms: int) -> None:
        """The driver flushed the log (``Ready.must_flush``)."""
        role = self._qs.role
        if isinstance(role, Leader):
            replication.update_high_watermark(self, role, now_ms)
        elif now_ms == self._driven_ms:
            # Only a leader reads the flushed offset (its own counts toward the HWM). Any
            # other role was driven at this very time by the last input: its due timers fired
            # and what it sends went out (a follower's next Fetch is in the Ready that asked
            # for this flush). Driving again would find nothing to do.
            return
        self._drive(now_ms)

    def on_snapshot_durable(self, writer: SnapshotWriter, valid: bool, now_ms: int) -> None:
        """The driver made a fetched snapshot durable (``Ready.snapshot_to_make_durable``);
        ``valid`` False when its ``make_durable`` refused the bytes (it is fetched again)."""
        replication.snapshot_durable(self, writer, valid, now_ms)
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
        offset_ms = self.config.clock_offset_ms
        control = self.control.snapshot_batches(end_offset, epoch, now_ms + offset_ms)
        return RaftSnapshotWriter(
            self.snapshots.create(sid), sid, now_ms, self._snapshot_frozen, control, offset_ms
        )

    # -- admin operations (KIP-853, KIP-642): answered in Ready.completed ---------------------

    def add_voter(
        self,
        key: ReplicaKey,
        endpoints: tuple[Endpoint, ...],
        now_ms: int,
        timeout_ms: int | None = None,
    ) -> int:
        """Start adding ``key`` (D4); returns the operation id reported in Ready.completed."""
        op_id = admin.add_voter(self, key, endpoints, now_ms, timeout_ms)
        self._drive(now_ms)
        return op_id

    def remove_voter(self, key: ReplicaKey, now_ms: int) -> int:
        """Start removing ``key`` (D5); the leader may remove itself."""
        op_id = admin.remove_voter(self, key, now_ms)
        self._drive(now_ms)
        return op_id

    def update_kraft_version(self, version: int, now_ms: int, validate_only: bool = False) -> int:
        """UpdateFeatures for kraft.version (D10): upgrade 0 -> 1; downgrades are refused."""
        op_id = admin.update_kraft_version(self, version, now_ms, validate_only)
        self._drive(now_ms)
        return op_id

    def set_target_voters(self, voters: Sequence[VoterInfo], now_ms: int) -> int:
        """KIP-642: reach ``voters`` through single changes (E1-E3). Submitting the current
        voter set cancels a running reassignment."""
        op_id = admin.set_target_voters(self, voters, now_ms)
        self._drive(now_ms)
        return op_id

    def shutdown(self, now_ms: int) -> None:
        """Graceful shutdown: a leader resigns and sends EndQuorumEpoch (B8)."""
        role = self._qs.role
        if isinstance(role, Leader):
            self._qs.to_resigned(now_ms, role.progress.successors())
        self._drive(now_ms)

    # -- outputs --------------------------------------------------------------------------

    def ready(self, now_ms: int) -> Ready:
        """Drain the pending outputs (``Outbox.ready``; see ``Ready`` for the order the
        driver follows). After ``on_flushed`` call ``ready`` again: flushing may commit and
        release more. With nothing pending the answer is a shared read-only ``IdleReady``."""
        return self._outbox.ready(self, self._requests, now_ms)

    # -- plumbing used by replication.py ----------------------------------------------------

    def send(
        self,
        dst: int,
        body: AnyRequest,
        kind: RequestKind,
        now_ms: int,
        endpoint: Endpoint | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> int:
        pre_vote = isinstance(body, VoteRequest) and body.pre_vote
        timeout = self.config.request_timeout_ms if timeout_ms is None else timeout_ms
        rid = self._requests.track(dst, kind, now_ms + timeout, pre_vote)
        self._outbox.messages.append(Outbound(dst, rid, body, endpoint))
        return rid

    def respond(self, dst: int, request_id: int, body: AnyResponse) -> None:
        self._outbox.messages.append(Outbound(dst, request_id, body))

    def request_flush(self) -> None:
        self._outbox.must_flush = True

    def set_high_watermark(self, offset: int) -> bool:
        """Raise the high watermark (never lowers it, B7). True when it moved."""
        if offset <= self.high_watermark:
            return False
        self.high_watermark = offset
        self._outbox.hwm_dirty = True
        if self.on_log is not None:
            self.on_log("hwm", offset, b"")
        if self._qs.is_observer or not self.was_voter:
            self._refresh_committed_voter()
        return True

    def _refresh_committed_voter(self) -> None:
        """Keep ``QuorumState.committed_voter`` (``may_campaign``, only an observer needs
        it) and ``was_voter`` in step with the voter history and the high watermark."""
        qs = self._qs
        track = not self.was_voter and self.control.kraft_version >= 1
        if not qs.is_observer and not track:
            qs.committed_voter = False
            return
        member = self.control.committed_voters(self.high_watermark).is_voter(self.local_key)
        qs.committed_voter = qs.is_observer and member
        if member and track:
            self.was_voter = True
            qs.store.remember_voter()

    def snapshot_fetched(self, writer: SnapshotWriter) -> None:
        self._outbox.snapshot_to_make_durable = writer

    def log_reset(self, sid: OffsetAndEpoch) -> None:
        """The log now starts at the fetched snapshot ``sid`` (before the hwm moves to it)."""
        if self.on_log is not None:
            self.on_log("snapshot", sid.offset, b"")

    def snapshot_installed(self, sid: OffsetAndEpoch, now_ms: int) -> None:
        self._outbox.snapshot_loaded = sid
        self.control.load(self.log, self.snapshots)
        self.voters_maybe_changed(now_ms)

    # -- the log's control records (D2): every change of the log goes through here ----------

    def append_own(self, batches: bytes, now_ms: int) -> int:
        """Append batches this leader wrote; returns the new log end offset. A control
        record's writer drains the scheduled records first (``drain_scheduled``): they were
        promised the offsets after the log end."""
        assert not self._scheduled, "an append ahead of the scheduled records"
        base = self.log.end_offset
        end = self.log.append(batches)
        if self.on_log is not None:
            self.on_log("append", base, batches)
        self.control.apply_batches(batches)
        self.request_flush()
        self.voters_maybe_changed(now_ms)
        # Parked fetches are answered at once, before our own flush (Ready.messages): the
        # followers' fsyncs overlap ours; our offset counts only once flushed (B13).
        replication.complete_purgatory(self, now_ms)
        return end

    def appended_fetched(self, batches: bytes, now_ms: int) -> None:
        """A follower appended what its leader sent."""
        if self.on_log is not None:
            self.on_log("fetched", -1, batches)
        self.control.apply_batches(batches)
        self.request_flush()
        self.voters_maybe_changed(now_ms)

    def truncated(self, end_offset: int, now_ms: int) -> None:
        """The log was truncated: revert the control records above ``end_offset``."""
        if self.on_log is not None:
            self.on_log("truncate", end_offset, b"")
        self.control.truncate(end_offset)
        self.voters_maybe_changed(now_ms)

    def voters_maybe_changed(self, now_ms: int) -> None:
        voters = self.control.voters
        if voters is self._qs.voters:
            return
        self._qs.voters = voters
        if self.on_log is not None:
            offset = self.control.voters_offset
            self.on_log("voters", -2 if offset is None else offset, b"")
        self._refresh_committed_voter()
        role = self._qs.role
        if isinstance(role, Leader):
            membership.sync_progress(self, role, now_ms)

    def leader_endpoints(self) -> tuple[Endpoint, ...]:
        role = self._qs.role
        if isinstance(role, Leader | Resigned):
            return self.endpoints
        if isinstance(role, Follower):
            # The leader may have joined the voter set after we began following it (D8): a
            # replica asking us must still learn where it is.
            return role.leader_endpoints or self._qs.voters.endpoints(role.leader_id)
        return ()

    # -- request dispatch -----------------------------------------------------------------

    def _on_response(self, src: int, rid: int, body: AnyResponse, now_ms: int) -> None:
        req = self._requests.inflight.get(rid)
        # Stale: sent before a transition, never sent by us, or answered by another node than
        # the one asked (B12). Bootstrap servers (negative ids, D8) may answer as any node.
        if req is None or (req.dst >= 0 and req.dst != src):
            return
        self._release(rid)
        dispatch.on_response(self, src, rid, req, body, now_ms)

    def _release(self, rid: int) -> SentRequest | None:
        """Stop tracking ``rid``; None when it was not in flight."""
        req = self._requests.pop(rid)
        if req is not None:
            self.fetch.released(rid)
        return req

    def _request_failed(self, rid: int, now_ms: int) -> None:
        req = self._release(rid)
        if req is None:
            return
        if req.kind == RequestKind.API_VERSIONS:
            membership.probe_failed(self, rid)
        retry_at = now_ms + self.config.retry_backoff_ms
        if req.kind in (RequestKind.FETCH, RequestKind.SNAPSHOT):
            self.fetch.failed(retry_at)
        else:
            self._requests.backoff(req.dst, req.kind, retry_at)

    # -- timers and outgoing requests -----------------------------------------------------

    def _drive(self, now_ms: int) -> None:
        self._driven_ms = now_ms
        for _ in range(_MAX_TIMER_ROUNDS):
            if not elections.fire_timers(self, now_ms):
                break
        role = self._qs.role
        if isinstance(role, Leader):
            reassignment.on_high_watermark(self)
            membership.advance(self, role, now_ms)
            if self._qs.role is role:
                reassignment.step(self, role, now_ms)
        dispatch.send_requests(self, now_ms)

    def can_send(self, dst: int, kind: RequestKind, now_ms: int) -> bool:
        return self._requests.can_send(dst, kind, now_ms)

    def backoff(
        self, dst: int, kind: RequestKind, now_ms: int, delay_ms: int | None = None
    ) -> None:
        """Do not send ``kind`` to ``dst`` again before the retry backoff (or ``delay_ms``)."""
        delay = self.config.retry_backoff_ms if delay_ms is None else delay_ms
        self._requests.backoff(dst, kind, now_ms + delay)

    # -- transitions ------------------------------------------------------------------------

    def _on_transition(self, old: Role, new: Role) -> None:
        # Kafka's RequestManager reset: answers to anything sent before are now stale.
        self._requests.clear()
        self._scheduled.clear()  # never appended: their offsets go to the next leader
        replication.on_transition(self, old, new)
        if isinstance(old, Leader):
            membership.leadership_lost(self)
            reassignment.leadership_lost(self)
        if self.on_transition is not None:
            self.on_transition(old, new)

    def _snapshot_frozen(self, sid: OffsetAndEpoch) -> None:
        target = self.snapshot_retention(sid, self.log)
        if target is not None:
            self.delete_before_snapshot(target)

    def delete_before_snapshot(self, sid: OffsetAndEpoch) -> bool:
        """Advance the log start to the kept snapshot ``sid`` and forget the older snapshots
        (Kafka's ``deleteBeforeSnapshot``): only to a snapshot the store holds, above the log
        start and at or below the high watermark. Whether it moved."""
        log = self.log
        if not log.start_offset < sid.offset <= self.high_watermark:
            return False
        if self.snapshots.size(sid) is None:
            return False
        log.delete_before(sid)
        self.snapshots.delete_before(sid)
        self.control.forget_before(sid.offset)
        return True

    # Cheap self-checks for tests and the simulator, run after every simulated event.
    def check_invariants(self) -> None:
        """The core's own cheap asserts (``invariants.check_core``)."""
        invariants.check_core(self)
