"""Kafka's header-version rules, ApiVersions and error answers, typed errors, raw records."""

from __future__ import annotations

import datetime
import signal
import subprocess
import sys

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest as ApiVersionsRequestV3
from kio.schema.create_topics.v7.request import CreateTopicsRequest
from kio.schema.describe_quorum.v2.request import DescribeQuorumRequest, PartitionData, TopicData
from kio.schema.fetch.v17 import response as fetch_v17
from kio.schema.vote.v0.request import VoteRequest as VoteRequestV0
from kio.static.primitive import i32, i64

from pykraft.net.apis import KRAFT_APIS, SERVED_APIS
from pykraft.protocol import (
    ApiKey,
    ApiVersionRange,
    ErrorCode,
    MalformedFrame,
    RequestReader,
    ResponseReader,
    UnknownCorrelationId,
    UnsupportedApiVersion,
    build_api_versions_response,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    error_response,
    request_header_version,
    request_schema,
    response_header_version,
    response_schema,
    unsupported_api_versions_response,
)
from pykraft.protocol.apis import has_schemas
from pykraft.protocol.controller_apis import CONTROLLER_API_VERSIONS
from pykraft.protocol.ext import is_generated

from .strategies import SERVED


def test_served_table() -> None:
    assert {(ApiKey(r.api_key).name, r.min_version, r.max_version) for r in KRAFT_APIS} == {
        ("API_VERSIONS", 0, 5),
        ("FETCH", 13, 18),
        ("VOTE", 0, 2),
        ("BEGIN_QUORUM_EPOCH", 0, 1),
        ("END_QUORUM_EPOCH", 0, 1),
        ("DESCRIBE_QUORUM", 0, 2),
        ("FETCH_SNAPSHOT", 0, 1),
        ("ADD_RAFT_VOTER", 0, 1),
        ("REMOVE_RAFT_VOTER", 0, 0),
        ("UPDATE_RAFT_VOTER", 0, 0),
    }


def test_table_is_extensible_data() -> None:
    later = KRAFT_APIS.with_apis(
        ApiVersionRange(ApiKey.CREATE_TOPICS, 2, 7), ApiVersionRange(ApiKey.FETCH, 13, 18)
    )
    assert later.supports(ApiKey.CREATE_TOPICS, 7) and later.supports(ApiKey.FETCH, 18)
    assert not KRAFT_APIS.supports(ApiKey.CREATE_TOPICS, 7)
    with pytest.raises(LookupError):
        KRAFT_APIS.with_apis(ApiVersionRange(ApiKey.FETCH, 13, 99))
    message = CreateTopicsRequest(topics=(), timeout=datetime.timedelta(seconds=1))
    frame = encode_request(1, "c", message)[4:]
    with pytest.raises(UnsupportedApiVersion):
        decode_request(frame, KRAFT_APIS)
    assert decode_request(frame, later).message == message


def test_every_promised_version_imports() -> None:
    """A table checks kio's index, not the classes (a node imports a version on first use):
    every version a controller's listener promises loads as the message of its key."""
    table = SERVED_APIS.with_apis(
        *(ApiVersionRange(k, lo, hi) for k, (lo, hi) in CONTROLLER_API_VERSIONS.items()),
        ApiVersionRange(ApiKey.ENVELOPE, 0, 0),
    )
    assert len(table) > len(CONTROLLER_API_VERSIONS)
    for row in table:
        for version in row.versions:
            for schema in (
                request_schema(row.api_key, version),
                response_schema(row.api_key, version),
            ):
                assert (schema.__api_key__, schema.__version__) == (row.api_key, version)
    assert not has_schemas(ApiKey.FETCH, 99) and not has_schemas(12345, 0)


