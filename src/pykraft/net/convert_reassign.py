"""kio <-> core for KIP-642 over KIP-455's API and for ControllerRegistration (KIP-919):

* AlterPartitionReassignments (45, v0-1) naming ``__cluster_metadata`` partition 0 sets the
  quorum's target voters (replica ids), null replicas cancel;
* ListPartitionReassignments (46, v0) lists that partition while its voter set is being
  reassigned (all topics, or that topic named);
* ControllerRegistration (70, v0): a controller's endpoints and kraft.version range.

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

from pykraft.net._wire import METADATA_PARTITION, METADATA_TOPIC, RejectedRequest, kio_module
from pykraft.protocol import ApiKey, ApiVersionRange, ErrorCode, response_schema
from pykraft.protocol.build import make
from pykraft.raft.messages import (
    AlterVotersRequest,
    AlterVotersResponse,
    ControllerRegistrationRequest,
    ControllerRegistrationResponse,
    ListVoterReassignmentRequest,
    ListVoterReassignmentResponse,
)
from pykraft.raft.types import Endpoint

__all__ = [
    "KRAFT_VERSION_FEATURE",
    "REASSIGNMENT_API_VERSIONS",
    "reassign_request_from_kio",
    "reassign_response_to_kio",
]

KRAFT_VERSION_FEATURE: Final = "kraft.version"
REASSIGNMENT_API_VERSIONS: Final = (
    ApiVersionRange(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, 1),
    ApiVersionRange(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, 1),  # v1: KIP-435 (ext)
    ApiVersionRange(ApiKey.CONTROLLER_REGISTRATION, 0, 0),
)
"""Rows added to the controller listener's API table (``ApiTable.with_apis``)."""

_ZERO = datetime.timedelta(0)


def reassign_request_from_kio(
    message: RequestPayload,
) -> AlterVotersRequest | ListVoterReassignmentRequest | ControllerRegistrationRequest:
    """The core's request; raises :class:`RejectedRequest` with Kafka's answer when the
    request names anything but the metadata partition."""
    api_key = ApiKey(int(message.__api_key__))
    version = int(message.__version__)
    m: Any = message
    if api_key == ApiKey.CONTROLLER_REGISTRATION:
        kraft = next((f for f in m.features if str(f.name) == KRAFT_VERSION_FEATURE), None)
        return ControllerRegistrationRequest(
            controller_id=int(m.controller_id),
            incarnation_id=str(m.incarnation_id),
            listeners=tuple(Endpoint(str(e.name), str(e.host), int(e.port)) for e in m.listeners),
            min_kraft_version=int(kraft.min_supported_version) if kraft is not None else 0,
            max_kraft_version=int(kraft.max_supported_version) if kraft is not None else 0,
        )
    if api_key == ApiKey.LIST_PARTITION_REASSIGNMENTS:
        named = m.topics is None or any(
            str(t.name) == METADATA_TOPIC and METADATA_PARTITION in tuple(t.partition_indexes)
            for t in m.topics
        )
        if not named:  # none of the partitions asked about is being reassigned here
            empty = ListVoterReassignmentResponse(ErrorCode.none)
            raise RejectedRequest("other topics", reassign_response_to_kio(empty, version))
        return ListVoterReassignmentRequest()
    entries = [
        (str(t.name), int(p.partition_index), p.replicas) for t in m.topics for p in t.partitions
    ]
    metadata = [e for e in entries if e[0] == METADATA_TOPIC and e[1] == METADATA_PARTITION]
    if len(metadata) == 1 and len(entries) == 1:
        replicas = metadata[0][2]
        return AlterVotersRequest(
            target_ids=None if replicas is None else tuple(int(r) for r in replicas),
            timeout_ms=int(m.timeout.total_seconds() * 1000),
        )
    results = {}
    for name, index, _ in entries:
        if (name, index) == (METADATA_TOPIC, METADATA_PARTITION):
            results[(name, index)] = (
                ErrorCode.invalid_request,
                "reassign the metadata partition's voters in a request of its own",
            )
        else:
            results[(name, index)] = (
                ErrorCode.unknown_topic_or_partition,
                "this controller serves no topic partitions",
            )
    raise RejectedRequest("not the metadata partition alone", _alter_to_kio(version, results))


def _alter_to_kio(
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


def reassign_response_to_kio(
    response: AlterVotersResponse | ListVoterReassignmentResponse | ControllerRegistrationResponse,
    api_version: int,
) -> ResponsePayload:
    result: ResponsePayload
    if isinstance(response, AlterVotersResponse):
        key = (METADATA_TOPIC, METADATA_PARTITION)
        return _alter_to_kio(api_version, {key: (response.error, response.error_message)})
    if isinstance(response, ControllerRegistrationResponse):
        mod = kio_module(ApiKey.CONTROLLER_REGISTRATION, api_version, "response")
        result = mod.ControllerRegistrationResponse(
            throttle_time=_ZERO, error_code=response.error, error_message=response.error_message
        )
        return result
    topics: list[dict[str, Any]] = []
    if response.adding or response.removing:
        final = tuple(r for r in response.replicas if r not in response.removing)
        topics = [
            {
                "name": METADATA_TOPIC,
                "partitions": [
                    {
                        "partition_index": METADATA_PARTITION,
                        "replicas": response.replicas,
                        "adding_replicas": response.adding,
                        "removing_replicas": response.removing,
                        "final_replicas": final,
                    }
                ],
            }
        ]
    return make(
        response_schema(ApiKey.LIST_PARTITION_REASSIGNMENTS, api_version),
        {
            "throttle_time": 0,
            "error_code": response.error,
            "error_message": response.error_message,
            "topics": topics,
        },
    )
