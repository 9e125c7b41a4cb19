"""Conversion between kio's Kafka messages and the core's typed values (``raft.messages``).

The consensus core sees one partition, ``__cluster_metadata-0``; this module is where the
wire's topics/partitions collection is checked and flattened, both ways, for Vote (v0-2),
BeginQuorumEpoch (v0-1), EndQuorumEpoch (v0-1), Fetch (v13-17, what ``protocol.KRAFT_APIS``
serves) and FetchSnapshot (v0-1).

Inbound requests (:func:`request_from_kio`) raise :class:`RejectedRequest` carrying the answer
Kafka gives instead of reaching the core: a request naming another topic or partition gets
UNKNOWN_TOPIC_OR_PARTITION at partition level (SPEC B12; Kafka itself says INVALID_REQUEST
"until multi-raft"); a request with no topic, several topics or several partitions gets a
top-level INVALID_REQUEST.

Fields older versions lack, and how they are defaulted when decoding:

=====================  ==========================  =========================================
message, versions      missing field               default
=====================  ==========================  =========================================
Vote v0                voter_id                    the receiver's own id (``local_id``)
Vote v0                replica/voter directory id  None (kraft.version 0 does not know it)
Vote v0-1              pre_vote                    False (a standard vote)
Vote v1 with id -1     voter_id                    ``local_id`` (as Kafka: "no voter key")
BeginQuorumEpoch v0    voter_id, directory id      ``local_id``, None
BeginQuorumEpoch v0    leader_endpoints            () (the core uses its voter set's)
EndQuorumEpoch v0      successors' directory ids   None (ids only, ``preferred_successors``)
EndQuorumEpoch v0      leader_endpoints            ()
Fetch v13-16           replica_directory_id        None
Fetch v13-15 response  node_endpoints              ()
FetchSnapshot v0       replica_directory_id        None
any response v0        node_endpoints              ()
=====================  ==========================  =========================================

Encoding goes the other way and drops what the version cannot carry, except a pre-vote,
which Vote v0-1 cannot express at all: :func:`request_to_kio` raises
:class:`VersionTooOld`, and the transport answers the core with UNSUPPORTED_VERSION, which is
exactly what KIP-996 says a Prospective must treat as "the peer is too old" (SPEC C4).

Responses carry the leader's endpoint as ``NodeEndpoint(node_id, host, port)`` without a
listener name: the encoder picks the leader endpoint named like the listener the request came
in on, and the decoder names what it reads after the listener the request went out on (what
Kafka's ``Endpoints.fromVoteResponse`` etc. do).

Errors: the core's single ``error`` goes to the top-level error code for the connection-wide
errors in ``_TOP_LEVEL_ERRORS`` and to the partition's otherwise; decoding prefers a top-level
error when there is one.
"""

from __future__ import annotations

import datetime
import uuid
from types import ModuleType
from typing import Any, Final

from kio.static.protocol import RequestPayload, ResponsePayload

from pykraft.net._wire import (
    METADATA_PARTITION,
    METADATA_TOPIC,
    METADATA_TOPIC_ID,
    InvalidResponse,
    RejectedRequest,
    VersionTooOld,
    kio_module,
    message_version,
)
from pykraft.protocol import ApiKey, ErrorCode, error_response
from pykraft.raft.messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    RaftRequest,
    RaftResponse,
    VoteRequest,
    VoteResponse,
)
from pykraft.raft.types import Endpoint, OffsetAndEpoch, ReplicaKey

__all__ = [
    "METADATA_PARTITION",
    "METADATA_TOPIC",
    "METADATA_TOPIC_ID",
    "InvalidResponse",
    "RejectedRequest",
    "VersionTooOld",
    "api_key_of",
    "error_response_for",
    "request_from_kio",
    "request_to_kio",
    "response_from_kio",
    "response_to_kio",
]

_TOP_LEVEL_ERRORS: Final = frozenset(
    {
        ErrorCode.inconsistent_cluster_id,
        ErrorCode.invalid_request,
        ErrorCode.broker_not_available,
        ErrorCode.unsupported_version,
        ErrorCode.cluster_authorization_failed,
    }
)

