"""Requests that reach the node's listener and go to the core: which APIs, who sent them
(the source id the core sees), how long the core may take to answer on purpose, and the
answer's wire form."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from kio.static.protocol import ResponsePayload

from pykraft.net.convert import request_from_kio, response_to_kio
from pykraft.net.convert_reassign import (
    REASSIGNMENT_API_VERSIONS,
    REASSIGNMENT_APIS,
    reassign_request_from_kio,
    reassign_response_to_kio,
)
from pykraft.net.convert_voters import (
    FEATURE_APIS,
    KRAFT_VERSION_FEATURE,
    VOTER_APIS,
    voter_request_from_kio,
    voter_response_to_kio,
)
from pykraft.net.server import Answer
from pykraft.node.cluster import CLUSTER_APIS
from pykraft.protocol import (
    KRAFT_APIS,
    ApiKey,
    ApiTable,
    DecodedRequest,
    build_api_versions_response,
)
from pykraft.raft.config import RaftConfig
from pykraft.raft.core import RaftCore
from pykraft.raft.messages import (
    AddRaftVoterRequest,
    AddRaftVoterResponse,
    AlterVotersRequest,
    AlterVotersResponse,
    AnyRequest,
    AnyResponse,
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    ControllerRegistrationRequest,
    ControllerRegistrationResponse,
    DescribeQuorumResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    ListVoterReassignmentResponse,
    RemoveRaftVoterRequest,
    RemoveRaftVoterResponse,
    ReplicaState,
    UpdateFeaturesRequest,
    UpdateFeaturesResponse,
    UpdateRaftVoterRequest,
    UpdateRaftVoterResponse,
    VoteRequest,
    VoteResponse,
)

INBOUND_ANSWER_GRACE_MS: Final = 5_000  # beyond the request's own wait, then we give up

RAFT_APIS: Final = frozenset(
    {
        ApiKey.VOTE,
        ApiKey.BEGIN_QUORUM_EPOCH,
        ApiKey.END_QUORUM_EPOCH,
        ApiKey.FETCH,
        ApiKey.FETCH_SNAPSHOT,
    }
)
# Every quorum RPC (KIP-595/630/853/996), plus Metadata and DescribeCluster, which let
# clients find the leader (pykraft.node.cluster), and UpdateFeatures for kraft.version (D10).
SERVED_APIS: Final = KRAFT_APIS.with_apis(*CLUSTER_APIS, *FEATURE_APIS, *REASSIGNMENT_API_VERSIONS)
ADMIN_SOURCE_ID: Final = -1  # the "source" of an admin client's request, for the core

_RESPONSE_TYPES: Final = (
    VoteResponse,
    BeginQuorumEpochResponse,
    EndQuorumEpochResponse,
    FetchResponse,
    FetchSnapshotResponse,
)
_VOTER_RESPONSE_TYPES: Final = (
    AddRaftVoterResponse,
    RemoveRaftVoterResponse,
    UpdateRaftVoterResponse,
    DescribeQuorumResponse,
    UpdateFeaturesResponse,
)


@dataclass(slots=True)
class PendingAnswer:
    """An inbound request stepped into the core, waiting for the core's response (or for
    ``timer``, which gives up on it)."""

    answer: Answer
    api_key: int
    api_version: int
    listener_name: str
    timer: asyncio.TimerHandle


def api_versions_response(
    api_version: int,
    core: RaftCore | None,
    served: ApiTable = SERVED_APIS,
    features: tuple[Mapping[str, tuple[int, int]], Mapping[str, int], int] | None = None,
) -> ResponsePayload:
    """ApiVersions: the served APIs, the kraft.version range the core supports
    (``RaftConfig.kraft_versions``) and, once running, the finalized kraft.version; with
    ``features`` (the application's supported ranges, finalized levels and their epoch)
    those too, as a Kafka controller lists them."""
    supported = RaftConfig().kraft_versions if core is None else core.config.kraft_versions
    finalized = None if core is None else {KRAFT_VERSION_FEATURE: core.kraft_version}
    epoch = -1
    supported_all: dict[str, tuple[int, int]] = {KRAFT_VERSION_FEATURE: supported}
    if features is not None:
        app_supported, app_finalized, epoch = features
        supported_all.update(app_supported)
        if finalized is not None:
            finalized = {**app_finalized, **finalized}
    return build_api_versions_response(
        api_version,
        served,
        supported_features=supported_all,
        finalized_features=finalized,
        finalized_features_epoch=epoch,
    )


def goes_to_core(api_key: int) -> bool:
    return api_key in RAFT_APIS or api_key in VOTER_APIS or api_key in REASSIGNMENT_APIS


def decode_for_core(request: DecodedRequest, local_id: int) -> AnyRequest:
    """The core's message for a request ``goes_to_core``; raises ``RejectedRequest``."""
    if request.api_key in RAFT_APIS:
        return request_from_kio(request.message, local_id=local_id)
    if request.api_key in REASSIGNMENT_APIS:
        return reassign_request_from_kio(request.message)
    return voter_request_from_kio(request.message)


def source_of(body: AnyRequest) -> int:
    if isinstance(body, VoteRequest):
        return body.candidate_key.id
    if isinstance(body, BeginQuorumEpochRequest | EndQuorumEpochRequest):
        return body.leader_id
    if isinstance(body, ControllerRegistrationRequest):
        return body.controller_id
    if isinstance(body, FetchRequest | FetchSnapshotRequest | UpdateRaftVoterRequest):
        return (
            body.replica_key.id
            if not isinstance(body, UpdateRaftVoterRequest)
            else (body.voter_key.id)
        )
    return ADMIN_SOURCE_ID


def answer_wait_ms(body: AnyRequest, voter_change_timeout_ms: int) -> int:
    """How long the core may take to answer ``body`` on purpose (then a grace period)."""
    if isinstance(body, FetchRequest):
        return body.max_wait_ms
    if isinstance(body, AddRaftVoterRequest | UpdateFeaturesRequest | AlterVotersRequest):
        return body.timeout_ms
    if isinstance(body, RemoveRaftVoterRequest | UpdateRaftVoterRequest):
        return voter_change_timeout_ms
    return 0


def encode_answer(body: AnyResponse, pending: PendingAnswer) -> ResponsePayload | None:
    """The wire form of the core's response to ``pending``; None when it has none."""
    if isinstance(body, _RESPONSE_TYPES):
        return response_to_kio(body, pending.api_version, listener_name=pending.listener_name)
    if isinstance(body, _VOTER_RESPONSE_TYPES):
        return voter_response_to_kio(body, pending.api_version, listener_name=pending.listener_name)
    if isinstance(
        body, AlterVotersResponse | ListVoterReassignmentResponse | ControllerRegistrationResponse
    ):
        return reassign_response_to_kio(body, pending.api_version)
    return None


def wall_clock(
    response: DescribeQuorumResponse, now_ms: int, wall_ms: int
) -> DescribeQuorumResponse:
    """Replica timestamps from the core's monotonic clock (``now_ms`` now) to wall-clock ms
    (``wall_ms`` now) (D11)."""

    def convert(r: ReplicaState) -> ReplicaState:
        def at(ts: int) -> int:
            return -1 if ts < 0 else wall_ms - (now_ms - ts)

        return dataclasses.replace(
            r,
            last_fetch_timestamp=at(r.last_fetch_timestamp),
            last_caught_up_timestamp=at(r.last_caught_up_timestamp),
        )

    return dataclasses.replace(
        response,
        voters=tuple(convert(r) for r in response.voters),
        observers=tuple(convert(r) for r in response.observers),
    )
