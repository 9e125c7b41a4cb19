"""Voter changes (KIP-853) at the leader: AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter and
ControllerRegistration (D4-D6). The voter's side of UpdateRaftVoter and an observer's
auto-join (D6, D9) are in ``joining.py``.

Theory of operation. A leader runs at most one voter change at a time: ``core.changes.pending``
(a ``PendingChange``), used by operator requests, the kraft.version upgrade and the KIP-642
reassignment steps alike. Another operation arriving meanwhile gets REQUEST_TIMED_OUT at once
(Kafka does the same). A change goes through phases:

    waiting     until the current epoch is committed (HWM past the epoch start), no
                VotersRecord is uncommitted and, for an add, the new replica is caught up
    probing     an add asks the new replica's ApiVersions for its kraft.version range
    committing  the record is appended; done when the high watermark passes it

Unlike Kafka (which answers REQUEST_TIMED_OUT at once when a condition does not hold yet,
see KAFKA-17147), the conditions are *waited for* until the operation's deadline. Leaving
the leader role answers NOT_LEADER_OR_FOLLOWER.

Safety rules kept here (the 2015 single-server membership bug): no leader appends a voter
change before a record of its own epoch is committed, and never while another VotersRecord is
uncommitted, so two voter sets in competition differ by at most one voter. A leader outside
the voter set (removing itself) counts neither toward the HWM nor toward check quorum (see
``replication.py``); it resigns once its removal commits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from pykraft.raft.control import bootstrap_batches, has_key
from pykraft.raft.interfaces import OperationResult
from pykraft.raft.messages import (
    AddRaftVoterRequest,
    AddRaftVoterResponse,
    AlterVotersResponse,
    ApiVersionsRequest,
    ApiVersionsResponse,
    ControllerRegistrationRequest,
    ControllerRegistrationResponse,
    RemoveRaftVoterRequest,
    RemoveRaftVoterResponse,
    UpdateFeaturesRequest,
    UpdateFeaturesResponse,
    UpdateRaftVoterRequest,
    UpdateRaftVoterResponse,
)
from pykraft.raft.requests import RequestKind
from pykraft.raft.roles import Leader
from pykraft.raft.types import Endpoint, ReplicaKey
from pykraft.raft.voters import VoterInfo, VoterSet
from pykraft.records import voters_batch

if TYPE_CHECKING:
    from pykraft.raft.context import CoreContext
    from pykraft.raft.reassignment import TargetWait

from pykraft.raft.control import voter_entries


@dataclass(frozen=True, slots=True)
class Reply:
    """Where the answer of an operation goes: an API caller (``op_id`` > 0, reported in
    ``Ready.completed``), a peer's request (``peer``: answered to ``src`` under
    ``request_id``), or nobody (a reassignment step: neither)."""

    op_id: int = 0
    src: int = 0
    request_id: int = 0
    peer: bool = False

    @property
    def internal(self) -> bool:
        return self.op_id == 0 and not self.peer


# The changes a leader runs one at a time, and how far one has got: waiting for the new voter
# to catch up (or for the epoch's first commit), probing its ApiVersions, committing its record.
class ChangeOperation(StrEnum):
    ADD_VOTER = "add_voter"
    REMOVE_VOTER = "remove_voter"
    UPDATE_KRAFT_VERSION = "update_kraft_version"
    SET_TARGET_VOTERS = "set_target_voters"


class ChangePhase(StrEnum):
    WAITING = "waiting"
    PROBING = "probing"
    COMMITTING = "committing"


@dataclass(slots=True)
class VoterChanges:
    """What the leader's voter-change machinery owns (D4-D6, D9, D10, E1-E3): the one change
    in progress, the KIP-642 callers waiting for their target, the voters' UpdateRaftVoter
    reports and controllers' registrations, and the operators' results not yet handed out.

    Invariants: at most one change in progress (``pending``); ``pending`` and
    ``target_waits`` are empty unless leading (``leadership_lost`` answers them)."""

    pending: PendingChange | None = None
    target_waits: list[TargetWait] = field(default_factory=list)
    reported_voters: dict[int, VoterInfo] = field(default_factory=dict)  # kraft.version 0
    # Observers' kraft.version ranges (D10) and controllers' endpoints (KIP-919), from
    # ControllerRegistration: what a KIP-642 target naming an observer by id needs.
    registered_observers: dict[int, tuple[int, int]] = field(default_factory=dict)
    controller_endpoints: dict[int, tuple[Endpoint, ...]] = field(default_factory=dict)
    completed: list[OperationResult] = field(default_factory=list)  # for Ready.completed
    next_op_id: int = 1

    def new_op_id(self) -> int:
        op_id = self.next_op_id
        self.next_op_id += 1
        return op_id

    def complete(self, op_id: int, operation: str, error: ErrorCode, message: str | None) -> None:
        self.completed.append(OperationResult(op_id, operation, error, message))


@dataclass(slots=True)
class PendingChange:
    """The one voter change a leader runs. Invariant: ``record_offset >= 0`` iff phase is
    "committing"; ``probe_request_id`` is set only while "probing"."""

    operation: ChangeOperation
    key: ReplicaKey
    endpoints: tuple[Endpoint, ...]
    deadline_ms: int
    reply: Reply
    phase: ChangePhase = ChangePhase.WAITING
    record_offset: int = -1
    kraft_versions: tuple[int, int] | None = None  # the new voter's range (add)
    probe_request_id: int | None = None
    target_version: int = 0  # update_kraft_version


# -- starting operations at the leader ------------------------------------------------------


def answer_now(
    core: CoreContext,
    operation: ChangeOperation,
    reply: Reply,
    error: ErrorCode,
    message: str | None,
) -> None:
    """Answer an operation that never became the pending change: refused (``error``), or
    nothing to do (``ErrorCode.none``, e.g. a target already durable)."""
    finish(core, PendingChange(operation, ReplicaKey(-1), (), 0, reply), error, message)


def start(core: CoreContext, change: PendingChange, now_ms: int) -> None:
    """Common checks, then make ``change`` the pending one (answers at once on an error)."""
    leader = core.state
    assert isinstance(leader, Leader)
    if core.control.kraft_version < 1 and change.operation != ChangeOperation.UPDATE_KRAFT_VERSION:
        version = core.control.kraft_version
        answer_now(
            core,
            change.operation,
            change.reply,
            ErrorCode.unsupported_version,
            f"kraft.version is {version}: voter changes need kraft.version 1",
        )
        return
    if core.changes.pending is not None:
        answer_now(
            core,
            change.operation,
            change.reply,
            ErrorCode.request_timed_out,
            "another voter change is in progress",
        )
        return
    voters = core.voters
    if change.operation == ChangeOperation.ADD_VOTER and change.key.id in voters.ids:
        answer_now(
            core,
            change.operation,
            change.reply,
            ErrorCode.duplicate_voter,
            f"voter id {change.key.id} is already in the voter set",
        )
        return
    if change.operation == ChangeOperation.REMOVE_VOTER:
        if not voters.is_voter(change.key) or change.key.id not in voters.ids:
            answer_now(
                core,
                change.operation,
                change.reply,
                ErrorCode.voter_not_found,
                f"{change.key} is not in the voter set",
            )
            return
        if len(voters) == 1:
            # Kafka's VoterSet.removeVoter refuses to empty the set: VOTER_NOT_FOUND.
            answer_now(
                core,
                change.operation,
                change.reply,
                ErrorCode.voter_not_found,
                f"cannot remove {change.key}: the last voter",
            )
            return
        change = PendingChange(
            change.operation, voters.voters[change.key.id].key, (), change.deadline_ms, change.reply
        )
    core.changes.pending = change
    advance(core, leader, now_ms)


def ready_to_change(core: CoreContext, leader: Leader) -> bool:
    """The current epoch is committed and no VotersRecord is uncommitted (D4 steps 2, 3)."""
    return core.high_watermark > leader.epoch_start_offset and not core.uncommitted_voter_change


def caught_up(core: CoreContext, leader: Leader, key: ReplicaKey, now_ms: int) -> bool:
    """The replica fetched at the leader's log end offset within the last fetch timeout."""
    return leader.progress.caught_up(key, now_ms, core.config.fetch_timeout_ms)


