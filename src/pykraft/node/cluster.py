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
each version's fields), so one function serves every version ``net.apis`` lists for them.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping
from typing import Any, Final

from kio.static.protocol import RequestPayload, ResponsePayload

from pykraft.metadata.image import Image
from pykraft.protocol import ApiKey, ErrorCode, error_response
from pykraft.protocol.apis import BROKER_ENDPOINT_TYPE, CONTROLLER_ENDPOINT_TYPE, kio_module

__all__ = [
    "CONTROLLER_ENDPOINT_TYPE",
    "describe_cluster_response",
    "metadata_response",
]

INTERNAL_TOPICS: Final = frozenset(
    {"__consumer_offsets", "__transaction_state", "__share_group_state"}
)


def _build(cls: Any, **values: object) -> Any:
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in values.items() if k in names})


def metadata_response(
    request: RequestPayload,
    version: int,
    *,
    cluster_id: str,
    leader_id: int,
    leader_address: tuple[str, int] | None,
    image: Image | None = None,
) -> ResponsePayload:
    """Metadata at ``version``: the active controller as the only broker; the topics of the
    metadata ``image`` (all of them for a request naming none), each partition with its
    leader, replicas, ISR and fenced replicas (what ``pykraft topics`` lists)."""
    mod = kio_module(ApiKey.METADATA, version, "response")
    m: Any = request
    brokers: tuple[Any, ...] = ()
    if leader_id >= 0 and leader_address is not None:
        host, port = leader_address
        brokers = (_build(mod.MetadataResponseBroker, node_id=leader_id, host=host, port=port),)
    wanted = [(t.name, getattr(t, "topic_id", None)) for t in (m.topics or ())]
    if m.topics is None and image is not None:
        wanted = [(t.name, t.topic_id) for t in image.topics.values()]
    topics = tuple(_topic(mod, image, name, topic_id) for name, topic_id in wanted)
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


def _topic(mod: Any, image: Image | None, name: str | None, topic_id: Any) -> Any:
    state = None
    if image is not None:
        tid = image.topics_by_name.get(name or "") if name else topic_id
        state = image.topics.get(tid) if tid is not None else None
    if state is None:
        return _build(
            mod.MetadataResponseTopic,
            error_code=ErrorCode.unknown_topic_or_partition,
            name=name,
            topic_id=topic_id,
            is_internal=False,
            partitions=(),
        )
    assert image is not None

    def fenced(ids: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(b for b in ids if b not in image.brokers or image.brokers[b].fenced)

    partitions = tuple(
        _build(
            mod.MetadataResponsePartition,
            error_code=ErrorCode.none if p.leader >= 0 else ErrorCode.leader_not_available,
            partition_index=p.partition_id,
            leader_id=p.leader,
            leader_epoch=p.leader_epoch,
            replica_nodes=p.replicas,
            isr_nodes=p.isr,
            offline_replicas=fenced(p.replicas),
        )
        for p in sorted(state.partitions.values(), key=lambda p: p.partition_id)
    )
    return _build(
        mod.MetadataResponseTopic,
        error_code=ErrorCode.none,
        name=state.name,
        topic_id=state.topic_id,
        is_internal=state.name in INTERNAL_TOPICS,
        partitions=partitions,
    )


def _brokers(
    image: Image, version: int, include_fenced: bool, cluster_id: str, leader_id: int
) -> ResponsePayload:
    """The broker endpoint type: the registered brokers (fenced ones when asked)."""
    mod = kio_module(ApiKey.DESCRIBE_CLUSTER, version, "response")
    listed = tuple(
        _build(
            mod.DescribeClusterBroker,
            broker_id=b.broker_id,
            host=b.endpoints[0].host if b.endpoints else "",
            port=b.endpoints[0].port if b.endpoints else -1,
            rack=b.rack,
            is_fenced=b.fenced,
        )
        for b in sorted(image.brokers.values(), key=lambda b: b.broker_id)
        if include_fenced or not b.fenced
    )
    return _answer(mod, BROKER_ENDPOINT_TYPE, cluster_id, leader_id, listed)


def _answer(
    mod: Any, endpoint_type: int, cluster_id: str, leader_id: int, brokers: tuple[Any, ...]
) -> ResponsePayload:
    """A DescribeCluster answer listing ``brokers`` for ``endpoint_type``."""
    answer: ResponsePayload = _build(
        mod.DescribeClusterResponse,
        throttle_time=datetime.timedelta(0),
        error_code=ErrorCode.none,
        error_message=None,
        endpoint_type=endpoint_type,
        cluster_id=cluster_id,
        controller_id=leader_id,
        brokers=brokers,
    )
    return answer


def describe_cluster_response(
    request: RequestPayload,
    version: int,
    *,
    cluster_id: str,
    leader_id: int,
    controllers: Mapping[int, tuple[str, int]],
    image: Image | None = None,
) -> ResponsePayload:
    """DescribeCluster at ``version`` as a controller answers it (KIP-919); with the
    metadata ``image``, pykraft also answers the broker endpoint type (v1+) from it: the
    registered brokers' endpoints (the first listener of each), fenced ones only when asked
    (v2's IncludeFencedBrokers), and the active controller's id."""
    m: Any = request
    if image is not None and version >= 1 and int(m.endpoint_type) == BROKER_ENDPOINT_TYPE:
        return _brokers(
            image, version, bool(getattr(m, "include_fenced_brokers", False)), cluster_id, leader_id
        )
    if int(getattr(m, "endpoint_type", 1)) != CONTROLLER_ENDPOINT_TYPE:
        return error_response(
            ApiKey.DESCRIBE_CLUSTER,
            version,
            ErrorCode.unsupported_endpoint_type,
            error_message="The controller can only describe controller endpoints",
        )
    mod = kio_module(ApiKey.DESCRIBE_CLUSTER, version, "response")
    brokers = tuple(
        _build(mod.DescribeClusterBroker, broker_id=i, host=h, port=p, is_fenced=False)
        for i, (h, p) in sorted(controllers.items())
    )
    return _answer(mod, CONTROLLER_ENDPOINT_TYPE, cluster_id, leader_id, brokers)