_API_KEY_OF: Final[dict[type, ApiKey]] = {
    VoteRequest: ApiKey.VOTE,
    VoteResponse: ApiKey.VOTE,
    BeginQuorumEpochRequest: ApiKey.BEGIN_QUORUM_EPOCH,
    BeginQuorumEpochResponse: ApiKey.BEGIN_QUORUM_EPOCH,
    EndQuorumEpochRequest: ApiKey.END_QUORUM_EPOCH,
    EndQuorumEpochResponse: ApiKey.END_QUORUM_EPOCH,
    FetchRequest: ApiKey.FETCH,
    FetchResponse: ApiKey.FETCH,
    FetchSnapshotRequest: ApiKey.FETCH_SNAPSHOT,
    FetchSnapshotResponse: ApiKey.FETCH_SNAPSHOT,
}


def api_key_of(message: RaftRequest | RaftResponse) -> ApiKey:
    return _API_KEY_OF[type(message)]


# ---------------------------------------------------------------------------------------
# Inbound requests: kio -> core.


def _single_partition(
    message: RequestPayload, topics: Any, name_attr: str, parts_attr: str, index_attr: str
) -> Any:
    """The one partition of a single-topic, single-partition request, after checking that it
    is ``__cluster_metadata-0`` (or Fetch's metadata topic id)."""
    api_key = ApiKey(int(message.__api_key__))
    version = message_version(message)
    if len(topics) != 1 or len(getattr(topics[0], parts_attr)) != 1:
        raise RejectedRequest(
            "expected exactly one topic with one partition",
            error_response(api_key, version, ErrorCode.invalid_request),
        )
    topic = topics[0]
    partition = getattr(topic, parts_attr)[0]
    topic_key = getattr(topic, name_attr)
    index = int(getattr(partition, index_attr))
    expected = METADATA_TOPIC_ID if name_attr == "topic_id" else METADATA_TOPIC
    if topic_key != expected or index != METADATA_PARTITION:
        raise RejectedRequest(
            f"unknown topic or partition {topic_key}-{index}",
            _unknown_partition_response(api_key, version, topic_key, index),
        )
    return partition


def request_from_kio(message: RequestPayload, *, local_id: int) -> RaftRequest:
    """The core's view of an inbound request; raises :class:`RejectedRequest`.

    ``local_id`` is the receiver's node id, the default for voter ids older versions lack.
    """
    api_key = int(message.__api_key__)
    version = message_version(message)
    m: Any = message
    if api_key == ApiKey.VOTE:
        p = _single_partition(message, m.topics, "topic_name", "partitions", "partition_index")
        return VoteRequest(
            cluster_id=m.cluster_id,
            candidate_epoch=int(p.replica_epoch),
            candidate_key=ReplicaKey(int(p.replica_id), getattr(p, "replica_directory_id", None)),
            voter_key=_voter_key(m, p, local_id),
            last_offset_epoch=int(p.last_offset_epoch),
            last_offset=int(p.last_offset),
            pre_vote=bool(getattr(p, "pre_vote", False)),
        )
    if api_key == ApiKey.BEGIN_QUORUM_EPOCH:
        p = _single_partition(message, m.topics, "topic_name", "partitions", "partition_index")
        return BeginQuorumEpochRequest(
            cluster_id=m.cluster_id,
            leader_epoch=int(p.leader_epoch),
            leader_id=int(p.leader_id),
            voter_key=_voter_key(m, p, local_id),
            leader_endpoints=_endpoints_from_request(getattr(m, "leader_endpoints", ())),
        )
    if api_key == ApiKey.END_QUORUM_EPOCH:
        p = _single_partition(message, m.topics, "topic_name", "partitions", "partition_index")
        if version == 0:
            successors = tuple(ReplicaKey(int(i)) for i in p.preferred_successors)
        else:
            successors = tuple(
                ReplicaKey(int(c.candidate_id), c.candidate_directory_id)
                for c in p.preferred_candidates
            )
        return EndQuorumEpochRequest(
            cluster_id=m.cluster_id,
            leader_epoch=int(p.leader_epoch),
            leader_id=int(p.leader_id),
            preferred_successors=successors,
            leader_endpoints=_endpoints_from_request(getattr(m, "leader_endpoints", ())),
        )
    if api_key == ApiKey.FETCH:
        return _fetch_request_from_kio(message, version)
    if api_key == ApiKey.FETCH_SNAPSHOT:
        p = _single_partition(message, m.topics, "name", "partitions", "partition")
        return FetchSnapshotRequest(
            cluster_id=m.cluster_id,
            replica_key=ReplicaKey(int(m.replica_id), getattr(p, "replica_directory_id", None)),
            current_leader_epoch=int(p.current_leader_epoch),
            snapshot_id=OffsetAndEpoch(int(p.snapshot_id.end_offset), int(p.snapshot_id.epoch)),
            position=int(p.position),
            max_bytes=int(m.max_bytes),
        )
    raise ValueError(f"api key {api_key} is not a raft request")