def append_voters(core: CoreContext, leader: Leader, voters: VoterSet, now_ms: int) -> int:
    """Append a VotersRecord; returns its offset. The two safety rules are asserted here."""
    assert ready_to_change(core, leader), "voter change before the epoch or last change committed"
    core.drain_scheduled(now_ms)
    log = core.log
    offset = log.end_offset
    ts = core.config.timestamp_ms(now_ms)
    core.append_own(voters_batch(offset, leader.epoch, ts, voter_entries(voters)), now_ms)
    return offset


def advance(core: CoreContext, leader: Leader, now_ms: int) -> None:
    """Move the pending change on as far as it can go now."""
    change = core.changes.pending
    if change is None:
        if core.quorum.is_observer and core.high_watermark > (core.control.voters_offset or -1):
            # D5 for a leader elected while its removal was not committed (``may_campaign``,
            # bug 9 in tests/sim/test_regressions.py): it resigns once the removal commits.
            core.quorum.to_resigned(now_ms, leader.progress.successors())
            return
        _update_own_entry(core, leader, now_ms)
        return
    if change.phase == ChangePhase.COMMITTING:
        if core.high_watermark > change.record_offset:
            _committed(core, leader, change, now_ms)
        elif change.deadline_ms <= now_ms:
            finish(core, change, ErrorCode.request_timed_out, "the change did not commit in time")
        return
    if change.deadline_ms <= now_ms:
        finish(
            core, change, ErrorCode.request_timed_out, _waiting_for(core, leader, change, now_ms)
        )
        return
    if not ready_to_change(core, leader):
        return
    voters = core.voters
    if change.operation == ChangeOperation.ADD_VOTER:
        if change.key.id in voters.ids:  # another leader's change committed meanwhile
            finish(core, change, ErrorCode.duplicate_voter, f"voter id {change.key.id} exists")
            return
        if not caught_up(core, leader, change.key, now_ms):
            return
        if change.kraft_versions is None:
            _probe(core, change, now_ms)
            return
        low, high = change.kraft_versions
        new = voters.with_voter(VoterInfo(change.key, change.endpoints, low, high))
        change.record_offset = append_voters(core, leader, new, now_ms)
    elif change.operation == ChangeOperation.REMOVE_VOTER:
        if not has_key(voters, change.key):
            finish(core, change, ErrorCode.voter_not_found, f"{change.key} is not a voter")
            return
        change.record_offset = append_voters(core, leader, voters.without(change.key.id), now_ms)
    else:
        change.record_offset = _append_kraft_upgrade(core, leader, change, now_ms)
    change.phase = ChangePhase.COMMITTING


