"""What every kio <-> core converter shares: the metadata partition's name on the wire, the
kio schema module of an API version, the conversion errors, the :class:`Converters` a module
offers for its API, and the helpers of the single-partition quorum RPCs.

Directory ids: the wire's all-zero UUID and null both mean "unknown" (None for the core).
Endpoints: responses carry the leader's as ``NodeEndpoint(node_id, host, port)`` without a
listener name; the encoder picks the leader endpoint named like the listener the request
came in on, and the decoder names what it reads after the listener the request went out on
(what Kafka's ``Endpoints.fromVoteResponse`` etc. do).
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Final

from kio.static.protocol import RequestPayload, ResponsePayload

from pykraft.protocol import ApiKey, ErrorCode, error_response
from pykraft.protocol.apis import kio_module
from pykraft.raft.types import Endpoint

__all__ = [
    "KRAFT_VERSION_FEATURE",
    "METADATA_PARTITION",
    "METADATA_TOPIC",
    "METADATA_TOPIC_ID",
    "TOP_LEVEL_ERRORS",
    "Converters",
    "InvalidResponse",
    "RejectedRequest",
    "VersionTooOld",
    "directory",
    "endpoints_from_response",
    "kio_module",
    "listeners",
    "message_version",
    "milliseconds",
    "node_endpoints",
    "response_partition",
    "single_partition",
    "top_level_error",
]

KRAFT_VERSION_FEATURE: Final = "kraft.version"
"""The one feature the consensus core owns (KIP-853, D10)."""

METADATA_TOPIC: Final = "__cluster_metadata"
METADATA_PARTITION: Final = 0
METADATA_TOPIC_ID: Final = uuid.UUID(int=1)
"""Kafka's ``Uuid.METADATA_TOPIC_ID`` (``AAAAAAAAAAAAAAAAAAAAAQ``), used by Fetch v13+."""

TOP_LEVEL_ERRORS: Final = frozenset(
    {
        ErrorCode.inconsistent_cluster_id,
        ErrorCode.invalid_request,
        ErrorCode.broker_not_available,
        ErrorCode.unsupported_version,
        ErrorCode.cluster_authorization_failed,
    }
)
"""Connection-wide errors: the quorum RPCs answer them with the top-level code and no
partition data (the core's single ``error`` goes to the partition otherwise)."""


class RejectedRequest(Exception):
    """An inbound request the core must not see; ``response`` is Kafka's answer to it."""

    def __init__(self, reason: str, response: ResponsePayload) -> None:
        super().__init__(reason)
        self.response = response


class VersionTooOld(Exception):
    """The request cannot be expressed at the version the peer speaks (a pre-vote below
    Vote v2)."""


class InvalidResponse(Exception):
    """A response that does not answer the request (wrong topic, partition, shape)."""


@dataclass(frozen=True, slots=True)
class Converters:
    """One API's conversions, each direction a converter module offers.

    ``request_from_kio(message, local node id)`` raises :class:`RejectedRequest`;
    ``response_to_kio(body, version, listener name)``; ``request_to_kio(body, version)``
    raises :class:`VersionTooOld` (None for APIs the core only serves);
    ``response_from_kio(message, request, listener name)`` raises :class:`InvalidResponse`;
    ``error_answer(request, error)`` is the core's view of an answer carrying only ``error``
    (a top-level error; UNSUPPORTED_VERSION when the peer speaks no version of the API we
    do), None where the API has no such answer (the request simply failed)."""

    request_from_kio: Callable[[RequestPayload, int], Any] | None = None
    response_to_kio: Callable[[Any, int, str], ResponsePayload] | None = None
    request_to_kio: Callable[[Any, int], RequestPayload] | None = None
    response_from_kio: Callable[[ResponsePayload, Any, str], Any] | None = None
    error_answer: Callable[[Any, ErrorCode], Any] | None = None


def message_version(message: RequestPayload | ResponsePayload) -> int:
    return int(message.__version__)


def milliseconds(delta: datetime.timedelta) -> int:
    return int(delta.total_seconds() * 1000)


def directory(value: uuid.UUID | None) -> uuid.UUID | None:
    """A wire directory id for the core: the all-zero UUID means unknown."""
    return value if value is not None and value.int != 0 else None


def listeners(rows: Any) -> tuple[Endpoint, ...]:
    """Named endpoints (Listeners, LeaderEndpoints) as the core's."""
    return tuple(Endpoint(str(r.name), str(r.host), int(r.port)) for r in rows)


# ---------------------------------------------------------------------------------------
# The single-partition quorum RPCs (Vote, Begin/EndQuorumEpoch, Fetch, FetchSnapshot).