def _voter_key(m: Any, p: Any, local_id: int) -> ReplicaKey:
    """Vote's and BeginQuorumEpoch's voter key; ``local_id`` where the version has no
    voter id or sends -1."""
    voter_id = int(getattr(m, "voter_id", -1))
    return ReplicaKey(
        voter_id if voter_id >= 0 else local_id, getattr(p, "voter_directory_id", None)
    )


def _fetch_request_from_kio(message: RequestPayload, version: int) -> FetchRequest:
    m: Any = message
    p = _single_partition(message, m.topics, "topic_id", "partitions", "partition")
    replica_id = int(m.replica_state.replica_id if version >= 15 else m.replica_id)
    max_bytes = int(m.max_bytes)
    if int(p.partition_max_bytes) > 0:
        max_bytes = min(max_bytes, int(p.partition_max_bytes))
    return FetchRequest(
        cluster_id=m.cluster_id,
        replica_key=ReplicaKey(replica_id, getattr(p, "replica_directory_id", None)),
        current_leader_epoch=int(p.current_leader_epoch),
        fetch_offset=int(p.fetch_offset),
        last_fetched_epoch=int(p.last_fetched_epoch),
        max_wait_ms=_ms(m.max_wait),
        max_bytes=max_bytes,
    )


def _ms(delta: datetime.timedelta) -> int:
    return int(delta.total_seconds() * 1000)


def _endpoints_from_request(rows: Any) -> tuple[Endpoint, ...]:
    return tuple(Endpoint(str(e.name), str(e.host), int(e.port)) for e in rows)


# ---------------------------------------------------------------------------------------
# Outbound requests: core -> kio.


def request_to_kio(request: RaftRequest, api_version: int) -> RequestPayload:
    """The kio request at ``api_version``; raises :class:`VersionTooOld`."""
    mod = kio_module(api_key_of(request), api_version, "request")
    result: RequestPayload
    if isinstance(request, VoteRequest):
        result = _vote_request_to_kio(mod, request, api_version)
    elif isinstance(request, BeginQuorumEpochRequest | EndQuorumEpochRequest):
        result = _epoch_request_to_kio(mod, request, api_version)
    elif isinstance(request, FetchRequest):
        result = _fetch_request_to_kio(mod, request, api_version)
    else:
        result = _fetch_snapshot_request_to_kio(mod, request, api_version)
    return result


def _one_partition(mod: ModuleType, fields: dict[str, object]) -> Any:
    """Vote's, BeginQuorumEpoch's and EndQuorumEpoch's topic list: the metadata partition."""
    return (mod.TopicData(topic_name=METADATA_TOPIC, partitions=(mod.PartitionData(**fields),)),)


def _vote_request_to_kio(mod: ModuleType, request: VoteRequest, api_version: int) -> Any:
    if request.pre_vote and api_version < 2:
        raise VersionTooOld(f"a pre-vote needs Vote v2, the peer speaks v{api_version}")
    fields: dict[str, object] = {
        "partition_index": METADATA_PARTITION,
        "replica_epoch": request.candidate_epoch,
        "replica_id": request.candidate_key.id,
        "last_offset_epoch": request.last_offset_epoch,
        "last_offset": request.last_offset,
    }
    top: dict[str, object] = {"cluster_id": request.cluster_id}
    if api_version >= 1:
        fields["replica_directory_id"] = request.candidate_key.directory_id
        fields["voter_directory_id"] = request.voter_key.directory_id
        top["voter_id"] = request.voter_key.id
    if api_version >= 2:
        fields["pre_vote"] = request.pre_vote
    return mod.VoteRequest(topics=_one_partition(mod, fields), **top)


