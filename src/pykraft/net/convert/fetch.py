"""Fetch (v13-18) between kio and the core: a follower's or observer's pull of the metadata
log (KIP-595), addressed by the metadata topic id (v13+).

Defaults where a version lacks a field: v13-14 carry the replica id at the top level (v15+
in ReplicaState); v13-16 have no ReplicaDirectoryId (None); v13-15 responses have no
NodeEndpoints; v13-17 have no HighWatermark (KIP-1166: Kafka's "not supported" value, so the
leader never answers early on it). The partition's PartitionMaxBytes, when set, bounds the
request's MaxBytes.
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any, Final

from kio.static.protocol import RequestPayload, ResponsePayload

from pykraft.net.convert._common import (
    METADATA_PARTITION,
    METADATA_TOPIC_ID,
    Converters,
    check_answers,
    endpoints_from_response,
    kio_module,
    milliseconds,
    node_endpoints,
    response_partition,
    single_partition,
    top_level_error,
)
from pykraft.protocol import ApiKey, ErrorCode
from pykraft.raft.messages import HIGH_WATERMARK_UNSUPPORTED, FetchRequest, FetchResponse
from pykraft.raft.types import OffsetAndEpoch, ReplicaKey

__all__ = ["CONVERTERS"]

_WHERE: Final = ("topic_id", "partitions", "partition")
_RESPONSE_WHERE: Final = ("topic_id", "partitions", "partition_index")
_NONE: Final = OffsetAndEpoch(-1, -1)


def _unknown(version: int, topic: object, partition: int) -> ResponsePayload:
    answer = FetchResponse(ErrorCode.unknown_topic_or_partition, -1, -1, -1, -1)
    return _encode(answer, version, "", topic, partition)


def request_from_kio(message: RequestPayload, _local_id: int) -> FetchRequest:
    m: Any = message
    p = single_partition(message, m.topics, _WHERE, _unknown)
    version = int(message.__version__)
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
        max_wait_ms=milliseconds(m.max_wait),
        max_bytes=max_bytes,
        high_watermark=int(p.high_watermark) if version >= 18 else HIGH_WATERMARK_UNSUPPORTED,
    )


def request_to_kio(request: FetchRequest, version: int) -> RequestPayload:
    mod = kio_module(ApiKey.FETCH, version, "request")
    fields: dict[str, object] = {
        "partition": METADATA_PARTITION,
        "current_leader_epoch": request.current_leader_epoch,
        "fetch_offset": request.fetch_offset,
        "last_fetched_epoch": request.last_fetched_epoch,
        "log_start_offset": -1,
        "partition_max_bytes": request.max_bytes,
    }
    if version >= 17:
        fields["replica_directory_id"] = request.replica_key.directory_id
    if version >= 18:
        fields["high_watermark"] = request.high_watermark
    top: dict[str, object] = {"cluster_id": request.cluster_id}
    if version >= 15:
        top["replica_state"] = mod.ReplicaState(replica_id=request.replica_key.id, replica_epoch=-1)
    else:
        top["replica_id"] = request.replica_key.id
    topic = mod.FetchTopic(topic_id=METADATA_TOPIC_ID, partitions=(mod.FetchPartition(**fields),))
    result: RequestPayload = mod.FetchRequest(
        max_wait=datetime.timedelta(milliseconds=request.max_wait_ms),
        min_bytes=0,
        max_bytes=request.max_bytes,
        topics=(topic,),
        forgotten_topics_data=(),
        **top,
    )
    return result


def _encode(
    response: FetchResponse, version: int, listener_name: str, topic: object, partition: int
) -> ResponsePayload:
    top_level = top_level_error(ApiKey.FETCH, version, response.error)
    if top_level is not None:
        return top_level
    mod = kio_module(ApiKey.FETCH, version, "response")
    endpoints = node_endpoints(mod, response, listener_name, present=version >= 16)
    diverging = response.diverging_epoch or _NONE
    snapshot = response.snapshot_id or _NONE
    data = mod.PartitionData(
        partition_index=partition,
        error_code=response.error,
        high_watermark=response.high_watermark,
        log_start_offset=response.log_start_offset,
        diverging_epoch=mod.EpochEndOffset(epoch=diverging.epoch, end_offset=diverging.offset),
        current_leader=mod.LeaderIdAndEpoch(
            leader_id=response.leader_id, leader_epoch=response.epoch
        ),
        snapshot_id=mod.SnapshotId(end_offset=snapshot.offset, epoch=snapshot.epoch),
        aborted_transactions=None,
        records=response.records,
    )
    topic_id = topic if isinstance(topic, uuid.UUID) else None
    result: ResponsePayload = mod.FetchResponse(
        throttle_time=datetime.timedelta(0),
        error_code=ErrorCode.none,
        responses=(mod.FetchableTopicResponse(topic_id=topic_id, partitions=(data,)),),
        **endpoints,
    )
    return result


def response_to_kio(response: FetchResponse, version: int, listener_name: str) -> ResponsePayload:
    return _encode(response, version, listener_name, METADATA_TOPIC_ID, METADATA_PARTITION)


def _offset_and_epoch(row: Any) -> OffsetAndEpoch | None:
    """DivergingEpoch's or SnapshotId's value; None for the wire's (-1, -1) "none"."""
    if int(row.epoch) >= 0 or int(row.end_offset) >= 0:
        return OffsetAndEpoch(int(row.end_offset), int(row.epoch))
    return None


def error_answer(_request: FetchRequest, error: ErrorCode) -> FetchResponse:
    return FetchResponse(error, -1, -1, -1, -1)


def response_from_kio(
    message: ResponsePayload, request: FetchRequest, listener_name: str
) -> FetchResponse:
    top_error = check_answers(message, ApiKey.FETCH)
    if top_error != ErrorCode.none:
        return error_answer(request, top_error)
    m: Any = message
    p = response_partition(m.responses, _RESPONSE_WHERE)
    leader_id = int(p.current_leader.leader_id)
    return FetchResponse(
        error=ErrorCode(p.error_code),
        epoch=int(p.current_leader.leader_epoch),
        leader_id=leader_id,
        high_watermark=int(p.high_watermark),
        log_start_offset=int(p.log_start_offset),
        records=bytes(p.records or b""),
        diverging_epoch=_offset_and_epoch(p.diverging_epoch),
        snapshot_id=_offset_and_epoch(p.snapshot_id),
        leader_endpoints=endpoints_from_response(m, leader_id, listener_name),
    )


CONVERTERS: Final = Converters(
    request_from_kio=request_from_kio,
    response_to_kio=response_to_kio,
    request_to_kio=request_to_kio,
    response_from_kio=response_from_kio,
    error_answer=error_answer,
)
