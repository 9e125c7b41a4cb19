"""BeginQuorumEpoch (v0-1) and EndQuorumEpoch (v0-1) between kio and the core: a leader
telling the voters of its epoch, and resigning it (KIP-595, KIP-853).

Defaults where v0 lacks a field: BeginQuorumEpoch v0 has no voter id or directory id (the
receiver's own id, None) and no LeaderEndpoints (the core uses its voter set's);
EndQuorumEpoch v0 names its successors by id only (PreferredSuccessors: no directory ids)
and has no LeaderEndpoints.
"""

from __future__ import annotations

from typing import Any, Final

from kio.static.protocol import RequestPayload, ResponsePayload

from pykraft.net.convert._common import (
    METADATA_PARTITION,
    Converters,
    check_answers,
    endpoints_from_response,
    endpoints_to_request,
    kio_module,
    leader_partition_response,
    listeners,
    one_partition,
    response_partition,
    single_partition,
)
from pykraft.net.convert.vote import voter_key
from pykraft.protocol import ApiKey, ErrorCode
from pykraft.raft.messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
)
from pykraft.raft.types import ReplicaKey

__all__ = ["BEGIN_CONVERTERS", "END_CONVERTERS"]

_WHERE: Final = ("topic_name", "partitions", "partition_index")

EpochRequest = BeginQuorumEpochRequest | EndQuorumEpochRequest
EpochResponse = BeginQuorumEpochResponse | EndQuorumEpochResponse


def _unknown_begin(version: int, topic: object, partition: int) -> ResponsePayload:
    answer = BeginQuorumEpochResponse(ErrorCode.unknown_topic_or_partition, -1, -1)
    return leader_partition_response(
        ApiKey.BEGIN_QUORUM_EPOCH, answer, version, "", (topic, partition), {}
    )


def _unknown_end(version: int, topic: object, partition: int) -> ResponsePayload:
    answer = EndQuorumEpochResponse(ErrorCode.unknown_topic_or_partition, -1, -1)
    return leader_partition_response(
        ApiKey.END_QUORUM_EPOCH, answer, version, "", (topic, partition), {}
    )


def begin_from_kio(message: RequestPayload, local_id: int) -> BeginQuorumEpochRequest:
    m: Any = message
    p = single_partition(message, m.topics, _WHERE, _unknown_begin)
    return BeginQuorumEpochRequest(
        cluster_id=m.cluster_id,
        leader_epoch=int(p.leader_epoch),
        leader_id=int(p.leader_id),
        voter_key=voter_key(m, p, local_id),
        leader_endpoints=listeners(getattr(m, "leader_endpoints", ())),
    )


def end_from_kio(message: RequestPayload, _local_id: int) -> EndQuorumEpochRequest:
    m: Any = message
    p = single_partition(message, m.topics, _WHERE, _unknown_end)
    if int(message.__version__) == 0:
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
        leader_endpoints=listeners(getattr(m, "leader_endpoints", ())),
    )


def _leader_fields(request: EpochRequest) -> dict[str, object]:
    return {
        "partition_index": METADATA_PARTITION,
        "leader_id": request.leader_id,
        "leader_epoch": request.leader_epoch,
    }


def begin_to_kio(request: BeginQuorumEpochRequest, version: int) -> RequestPayload:
    mod = kio_module(ApiKey.BEGIN_QUORUM_EPOCH, version, "request")
    fields = _leader_fields(request)
    top: dict[str, object] = {"cluster_id": request.cluster_id}
    if version >= 1:
        fields["voter_directory_id"] = request.voter_key.directory_id
        top["voter_id"] = request.voter_key.id
        top["leader_endpoints"] = endpoints_to_request(mod, request.leader_endpoints)
    result: RequestPayload = mod.BeginQuorumEpochRequest(topics=one_partition(mod, fields), **top)
    return result


def end_to_kio(request: EndQuorumEpochRequest, version: int) -> RequestPayload:
    mod = kio_module(ApiKey.END_QUORUM_EPOCH, version, "request")
    fields = _leader_fields(request)
    top: dict[str, object] = {"cluster_id": request.cluster_id}
    if version == 0:
        fields["preferred_successors"] = tuple(k.id for k in request.preferred_successors)
    else:
        fields["preferred_candidates"] = tuple(
            mod.ReplicaInfo(candidate_id=k.id, candidate_directory_id=k.directory_id)
            for k in request.preferred_successors
        )
        top["leader_endpoints"] = endpoints_to_request(mod, request.leader_endpoints)
    result: RequestPayload = mod.EndQuorumEpochRequest(topics=one_partition(mod, fields), **top)
    return result


def _to_kio(api_key: ApiKey) -> Any:
    def response_to_kio(response: EpochResponse, version: int, listener: str) -> ResponsePayload:
        at = (None, METADATA_PARTITION)
        return leader_partition_response(api_key, response, version, listener, at, {})

    return response_to_kio


def _error_answer(cls: type[EpochResponse]) -> Any:
    def error_answer(_request: EpochRequest, error: ErrorCode) -> EpochResponse:
        return cls(error, -1, -1)

    return error_answer


def _from_kio(api_key: ApiKey, cls: type[EpochResponse]) -> Any:
    def response_from_kio(message: ResponsePayload, _request: Any, listener: str) -> Any:
        top_error = check_answers(message, api_key)
        if top_error != ErrorCode.none:
            return cls(top_error, -1, -1)
        m: Any = message
        p = response_partition(m.topics, _WHERE)
        leader_id = int(p.leader_id)
        endpoints = endpoints_from_response(m, leader_id, listener)
        return cls(ErrorCode(p.error_code), int(p.leader_epoch), leader_id, endpoints)

    return response_from_kio


BEGIN_CONVERTERS: Final = Converters(
    request_from_kio=begin_from_kio,
    response_to_kio=_to_kio(ApiKey.BEGIN_QUORUM_EPOCH),
    request_to_kio=begin_to_kio,
    response_from_kio=_from_kio(ApiKey.BEGIN_QUORUM_EPOCH, BeginQuorumEpochResponse),
    error_answer=_error_answer(BeginQuorumEpochResponse),
)
END_CONVERTERS: Final = Converters(
    request_from_kio=end_from_kio,
    response_to_kio=_to_kio(ApiKey.END_QUORUM_EPOCH),
    request_to_kio=end_to_kio,
    response_from_kio=_from_kio(ApiKey.END_QUORUM_EPOCH, EndQuorumEpochResponse),
    error_answer=_error_answer(EndQuorumEpochResponse),
)
