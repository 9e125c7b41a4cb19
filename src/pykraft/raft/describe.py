"""DescribeQuorum v2 built from the core's state (D11, KIP-853; KIP-642's progress view)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from pykraft.raft.messages import DescribeQuorumResponse, QuorumNode, ReplicaState
from pykraft.raft.roles import Leader, ReplicaProgress

if TYPE_CHECKING:
    from pykraft.raft.context import CoreContext

OBSERVER_EXPIRY_MS = 5 * 60 * 1000  # Kafka forgets observers silent for this long


def _state(progress: ReplicaProgress) -> ReplicaState:
    return ReplicaState(
        progress.key, progress.end_offset, progress.last_fetch_ms, progress.last_caught_up_ms
    )


def active_observers(leader: Leader, now_ms: int) -> list[ReplicaProgress]:
    """The observers a leader reports (DescribeQuorum, number-of-observers): those that
    fetched within ``OBSERVER_EXPIRY_MS``, by replica key."""
    return [
        p
        for _key, p in sorted(leader.progress.observers.items())
        if p.last_fetch_ms >= now_ms - OBSERVER_EXPIRY_MS
    ]


def describe_quorum(core: CoreContext, now_ms: int) -> DescribeQuorumResponse:
    """A leader describes voters and observers; anyone else answers NOT_LEADER_OR_FOLLOWER
    with the leader it knows."""
    leader = core.state
    qs = core.quorum
    if not isinstance(leader, Leader):
        return DescribeQuorumResponse(
            ErrorCode.not_leader_or_follower, "not the leader", qs.leader_id, qs.epoch
        )
    local = core.local_key
    me = ReplicaState(local, core.log.end_offset, now_ms, now_ms)
    voters: list[ReplicaState] = []
    for vid in core.voters.voters:
        if vid == local.id:
            voters.append(me)
        else:
            voters.append(_state(leader.progress.voters[vid]))
    observers = [_state(p) for p in active_observers(leader, now_ms)]
    if qs.is_observer:
        observers.insert(0, me)  # a leader removing itself (D5)
    nodes = tuple(
        QuorumNode(vid, info.endpoints if vid != local.id else core.endpoints)
        for vid, info in core.voters.voters.items()
    )
    return DescribeQuorumResponse(
        ErrorCode.none,
        None,
        local.id,
        leader.epoch,
        core.high_watermark,
        tuple(voters),
        tuple(observers),
        nodes,
    )
