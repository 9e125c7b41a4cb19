"""Vote (v0-2) between kio and the core (KIP-595, KIP-853, KIP-996's pre-vote).

Defaults where a version lacks a field: Vote v0 has no voter id (the receiver's own id,
``local_id``) and no directory ids (None: kraft.version 0 does not know them); v0-1 have no
PreVote (a standard vote); a v1+ voter id of -1 means "no voter key" (``local_id``, as
Kafka). A pre-vote cannot be said below v2: :func:`request_to_kio` raises
:class:`VersionTooOld`, and the transport answers the core with UNSUPPORTED_VERSION, which is
exactly what KIP-996 says a Prospective must treat as "the peer is too old" (SPEC C4).
"""

from __future__ import annotations

from typing import Any, Final

from kio.static.protocol import RequestPayload, ResponsePayload

from pykraft.net.convert._common import (
    METADATA_PARTITION,
    Converters,
    VersionTooOld,
    check_answers,
    endpoints_from_response,
    kio_module,
    leader_partition_response,
    one_partition,
    response_partition,
    single_partition,
)
from pykraft.protocol import ApiKey, ErrorCode
from pykraft.raft.messages import VoteRequest, VoteResponse
from pykraft.raft.types import ReplicaKey

__all__ = ["CONVERTERS", "voter_key"]

_WHERE: Final = ("topic_name", "partitions", "partition_index")


def voter_key(m: Any, p: Any, local_id: int) -> ReplicaKey:
    """Vote's and BeginQuorumEpoch's voter key; ``local_id`` where the version has no voter
    id or sends -1."""
    voter_id = int(getattr(m, "voter_id", -1))
    return ReplicaKey(
        voter_id if voter_id >= 0 else local_id, getattr(p, "voter_directory_id", None)
    )


def _unknown(version: int, topic: object, partition: int) -> ResponsePayload:
    answer = VoteResponse(ErrorCode.unknown_topic_or_partition, -1, -1, False)
    return leader_partition_response(
        ApiKey.VOTE, answer, version, "", (topic, partition), {"vote_granted": False}
    )


def request_from_kio(message: RequestPayload, local_id: int) -> VoteRequest:
    m: Any = message
    p = single_partition(message, m.topics, _WHERE, _unknown)
    return VoteRequest(
        cluster_id=m.cluster_id,
        candidate_epoch=int(p.replica_epoch),
        candidate_key=ReplicaKey(int(p.replica_id), getattr(p, "replica_directory_id", None)),
        voter_key=voter_key(m, p, local_id),
        last_offset_epoch=int(p.last_offset_epoch),
        last_offset=int(p.last_offset),
        pre_vote=bool(getattr(p, "pre_vote", False)),
    )


def request_to_kio(request: VoteRequest, version: int) -> RequestPayload:
    if request.pre_vote and version < 2:
        raise VersionTooOld(f"a pre-vote needs Vote v2, the peer speaks v{version}")
    mod = kio_module(ApiKey.VOTE, version, "request")
    fields: dict[str, object] = {
        "partition_index": METADATA_PARTITION,
        "replica_epoch": request.candidate_epoch,
        "replica_id": request.candidate_key.id,
        "last_offset_epoch": request.last_offset_epoch,
        "last_offset": request.last_offset,
    }
    top: dict[str, object] = {"cluster_id": request.cluster_id}
    if version >= 1:
        fields["replica_directory_id"] = request.candidate_key.directory_id
        fields["voter_directory_id"] = request.voter_key.directory_id
        top["voter_id"] = request.voter_key.id
    if version >= 2:
        fields["pre_vote"] = request.pre_vote
    result: RequestPayload = mod.VoteRequest(topics=one_partition(mod, fields), **top)
    return result


def response_to_kio(response: VoteResponse, version: int, listener_name: str) -> ResponsePayload:
    return leader_partition_response(
        ApiKey.VOTE,
        response,
        version,
        listener_name,
        (None, METADATA_PARTITION),
        {"vote_granted": response.vote_granted},
    )


def error_answer(request: VoteRequest, error: ErrorCode) -> VoteResponse:
    """The core's view of an answer that only carries ``error``."""
    return VoteResponse(error, -1, -1, False, pre_vote=request.pre_vote)


def response_from_kio(
    message: ResponsePayload, request: VoteRequest, listener_name: str
) -> VoteResponse:
    top_error = check_answers(message, ApiKey.VOTE)
    if top_error != ErrorCode.none:
        return error_answer(request, top_error)
    m: Any = message
    p = response_partition(m.topics, _WHERE)
    leader_id = int(p.leader_id)
    return VoteResponse(
        error=ErrorCode(p.error_code),
        epoch=int(p.leader_epoch),
        leader_id=leader_id,
        vote_granted=bool(p.vote_granted),
        leader_endpoints=endpoints_from_response(m, leader_id, listener_name),
        pre_vote=request.pre_vote,
    )


CONVERTERS: Final = Converters(
    request_from_kio=request_from_kio,
    response_to_kio=response_to_kio,
    request_to_kio=request_to_kio,
    response_from_kio=response_from_kio,
    error_answer=error_answer,
)