def _epoch_request_to_kio(
    mod: ModuleType, request: BeginQuorumEpochRequest | EndQuorumEpochRequest, api_version: int
) -> Any:
    """BeginQuorumEpoch and EndQuorumEpoch: the leader's epoch and id, then what each adds."""
    fields: dict[str, object] = {
        "partition_index": METADATA_PARTITION,
        "leader_id": request.leader_id,
        "leader_epoch": request.leader_epoch,
    }
    top: dict[str, object] = {"cluster_id": request.cluster_id}
    if isinstance(request, BeginQuorumEpochRequest):
        if api_version >= 1:
            fields["voter_directory_id"] = request.voter_key.directory_id
            top["voter_id"] = request.voter_key.id
            top["leader_endpoints"] = _endpoints_to_request(mod, request.leader_endpoints)
        return mod.BeginQuorumEpochRequest(topics=_one_partition(mod, fields), **top)
    if api_version == 0:
        fields["preferred_successors"] = tuple(k.id for k in request.preferred_successors)
    else:
        fields["preferred_candidates"] = tuple(
            mod.ReplicaInfo(candidate_id=k.id, candidate_directory_id=k.directory_id)
            for k in request.preferred_successors
        )
        top["leader_endpoints"] = _endpoints_to_request(mod, request.leader_endpoints)
    return mod.EndQuorumEpochRequest(topics=_one_partition(mod, fields), **top)


def _fetch_snapshot_request_to_kio(
    mod: ModuleType, request: FetchSnapshotRequest, api_version: int
) -> Any:
    fields: dict[str, object] = {
        "partition": METADATA_PARTITION,
        "current_leader_epoch": request.current_leader_epoch,
        "snapshot_id": mod.SnapshotId(
            end_offset=request.snapshot_id.offset, epoch=request.snapshot_id.epoch
        ),
        "position": request.position,
    }
    if api_version >= 1:
        fields["replica_directory_id"] = request.replica_key.directory_id
    topic = mod.TopicSnapshot(name=METADATA_TOPIC, partitions=(mod.PartitionSnapshot(**fields),))
    return mod.FetchSnapshotRequest(
        cluster_id=request.cluster_id,
        replica_id=request.replica_key.id,
        max_bytes=request.max_bytes,
        topics=(topic,),
    )


def _fetch_request_to_kio(mod: ModuleType, request: FetchRequest, api_version: int) -> Any:
    fields: dict[str, object] = {
        "partition": METADATA_PARTITION,
        "current_leader_epoch": request.current_leader_epoch,
        "fetch_offset": request.fetch_offset,
        "last_fetched_epoch": request.last_fetched_epoch,
        "log_start_offset": -1,
        "partition_max_bytes": request.max_bytes,
    }
    if api_version >= 17:
        fields["replica_directory_id"] = request.replica_key.directory_id
    top: dict[str, object] = {"cluster_id": request.cluster_id}
    if api_version >= 15:
        top["replica_state"] = mod.ReplicaState(replica_id=request.replica_key.id, replica_epoch=-1)
    else:
        top["replica_id"] = request.replica_key.id
    topic = mod.FetchTopic(topic_id=METADATA_TOPIC_ID, partitions=(mod.FetchPartition(**fields),))
    return mod.FetchRequest(
        max_wait=datetime.timedelta(milliseconds=request.max_wait_ms),
        min_bytes=0,
        max_bytes=request.max_bytes,
        topics=(topic,),
        forgotten_topics_data=(),
        **top,
    )


def _endpoints_to_request(mod: ModuleType, endpoints: tuple[Endpoint, ...]) -> tuple[Any, ...]:
    return tuple(mod.LeaderEndpoint(name=e.name, host=e.host, port=e.port) for e in endpoints)


# ---------------------------------------------------------------------------------------
# Outbound responses: core -> kio.


def _node_endpoints(
    mod: ModuleType, leader_id: int, endpoints: tuple[Endpoint, ...], listener_name: str
) -> tuple[Any, ...]:
    for e in endpoints:
        if e.name == listener_name:
            return (mod.NodeEndpoint(node_id=leader_id, host=e.host, port=e.port),)
    return ()


def response_to_kio(
    response: RaftResponse, api_version: int, *, listener_name: str
) -> ResponsePayload:
    """The kio response at ``api_version`` (the request's version) for the core's answer.

    ``listener_name`` is the listener the request arrived on; it selects which of the
    leader's endpoints goes into NodeEndpoints.
    """
    return _response_to_kio(
        response, api_version, listener_name, METADATA_TOPIC_ID, METADATA_PARTITION
    )


