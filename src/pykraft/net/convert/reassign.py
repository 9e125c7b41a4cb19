"""KIP-642's voter reassignment over KIP-455's API, between kio and the core:

* AlterPartitionReassignments (45, v0-1) naming ``__cluster_metadata`` partition 0 sets the
  quorum's target voters (replica ids), null replicas cancel;
* ListPartitionReassignments (46, v0-1) lists that partition while its voter set is being
  reassigned (all topics, or that topic named).

Both directions: the node serves them, the admin client sends them (``request_to_kio``,
``response_from_kio``), so the two ends share one conversion.

The raft layer serves the metadata partition only. A request naming any other topic or
partition (the controller's business, which reassigns topic partitions) gets
UNKNOWN_TOPIC_OR_PARTITION for those, and the metadata partition, if also named, is not
changed: INVALID_REQUEST asks for it alone.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Final

from kio.static.protocol import RequestPayload, ResponsePayload

from pykraft.net.convert._common import (
    METADATA_PARTITION,
    METADATA_TOPIC,
    Converters,
    RejectedRequest,
    check_answers,
    kio_module,
    milliseconds,
)
from pykraft.protocol import ApiKey, ErrorCode, request_schema, response_schema
from pykraft.protocol.build import make
from pykraft.raft.messages import (
    AlterVotersRequest,
    AlterVotersResponse,
    ListVoterReassignmentRequest,
    ListVoterReassignmentResponse,
)
from pykraft.raft.reassignment import ReassignmentProgress

__all__ = ["ALTER_CONVERTERS", "LIST_CONVERTERS", "metadata_listing"]

_ZERO: Final = datetime.timedelta(0)
_METADATA: Final = (METADATA_TOPIC, METADATA_PARTITION)


def alter_from_kio(message: RequestPayload, _local_id: int) -> AlterVotersRequest:
    """The target voters; raises :class:`RejectedRequest` with Kafka's answer when the
    request names anything but the metadata partition."""
    m: Any = message
    entries = [
        (str(t.name), int(p.partition_index), p.replicas) for t in m.topics for p in t.partitions
    ]
    if len(entries) == 1 and entries[0][:2] == _METADATA:
        replicas = entries[0][2]
        return AlterVotersRequest(
            target_ids=None if replicas is None else tuple(int(r) for r in replicas),
            timeout_ms=milliseconds(m.timeout),
        )
    results: dict[tuple[str, int], tuple[ErrorCode, str | None]] = {}
    for name, index, _ in entries:
        if (name, index) == _METADATA:
            results[(name, index)] = (
                ErrorCode.invalid_request,
                "reassign the metadata partition's voters in a request of its own",
            )
        else:
            results[(name, index)] = (
                ErrorCode.unknown_topic_or_partition,
                "this controller serves no topic partitions",
            )
    raise RejectedRequest(
        "not the metadata partition alone", _alter_results(int(message.__version__), results)
    )


def _alter_results(
    version: int, results: Mapping[tuple[str, int], tuple[ErrorCode, str | None]]
) -> ResponsePayload:
    mod = kio_module(ApiKey.ALTER_PARTITION_REASSIGNMENTS, version, "response")
    by_topic: dict[str, list[Any]] = {}
    for (name, index), (error, message) in results.items():
        by_topic.setdefault(name, []).append(
            mod.ReassignablePartitionResponse(
                partition_index=index, error_code=error, error_message=message
            )
        )
    fields: dict[str, object] = {
        "throttle_time": _ZERO,
        "error_code": ErrorCode.none,
        "error_message": None,
        "responses": tuple(
            mod.ReassignableTopicResponse(name=name, partitions=tuple(parts))
            for name, parts in by_topic.items()
        ),
    }
    if version >= 1:
        fields["allow_replication_factor_change"] = True
    result: ResponsePayload = mod.AlterPartitionReassignmentsResponse(**fields)
    return result


def alter_to_kio(response: AlterVotersResponse, version: int, _listener: str) -> ResponsePayload:
    return _alter_results(version, {_METADATA: (response.error, response.error_message)})


def alter_request_to_kio(request: AlterVotersRequest, version: int) -> RequestPayload:
    mod = kio_module(ApiKey.ALTER_PARTITION_REASSIGNMENTS, version, "request")
    partition = mod.ReassignablePartition(
        partition_index=METADATA_PARTITION, replicas=request.target_ids
    )
    fields: dict[str, object] = {
        "timeout": datetime.timedelta(milliseconds=request.timeout_ms),
        "topics": (mod.ReassignableTopic(name=METADATA_TOPIC, partitions=(partition,)),),
    }
    if version >= 1:
        fields["allow_replication_factor_change"] = True
    result: RequestPayload = mod.AlterPartitionReassignmentsRequest(**fields)
    return result


def alter_response_from_kio(
    message: ResponsePayload, _request: AlterVotersRequest, _listener: str
) -> AlterVotersResponse:
    """The metadata partition's outcome (the top-level error first)."""
    m: Any = message
    code, text = ErrorCode(check_answers(message, ApiKey.ALTER_PARTITION_REASSIGNMENTS)), None
    if code == ErrorCode.none:
        part = m.responses[0].partitions[0]
        code, text = ErrorCode(part.error_code), part.error_message
    else:
        text = m.error_message
    return AlterVotersResponse(code, text)


