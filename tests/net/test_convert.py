"""Round trips core value -> kio -> bytes (kio's serializers) -> kio -> core value, at every
version pykraft serves, with the documented defaults for fields a version lacks."""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from typing import Any

import pytest
from kio.static.protocol import RequestPayload, ResponsePayload

from pykraft.net.apis import (
    KRAFT_APIS,
    by_request,
    error_answer,
    request_from_kio,
    request_to_kio,
    response_from_kio,
    response_to_kio,
)
from pykraft.net.convert import METADATA_TOPIC_ID, InvalidResponse, RejectedRequest, VersionTooOld
from pykraft.protocol import (
    ApiKey,
    ErrorCode,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from pykraft.raft.messages import (
    HIGH_WATERMARK_UNSUPPORTED,
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    RaftRequest,
    RaftResponse,
    VoteRequest,
    VoteResponse,
)
from pykraft.raft.types import Endpoint, OffsetAndEpoch, ReplicaKey

LOCAL_ID = 2
D1 = uuid.UUID("11111111-1111-1111-1111-111111111111")
D2 = uuid.UUID("22222222-2222-2222-2222-222222222222")
D3 = uuid.UUID("33333333-3333-3333-3333-333333333333")
EP = (Endpoint("CONTROLLER", "127.0.0.1", 9093),)
EP_OTHER = (Endpoint("OTHER", "10.0.0.1", 1), *EP)


def versions(api_key: ApiKey) -> list[int]:
    row = KRAFT_APIS.get(api_key)
    assert row is not None
    return list(row.versions)


def wire_request(message: RequestPayload) -> RequestPayload:
    frame = encode_request(7, "test", message)
    decoded = decode_request(frame[4:], KRAFT_APIS)
    assert decoded.correlation_id == 7
    return decoded.message


def wire_response(message: ResponsePayload) -> ResponsePayload:
    frame = encode_response(9, message)
    decoded = decode_response(frame[4:], {9: (int(message.__api_key__), int(message.__version__))})
    return decoded.message


def roundtrip_request(request: RaftRequest, version: int) -> RaftRequest:
    message = request_to_kio(request, version)
    assert int(message.__version__) == version
    return request_from_kio(wire_request(message), local_id=LOCAL_ID)


def roundtrip_response(response: RaftResponse, request: RaftRequest, version: int) -> RaftResponse:
    message = response_to_kio(response, version, listener_name="CONTROLLER")
    assert int(message.__version__) == version
    return response_from_kio(wire_response(message), request=request, listener_name="CONTROLLER")


VOTE = VoteRequest(
    cluster_id="abc",
    candidate_epoch=5,
    candidate_key=ReplicaKey(1, D1),
    voter_key=ReplicaKey(LOCAL_ID, D2),
    last_offset_epoch=4,
    last_offset=100,
)


@pytest.mark.parametrize("version", versions(ApiKey.VOTE))
@pytest.mark.parametrize("pre_vote", [False, True])
def test_vote_request(version: int, pre_vote: bool) -> None:
    request = dataclasses.replace(VOTE, pre_vote=pre_vote)
    if pre_vote and version < 2:
        with pytest.raises(VersionTooOld):
            request_to_kio(request, version)
        return
    got = roundtrip_request(request, version)
    if version == 0:
        expected = dataclasses.replace(
            request, candidate_key=ReplicaKey(1), voter_key=ReplicaKey(LOCAL_ID)
        )
    else:
        expected = request
    assert got == expected


def test_vote_v1_without_voter_id_defaults_to_local_id() -> None:
    request = dataclasses.replace(VOTE, voter_key=ReplicaKey(-1, None))
    assert roundtrip_request(request, 1) == dataclasses.replace(
        request, voter_key=ReplicaKey(LOCAL_ID)
    )


@pytest.mark.parametrize("version", versions(ApiKey.VOTE))
@pytest.mark.parametrize("pre_vote", [False, True])
def test_vote_response(version: int, pre_vote: bool) -> None:
    request = dataclasses.replace(VOTE, pre_vote=pre_vote)
    response = VoteResponse(
        error=ErrorCode.none,
        epoch=5,
        leader_id=3,
        vote_granted=True,
        leader_endpoints=EP_OTHER,
        pre_vote=pre_vote,
    )
    got = roundtrip_response(response, request, version)
    endpoints = EP if version >= 1 else ()
    assert got == dataclasses.replace(response, leader_endpoints=endpoints)


BEGIN = BeginQuorumEpochRequest(
    cluster_id=None,
    leader_epoch=6,
    leader_id=3,
    voter_key=ReplicaKey(LOCAL_ID, D2),
    leader_endpoints=EP_OTHER,
)


@pytest.mark.parametrize("version", versions(ApiKey.BEGIN_QUORUM_EPOCH))
def test_begin_quorum_epoch(version: int) -> None:
    got = roundtrip_request(BEGIN, version)
    if version == 0:
        assert got == dataclasses.replace(
            BEGIN, voter_key=ReplicaKey(LOCAL_ID), leader_endpoints=()
        )
    else:
        assert got == BEGIN
    response = BeginQuorumEpochResponse(ErrorCode.fenced_leader_epoch, 7, 1, EP)
    expected = response if version >= 1 else dataclasses.replace(response, leader_endpoints=())
    assert roundtrip_response(response, BEGIN, version) == expected


END = EndQuorumEpochRequest(
    cluster_id="abc",
    leader_epoch=6,
    leader_id=3,
    preferred_successors=(ReplicaKey(1, D1), ReplicaKey(2, D2)),
    leader_endpoints=EP,
)


@pytest.mark.parametrize("version", versions(ApiKey.END_QUORUM_EPOCH))
def test_end_quorum_epoch(version: int) -> None:
    got = roundtrip_request(END, version)
    if version == 0:
        assert got == dataclasses.replace(
            END,
            preferred_successors=(ReplicaKey(1), ReplicaKey(2)),
            leader_endpoints=(),
        )
    else:
        assert got == END
    response = EndQuorumEpochResponse(ErrorCode.none, 6, 3, EP)
    expected = response if version >= 1 else dataclasses.replace(response, leader_endpoints=())
    assert roundtrip_response(response, END, version) == expected


FETCH = FetchRequest(
    cluster_id="abc",
    replica_key=ReplicaKey(1, D1),
    current_leader_epoch=5,
    fetch_offset=42,
    last_fetched_epoch=4,
    max_wait_ms=500,
    max_bytes=1 << 20,
    high_watermark=40,
)


@pytest.mark.parametrize("version", versions(ApiKey.FETCH))
def test_fetch_request(version: int) -> None:
    """v17 adds the directory id, v18 the replica's high watermark (KIP-1166): older
    versions read as Kafka's "not supported", on which a leader never answers early."""
    got = roundtrip_request(FETCH, version)
    expected = FETCH
    if version < 18:
        expected = dataclasses.replace(expected, high_watermark=HIGH_WATERMARK_UNSUPPORTED)
    if version < 17:
        expected = dataclasses.replace(expected, replica_key=ReplicaKey(1))
    assert got == expected
    message: Any = request_to_kio(FETCH, version)
    assert message.topics[0].topic_id == METADATA_TOPIC_ID


@pytest.mark.parametrize("version", versions(ApiKey.FETCH))
@pytest.mark.parametrize(
    "response",
    [
        FetchResponse(ErrorCode.none, 5, 3, 40, 0, records=b"\x00" * 70, leader_endpoints=EP),
        FetchResponse(
            ErrorCode.none, 5, 3, 40, 0, diverging_epoch=OffsetAndEpoch(30, 4), leader_endpoints=EP
        ),
        FetchResponse(ErrorCode.none, 5, 3, 40, 20, snapshot_id=OffsetAndEpoch(0, 0)),
        FetchResponse(ErrorCode.fenced_leader_epoch, 6, 1, -1, -1),
        FetchResponse(ErrorCode.not_leader_or_follower, 6, -1, -1, -1),
    ],
)
def test_fetch_response(version: int, response: FetchResponse) -> None:
    got = roundtrip_response(response, FETCH, version)
    expected = response if version >= 16 else dataclasses.replace(response, leader_endpoints=())
    assert got == expected


SNAP = FetchSnapshotRequest(
    cluster_id="abc",
    replica_key=ReplicaKey(1, D3),
    current_leader_epoch=5,
    snapshot_id=OffsetAndEpoch(100, 4),
    position=4096,
    max_bytes=8192,
)


@pytest.mark.parametrize("version", versions(ApiKey.FETCH_SNAPSHOT))
def test_fetch_snapshot(version: int) -> None:
    got = roundtrip_request(SNAP, version)
    expected = SNAP if version >= 1 else dataclasses.replace(SNAP, replica_key=ReplicaKey(1))
    assert got == expected
    response = FetchSnapshotResponse(
        ErrorCode.none, 5, 3, OffsetAndEpoch(100, 4), size=10000, position=4096, chunk=b"xy" * 8
    )
    response = dataclasses.replace(response, leader_endpoints=EP)
    got_response = roundtrip_response(response, SNAP, version)
    expected_response = (
        response if version >= 1 else dataclasses.replace(response, leader_endpoints=())
    )
    assert got_response == expected_response


@pytest.mark.parametrize(
    ("request_", "api_key"),
    [
        (VOTE, ApiKey.VOTE),
        (BEGIN, ApiKey.BEGIN_QUORUM_EPOCH),
        (END, ApiKey.END_QUORUM_EPOCH),
        (FETCH, ApiKey.FETCH),
        (SNAP, ApiKey.FETCH_SNAPSHOT),
    ],
)
def test_top_level_errors(request_: RaftRequest, api_key: ApiKey) -> None:
    assert by_request(request_).key == api_key
    for version in versions(api_key):
        response = error_answer(request_, ErrorCode.inconsistent_cluster_id)
        message: Any = response_to_kio(response, version, listener_name="CONTROLLER")
        assert message.error_code == ErrorCode.inconsistent_cluster_id
        got = response_from_kio(wire_response(message), request=request_, listener_name="X")
        assert got == response


def _retarget(message: Any, topic: object, partition: int) -> Any:
    """The same request for another topic/partition."""
    topics = message.topics
    t = topics[0]
    p = t.partitions[0]
    index_field = next(
        f for f in ("partition_index", "partition") if f in {x.name for x in dataclasses.fields(p)}
    )
    name_field = next(
        f
        for f in ("topic_name", "topic_id", "name")
        if f in {x.name for x in dataclasses.fields(t)}
    )
    p2 = dataclasses.replace(p, **{index_field: partition})
    t2 = dataclasses.replace(t, **{name_field: topic, "partitions": (p2,)})
    return dataclasses.replace(message, topics=(t2,))


@pytest.mark.parametrize("request_", [VOTE, BEGIN, END, FETCH, SNAP])
def test_wrong_topic_or_partition_is_unknown(request_: RaftRequest) -> None:
    api_key = by_request(request_).key
    is_fetch = api_key == ApiKey.FETCH
    other_topic: object = uuid.uuid4() if is_fetch else "other"
    right_topic: object = METADATA_TOPIC_ID if is_fetch else "__cluster_metadata"
    for version in versions(api_key):
        message = request_to_kio(request_, version)
        for bad in (_retarget(message, other_topic, 0), _retarget(message, right_topic, 1)):
            with pytest.raises(RejectedRequest) as info:
                request_from_kio(wire_request(bad), local_id=LOCAL_ID)
            answer: Any = wire_response(info.value.response)
            assert answer.error_code == ErrorCode.none
            topics = answer.responses if is_fetch else answer.topics
            assert topics[0].partitions[0].error_code == ErrorCode.unknown_topic_or_partition


def test_two_partitions_is_invalid_request() -> None:
    message: Any = request_to_kio(VOTE, 2)
    t = message.topics[0]
    bad = dataclasses.replace(
        message, topics=(dataclasses.replace(t, partitions=(t.partitions[0],) * 2),)
    )
    with pytest.raises(RejectedRequest) as info:
        request_from_kio(bad, local_id=LOCAL_ID)
    answer: Any = info.value.response
    assert answer.error_code == ErrorCode.invalid_request


def test_response_for_other_partition_is_invalid() -> None:
    message: Any = response_to_kio(
        VoteResponse(ErrorCode.none, 1, 1, True), 2, listener_name="CONTROLLER"
    )
    t = message.topics[0]
    bad = dataclasses.replace(message, topics=(dataclasses.replace(t, topic_name="x"),))
    with pytest.raises(InvalidResponse):
        response_from_kio(bad, request=VOTE, listener_name="CONTROLLER")
    with pytest.raises(InvalidResponse):
        response_from_kio(message, request=FETCH, listener_name="CONTROLLER")


def test_fetch_max_wait_is_milliseconds() -> None:
    message: Any = request_to_kio(FETCH, 17)
    assert message.max_wait == datetime.timedelta(milliseconds=500)