def _update_own_entry(core: CoreContext, leader: Leader, now_ms: int) -> None:
    """D6 for the leader itself: it sends no UpdateRaftVoter, so when its endpoints or
    kraft.version range differ from its entry (it restarted with new listeners and was
    elected before any other leader recorded them) it writes them itself, under the same
    rules as any voter change (bug 8 in tests/sim/test_regressions.py: they were never
    recorded)."""
    voters = core.voters
    current = voters.voters.get(core.local_key.id)
    endpoints = core.endpoints
    if current is None or not endpoints:
        return
    low, high = core.config.kraft_versions
    # Runs after every input of a leader: the common case (entry up to date) is decided
    # first, by the fields a rewrite would change, without building the new entry.
    if (
        current.endpoints == endpoints
        and current.min_kraft_version == low
        and current.max_kraft_version == high
    ):
        return
    if (
        current.key != core.local_key
        or core.control.kraft_version < 1
        or not ready_to_change(core, leader)
    ):
        return
    append_voters(
        core, leader, voters.with_voter(VoterInfo(current.key, endpoints, low, high)), now_ms
    )


def _waiting_for(core: CoreContext, leader: Leader, change: PendingChange, now_ms: int) -> str:
    if core.high_watermark <= leader.epoch_start_offset:
        return "timed out waiting for the leader to commit its epoch"
    if core.uncommitted_voter_change:
        return "timed out waiting for the previous voter change to commit"
    if change.operation == ChangeOperation.ADD_VOTER and not caught_up(
        core, leader, change.key, now_ms
    ):
        return f"timed out waiting for {change.key} to catch up to the log end offset"
    return f"timed out waiting for ApiVersions from {change.key}"


def _probe(core: CoreContext, change: PendingChange, now_ms: int) -> None:
    change.phase = ChangePhase.PROBING
    if change.probe_request_id is None and core.can_send(
        change.key.id, RequestKind.API_VERSIONS, now_ms
    ):
        endpoint = change.endpoints[0] if change.endpoints else None
        change.probe_request_id = core.send(
            change.key.id, ApiVersionsRequest(), RequestKind.API_VERSIONS, now_ms, endpoint
        )


def handle_api_versions_response(
    core: CoreContext, request_id: int, resp: ApiVersionsResponse, now_ms: int
) -> None:
    """D4 steps 4-5. The core already dropped answers from a node other than the one asked."""
    change = core.changes.pending
    leader = core.state
    if change is None or change.probe_request_id != request_id or not isinstance(leader, Leader):
        return
    change.probe_request_id = None
    if resp.error != ErrorCode.none:
        finish(
            core,
            change,
            ErrorCode.request_timed_out,
            f"ApiVersions of {change.key} answered {resp.error.name}",
        )
        return
    version = core.control.kraft_version
    versions = resp.kraft_versions
    if versions is None or not versions[0] <= version <= versions[1]:
        finish(
            core,
            change,
            ErrorCode.invalid_request,
            f"{change.key} supports kraft.version {versions}, not the finalized {version}",
        )
        return
    change.kraft_versions = versions
    change.phase = ChangePhase.WAITING
    advance(core, leader, now_ms)


