"""Admin operations an embedding application starts through ``RaftCore`` methods (the same
operations arrive from the network as AddRaftVoter, RemoveRaftVoter and UpdateFeatures
requests, see ``membership.admit_admin_request``). Each returns an operation id; the outcome is
reported once in ``Ready.completed``. Calling one away from the leader raises NotLeaderError,
like ``RaftCore.append``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pykraft.raft import kraft_version, membership, reassignment
from pykraft.raft.config import NotLeaderError
from pykraft.raft.roles import Leader
from pykraft.raft.types import Endpoint, ReplicaKey
from pykraft.raft.voters import VoterInfo

if TYPE_CHECKING:
    from pykraft.raft.context import CoreContext


def _reply(core: CoreContext) -> membership.Reply:
    if not isinstance(core.state, Leader):
        raise NotLeaderError(core.leader_id, core.epoch)
    return membership.Reply(op_id=core.changes.new_op_id())


def add_voter(
    core: CoreContext,
    key: ReplicaKey,
    endpoints: tuple[Endpoint, ...],
    now_ms: int,
    timeout_ms: int | None,
) -> int:
    reply = _reply(core)
    timeout = core.config.voter_change_timeout_ms if timeout_ms is None else timeout_ms
    change = membership.PendingChange(
        membership.ChangeOperation.ADD_VOTER, key, endpoints, now_ms + timeout, reply
    )
    membership.start(core, change, now_ms)
    return reply.op_id


def remove_voter(core: CoreContext, key: ReplicaKey, now_ms: int) -> int:
    reply = _reply(core)
    deadline = now_ms + core.config.voter_change_timeout_ms
    membership.start(
        core,
        membership.PendingChange(membership.ChangeOperation.REMOVE_VOTER, key, (), deadline, reply),
        now_ms,
    )
    return reply.op_id


def update_kraft_version(core: CoreContext, version: int, now_ms: int, validate_only: bool) -> int:
    reply = _reply(core)
    timeout = core.config.voter_change_timeout_ms
    kraft_version.start_update(core, version, reply, timeout, now_ms, validate_only)
    return reply.op_id


def set_target_voters(core: CoreContext, voters: Sequence[VoterInfo], now_ms: int) -> int:
    reply = _reply(core)
    reassignment.submit(core, voters, reply, now_ms)
    return reply.op_id
