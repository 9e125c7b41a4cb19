"""FetchSnapshot (v0-1) between kio and the core: a replica downloading the leader's latest
snapshot in chunks (KIP-630). v0 has no ReplicaDirectoryId (None)."""

from __future__ import annotations

import datetime
from typing import Any, Final

from kio.static.protocol import RequestPayload, ResponsePayload

from pykraft.net.convert._common import (
    METADATA_PARTITION,
    METADATA_TOPIC,
    Converters,
    check_answers,
    endpoints_from_response,
    kio_module,
    node_endpoints,
    response_partition,
    single_partition,
    top_level_error,
)
from pykraft.protocol import ApiKey, ErrorCode
from pykraft.raft.messages import FetchSnapshotRequest, FetchSnapshotResponse
from pykraft.raft.types import OffsetAndEpoch, ReplicaKey

__all__ = ["CONVERTERS"]

_WHERE: Final = ("name", "partitions", "partition")
_RESPONSE_WHERE: Final = ("name", "partitions", "index")


def _unknown(version: int, topic: object, partition: int) -> ResponsePayload:
    answer = FetchSnapshotResponse(
        ErrorCode.unknown_topic_or_partition, -1, -1, OffsetAndEpoch(-1, -1)
    )
    return _encode(answer, version, "", topic, partition)


def request_from_kio(message: RequestPayload, _local_id: int) -> FetchSnapshotRequest:
    m: Any = message
    p = single_partition(message, m.topics, _WHERE, _unknown)
    return FetchSnapshotRequest(
        cluster_id=m.cluster_id,
        replica_key=ReplicaKey(int(m.replica_id), getattr(p, "replica_directory_id", None)),
        current_leader_epoch=int(p.current_leader_epoch),
        snapshot_id=OffsetAndEpoch(int(p.snapshot_id.end_offset), int(p.snapshot_id.epoch)),
        position=int(p.position),
        max_bytes=int(m.max_bytes),
    )


def request_to_kio(request: FetchSnapshotRequest, version: int) -> RequestPayload:
    mod = kio_module(ApiKey.FETCH_SNAPSHOT, version, "request")
    fields: dict[str, object] = {
        "partition": METADATA_PARTITION,
        "current_leader_epoch": request.current_leader_epoch,
        "snapshot_id": mod.SnapshotId(
            end_offset=request.snapshot_id.offset, epoch=request.snapshot_id.epoch
        ),
        "position": request.position,
    }
    if version >= 1:
        fields["replica_directory_id"] = request.replica_key.directory_id
    topic = mod.TopicSnapshot(name=METADATA_TOPIC, partitions=(mod.PartitionSnapshot(**fields),))
    result: RequestPayload = mod.FetchSnapshotRequest(
        cluster_id=request.cluster_id,
        replica_id=request.replica_key.id,
        max_bytes=request.max_bytes,
        topics=(topic,),
    )
    return result


def _encode(
    response: FetchSnapshotResponse, version: int, listener_name: str, topic: object, index: int
) -> ResponsePayload:
    top_level = top_level_error(ApiKey.FETCH_SNAPSHOT, version, response.error)
    if top_level is not None:
        return top_level
    mod = kio_module(ApiKey.FETCH_SNAPSHOT, version, "response")
    endpoints = node_endpoints(mod, response, listener_name, present=version >= 1)
    snap = mod.PartitionSnapshot(
        index=index,
        error_code=response.error,
        snapshot_id=mod.SnapshotId(
            end_offset=response.snapshot_id.offset, epoch=response.snapshot_id.epoch
        ),
        current_leader=mod.LeaderIdAndEpoch(
            leader_id=response.leader_id, leader_epoch=response.epoch
        ),
        size=response.size,
        position=response.position,
        unaligned_records=response.chunk,
    )
    name = topic if isinstance(topic, str) else METADATA_TOPIC
    result: ResponsePayload = mod.FetchSnapshotResponse(
        throttle_time=datetime.timedelta(0),
        error_code=ErrorCode.none,
        topics=(mod.TopicSnapshot(name=name, partitions=(snap,)),),
        **endpoints,
    )
    return result


def response_to_kio(
    response: FetchSnapshotResponse, version: int, listener_name: str
) -> ResponsePayload:
    return _encode(response, version, listener_name, METADATA_TOPIC, METADATA_PARTITION)


def error_answer(request: FetchSnapshotRequest, error: ErrorCode) -> FetchSnapshotResponse:
    return FetchSnapshotResponse(error, -1, -1, request.snapshot_id)


def response_from_kio(
    message: ResponsePayload, request: FetchSnapshotRequest, listener_name: str
) -> FetchSnapshotResponse:
    top_error = check_answers(message, ApiKey.FETCH_SNAPSHOT)
    if top_error != ErrorCode.none:
        return error_answer(request, top_error)
    m: Any = message
    p = response_partition(m.topics, _RESPONSE_WHERE)
    leader_id = int(p.current_leader.leader_id)
    return FetchSnapshotResponse(
        error=ErrorCode(p.error_code),
        epoch=int(p.current_leader.leader_epoch),
        leader_id=leader_id,
        snapshot_id=OffsetAndEpoch(int(p.snapshot_id.end_offset), int(p.snapshot_id.epoch)),
        size=int(p.size),
        position=int(p.position),
        chunk=bytes(p.unaligned_records),
        leader_endpoints=endpoints_from_response(m, leader_id, listener_name),
    )


CONVERTERS: Final = Converters(
    request_from_kio=request_from_kio,
    response_to_kio=response_to_kio,
    request_to_kio=request_to_kio,
    response_from_kio=response_from_kio,
    error_answer=error_answer,
)