def _unknown_partition_response(
    api_key: ApiKey, api_version: int, topic: object, partition: int
) -> ResponsePayload:
    error = ErrorCode.unknown_topic_or_partition
    response: RaftResponse
    if api_key == ApiKey.VOTE:
        response = VoteResponse(error, -1, -1, False)
    elif api_key == ApiKey.BEGIN_QUORUM_EPOCH:
        response = BeginQuorumEpochResponse(error, -1, -1)
    elif api_key == ApiKey.END_QUORUM_EPOCH:
        response = EndQuorumEpochResponse(error, -1, -1)
    elif api_key == ApiKey.FETCH:
        response = FetchResponse(error, -1, -1, -1, -1)
    else:
        response = FetchSnapshotResponse(error, -1, -1, OffsetAndEpoch(-1, -1))
    return _response_to_kio(response, api_version, "", topic, partition)


def _response_to_kio(
    response: RaftResponse, api_version: int, listener_name: str, topic: object, partition: int
) -> ResponsePayload:
    api_key = api_key_of(response)
    if response.error in _TOP_LEVEL_ERRORS:
        # Kafka answers these with the top-level code and no partition data.
        return error_response(api_key, api_version, response.error)
    mod = kio_module(api_key, api_version, "response")
    error = response.error
    endpoints: dict[str, object] = {}
    if api_version >= (16 if api_key == ApiKey.FETCH else 1):
        endpoints["node_endpoints"] = _node_endpoints(
            mod, response.leader_id, response.leader_endpoints, listener_name
        )
    name = topic if isinstance(topic, str) else METADATA_TOPIC
    if isinstance(response, VoteResponse | BeginQuorumEpochResponse | EndQuorumEpochResponse):
        fields: dict[str, object] = {
            "partition_index": partition,
            "error_code": error,
            "leader_id": response.leader_id,
            "leader_epoch": response.epoch,
        }
        if isinstance(response, VoteResponse):
            fields["vote_granted"] = response.vote_granted
        topics = (mod.TopicData(topic_name=name, partitions=(mod.PartitionData(**fields),)),)
        cls = getattr(mod, type(response).__name__)
        result: ResponsePayload = cls(error_code=ErrorCode.none, topics=topics, **endpoints)
        return result
    leader = mod.LeaderIdAndEpoch(leader_id=response.leader_id, leader_epoch=response.epoch)
    if isinstance(response, FetchResponse):
        diverging = response.diverging_epoch or OffsetAndEpoch(-1, -1)
        snapshot = response.snapshot_id or OffsetAndEpoch(-1, -1)
        data = mod.PartitionData(
            partition_index=partition,
            error_code=error,
            high_watermark=response.high_watermark,
            log_start_offset=response.log_start_offset,
            diverging_epoch=mod.EpochEndOffset(epoch=diverging.epoch, end_offset=diverging.offset),
            current_leader=leader,
            snapshot_id=mod.SnapshotId(end_offset=snapshot.offset, epoch=snapshot.epoch),
            aborted_transactions=None,
            records=response.records,
        )
        topic_id = topic if isinstance(topic, uuid.UUID) else None
        result = mod.FetchResponse(
            throttle_time=datetime.timedelta(0),
            error_code=ErrorCode.none,
            responses=(mod.FetchableTopicResponse(topic_id=topic_id, partitions=(data,)),),
            **endpoints,
        )
        return result
    snap = mod.PartitionSnapshot(
        index=partition,
        error_code=error,
        snapshot_id=mod.SnapshotId(
            end_offset=response.snapshot_id.offset, epoch=response.snapshot_id.epoch
        ),
        current_leader=leader,
        size=response.size,
        position=response.position,
        unaligned_records=response.chunk,
    )
    result = mod.FetchSnapshotResponse(
        throttle_time=datetime.timedelta(0),
        error_code=ErrorCode.none,
        topics=(mod.TopicSnapshot(name=name, partitions=(snap,)),),
        **endpoints,
    )
    return result


# ---------------------------------------------------------------------------------------
# Inbound responses: kio -> core.


def _response_partition(topics: Any, name_attr: str, parts_attr: str, index_attr: str) -> Any:
    if len(topics) != 1 or len(getattr(topics[0], parts_attr)) != 1:
        raise InvalidResponse("expected exactly one topic with one partition")
    topic = topics[0]
    partition = getattr(topic, parts_attr)[0]
    expected = METADATA_TOPIC_ID if name_attr == "topic_id" else METADATA_TOPIC
    if getattr(topic, name_attr) != expected or int(getattr(partition, index_attr)) != 0:
        raise InvalidResponse("response for another topic or partition")
    return partition