def list_from_kio(message: RequestPayload, _local_id: int) -> ListVoterReassignmentRequest:
    """Raises :class:`RejectedRequest` (an empty listing) unless the metadata partition is
    among those asked about."""
    m: Any = message
    named = m.topics is None or any(
        str(t.name) == METADATA_TOPIC and METADATA_PARTITION in tuple(t.partition_indexes)
        for t in m.topics
    )
    if not named:
        empty = ListVoterReassignmentResponse(ErrorCode.none)
        raise RejectedRequest("other topics", list_to_kio(empty, int(message.__version__), ""))
    # kio's v0 says Timeout (a timedelta), pykraft's generated v1 (protocol/ext) TimeoutMs.
    timeout = getattr(m, "timeout", None)
    return ListVoterReassignmentRequest(
        milliseconds(timeout) if timeout is not None else int(m.timeout_ms)
    )


def list_request_to_kio(request: ListVoterReassignmentRequest, version: int) -> RequestPayload:
    return make(
        request_schema(ApiKey.LIST_PARTITION_REASSIGNMENTS, version),
        {
            "timeout": datetime.timedelta(milliseconds=request.timeout_ms),
            "topics": [{"name": METADATA_TOPIC, "partition_indexes": [METADATA_PARTITION]}],
        },
    )


def list_response_from_kio(
    message: ResponsePayload, _request: ListVoterReassignmentRequest, _listener: str
) -> ListVoterReassignmentResponse:
    """The metadata partition's listing; empty when none is in progress."""
    m: Any = message
    code = check_answers(message, ApiKey.LIST_PARTITION_REASSIGNMENTS)
    if code != ErrorCode.none:
        return ListVoterReassignmentResponse(code, m.error_message)
    for topic in m.topics:
        for p in topic.partitions:
            return ListVoterReassignmentResponse(
                code,
                None,
                tuple(int(r) for r in p.replicas),
                tuple(int(r) for r in p.adding_replicas),
                tuple(int(r) for r in p.removing_replicas),
            )
    return ListVoterReassignmentResponse(code)


def metadata_listing(response: ListVoterReassignmentResponse) -> dict[str, Any] | None:
    """The metadata partition's ListPartitionReassignments topic entry (KIP-455's fields)
    while its voter set is being reassigned; None otherwise."""
    if not (response.adding or response.removing):
        return None
    final = tuple(r for r in response.replicas if r not in response.removing)
    partition = {
        "partition_index": METADATA_PARTITION,
        "replicas": response.replicas,
        "adding_replicas": response.adding,
        "removing_replicas": response.removing,
        "final_replicas": final,
    }
    return {"name": METADATA_TOPIC, "partitions": [partition]}


def progress_listing(progress: ReassignmentProgress | None) -> dict[str, Any] | None:
    """``metadata_listing`` from the core's ``reassignment_progress()`` (what the metadata
    controller adds to a ListPartitionReassignments of every topic)."""
    if progress is None:
        return None
    current = {k.id for k in progress.current}
    target = {k.id for k in progress.target}
    return metadata_listing(
        ListVoterReassignmentResponse(
            ErrorCode.none,
            None,
            replicas=tuple(sorted(current | target)),
            adding=tuple(sorted(target - current)),
            removing=tuple(sorted(current - target)),
        )
    )


def list_to_kio(
    response: ListVoterReassignmentResponse, version: int, _listener: str
) -> ResponsePayload:
    listing = metadata_listing(response)
    return make(
        response_schema(ApiKey.LIST_PARTITION_REASSIGNMENTS, version),
        {
            "throttle_time": 0,
            "error_code": response.error,
            "error_message": response.error_message,
            "topics": [] if listing is None else [listing],
        },
    )


ALTER_CONVERTERS: Final = Converters(
    request_from_kio=alter_from_kio,
    response_to_kio=alter_to_kio,
    request_to_kio=alter_request_to_kio,
    response_from_kio=alter_response_from_kio,
)
LIST_CONVERTERS: Final = Converters(
    request_from_kio=list_from_kio,
    response_to_kio=list_to_kio,
    request_to_kio=list_request_to_kio,
    response_from_kio=list_response_from_kio,
)