def single_partition(
    message: RequestPayload,
    topics: Any,
    where: tuple[str, str, str],
    unknown: Callable[[int, object, int], ResponsePayload],
) -> Any:
    """The one partition of a single-topic, single-partition request, after checking that it
    is ``__cluster_metadata-0`` (or Fetch's metadata topic id). ``where`` names the topic's
    key, its partitions and the partition's index fields; ``unknown(version, topic,
    partition)`` is the API's UNKNOWN_TOPIC_OR_PARTITION answer (SPEC B12; Kafka itself says
    INVALID_REQUEST "until multi-raft"). No topic, several topics or several partitions get
    a top-level INVALID_REQUEST."""
    name_attr, parts_attr, index_attr = where
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
            f"unknown topic or partition {topic_key}-{index}", unknown(version, topic_key, index)
        )
    return partition


def response_partition(topics: Any, where: tuple[str, str, str]) -> Any:
    """The one partition of a quorum RPC's response; raises :class:`InvalidResponse`."""
    name_attr, parts_attr, index_attr = where
    if len(topics) != 1 or len(getattr(topics[0], parts_attr)) != 1:
        raise InvalidResponse("expected exactly one topic with one partition")
    topic = topics[0]
    partition = getattr(topic, parts_attr)[0]
    expected = METADATA_TOPIC_ID if name_attr == "topic_id" else METADATA_TOPIC
    if getattr(topic, name_attr) != expected or int(getattr(partition, index_attr)) != 0:
        raise InvalidResponse("response for another topic or partition")
    return partition


def top_level_error(api_key: ApiKey, version: int, error: ErrorCode) -> ResponsePayload | None:
    """Kafka's answer with the top-level code and no partition data, for the errors in
    :data:`TOP_LEVEL_ERRORS`; None for a partition-level error."""
    return error_response(api_key, version, error) if error in TOP_LEVEL_ERRORS else None


def check_answers(message: ResponsePayload, api_key: ApiKey) -> ErrorCode:
    """The top-level error of a response to an ``api_key`` request; raises
    :class:`InvalidResponse` when it answers another API."""
    if int(message.__api_key__) != api_key:
        raise InvalidResponse(f"api key {int(message.__api_key__)} does not answer {api_key.name}")
    return ErrorCode(getattr(message, "error_code", ErrorCode.none))


def node_endpoints(
    mod: ModuleType, response: Any, listener_name: str, *, present: bool
) -> dict[str, object]:
    """A response's NodeEndpoints field (when the version has it, ``present``): the
    leader's endpoint on the listener the request came in on."""
    if not present:
        return {}
    rows = tuple(
        mod.NodeEndpoint(node_id=response.leader_id, host=e.host, port=e.port)
        for e in response.leader_endpoints
        if e.name == listener_name
    )
    return {"node_endpoints": rows[:1]}


def endpoints_from_response(
    message: Any, leader_id: int, listener_name: str
) -> tuple[Endpoint, ...]:
    return tuple(
        Endpoint(listener_name, str(e.host), int(e.port))
        for e in getattr(message, "node_endpoints", ())
        if int(e.node_id) == leader_id and leader_id >= 0
    )


def endpoints_to_request(mod: ModuleType, endpoints: tuple[Endpoint, ...]) -> tuple[Any, ...]:
    return tuple(mod.LeaderEndpoint(name=e.name, host=e.host, port=e.port) for e in endpoints)


def one_partition(mod: ModuleType, fields: dict[str, object]) -> Any:
    """Vote's, BeginQuorumEpoch's and EndQuorumEpoch's topic list: the metadata partition."""
    return (mod.TopicData(topic_name=METADATA_TOPIC, partitions=(mod.PartitionData(**fields),)),)


def leader_partition_response(
    api_key: ApiKey,
    response: Any,
    version: int,
    listener_name: str,
    at: tuple[object, int],
    extra: dict[str, object],
) -> ResponsePayload:
    """Vote's, BeginQuorumEpoch's and EndQuorumEpoch's response: the leader's id and epoch
    in the one partition ``at`` (topic name, index), plus ``extra`` fields, and the leader's
    endpoint from v1."""
    top_level = top_level_error(api_key, version, response.error)
    if top_level is not None:
        return top_level
    mod = kio_module(api_key, version, "response")
    topic, partition = at
    fields: dict[str, object] = {
        "partition_index": partition,
        "error_code": response.error,
        "leader_id": response.leader_id,
        "leader_epoch": response.epoch,
        **extra,
    }
    endpoints = node_endpoints(mod, response, listener_name, present=version >= 1)
    name = topic if isinstance(topic, str) else METADATA_TOPIC
    topics = (mod.TopicData(topic_name=name, partitions=(mod.PartitionData(**fields),)),)
    cls = getattr(mod, type(response).__name__)
    result: ResponsePayload = cls(error_code=ErrorCode.none, topics=topics, **endpoints)
    return result