def _endpoints_from_response(
    message: Any, leader_id: int, listener_name: str
) -> tuple[Endpoint, ...]:
    return tuple(
        Endpoint(listener_name, str(e.host), int(e.port))
        for e in getattr(message, "node_endpoints", ())
        if int(e.node_id) == leader_id and leader_id >= 0
    )


def response_from_kio(
    message: ResponsePayload, *, request: RaftRequest, listener_name: str
) -> RaftResponse:
    """The core's view of the response to ``request``; raises :class:`InvalidResponse`.

    A top-level error (INCONSISTENT_CLUSTER_ID, ...) comes with no partition data, so the
    core sees it with epoch and leader id -1.
    """
    m: Any = message
    api_key = int(message.__api_key__)
    if api_key != api_key_of(request):
        raise InvalidResponse(f"api key {api_key} does not answer {type(request).__name__}")
    top_error = ErrorCode(m.error_code)
    if top_error != ErrorCode.none:
        return _top_level_error_response(request, top_error)
    if api_key in (ApiKey.VOTE, ApiKey.BEGIN_QUORUM_EPOCH, ApiKey.END_QUORUM_EPOCH):
        p = _response_partition(m.topics, "topic_name", "partitions", "partition_index")
        leader_id = int(p.leader_id)
        endpoints = _endpoints_from_response(m, leader_id, listener_name)
        if isinstance(request, VoteRequest):
            return VoteResponse(
                error=ErrorCode(p.error_code),
                epoch=int(p.leader_epoch),
                leader_id=leader_id,
                vote_granted=bool(p.vote_granted),
                leader_endpoints=endpoints,
                pre_vote=request.pre_vote,
            )
        cls = (
            BeginQuorumEpochResponse
            if isinstance(request, BeginQuorumEpochRequest)
            else EndQuorumEpochResponse
        )
        return cls(ErrorCode(p.error_code), int(p.leader_epoch), leader_id, endpoints)
    if api_key == ApiKey.FETCH:
        p = _response_partition(m.responses, "topic_id", "partitions", "partition_index")
        leader_id = int(p.current_leader.leader_id)
        diverging = p.diverging_epoch
        snapshot = p.snapshot_id
        return FetchResponse(
            error=ErrorCode(p.error_code),
            epoch=int(p.current_leader.leader_epoch),
            leader_id=leader_id,
            high_watermark=int(p.high_watermark),
            log_start_offset=int(p.log_start_offset),
            records=bytes(p.records or b""),
            diverging_epoch=(
                OffsetAndEpoch(int(diverging.end_offset), int(diverging.epoch))
                if int(diverging.epoch) >= 0 or int(diverging.end_offset) >= 0
                else None
            ),
            snapshot_id=(
                OffsetAndEpoch(int(snapshot.end_offset), int(snapshot.epoch))
                if int(snapshot.epoch) >= 0 or int(snapshot.end_offset) >= 0
                else None
            ),
            leader_endpoints=_endpoints_from_response(m, leader_id, listener_name),
        )
    p = _response_partition(m.topics, "name", "partitions", "index")
    leader_id = int(p.current_leader.leader_id)
    return FetchSnapshotResponse(
        error=ErrorCode(p.error_code),
        epoch=int(p.current_leader.leader_epoch),
        leader_id=leader_id,
        snapshot_id=OffsetAndEpoch(int(p.snapshot_id.end_offset), int(p.snapshot_id.epoch)),
        size=int(p.size),
        position=int(p.position),
        chunk=bytes(p.unaligned_records),
        leader_endpoints=_endpoints_from_response(m, leader_id, listener_name),
    )


def error_response_for(request: RaftRequest, error: ErrorCode) -> RaftResponse:
    """The core's view of a response that only carries ``error`` (no partition data):
    used for top-level errors and for answers the transport makes up (UNSUPPORTED_VERSION
    for a pre-vote to an old peer)."""
    return _top_level_error_response(request, error)


def _top_level_error_response(request: RaftRequest, error: ErrorCode) -> RaftResponse:
    if isinstance(request, VoteRequest):
        return VoteResponse(error, -1, -1, False, pre_vote=request.pre_vote)
    if isinstance(request, BeginQuorumEpochRequest):
        return BeginQuorumEpochResponse(error, -1, -1)
    if isinstance(request, EndQuorumEpochRequest):
        return EndQuorumEpochResponse(error, -1, -1)
    if isinstance(request, FetchRequest):
        return FetchResponse(error, -1, -1, -1, -1)
    return FetchSnapshotResponse(error, -1, -1, request.snapshot_id)
