"""Conversion between kio's messages and the core's for KIP-853 voter changes and the
requests the core makes or answers besides replication: AddRaftVoter (v0-1), RemoveRaftVoter
(v0), UpdateRaftVoter (v0), DescribeQuorum (v0-2), UpdateFeatures (v0-1, the kraft.version
feature only, D10) and the ApiVersions probe of a new voter's kraft.version range (D4). The replication RPCs live in :mod:`pykraft.net.convert`.

Directions:

* inbound requests (admin clients, voters): :func:`voter_request_from_kio`, answered with
  :func:`voter_response_to_kio`;
* outbound (the core's UpdateRaftVoter to the leader, its ApiVersions probe):
  :func:`voter_request_to_kio` and :func:`voter_response_from_kio`.

Defaults where a version lacks a field: AddRaftVoter v0 has no AckWhenCommitted (the core
always answers after the commit, which is v0's meaning). UpdateRaftVoter's CurrentLeader is
a tagged field; its endpoint is named after the listener the request went out on.
Directory ids: the wire's all-zero UUID and null both mean "unknown" (None for the core).
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any, Final

from kio.static.protocol import RequestPayload, ResponsePayload

from pykraft.net._wire import METADATA_PARTITION, METADATA_TOPIC, RejectedRequest, kio_module
from pykraft.protocol import ApiKey, ApiVersionRange, ErrorCode, error_response
from pykraft.protocol.apis import response_schema
from pykraft.protocol.build import make
from pykraft.raft.messages import (
    AddRaftVoterRequest,
    AddRaftVoterResponse,
    ApiVersionsRequest,
    ApiVersionsResponse,
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    RemoveRaftVoterRequest,
    RemoveRaftVoterResponse,
    ReplicaState,
    UpdateFeaturesRequest,
    UpdateFeaturesResponse,
    UpdateRaftVoterRequest,
    UpdateRaftVoterResponse,
)
from pykraft.raft.types import Endpoint, ReplicaKey

__all__ = [
    "FEATURE_APIS",
    "KRAFT_VERSION_FEATURE",
    "OutboundVoterRequest",
    "voter_request_from_kio",
    "voter_request_to_kio",
    "voter_response_from_kio",
    "voter_response_to_kio",
]

KRAFT_VERSION_FEATURE: Final = "kraft.version"

FEATURE_APIS: Final = (ApiVersionRange(ApiKey.UPDATE_FEATURES, 0, 2),)
"""UpdateFeatures, served by a node and spoken by the admin client (``ApiTable.with_apis``).
v1 replaced AllowDowngrade with UpgradeType (1 = upgrade only); v2 answers only at the top
level."""


def _directory(value: uuid.UUID | None) -> uuid.UUID | None:
    return value if value is not None and value.int != 0 else None


def _listeners(rows: Any) -> tuple[Endpoint, ...]:
    return tuple(Endpoint(str(r.name), str(r.host), int(r.port)) for r in rows)


# ---------------------------------------------------------------------------------------
# Inbound requests.


def voter_request_from_kio(
    message: RequestPayload,
) -> (
    AddRaftVoterRequest
    | RemoveRaftVoterRequest
    | UpdateRaftVoterRequest
    | DescribeQuorumRequest
    | UpdateFeaturesRequest
):
    """The core's view of an inbound KIP-853, DescribeQuorum or UpdateFeatures request;
    raises :class:`RejectedRequest` with Kafka's answer for a malformed one."""
    api_key = ApiKey(int(message.__api_key__))
    version = int(message.__version__)
    m: Any = message
    if api_key == ApiKey.UPDATE_FEATURES:
        return _update_features_from_kio(m, version)
    if api_key == ApiKey.ADD_RAFT_VOTER:
        return AddRaftVoterRequest(
            cluster_id=m.cluster_id,
            timeout_ms=int(m.timeout.total_seconds() * 1000),
            voter_key=ReplicaKey(int(m.voter_id), _directory(m.voter_directory_id)),
            listeners=_listeners(m.listeners),
        )
    if api_key == ApiKey.REMOVE_RAFT_VOTER:
        return RemoveRaftVoterRequest(
            cluster_id=m.cluster_id,
            voter_key=ReplicaKey(int(m.voter_id), _directory(m.voter_directory_id)),
        )
    if api_key == ApiKey.UPDATE_RAFT_VOTER:
        feature = m.k_raft_version_feature
        return UpdateRaftVoterRequest(
            cluster_id=m.cluster_id,
            current_leader_epoch=int(m.current_leader_epoch),
            voter_key=ReplicaKey(int(m.voter_id), _directory(m.voter_directory_id)),
            listeners=_listeners(m.listeners),
            min_kraft_version=int(feature.min_supported_version),
            max_kraft_version=int(feature.max_supported_version),
        )
    if api_key == ApiKey.DESCRIBE_QUORUM:
        topics = m.topics
        if len(topics) != 1 or len(topics[0].partitions) != 1:
            raise RejectedRequest(
                "expected exactly one topic with one partition",
                error_response(api_key, version, ErrorCode.invalid_request),
            )
        topic, partition = topics[0], topics[0].partitions[0]
        if topic.topic_name != METADATA_TOPIC or int(partition.partition_index) != 0:
            answer = DescribeQuorumResponse(ErrorCode.unknown_topic_or_partition, None, -1, -1)
            raise RejectedRequest(
                "unknown topic or partition",
                _describe_quorum_to_kio(
                    answer, version, str(topic.topic_name), int(partition.partition_index)
                ),
            )
        return DescribeQuorumRequest()
    raise ValueError(f"api key {api_key} is not a voter request")


