"""What a replica asks the leader about itself (KIP-853): a voter's UpdateRaftVoter (its
endpoints and kraft.version range, D6) and an observer's auto-join (D9: remove a stale
incarnation of its id, then AddRaftVoter), sent while it follows a leader it has fetched
from. The leader's side is ``membership.py``.

A voter sends UpdateRaftVoter until an answer is final (accepted, or an error a retry cannot
fix); any other answer, and every join answer, is retried after a request timeout. After a
final answer, at kraft.version 1 a voter whose entry in the voter set still differs from its
own endpoints or kraft.version range sends it again once a fetch timeout passed (Kafka's
``updateVoterSetPeriod`` and ``VoterSet.voterNodeNeedsUpdate``): an answer given while it was
not a voter (a removal in flight) must not leave its old endpoints in the set for good.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from kio.schema.errors import ErrorCode

from pykraft.raft import elections
from pykraft.raft.messages import (
    AddRaftVoterRequest,
    AddRaftVoterResponse,
    RemoveRaftVoterRequest,
    RemoveRaftVoterResponse,
    UpdateRaftVoterRequest,
    UpdateRaftVoterResponse,
)
from pykraft.raft.requests import RequestKind
from pykraft.raft.roles import Follower

if TYPE_CHECKING:
    from pykraft.raft.context import CoreContext

__all__ = ["AUTO_JOIN_TIMEOUT_MS", "handle_follower_response", "send_follower_requests"]

AUTO_JOIN_TIMEOUT_MS: Final = 30_000  # D9: the AddRaftVoter an auto-joining controller sends


def send_follower_requests(core: CoreContext, role: Follower, now_ms: int) -> None:
    if not role.fetched_from_leader or not core.endpoints or role.bootstrap_fetching:
        return
    dst = role.leader_id
    if not core.quorum.is_observer:
        wanted = not role.update_voter_acked or (
            now_ms >= role.update_voter_again_ms and _entry_differs(core)
        )
        if wanted and core.can_send(dst, RequestKind.UPDATE_VOTER, now_ms):
            low, high = core.config.kraft_versions
            core.send(
                dst,
                UpdateRaftVoterRequest(
                    core.config.cluster_id, role.epoch, core.local_key, core.endpoints, low, high
                ),
                RequestKind.UPDATE_VOTER,
                now_ms,
            )
        return
    local = core.local_key
    if (
        not core.config.auto_join
        or core.was_voter  # D9: removed once, never added back by itself (KAFKA-19850)
        or core.control.kraft_version < 1
        or local.directory_id is None
        or not core.can_send(dst, RequestKind.JOIN, now_ms)
    ):
        return
    stale = core.voters.voters.get(local.id)
    body: AddRaftVoterRequest | RemoveRaftVoterRequest
    if stale is not None:
        # D9/D12: our id with another directory id (a replaced disk): remove it first.
        body = RemoveRaftVoterRequest(core.config.cluster_id, stale.key)
    else:
        body = AddRaftVoterRequest(
            core.config.cluster_id, AUTO_JOIN_TIMEOUT_MS, local, core.endpoints
        )
    core.send(
        dst,
        body,
        RequestKind.JOIN,
        now_ms,
        timeout_ms=AUTO_JOIN_TIMEOUT_MS + core.config.request_timeout_ms,
    )


def handle_follower_response(
    core: CoreContext,
    src: int,
    kind: RequestKind,
    resp: UpdateRaftVoterResponse | AddRaftVoterResponse | RemoveRaftVoterResponse,
    now_ms: int,
) -> None:
    role = core.state
    if isinstance(resp, UpdateRaftVoterResponse):
        if elections.on_response_epoch(
            core, resp.leader_epoch, resp.leader_id, resp.leader_endpoints, now_ms
        ):
            return
        if isinstance(role, Follower) and resp.error in _FINAL_UPDATE_ERRORS:
            role.update_voter_acked = True
            # Asked again only if our entry still differs, a fetch timeout from now.
            role.update_voter_again_ms = now_ms + core.config.fetch_timeout_ms
            return
    elif resp.error == ErrorCode.none:
        return  # joined, or the stale key removed: the next step follows at once
    # Retry later: a pending change at the leader, a leader change, a slow catch-up.
    core.backoff(src, kind, now_ms, core.config.request_timeout_ms)


def _entry_differs(core: CoreContext) -> bool:
    """At kraft.version 1, whether the voter set records other endpoints or another
    kraft.version range for this replica than its own."""
    if core.control.kraft_version < 1:
        return False
    info = core.voters.voters.get(core.local_key.id)
    if info is None:
        return False
    low, high = core.config.kraft_versions
    return info.endpoints != core.endpoints or (
        info.min_kraft_version,
        info.max_kraft_version,
    ) != (low, high)


_FINAL_UPDATE_ERRORS = frozenset(
    {
        ErrorCode.none,
        ErrorCode.voter_not_found,
        ErrorCode.invalid_request,
        ErrorCode.unsupported_version,
    }
)