def test_a_node_imports_the_newest_versions_and_no_others() -> None:
    """Building the tables imports no message class; ``import_newest`` (a server's, before it
    serves) imports each API's newest version only, older ones wait for their first use; an
    error answer at the newest version (a timed-out Fetch) imports no other version."""
    program = (
        "import sys\n"
        "from pykraft.net.apis import SERVED_APIS\n"
        "from pykraft.protocol.apis import import_newest\n"
        "from pykraft.protocol.error_responses import error_response\n"
        "from pykraft.protocol.errors import ErrorCode\n"
        "fetch = 'kio.schema.fetch.v{}.response'\n"
        "before = fetch.format(18) in sys.modules\n"
        "import_newest(SERVED_APIS)\n"
        "print(before, fetch.format(18) in sys.modules, fetch.format(13) in sys.modules)\n"
        "answer = error_response(1, 18, ErrorCode.request_timed_out, error_message='late')\n"
        "print(answer.error_code == ErrorCode.request_timed_out, fetch.format(13) in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["False", "True", "False", "True", "False"], out


@pytest.mark.parametrize(("api_key", "api_version"), SERVED)
def test_header_versions_follow_flexibility(api_key: int, api_version: int) -> None:
    flexible = request_schema(api_key, api_version).__flexible__
    assert request_header_version(api_key, api_version) == (2 if flexible else 1)
    expected_response = 0 if api_key == ApiKey.API_VERSIONS else (1 if flexible else 0)
    assert response_header_version(api_key, api_version) == expected_response
    # kio's own idea of the header agrees (pykraft's generated versions have none).
    if not is_generated(response_schema(api_key, api_version)):
        header = response_schema(api_key, api_version).__header_schema__
        assert header.__module__.endswith(f"response_header.v{expected_response}.header")


def test_request_header_bytes_v1_and_v2() -> None:
    v0 = encode_request(7, "ab", VoteRequestV0(cluster_id=None, topics=()))
    # size, api key 52, version 0, correlation 7, client id as int16-length string (even in
    # flexible headers), then the flexible header's empty tag buffer.
    assert v0[4:16] == b"\x00\x34\x00\x00\x00\x00\x00\x07\x00\x02ab"
    assert v0[16] == 0  # header v2: no tagged fields
    v3 = encode_request(
        7, None, ApiVersionsRequestV3(client_software_name="p", client_software_version="1")
    )
    assert v3[4:14] == b"\x00\x12\x00\x03\x00\x00\x00\x07\xff\xff"
    assert v3[14] == 0


@pytest.mark.parametrize("version", [3, 4, 5])
def test_flexible_api_versions_response_keeps_header_v0(version: int) -> None:
    data = encode_response(9, build_api_versions_response(version, KRAFT_APIS))
    # correlation id, then straight into the body's error code: no header tag buffer.
    assert data[4:10] == b"\x00\x00\x00\x09\x00\x00"


def test_api_versions_features() -> None:
    v4 = build_api_versions_response(
        4, KRAFT_APIS, finalized_features={"kraft.version": 1}, finalized_features_epoch=12
    )
    assert [(f.name, f.min_version, f.max_version) for f in v4.supported_features] == [
        ("kraft.version", 0, 1)
    ]
    assert [(f.name, f.min_version_level, f.max_version_level) for f in v4.finalized_features] == [
        ("kraft.version", 1, 1)
    ]
    assert v4.finalized_features_epoch == 12
    # KAFKA-17011: v3 omits supported features whose minimum is 0.
    v3 = build_api_versions_response(3, KRAFT_APIS)
    assert v3.supported_features == ()
    assert {(k.api_key, k.min_version, k.max_version) for k in v4.api_keys} == {
        (r.api_key, r.min_version, r.max_version) for r in KRAFT_APIS
    }
    for version in range(6):
        message = build_api_versions_response(version, KRAFT_APIS)
        frame = encode_response(3, message)[4:]
        assert decode_response(frame, {3: (18, version)}).message == message


def test_unsupported_api_versions_request_is_answered_at_v0() -> None:
    # A client at ApiVersions v9 (unknown here): header v2, body we cannot read.
    frame = b"\x00\x12\x00\x09\x00\x00\x00\x05\x00\x03cli\x00" + b"\x07junk"
    with pytest.raises(UnsupportedApiVersion) as info:
        decode_request(frame, KRAFT_APIS)
    error = info.value
    assert (error.api_key, error.api_version, error.correlation_id, error.client_id) == (
        18,
        9,
        5,
        "cli",
    )
    assert error.error_code == ErrorCode.unsupported_version
    answer = error_response(error.api_key, error.api_version, error.error_code)
    assert answer == unsupported_api_versions_response(KRAFT_APIS)
    assert [(k.api_key, k.min_version, k.max_version) for k in answer.api_keys] == [(18, 0, 5)]
    data = encode_response(error.correlation_id, answer)
    assert data[8:10] == b"\x00\x23"  # error 35 right after header v0
    # The client asked at v9 (say); it re-reads the body as v0, as Kafka's clients do.
    decoded = decode_response(data[4:], {5: (18, 4)})
    assert decoded.api_version == 0 and decoded.message == answer


@pytest.mark.parametrize(("api_key", "api_version"), SERVED)
def test_error_response_for_every_served_request(api_key: int, api_version: int) -> None:
    message = error_response(
        api_key, api_version, ErrorCode.invalid_request, error_message="bad voter key"
    )
    assert message.error_code == ErrorCode.invalid_request
    if hasattr(message, "error_message"):
        assert message.error_message == "bad voter key"
    frame = encode_response(1, message)[4:]
    assert decode_response(frame, {1: (api_key, api_version)}).message == message


def test_unsupported_version_of_other_api_keeps_stream_usable() -> None:
    reader = RequestReader(KRAFT_APIS)
    good = DescribeQuorumRequest(
        topics=(
            TopicData(
                topic_name="__cluster_metadata", partitions=(PartitionData(partition_index=0),)
            ),
        )
    )
    unknown_api = b"\x00\x00\x00\x05\x00\x00\x00\x01\xff\xff"  # Produce v5: not served
    reader.feed(len(unknown_api).to_bytes(4, "big") + unknown_api + encode_request(2, "c", good))
    with pytest.raises(UnsupportedApiVersion) as info:
        reader.next_request()
    assert (info.value.api_key, info.value.api_version, info.value.correlation_id) == (0, 5, 1)
    request = reader.next_request()
    assert request is not None and request.message == good and request.correlation_id == 2
    assert reader.next_request() is None


def test_trailing_bytes_inside_a_frame_are_malformed() -> None:
    frame = (
        encode_request(
            4, "c", ApiVersionsRequestV3(client_software_name="p", client_software_version="1")
        )[4:]
        + b"\x00"
    )
    with pytest.raises(MalformedFrame, match="trailing") as info:
        decode_request(frame, KRAFT_APIS)
    assert (info.value.api_key, info.value.api_version, info.value.correlation_id) == (18, 3, 4)


def test_short_and_empty_frames_are_malformed() -> None:
    for frame in (b"", b"\x00\x12", b"\x00\x12\x00\x03\x00\x00\x00\x01"):
        with pytest.raises(MalformedFrame):
            decode_request(frame, KRAFT_APIS)
    with pytest.raises(MalformedFrame):
        decode_response(b"\x00\x01", {})


def test_response_for_unknown_correlation_id() -> None:
    frame = encode_response(77, build_api_versions_response(0, KRAFT_APIS))[4:]
    with pytest.raises(UnknownCorrelationId):
        decode_response(frame, {1: (18, 0)})


def test_response_reader_matches_in_flight_requests() -> None:
    client = ResponseReader(client_id="pykraft-test")
    ids = [
        client.send(ApiVersionsRequestV3(client_software_name="p", client_software_version="1"))
        for _ in range(2)
    ]
    assert client.in_flight == 2
    server = RequestReader(KRAFT_APIS)
    for _, data in ids:
        server.feed(data)
    answers = b""
    while (request := server.next_request()) is not None:
        assert request.client_id == "pykraft-test"
        answers = (
            encode_response(request.correlation_id, build_api_versions_response(3, KRAFT_APIS))
            + answers
        )
    client.feed(answers)  # out of order on purpose
    got = []
    while (response := client.next_response()) is not None:
        got.append(response.correlation_id)
    assert sorted(got) == sorted(cid for cid, _ in ids) and client.in_flight == 0


def test_fetch_records_stay_raw_bytes() -> None:
    records = bytes(range(256)) * 64
    message = fetch_v17.FetchResponse(
        throttle_time=datetime.timedelta(0),
        error_code=ErrorCode.none,
        responses=(
            fetch_v17.FetchableTopicResponse(
                topic_id=None,
                partitions=(
                    fetch_v17.PartitionData(
                        partition_index=i32(0),
                        error_code=ErrorCode.none,
                        high_watermark=i64(5),
                        aborted_transactions=None,
                        records=records,
                    ),
                ),
            ),
        ),
    )
    decoded = decode_response(encode_response(1, message)[4:], {1: (1, 17)}).message
    assert type(decoded.responses[0].partitions[0].records) is bytes
    assert decoded.responses[0].partitions[0].records == records


def test_kafka_error_codes_present() -> None:
    expected = {
        "NOT_LEADER_OR_FOLLOWER": 6,
        "REQUEST_TIMED_OUT": 7,
        "UNSUPPORTED_VERSION": 35,
        "INVALID_REQUEST": 42,
        "FENCED_LEADER_EPOCH": 74,
        "UNKNOWN_LEADER_EPOCH": 75,
        "INCONSISTENT_VOTER_SET": 94,
        "SNAPSHOT_NOT_FOUND": 98,
        "POSITION_OUT_OF_RANGE": 99,
        "INCONSISTENT_CLUSTER_ID": 104,
        "INVALID_VOTER_KEY": 125,
        "DUPLICATE_VOTER": 126,
        "VOTER_NOT_FOUND": 127,
    }
    assert {name: int(getattr(ErrorCode, name.lower())) for name in expected} == expected


HOSTILE_DESCRIBE_QUORUM = (
    # DescribeQuorum v2, header v2 (null client id, no tags), then a compact array claiming
    # 2**32 - 2 topics in a 5-byte body.
    b"\x00\x37\x00\x02\x00\x00\x00\x01\xff\xff\x00" + b"\xff\xff\xff\xff\x0f"
)


def test_hostile_array_length_is_rejected_not_allocated() -> None:
    with pytest.raises(MalformedFrame, match="array of"):
        decode_request(HOSTILE_DESCRIBE_QUORUM, KRAFT_APIS)


def test_kio_alone_aborts_on_hostile_array_length() -> None:
    """Why ``_preflight`` exists.  If this starts failing, kio checks lengths itself now."""
    code = (
        "from kio.serial import entity_reader\n"
        "from kio.schema.describe_quorum.v2.request import DescribeQuorumRequest\n"
        "entity_reader(DescribeQuorumRequest)(b'\\xff\\xff\\xff\\xff\\x0f', 0)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    if proc.returncode == 0 or b"BufferUnderflow" in proc.stderr:
        pytest.skip("this machine let kio reserve the memory; no abort to show")
    assert proc.returncode == -signal.SIGABRT, proc.stderr[-500:]
