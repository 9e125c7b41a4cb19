"""Multi-voter quorum reassignment (KIP-642) on top of single voter changes (E1-E4).

Theory of operation. An operator submits a target voter set (``RaftCore.set_target_voters``).
The leader appends pykraft's target voter set record (``control.py``) and answers once it
commits: from then on the target is durable, in the log and in later snapshots, so whichever
leader comes next continues it. While a committed target differs from the voter set, the
leader takes one step at a time through the single pending voter change of ``membership``
(each committed before the next, so a majority of every intermediate set stays up, E4):

* add one voter when |to add| >= |to remove|, the most caught-up first (a voter whose id is
  still held by a voter to remove, e.g. (3, UUID3) -> (3, UUID3'), is added after that one
  is removed: an id appears once in a voter set);
* otherwise remove one, a non-leader first and, among those, one that is down (not fetched
  within the fetch timeout) first; a running voter is removed only if a majority of the set
  left behind is up, else the step waits (E4); when the leader is the last voter to remove it
  resigns (EndQuorumEpoch naming the most caught-up voters) and the next leader removes it.

When the voter set equals the target the leader clears the target (an empty target record).
A new target replaces the old one at once; submitting the current voter set cancels the
reassignment (the steps then lead back to it). A step still waiting for a new voter to catch
up is dropped when a new target no longer wants it; a step already appended completes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from kio.schema.errors import ErrorCode

from pykraft.raft import membership
from pykraft.raft.control import has_key, same_members, target_voters_batch
from pykraft.raft.membership import ChangeOperation, ChangePhase, PendingChange, Reply
from pykraft.raft.messages import (
    AlterVotersRequest,
    ListVoterReassignmentResponse,
)
from pykraft.raft.roles import Leader
from pykraft.raft.types import ReplicaKey
from pykraft.raft.voters import VoterInfo, VoterSet

if TYPE_CHECKING:
    from pykraft.raft.context import CoreContext

OPERATION: Final = ChangeOperation.SET_TARGET_VOTERS


@dataclass(frozen=True, slots=True)
class ReplicaLag:
    key: ReplicaKey
    end_offset: int  # -1: never fetched from this leader
    lag: int  # leader's log end offset - end_offset (the whole log when unknown)


@dataclass(frozen=True, slots=True)
class ReassignmentProgress:
    """What the operator sees (E3)."""

    current: tuple[ReplicaKey, ...]
    target: tuple[ReplicaKey, ...]
    to_add: tuple[ReplicaKey, ...]
    to_remove: tuple[ReplicaKey, ...]
    committed: bool  # the target record is committed (steps may run)
    lag: tuple[ReplicaLag, ...]  # every replica of current | target


@dataclass(slots=True)
class TargetWait:
    offset: int
    reply: Reply


def _refusal(
    core: CoreContext, leader: Leader, voters: Sequence[VoterInfo]
) -> tuple[ErrorCode, str] | None:
    """Why a target cannot be taken now (E1), or None."""
    if core.control.kraft_version < 1:
        return ErrorCode.unsupported_version, "reassignment needs kraft.version 1"
    ids = [v.key.id for v in voters]
    if not voters:
        return ErrorCode.invalid_request, "empty target"
    if len(set(ids)) != len(ids):
        return ErrorCode.duplicate_voter, f"a replica id appears twice in {sorted(ids)}"
    for info in voters:
        if not (has_key(core.voters, info.key) or info.key in leader.progress.observers):
            return (
                ErrorCode.invalid_request,
                f"{info.key} is neither a voter nor an observer of this leader",
            )
    if core.high_watermark <= leader.epoch_start_offset:
        return ErrorCode.request_timed_out, "the leader has not committed its epoch yet"
    return None


def submit(core: CoreContext, voters: Sequence[VoterInfo], reply: Reply, now_ms: int) -> None:
    """E1: validate, append the target record, answer when it commits."""
    leader = core.state
    assert isinstance(leader, Leader)
    refused = _refusal(core, leader, voters)
    if refused is not None:
        membership.answer_now(core, OPERATION, reply, *refused)
        return
    current = core.voters
    # Voters keep their recorded endpoints and ranges; new ones come as submitted.
    target = VoterSet(
        {v.key.id: (current.voters[v.key.id] if has_key(current, v.key) else v) for v in voters}
    )
    in_force = core.control.target
    if (
        in_force is not None
        and same_members(in_force[1], target)
        and in_force[0] < core.high_watermark
    ):
        membership.answer_now(core, OPERATION, reply, ErrorCode.none, None)  # already durable
        return
    core.drain_scheduled(now_ms)
    offset = core.log.end_offset
    ts = core.config.timestamp_ms(now_ms)
    # The original voter set stays the one the first target started from (KIP-455).
    original = core.control.original if in_force is not None else None
    batch = target_voters_batch(
        offset,
        leader.epoch,
        ts,
        target,
        leader_id=core.local_key.id,
        voters=core.voters,
        original=original or current,
    )
    core.append_own(batch, now_ms)
    if not reply.internal:
        core.changes.target_waits.append(TargetWait(offset, reply))
    _drop_unwanted_step(core, target)


# -- over the wire: AlterPartitionReassignments / ListPartitionReassignments -----------------


def handle_alter(
    core: CoreContext, src: int, rid: int, req: AlterVotersRequest, now_ms: int
) -> None:
    """KIP-642 as KIP-455's AlterPartitionReassignments for the metadata partition: target
    voter ids, resolved here to replica keys (current voters, then caught-up controllers
    that fetch as observers and registered their endpoints); null replicas cancel, i.e. go
    back to the voter set the reassignment started from. Answered once the target record
    commits."""
    reply = Reply(src=src, request_id=rid, peer=True)
    leader = core.state
    if not isinstance(leader, Leader):
        membership.answer_now(
            core, OPERATION, reply, ErrorCode.not_controller, f"the leader is {core.leader_id}"
        )
        return
    if req.target_ids is None:
        if core.control.target is None:
            membership.answer_now(
                core,
                OPERATION,
                reply,
                ErrorCode.no_reassignment_in_progress,
                "no reassignment of the voter set is in progress",
            )
            return
        original = core.control.original or core.voters
        submit(core, list(original.voters.values()), reply, now_ms)
        return
    resolved = resolve_target(core, leader, req.target_ids, now_ms)
    if isinstance(resolved, str):
        membership.answer_now(
            core, OPERATION, reply, ErrorCode.invalid_replica_assignment, resolved
        )
        return
    submit(core, resolved, reply, now_ms)


def resolve_target(
    core: CoreContext, leader: Leader, ids: Sequence[int], now_ms: int
) -> list[VoterInfo] | str:
    """The target's replica keys, endpoints and kraft.version ranges for ``ids``, or why
    they cannot be had."""
    if not ids:
        return "the target voter set is empty (null replicas cancel)"
    if len(set(ids)) != len(ids):
        return f"a replica id appears twice in {list(ids)}"
    out = []
    for replica_id in ids:
        voter = core.voters.voters.get(replica_id)
        if voter is not None:
            out.append(voter)
            continue
        fetching = [
            p
            for key, p in leader.progress.observers.items()
            if key.id == replica_id and p.last_fetch_ms >= now_ms - core.config.fetch_timeout_ms
        ]
        if not fetching:
            return (
                f"replica {replica_id} is neither a voter nor an observer fetching from the leader"
            )
        progress = max(fetching, key=lambda p: p.last_fetch_ms)
        if progress.key.directory_id is None:
            return f"observer {replica_id} has no directory id (kraft.version 1 needs one)"
        endpoints = core.changes.controller_endpoints.get(replica_id)
        if not endpoints:
            return (
                f"observer {replica_id} registered no endpoints (ControllerRegistration): "
                "only a controller can be a voter"
            )
        # Caught up as DescribeQuorum counts it: it reached the log end within the fetch
        # timeout (under a steady load a replica is always a little behind).
        if progress.last_caught_up_ms < now_ms - core.config.fetch_timeout_ms:
            behind = core.log.end_offset - max(progress.end_offset, 0)
            return f"observer {replica_id} is not caught up ({behind} records behind)"
        low, high = core.changes.registered_observers.get(replica_id, core.config.kraft_versions)
        out.append(VoterInfo(progress.key, endpoints, low, high))
    return out


def handle_list(core: CoreContext) -> ListVoterReassignmentResponse:
    """KIP-455's ListPartitionReassignments for the metadata partition."""
    if not isinstance(core.state, Leader):
        return ListVoterReassignmentResponse(
            ErrorCode.not_controller, f"the leader is {core.leader_id}"
        )
    state = progress(core)
    if state is None:
        return ListVoterReassignmentResponse(ErrorCode.none)
    current = {k.id for k in state.current}
    target = {k.id for k in state.target}
    return ListVoterReassignmentResponse(
        ErrorCode.none,
        None,
        replicas=tuple(sorted(current | target)),
        adding=tuple(sorted(target - current)),
        removing=tuple(sorted(current - target)),
    )


