"""Round trips for the APIs an admin client and a node both speak -- KIP-853's voter
changes, DescribeQuorum, KIP-642's reassignment, UpdateFeatures and the ApiVersions probe:
core value -> kio -> bytes (kio's serializers) -> kio -> core value, at every version the
node serves, through the one table (``net.apis``), so that the admin client and the node
read each other through the same converter."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from kio.static.protocol import RequestPayload, ResponsePayload

from pykraft.net.apis import (
    SERVED_APIS,
    request_from_kio,
    request_to_kio,
    response_from_kio,
    response_to_kio,
)
from pykraft.net.convert import METADATA_TOPIC, RejectedRequest
from pykraft.protocol import (
    ApiKey,
    ErrorCode,
    build_api_versions_response,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    request_schema,
)
from pykraft.protocol.build import make
from pykraft.raft.messages import (
    AddRaftVoterRequest,
    AddRaftVoterResponse,
    AlterVotersRequest,
    AlterVotersResponse,
    AnyRequest,
    AnyResponse,
    ApiVersionsRequest,
    ApiVersionsResponse,
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    ListVoterReassignmentRequest,
    ListVoterReassignmentResponse,
    QuorumNode,
    RemoveRaftVoterRequest,
    RemoveRaftVoterResponse,
    ReplicaState,
    UpdateFeaturesRequest,
    UpdateRaftVoterRequest,
    UpdateRaftVoterResponse,
)
from pykraft.raft.types import Endpoint, ReplicaKey

LISTENER = "CONTROLLER"
D1 = uuid.UUID("11111111-1111-1111-1111-111111111111")
EP = (Endpoint(LISTENER, "127.0.0.1", 9093),)


def versions(api_key: ApiKey) -> list[int]:
    row = SERVED_APIS.get(api_key)
    assert row is not None
    return list(row.versions)


def over_the_wire_request(message: RequestPayload) -> RequestPayload:
    decoded = decode_request(encode_request(3, "test", message)[4:], SERVED_APIS)
    return decoded.message


def over_the_wire_response(message: ResponsePayload) -> ResponsePayload:
    key = (int(message.__api_key__), int(message.__version__))
    return decode_response(encode_response(4, message)[4:], {4: key}).message


def roundtrip_request(request: AnyRequest, version: int) -> AnyRequest:
    message = over_the_wire_request(request_to_kio(request, version))
    return request_from_kio(message, local_id=1)


def roundtrip_response(response: AnyResponse, request: AnyRequest, version: int) -> Any:
    message = response_to_kio(response, version, listener_name=LISTENER)
    return response_from_kio(
        over_the_wire_response(message), request=request, listener_name=LISTENER
    )


@pytest.mark.parametrize("version", versions(ApiKey.ADD_RAFT_VOTER))
def test_add_raft_voter(version: int) -> None:
    request = AddRaftVoterRequest("cluster", 5_000, ReplicaKey(4, D1), EP)
    assert roundtrip_request(request, version) == request
    response = AddRaftVoterResponse(ErrorCode.voter_not_found, "no such voter")
    assert roundtrip_response(response, request, version) == response


@pytest.mark.parametrize("version", versions(ApiKey.REMOVE_RAFT_VOTER))
def test_remove_raft_voter(version: int) -> None:
    request = RemoveRaftVoterRequest("cluster", ReplicaKey(4, D1))
    assert roundtrip_request(request, version) == request
    response = RemoveRaftVoterResponse(ErrorCode.none)
    assert roundtrip_response(response, request, version) == response


def test_unknown_directory_id_is_none_both_ways() -> None:
    request = RemoveRaftVoterRequest("cluster", ReplicaKey(4, None))
    message: Any = request_to_kio(request, 0)
    assert message.voter_directory_id == uuid.UUID(int=0)  # the wire's "unknown"
    assert roundtrip_request(request, 0) == request


@pytest.mark.parametrize("version", versions(ApiKey.UPDATE_RAFT_VOTER))
def test_update_raft_voter(version: int) -> None:
    request = UpdateRaftVoterRequest("cluster", 7, ReplicaKey(2, D1), EP, 0, 1)
    assert roundtrip_request(request, version) == request
    response = UpdateRaftVoterResponse(ErrorCode.none, 1, 7, EP)
    assert roundtrip_response(response, request, version) == response
    # The leader's endpoint on another listener is not the one the request came in on.
    elsewhere = UpdateRaftVoterResponse(ErrorCode.none, 1, 7, (Endpoint("OTHER", "10.0.0.1", 1),))
    assert roundtrip_response(elsewhere, request, version).leader_endpoints == ()


@pytest.mark.parametrize("version", versions(ApiKey.DESCRIBE_QUORUM))
def test_describe_quorum(version: int) -> None:
    request = DescribeQuorumRequest()
    assert roundtrip_request(request, version) == request
    voter = ReplicaState(ReplicaKey(1, D1), 100, 1_700_000_000_000, 1_700_000_000_001)
    observer = ReplicaState(ReplicaKey(9, None), 90, 1_700_000_000_002, -1)
    response = DescribeQuorumResponse(
        ErrorCode.none, None, 1, 3, 99, (voter,), (observer,), (QuorumNode(1, EP),)
    )
    got: DescribeQuorumResponse = roundtrip_response(response, request, version)
    if version >= 2:
        assert got == response
        return
    # v0 has no timestamps, v0-1 no directory ids, error messages or nodes.
    assert (got.leader_id, got.leader_epoch, got.high_watermark) == (1, 3, 99)
    assert [r.replica_key for r in got.voters] == [ReplicaKey(1, None)]
    assert got.nodes == ()
    fetched = [r.last_fetch_timestamp for r in (*got.voters, *got.observers)]
    assert fetched == ([-1, -1] if version == 0 else [1_700_000_000_000, 1_700_000_000_002])


def test_describe_quorum_of_another_partition_is_unknown() -> None:
    message: Any = request_to_kio(DescribeQuorumRequest(), 2)
    topic = message.topics[0]
    other = type(message)(topics=(type(topic)(topic_name="other", partitions=topic.partitions),))
    with pytest.raises(RejectedRequest) as info:
        request_from_kio(over_the_wire_request(other), local_id=1)
    answer: Any = info.value.response
    assert answer.topics[0].topic_name == "other"
    assert answer.topics[0].partitions[0].error_code == ErrorCode.unknown_topic_or_partition


@pytest.mark.parametrize("version", versions(ApiKey.ALTER_PARTITION_REASSIGNMENTS))
@pytest.mark.parametrize("targets", [(1, 2, 3), None])
def test_alter_voters(version: int, targets: tuple[int, ...] | None) -> None:
    request = AlterVotersRequest(targets, 12_000)
    assert roundtrip_request(request, version) == request
    response = AlterVotersResponse(ErrorCode.invalid_replica_assignment, "4 is not an observer")
    assert roundtrip_response(response, request, version) == response


def test_alter_naming_another_topic_changes_nothing() -> None:
    message: Any = request_to_kio(AlterVotersRequest((1, 2), 1_000), 1)
    topic = message.topics[0]
    other = type(topic)(name="orders", partitions=topic.partitions)
    both = type(message)(
        timeout=message.timeout,
        topics=(topic, other),
        allow_replication_factor_change=True,
    )
    with pytest.raises(RejectedRequest) as info:
        request_from_kio(over_the_wire_request(both), local_id=1)
    answer: Any = info.value.response
    codes = {(t.name, p.error_code) for t in answer.responses for p in t.partitions}
    assert codes == {
        (METADATA_TOPIC, ErrorCode.invalid_request),
        ("orders", ErrorCode.unknown_topic_or_partition),
    }


@pytest.mark.parametrize("version", versions(ApiKey.LIST_PARTITION_REASSIGNMENTS))
def test_list_voter_reassignment(version: int) -> None:
    request = ListVoterReassignmentRequest(7_000)
    assert roundtrip_request(request, version) == request
    moving = ListVoterReassignmentResponse(ErrorCode.none, None, (1, 2, 3, 4), (4,), (3,))
    assert roundtrip_response(moving, request, version) == moving
    idle = ListVoterReassignmentResponse(ErrorCode.none)
    assert roundtrip_response(idle, request, version) == idle


@pytest.mark.parametrize("version", versions(ApiKey.UPDATE_FEATURES))
def test_update_features_names_only_kraft_version(version: int) -> None:
    update = {"feature": "kraft.version", "max_version_level": 1}
    update |= {"allow_downgrade": False} if version == 0 else {"upgrade_type": 1}
    message = make(
        request_schema(ApiKey.UPDATE_FEATURES, version),
        {"timeout": 3_000, "feature_updates": [update]},
    )
    got = request_from_kio(over_the_wire_request(message), local_id=1)
    assert got == UpdateFeaturesRequest(3_000, 1, allow_downgrade=False, validate_only=False)
    other = make(
        request_schema(ApiKey.UPDATE_FEATURES, version),
        {"timeout": 3_000, "feature_updates": [{**update, "feature": "metadata.version"}]},
    )
    with pytest.raises(RejectedRequest) as info:
        request_from_kio(over_the_wire_request(other), local_id=1)
    answer: Any = info.value.response
    assert answer.error_code == ErrorCode.invalid_request
    assert "metadata.version" in answer.error_message


@pytest.mark.parametrize("version", versions(ApiKey.API_VERSIONS))
def test_api_versions_probe_reads_the_kraft_version_range(version: int) -> None:
    request = ApiVersionsRequest()
    sent: Any = over_the_wire_request(request_to_kio(request, version))
    if version >= 3:
        assert (sent.client_software_name, sent.client_software_version) != ("", "")
    answer = build_api_versions_response(
        version, SERVED_APIS, supported_features={"kraft.version": (0, 1)}
    )
    got = response_from_kio(over_the_wire_response(answer), request=request, listener_name="")
    # v0-2 carry no features; v3 leaves out those whose minimum is 0 (KAFKA-17011).
    expected = (0, 1) if version >= 4 else None
    assert got == ApiVersionsResponse(ErrorCode.none, expected)
