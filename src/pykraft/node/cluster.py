"""Metadata and DescribeCluster on the controller listener: how clients find the quorum.

Kafka's controllers answer DescribeCluster (KIP-919, ``--bootstrap-controller``): the
``brokers`` are the controllers (the voters, with their endpoints on the listener asked),
``controller_id`` is the active controller (the quorum's leader, -1 while unknown), and
``endpoint_type`` must be 2 (controller); a request for broker endpoints gets
UNSUPPORTED_ENDPOINT_TYPE, as Kafka's controllers answer.

Kafka's controllers do not serve Metadata; pykraft does, as the minimum that lets clients
which bootstrap only through Metadata (kafka-python's ``KafkaAdminClient``) work against a
controller listener, as they would through ``--bootstrap-controller``: the response lists the
*active controller only* as a broker (and as ``controller_id``), so that a client sending
controller-bound requests (DescribeQuorum, AddRaftVoter, RemoveRaftVoter) to "any broker"
reaches the leader, which is where Kafka's admin client routes them too. While no leader is
known the broker list is empty, which such clients retry. Every requested topic gets
UNKNOWN_TOPIC_OR_PARTITION: a controller listener hosts no topics (``__cluster_metadata`` is
not a topic clients may read).

The response builders fill each field only where the version has it (kio's dataclasses name
each version's fields), so one function serves every version in ``CLUSTER_APIS``.
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib
from collections.abc import Mapping
from typing import Any, Final

from kio.static.protocol import RequestPayload, ResponsePayload

from pykraft.protocol import ApiKey, ApiVersionRange, ErrorCode, error_response

__all__ = [
    "CLUSTER_APIS",
    "CONTROLLER_ENDPOINT_TYPE",
    "describe_cluster_response",
    "metadata_response",
]

CONTROLLER_ENDPOINT_TYPE: Final = 2  # DescribeCluster's EndpointType: 1 broker, 2 controller

CLUSTER_APIS: Final = (
    ApiVersionRange(ApiKey.METADATA, 1, 13),
    ApiVersionRange(ApiKey.DESCRIBE_CLUSTER, 0, 2),
)
"""Rows added to the controller listener's API table (``ApiTable.with_apis``)."""


def _build(cls: Any, **values: object) -> Any:
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in values.items() if k in names})


def _schema(package: str, version: int) -> Any:
    return importlib.import_module(f"kio.schema.{package}.v{version}.response")


def metadata_response(
    request: RequestPayload,
    version: int,
    *,
    cluster_id: str,
    leader_id: int,
    leader_address: tuple[str, int] | None,
) -> ResponsePayload:
    """Metadata at ``version``: the active controller as the only broker, no topics."""
    mod = _schema("metadata", version)
    m: Any = request
    brokers: tuple[Any, ...] = ()
    if leader_id >= 0 and leader_address is not None:
        host, port = leader_address
        brokers = (_build(mod.MetadataResponseBroker, node_id=leader_id, host=host, port=port),)
    topics = tuple(
        _build(
            mod.MetadataResponseTopic,
            error_code=ErrorCode.unknown_topic_or_partition,
            name=t.name,
            topic_id=getattr(t, "topic_id", None),
            is_internal=False,
            partitions=(),
        )
        for t in (m.topics or ())
    )
    response: ResponsePayload = _build(
        mod.MetadataResponse,
        throttle_time=datetime.timedelta(0),
        brokers=brokers,
        cluster_id=cluster_id,
        controller_id=leader_id if brokers else -1,
        topics=topics,
        error_code=ErrorCode.none,
    )
    return response


def describe_cluster_response(
    request: RequestPayload,
    version: int,
    *,
    cluster_id: str,
    leader_id: int,
    controllers: Mapping[int, tuple[str, int]],
) -> ResponsePayload:
    """DescribeCluster at ``version`` as a controller answers it (KIP-919)."""
    m: Any = request
    if int(getattr(m, "endpoint_type", 1)) != CONTROLLER_ENDPOINT_TYPE:
        return error_response(
            ApiKey.DESCRIBE_CLUSTER,
            version,
            ErrorCode.unsupported_endpoint_type,
            error_message="The controller can only describe controller endpoints",
        )
    mod = _schema("describe_cluster", version)
    brokers = tuple(
        _build(mod.DescribeClusterBroker, broker_id=i, host=h, port=p, is_fenced=False)
        for i, (h, p) in sorted(controllers.items())
    )
    response: ResponsePayload = _build(
        mod.DescribeClusterResponse,
        throttle_time=datetime.timedelta(0),
        error_code=ErrorCode.none,
        error_message=None,
        endpoint_type=CONTROLLER_ENDPOINT_TYPE,
        cluster_id=cluster_id,
        controller_id=leader_id,
        brokers=brokers,
    )
    return response