def probe_failed(core: CoreContext, request_id: int) -> None:
    """The ApiVersions probe was refused or timed out: ask again until the deadline."""
    change = core.changes.pending
    if change is not None and change.probe_request_id == request_id:
        change.probe_request_id = None


def _committed(core: CoreContext, leader: Leader, change: PendingChange, now_ms: int) -> None:
    finish(core, change, ErrorCode.none, None)
    if change.operation == ChangeOperation.REMOVE_VOTER and change.key.id == core.local_key.id:
        # D5: the removed leader led until its removal committed; now it steps down.
        core.quorum.to_resigned(now_ms, leader.progress.successors())


def finish(core: CoreContext, change: PendingChange, error: ErrorCode, message: str | None) -> None:
    if core.changes.pending is change:
        core.changes.pending = None
    reply = change.reply
    if reply.internal:
        return
    if reply.op_id > 0:
        core.changes.complete(reply.op_id, change.operation, error, message)
        return
    body: (
        AddRaftVoterResponse
        | RemoveRaftVoterResponse
        | UpdateFeaturesResponse
        | AlterVotersResponse
    )
    if change.operation == ChangeOperation.ADD_VOTER:
        body = AddRaftVoterResponse(error, message)
    elif change.operation == ChangeOperation.REMOVE_VOTER:
        body = RemoveRaftVoterResponse(error, message)
    elif change.operation == ChangeOperation.SET_TARGET_VOTERS:
        body = AlterVotersResponse(error, message)
    else:
        body = UpdateFeaturesResponse(error, message)
    core.respond(reply.src, reply.request_id, body)


def leadership_lost(core: CoreContext) -> None:
    change = core.changes.pending
    if change is not None:
        finish(core, change, ErrorCode.not_leader_or_follower, "leadership changed")


def admit_admin_request(
    core: CoreContext,
    src: int,
    rid: int,
    body: AddRaftVoterRequest | RemoveRaftVoterRequest | UpdateFeaturesRequest,
) -> Reply | None:
    """The checks every admin request passes (this replica leads; the cluster id matches):
    the reply to answer through, or None when it has been answered already."""
    reply = Reply(src=src, request_id=rid, peer=True)
    operation: ChangeOperation = (
        ChangeOperation.ADD_VOTER
        if isinstance(body, AddRaftVoterRequest)
        else ChangeOperation.REMOVE_VOTER
        if isinstance(body, RemoveRaftVoterRequest)
        else ChangeOperation.UPDATE_KRAFT_VERSION
    )
    if not isinstance(core.state, Leader):
        error, message = ErrorCode.not_leader_or_follower, f"the leader is {core.leader_id}"
        answer_now(core, operation, reply, error, message)
        return None
    if not isinstance(body, UpdateFeaturesRequest) and not core.config.accepts_cluster(
        body.cluster_id
    ):
        error, message = ErrorCode.inconsistent_cluster_id, "cluster id mismatch"
        answer_now(core, operation, reply, error, message)
        return None
    return reply


def handle_voter_request(
    core: CoreContext,
    src: int,
    rid: int,
    body: AddRaftVoterRequest | RemoveRaftVoterRequest,
    now_ms: int,
) -> None:
    """AddRaftVoter and RemoveRaftVoter (KIP-853), after :func:`admit_admin_request`."""
    reply = admit_admin_request(core, src, rid, body)
    if reply is None:
        return
    operation = (
        ChangeOperation.ADD_VOTER
        if isinstance(body, AddRaftVoterRequest)
        else ChangeOperation.REMOVE_VOTER
    )
    if isinstance(body, AddRaftVoterRequest):
        if body.voter_key.directory_id is None or not body.listeners:
            # Answered at once (it cannot become valid by waiting), as Kafka's AddVoterHandler.
            missing = "a directory id" if body.voter_key.directory_id is None else "listeners"
            message = f"AddRaftVoter for {body.voter_key.id} needs {missing}"
            answer_now(core, operation, reply, ErrorCode.invalid_request, message)
            return
        deadline = now_ms + body.timeout_ms
        change = PendingChange(operation, body.voter_key, body.listeners, deadline, reply)
    else:
        deadline = now_ms + core.config.voter_change_timeout_ms
        change = PendingChange(operation, body.voter_key, (), deadline, reply)
    start(core, change, now_ms)