def _update_features_from_kio(m: Any, version: int) -> UpdateFeaturesRequest:
    """UpdateFeatures naming exactly the kraft.version feature (the only one the core owns)."""
    updates = tuple(m.feature_updates)
    if len(updates) != 1 or str(updates[0].feature) != KRAFT_VERSION_FEATURE:
        names = ", ".join(str(u.feature) for u in updates) or "none"
        answer = UpdateFeaturesResponse(
            ErrorCode.invalid_request,
            f"only the {KRAFT_VERSION_FEATURE} feature can be updated here (got {names})",
        )
        raise RejectedRequest(
            "unsupported feature update", _update_features_to_kio(answer, version, updates)
        )
    update = updates[0]
    if version == 0:
        allow_downgrade = bool(update.allow_downgrade)
    else:
        allow_downgrade = int(update.upgrade_type) != 1  # 2 safe, 3 unsafe downgrade
    return UpdateFeaturesRequest(
        timeout_ms=int(m.timeout.total_seconds() * 1000),
        kraft_version=int(update.max_version_level),
        allow_downgrade=allow_downgrade,
        validate_only=bool(getattr(m, "validate_only", False)),
    )


def _update_features_to_kio(
    response: UpdateFeaturesResponse, version: int, updates: tuple[Any, ...] | None = None
) -> ResponsePayload:
    """Kafka answers per feature (``Results``) and at the top level; pykraft puts the
    outcome in both, for the kraft.version feature (or the features asked for)."""
    names = [KRAFT_VERSION_FEATURE] if updates is None else [str(u.feature) for u in updates]
    result: ResponsePayload = make(
        response_schema(ApiKey.UPDATE_FEATURES, version),
        {
            "throttle_time": 0,
            "error_code": response.error,
            "error_message": response.error_message,
            "results": [
                {
                    "feature": name,
                    "error_code": response.error,
                    "error_message": response.error_message,
                }
                for name in names
            ],  # v0-1 only
        },
    )
    return result


# ---------------------------------------------------------------------------------------
# Outbound responses.


def voter_response_to_kio(
    response: AddRaftVoterResponse
    | RemoveRaftVoterResponse
    | UpdateRaftVoterResponse
    | DescribeQuorumResponse
    | UpdateFeaturesResponse,
    api_version: int,
    *,
    listener_name: str,
) -> ResponsePayload:
    """The kio response at ``api_version`` (the request's)."""
    zero = datetime.timedelta(0)
    result: ResponsePayload
    if isinstance(response, UpdateFeaturesResponse):
        return _update_features_to_kio(response, api_version)
    if isinstance(response, AddRaftVoterResponse | RemoveRaftVoterResponse):
        api_key = (
            ApiKey.ADD_RAFT_VOTER
            if isinstance(response, AddRaftVoterResponse)
            else ApiKey.REMOVE_RAFT_VOTER
        )
        mod = kio_module(api_key, api_version, "response")
        cls = getattr(mod, type(response).__name__)
        result = cls(
            throttle_time=zero, error_code=response.error, error_message=response.error_message
        )
        return result
    if isinstance(response, UpdateRaftVoterResponse):
        mod = kio_module(ApiKey.UPDATE_RAFT_VOTER, api_version, "response")
        endpoint = next((e for e in response.leader_endpoints if e.name == listener_name), None)
        result = mod.UpdateRaftVoterResponse(
            throttle_time=zero,
            error_code=response.error,
            current_leader=mod.CurrentLeader(
                leader_id=response.leader_id,
                leader_epoch=response.leader_epoch,
                host=endpoint.host if endpoint is not None else "",
                port=endpoint.port if endpoint is not None else -1,
            ),
        )
        return result
    return _describe_quorum_to_kio(response, api_version, METADATA_TOPIC, METADATA_PARTITION)


