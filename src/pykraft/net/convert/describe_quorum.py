"""DescribeQuorum (v0-2) between kio and the core: the leader's view of the voters and
observers (KIP-595, KIP-836's timestamps in v1, KIP-853's directory ids and nodes in v2).

Served by the node from the core's state (read-only), sent by the admin client
(:func:`request_to_kio`) and read back into the core's :class:`DescribeQuorumResponse`
(:func:`response_from_kio`), so that both ends share one conversion. A top-level error
comes back with leader id and epoch -1; v0 has no timestamps (-1), v0-1 no directory ids
(None) and no nodes.
"""

from __future__ import annotations

import uuid
from typing import Any, Final

from kio.static.protocol import RequestPayload, ResponsePayload

from pykraft.net.convert._common import (
    METADATA_PARTITION,
    METADATA_TOPIC,
    Converters,
    RejectedRequest,
    check_answers,
    directory,
    kio_module,
    listeners,
)
from pykraft.protocol import ApiKey, ErrorCode, error_response
from pykraft.raft.messages import (
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    QuorumNode,
    ReplicaState,
)
from pykraft.raft.types import ReplicaKey

__all__ = ["CONVERTERS", "request_from_kio", "request_to_kio", "response_to_kio"]


def request_from_kio(message: RequestPayload, _local_id: int = -1) -> DescribeQuorumRequest:
    """Raises :class:`RejectedRequest` unless it names ``__cluster_metadata-0`` alone."""
    m: Any = message
    version = int(message.__version__)
    topics = m.topics
    if len(topics) != 1 or len(topics[0].partitions) != 1:
        raise RejectedRequest(
            "expected exactly one topic with one partition",
            error_response(ApiKey.DESCRIBE_QUORUM, version, ErrorCode.invalid_request),
        )
    topic, partition = topics[0], topics[0].partitions[0]
    if topic.topic_name != METADATA_TOPIC or int(partition.partition_index) != 0:
        answer = DescribeQuorumResponse(ErrorCode.unknown_topic_or_partition, None, -1, -1)
        raise RejectedRequest(
            "unknown topic or partition",
            _encode(answer, version, str(topic.topic_name), int(partition.partition_index)),
        )
    return DescribeQuorumRequest()


def request_to_kio(_request: DescribeQuorumRequest, version: int) -> RequestPayload:
    """DescribeQuorum for ``__cluster_metadata-0``, as an operator's tool sends it."""
    mod = kio_module(ApiKey.DESCRIBE_QUORUM, version, "request")
    partition = mod.PartitionData(partition_index=METADATA_PARTITION)
    result: RequestPayload = mod.DescribeQuorumRequest(
        topics=(mod.TopicData(topic_name=METADATA_TOPIC, partitions=(partition,)),)
    )
    return result


def _encode(
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


def response_to_kio(
    response: DescribeQuorumResponse, version: int, _listener_name: str = ""
) -> ResponsePayload:
    return _encode(response, version, METADATA_TOPIC, METADATA_PARTITION)


def _replica(row: Any) -> ReplicaState:
    return ReplicaState(
        replica_key=ReplicaKey(
            int(row.replica_id), directory(getattr(row, "replica_directory_id", None))
        ),
        log_end_offset=int(row.log_end_offset),
        last_fetch_timestamp=int(getattr(row, "last_fetch_timestamp", -1)),
        last_caught_up_timestamp=int(getattr(row, "last_caught_up_timestamp", -1)),
    )


def response_from_kio(
    message: ResponsePayload, _request: object = None, _listener_name: str = ""
) -> DescribeQuorumResponse:
    """The core's view of a DescribeQuorum answer (top-level error first)."""
    top_error = check_answers(message, ApiKey.DESCRIBE_QUORUM)
    m: Any = message
    if top_error != ErrorCode.none:
        return DescribeQuorumResponse(top_error, getattr(m, "error_message", None), -1, -1)
    p = m.topics[0].partitions[0]
    return DescribeQuorumResponse(
        error=ErrorCode(p.error_code),
        error_message=getattr(p, "error_message", None),
        leader_id=int(p.leader_id),
        leader_epoch=int(p.leader_epoch),
        high_watermark=int(p.high_watermark),
        voters=tuple(_replica(r) for r in p.current_voters),
        observers=tuple(_replica(r) for r in p.observers),
        nodes=tuple(
            QuorumNode(int(n.node_id), listeners(n.listeners)) for n in getattr(m, "nodes", ())
        ),
    )


CONVERTERS: Final = Converters(
    request_from_kio=request_from_kio,
    response_to_kio=response_to_kio,
    request_to_kio=request_to_kio,
    response_from_kio=response_from_kio,
)