# -- kraft.version upgrade (D10): the append; the checks live in kraft_version.py ------------


def _append_kraft_upgrade(
    core: CoreContext, leader: Leader, change: PendingChange, now_ms: int
) -> int:
    """KRaftVersion and Voters in one batch: the voter set as the voters reported it."""
    assert ready_to_change(core, leader)
    voters = VoterSet(
        {
            vid: core.changes.reported_voters.get(vid, info)
            for vid, info in core.voters.voters.items()
        }
    )
    local = core.local_key
    low, high = core.config.kraft_versions
    voters = voters.with_voter(VoterInfo(local, core.endpoints, low, high))
    core.drain_scheduled(now_ms)
    offset = core.log.end_offset
    core.append_own(
        bootstrap_batches(offset, leader.epoch, now_ms, change.target_version, voters), now_ms
    )
    return offset + 1  # the VotersRecord; committed together with the KRaftVersion record


# -- UpdateRaftVoter at the leader (D6) -------------------------------------------------------


def handle_update_voter(
    core: CoreContext, req: UpdateRaftVoterRequest, now_ms: int
) -> UpdateRaftVoterResponse:
    qs = core.quorum

    def answer(error: ErrorCode) -> UpdateRaftVoterResponse:
        return UpdateRaftVoterResponse(error, qs.leader_id, qs.epoch, core.leader_endpoints())

    if not core.config.accepts_cluster(req.cluster_id):
        return answer(ErrorCode.inconsistent_cluster_id)
    if req.current_leader_epoch < qs.epoch:
        return answer(ErrorCode.fenced_leader_epoch)
    if req.current_leader_epoch > qs.epoch:
        return answer(ErrorCode.unknown_leader_epoch)
    leader = qs.role
    if not isinstance(leader, Leader):
        return answer(ErrorCode.not_leader_or_follower)
    if req.min_kraft_version > req.max_kraft_version or not req.listeners:
        return answer(ErrorCode.invalid_request)
    voters = core.voters
    current = voters.voters.get(req.voter_key.id)
    if current is None or not voters.is_voter(req.voter_key):
        return answer(ErrorCode.voter_not_found)
    # A directory id is only filled in where unset (D6).
    key = ReplicaKey(current.key.id, current.key.directory_id or req.voter_key.directory_id)
    info = VoterInfo(key, req.listeners, req.min_kraft_version, req.max_kraft_version)
    version = core.control.kraft_version
    if version < 1:
        # KAFKA-16538: at kraft.version 0 nothing is written; the leader remembers the
        # voter's range and endpoints for the upgrade check (D10).
        core.changes.reported_voters[key.id] = info
        return answer(ErrorCode.none)
    if core.changes.pending is not None or not ready_to_change(core, leader):
        return answer(ErrorCode.request_timed_out)
    if not req.min_kraft_version <= version <= req.max_kraft_version:
        return answer(ErrorCode.invalid_request)
    if info != current:
        append_voters(core, leader, voters.with_voter(info), now_ms)
    return answer(ErrorCode.none)  # Kafka answers at once, without waiting for the commit


def handle_controller_registration(
    core: CoreContext, req: ControllerRegistrationRequest
) -> ControllerRegistrationResponse:
    """KIP-919: a controller tells the leader its endpoints and kraft.version range. Kept in
    memory by this leader (each controller registers again with every new leader): an
    observer's endpoints let a KIP-642 target name it by id, its range counts for D10."""
    if not isinstance(core.state, Leader):
        return ControllerRegistrationResponse(
            ErrorCode.not_controller, f"the active controller is {core.leader_id}"
        )
    low, high = req.min_kraft_version, req.max_kraft_version
    if req.controller_id < 0 or low > high or not req.listeners:
        return ControllerRegistrationResponse(
            ErrorCode.invalid_request,
            "a registration needs a controller id, listeners and a kraft.version range",
        )
    core.changes.registered_observers[req.controller_id] = (low, high)
    core.changes.controller_endpoints[req.controller_id] = req.listeners
    return ControllerRegistrationResponse(ErrorCode.none)


# -- the leader's bookkeeping when the voter set changes -------------------------------------


def sync_progress(core: CoreContext, leader: Leader, now_ms: int) -> None:
    """The voter set changed: ``LeaderProgress.sync``."""
    leader.progress.sync(
        core.voters,
        core.local_key.id,
        core.quorum.is_only_voter,
        now_ms,
        core.config.check_quorum_ms,
    )
