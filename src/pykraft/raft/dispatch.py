"""Which handler serves which message: the core's request and response routing.

``RaftCore.step`` hands every request here, and every response that answers a request still
in flight (stale ones are dropped before, B12). The handlers live with their concern:
replication (Fetch, FetchSnapshot), elections (Vote, BeginQuorumEpoch, EndQuorumEpoch),
membership (KIP-853 and UpdateFeatures) and describe (DescribeQuorum).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, get_args

from kio.schema.errors import ErrorCode
from typing_extensions import TypeIs

from pykraft.raft import (
    describe,
    elections,
    joining,
    kraft_version,
    membership,
    messages,
    reassignment,
    replication,
)
from pykraft.raft.messages import (
    REQUEST_TYPES,
    AddRaftVoterRequest,
    AddRaftVoterResponse,
    AlterVotersRequest,
    AnyRequest,
    AnyResponse,
    ApiVersionsRequest,
    ApiVersionsResponse,
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    ControllerRegistrationRequest,
    DescribeQuorumRequest,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    ListVoterReassignmentRequest,
    RemoveRaftVoterRequest,
    RemoveRaftVoterResponse,
    UpdateFeaturesRequest,
    UpdateRaftVoterRequest,
    UpdateRaftVoterResponse,
    VoteRequest,
    VoteResponse,
)
from pykraft.raft.roles import Candidate, Follower, Leader, Prospective, Resigned

if TYPE_CHECKING:
    from pykraft.raft.context import CoreContext
    from pykraft.raft.requests import SentRequest

# ``messages.is_request`` by exact type first (one set lookup instead of an isinstance over
# eleven classes on every input); anything else, e.g. a subclass, takes the general test.
_REQUEST_TYPES: Final = frozenset(REQUEST_TYPES)
_RESPONSE_TYPES: Final = frozenset(get_args(AnyResponse))


def is_request(body: AnyRequest | AnyResponse) -> TypeIs[AnyRequest]:
    kind = type(body)
    if kind in _REQUEST_TYPES:
        return True
    if kind in _RESPONSE_TYPES:
        return False
    return messages.is_request(body)


def on_request(core: CoreContext, src: int, rid: int, body: AnyRequest, now_ms: int) -> None:
    if isinstance(body, FetchRequest):
        replication.handle_fetch_request(core, src, rid, body, now_ms)
    elif isinstance(body, FetchSnapshotRequest):
        replication.handle_fetch_snapshot_request(core, src, rid, body, now_ms)
    elif isinstance(body, VoteRequest):
        core.respond(src, rid, elections.handle_vote(core, body, now_ms))
    elif isinstance(body, BeginQuorumEpochRequest):
        core.respond(src, rid, elections.handle_begin(core, body, now_ms))
    elif isinstance(body, EndQuorumEpochRequest):
        core.respond(src, rid, elections.handle_end(core, body, now_ms))
    elif isinstance(body, UpdateRaftVoterRequest):
        core.respond(src, rid, membership.handle_update_voter(core, body, now_ms))
    elif isinstance(body, ApiVersionsRequest):
        core.respond(src, rid, ApiVersionsResponse(ErrorCode.none, core.config.kraft_versions))
    elif isinstance(body, DescribeQuorumRequest):
        core.respond(src, rid, describe.describe_quorum(core, now_ms))
    elif isinstance(body, AddRaftVoterRequest | RemoveRaftVoterRequest):
        membership.handle_voter_request(core, src, rid, body, now_ms)
    elif isinstance(body, UpdateFeaturesRequest):
        kraft_version.handle_update_features(core, src, rid, body, now_ms)
    elif isinstance(body, AlterVotersRequest):
        reassignment.handle_alter(core, src, rid, body, now_ms)
    elif isinstance(body, ListVoterReassignmentRequest):
        core.respond(src, rid, reassignment.handle_list(core))
    elif isinstance(body, ControllerRegistrationRequest):
        core.respond(src, rid, membership.handle_controller_registration(core, body))


def on_response(
    core: CoreContext, src: int, rid: int, req: SentRequest, body: AnyResponse, now_ms: int
) -> None:
    """``body`` answers ``req`` (request id ``rid``), which is no longer in flight."""
    if isinstance(body, FetchResponse):
        replication.handle_fetch_response(core, src, body, now_ms)
    elif isinstance(body, FetchSnapshotResponse):
        replication.handle_fetch_snapshot_response(core, src, body, now_ms)
    elif isinstance(body, VoteResponse):
        elections.handle_vote_response(core, src, req, body, now_ms)
    elif isinstance(body, BeginQuorumEpochResponse | EndQuorumEpochResponse):
        elections.handle_begin_end_response(core, src, req, body, now_ms)
    elif isinstance(body, ApiVersionsResponse):
        membership.handle_api_versions_response(core, rid, body, now_ms)
    elif isinstance(body, UpdateRaftVoterResponse | AddRaftVoterResponse | RemoveRaftVoterResponse):
        joining.handle_follower_response(core, src, req.kind, body, now_ms)


def send_requests(core: CoreContext, now_ms: int) -> None:
    """Send whatever requests the current role needs and does not have in flight."""
    # The roles are disjoint classes: the common ones are tested first.
    role = core.quorum.role
    if isinstance(role, Follower):
        replication.send_fetch(core, role, now_ms)
        joining.send_follower_requests(core, role, now_ms)
    elif isinstance(role, Leader):
        replication.send_begin_quorum(core, role, now_ms)
    elif isinstance(role, Prospective | Candidate):
        if isinstance(role, Candidate) and role.backoff_until_ms is not None:
            return
        elections.send_votes(core, role, now_ms)
    elif isinstance(role, Resigned):
        elections.send_end_quorum(core, role, now_ms)
    else:
        replication.send_fetch(core, role, now_ms)