def _describe_quorum_to_kio(
    response: DescribeQuorumResponse, version: int, topic: str, partition: int
) -> ResponsePayload:
    mod = kio_module(ApiKey.DESCRIBE_QUORUM, version, "response")

    def state(r: ReplicaState) -> Any:
        row: dict[str, object] = {
            "replica_id": r.replica_key.id,
            "log_end_offset": r.log_end_offset,
        }
        if version >= 1:
            row["last_fetch_timestamp"] = r.last_fetch_timestamp
            row["last_caught_up_timestamp"] = r.last_caught_up_timestamp
        if version >= 2:
            row["replica_directory_id"] = r.replica_key.directory_id or uuid.UUID(int=0)
        return mod.ReplicaState(**row)

    fields: dict[str, object] = {
        "partition_index": partition,
        "error_code": response.error,
        "leader_id": response.leader_id,
        "leader_epoch": response.leader_epoch,
        "high_watermark": response.high_watermark,
        "current_voters": tuple(state(r) for r in response.voters),
        "observers": tuple(state(r) for r in response.observers),
    }
    top: dict[str, object] = {"error_code": ErrorCode.none}
    if version >= 2:
        fields["error_message"] = response.error_message
        top["error_message"] = None
        top["nodes"] = tuple(
            mod.Node(
                node_id=n.node_id,
                listeners=tuple(
                    mod.Listener(name=e.name, host=e.host, port=e.port) for e in n.listeners
                ),
            )
            for n in response.nodes
        )
    result: ResponsePayload = mod.DescribeQuorumResponse(
        topics=(mod.TopicData(topic_name=topic, partitions=(mod.PartitionData(**fields),)),),
        **top,
    )
    return result


# ---------------------------------------------------------------------------------------
# Outbound requests (the core's) and their responses.


OutboundVoterRequest = (
    AddRaftVoterRequest | RemoveRaftVoterRequest | UpdateRaftVoterRequest | ApiVersionsRequest
)
"""What the core sends besides replication: auto-join's Remove/AddRaftVoter (D9) and
UpdateRaftVoter to the leader, the ApiVersions probe of a would-be voter."""


def voter_request_to_kio(request: OutboundVoterRequest, api_version: int) -> RequestPayload:
    """The kio request for what the core sends (:data:`OutboundVoterRequest`)."""
    result: RequestPayload
    if isinstance(request, AddRaftVoterRequest):
        mod = kio_module(ApiKey.ADD_RAFT_VOTER, api_version, "request")
        result = mod.AddRaftVoterRequest(
            cluster_id=request.cluster_id,
            timeout=datetime.timedelta(milliseconds=request.timeout_ms),
            voter_id=request.voter_key.id,
            voter_directory_id=request.voter_key.directory_id or uuid.UUID(int=0),
            listeners=tuple(
                mod.Listener(name=e.name, host=e.host, port=e.port) for e in request.listeners
            ),
        )
        return result
    if isinstance(request, RemoveRaftVoterRequest):
        mod = kio_module(ApiKey.REMOVE_RAFT_VOTER, api_version, "request")
        result = mod.RemoveRaftVoterRequest(
            cluster_id=request.cluster_id,
            voter_id=request.voter_key.id,
            voter_directory_id=request.voter_key.directory_id or uuid.UUID(int=0),
        )
        return result
    if isinstance(request, ApiVersionsRequest):
        from pykraft import __version__

        mod = kio_module(ApiKey.API_VERSIONS, api_version, "request")
        fields: dict[str, object] = {}
        if api_version >= 3:
            fields = {
                "client_software_name": "pykraft",
                "client_software_version": __version__,
            }
        result = mod.ApiVersionsRequest(**fields)
        return result
    mod = kio_module(ApiKey.UPDATE_RAFT_VOTER, api_version, "request")
    result = mod.UpdateRaftVoterRequest(
        cluster_id=request.cluster_id,
        current_leader_epoch=request.current_leader_epoch,
        voter_id=request.voter_key.id,
        voter_directory_id=request.voter_key.directory_id or uuid.UUID(int=0),
        listeners=tuple(
            mod.Listener(name=e.name, host=e.host, port=e.port) for e in request.listeners
        ),
        k_raft_version_feature=mod.KRaftVersionFeature(
            min_supported_version=request.min_kraft_version,
            max_supported_version=request.max_kraft_version,
        ),
    )
    return result


def voter_response_from_kio(
    message: ResponsePayload,
    *,
    request: OutboundVoterRequest,
    listener_name: str,
) -> AddRaftVoterResponse | RemoveRaftVoterResponse | UpdateRaftVoterResponse | ApiVersionsResponse:
    """The core's view of the answer to ``request``."""
    m: Any = message
    if isinstance(request, AddRaftVoterRequest):
        return AddRaftVoterResponse(ErrorCode(m.error_code), m.error_message)
    if isinstance(request, RemoveRaftVoterRequest):
        return RemoveRaftVoterResponse(ErrorCode(m.error_code), m.error_message)
    if isinstance(request, ApiVersionsRequest):
        versions = None
        for feature in getattr(m, "supported_features", ()):
            if str(feature.name) == KRAFT_VERSION_FEATURE:
                versions = (int(feature.min_version), int(feature.max_version))
        return ApiVersionsResponse(ErrorCode(m.error_code), versions)
    leader = m.current_leader
    endpoints: tuple[Endpoint, ...] = ()
    if int(leader.leader_id) >= 0 and str(leader.host) and int(leader.port) >= 0:
        endpoints = (Endpoint(listener_name, str(leader.host), int(leader.port)),)
    return UpdateRaftVoterResponse(
        error=ErrorCode(m.error_code),
        leader_id=int(leader.leader_id),
        leader_epoch=int(leader.leader_epoch),
        leader_endpoints=endpoints,
    )