def _drop_unwanted_step(core: CoreContext, target: VoterSet) -> None:
    change = core.changes.pending
    if change is None or not change.reply.internal or change.phase == ChangePhase.COMMITTING:
        return
    wanted = (
        has_key(target, change.key)
        if change.operation == ChangeOperation.ADD_VOTER
        else not has_key(target, change.key)
    )
    if not wanted:
        membership.finish(core, change, ErrorCode.none, None)


def on_high_watermark(core: CoreContext) -> None:
    """Answer submitters whose target record committed."""
    waits = core.changes.target_waits
    while waits and waits[0].offset < core.high_watermark:
        wait = waits.pop(0)
        membership.answer_now(core, OPERATION, wait.reply, ErrorCode.none, None)


def leadership_lost(core: CoreContext) -> None:
    for wait in core.changes.target_waits:
        membership.answer_now(
            core, OPERATION, wait.reply, ErrorCode.not_leader_or_follower, "leadership changed"
        )
    core.changes.target_waits.clear()


def step(core: CoreContext, leader: Leader, now_ms: int) -> None:
    """E2: start the next single change toward a committed target, if any is due."""
    in_force = core.control.target
    if in_force is None or core.changes.pending is not None:
        return
    offset, target = in_force
    if offset >= core.high_watermark or not membership.ready_to_change(core, leader):
        return
    current = core.voters
    if same_members(current, target):
        core.drain_scheduled(now_ms)
        cleared = target_voters_batch(
            core.log.end_offset,
            leader.epoch,
            core.config.timestamp_ms(now_ms),
            None,
            leader_id=core.local_key.id,
            voters=current,
        )
        core.append_own(cleared, now_ms)
        return
    to_add = [i for i in target.voters.values() if not has_key(current, i.key)]
    to_remove = [i for i in current.voters.values() if not has_key(target, i.key)]
    addable = [i for i in to_add if i.key.id not in current.ids]
    deadline_ms = now_ms + core.config.voter_change_timeout_ms
    if to_add and len(to_add) >= len(to_remove) and addable:
        ready = [i for i in addable if membership.caught_up(core, leader, i.key, now_ms)]
        if ready:
            best = max(ready, key=lambda i: (leader.progress.end_offset(i.key), -i.key.id))
            change = PendingChange(
                ChangeOperation.ADD_VOTER, best.key, best.endpoints, deadline_ms, Reply()
            )
            membership.start(core, change, now_ms)
        return  # wait for a new voter to catch up (the lag shows in the progress)
    if not to_remove:
        return
    local = core.local_key.id
    blocking = [i for i in to_remove if any(a.key.id == i.key.id for a in to_add)]
    others = [i for i in to_remove if i.key.id != local]
    candidates = blocking or others
    if not candidates:
        # The leader is the last voter to remove: it resigns; the next leader removes it.
        core.quorum.to_resigned(now_ms, leader.progress.successors())
        return
    # E4: remove a voter that is down first (it costs no availability); remove a running one
    # only if a majority of the set left behind is still up, else wait for a voter to return.
    down = [i for i in candidates if not _is_up(core, leader, i.key, now_ms)]
    choice = down[0] if down else candidates[0]
    if not down:
        remaining = [v for v in current.voters.values() if v.key != choice.key]
        up = sum(_is_up(core, leader, v.key, now_ms) for v in remaining)
        if 2 * up <= len(remaining):
            return
    removal = PendingChange(ChangeOperation.REMOVE_VOTER, choice.key, (), deadline_ms, Reply())
    membership.start(core, removal, now_ms)


def _is_up(core: CoreContext, leader: Leader, key: ReplicaKey, now_ms: int) -> bool:
    """A voter is up, as the leader sees it, when it fetched within the fetch timeout (the
    same window check quorum uses); the leader itself always is."""
    return key == core.local_key or leader.progress.is_up(key, now_ms, core.config.fetch_timeout_ms)


def progress(core: CoreContext) -> ReassignmentProgress | None:
    in_force = core.control.target
    if in_force is None:
        return None
    offset, target = in_force
    current = core.voters
    leader = core.state
    end = core.log.end_offset
    lags = []
    for key in sorted(set(current.keys) | set(target.keys)):
        if key.id == core.local_key.id:
            reached = end
        elif isinstance(leader, Leader):
            reached = leader.progress.end_offset(key)
        else:
            reached = -1
        lags.append(ReplicaLag(key, reached, end - max(reached, 0)))
    return ReassignmentProgress(
        current.keys,
        target.keys,
        tuple(i.key for i in target.voters.values() if not has_key(current, i.key)),
        tuple(i.key for i in current.voters.values() if not has_key(target, i.key)),
        offset < core.high_watermark,
        tuple(lags),
    )
