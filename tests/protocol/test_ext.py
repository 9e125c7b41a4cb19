"""pykraft's ListPartitionReassignments v1 (KIP-435), generated from its JSON beside kio's v0:
the JSON's version 0 is Kafka's byte for byte, version 1 round-trips through the wire codec,
and Kafka's clients, which negotiate v0, are answered by kio's classes."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

from kio.serial import entity_writer

from pykraft.net.apis import KRAFT_APIS
from pykraft.protocol import request_schema, response_schema
from pykraft.protocol.apis import ApiVersionRange
from pykraft.protocol.build import make
from pykraft.protocol.codec import decode_request, decode_response, encode_request, encode_response
from pykraft.protocol.ext import is_generated, make_generated
from pykraft.protocol.generated.list_partition_reassignments_response import (
    ListPartitionReassignmentsResponse,
)

VALUES = {
    "throttle_time": 0,
    "error_code": 0,
    "error_message": None,
    "topics": [
        {
            "name": "t",
            "partitions": [
                {
                    "partition_index": 3,
                    "replicas": [5, 6, 2, 0],
                    "adding_replicas": [6],
                    "removing_replicas": [0],
                    "final_replicas": [5, 6, 7],
                }
            ],
        }
    ],
    "current_batch": [
        {
            "name": "t",
            "partitions": [
                {"partition_id": 3, "current_brokers": [5, 2, 0], "target_brokers": [5, 6, 2]}
            ],
        }
    ],
}


def test_version_0_of_the_json_is_kafkas_bytes() -> None:
    kio_v0 = make(response_schema(46, 0), VALUES)
    assert not is_generated(type(kio_v0))
    out = io.BytesIO()
    entity_writer(type(kio_v0))(out, kio_v0)
    # Fields of version 1 only must be at their defaults in version 0 (the generated writer
    # refuses anything else, as Kafka's does).
    v0_values = {
        **VALUES,
        "current_batch": [],
        "topics": [
            {
                "name": "t",
                "partitions": [
                    {
                        k: v
                        for k, v in VALUES["topics"][0]["partitions"][0].items()  # type: ignore[index]
                        if k != "final_replicas"
                    }
                ],
            }
        ],
    }
    ours = make_generated(ListPartitionReassignmentsResponse, v0_values)
    assert ours.encode(0) == out.getvalue()


def test_version_1_round_trips_through_the_codec() -> None:
    response = make(response_schema(46, 1), VALUES)
    frame = encode_response(9, response)
    decoded = decode_response(frame[4:], {9: (46, 1)})
    assert decoded.message == response
    assert decoded.message.current_batch[0].partitions[0].target_brokers == (5, 6, 2)
    assert decoded.message.topics[0].partitions[0].final_replicas == (5, 6, 7)
    request = make(request_schema(46, 1), {"timeout": 1000, "topics": None})
    table = KRAFT_APIS.with_apis(ApiVersionRange(46, 0, 1))
    assert decode_request(encode_request(4, "c", request)[4:], table).message == request


def test_garbage_in_version_1_is_a_malformed_frame() -> None:
    import pytest

    from pykraft.protocol.errors import MalformedFrame

    request = make(request_schema(46, 1), {"timeout": 1000, "topics": [{"name": "t"}]})
    frame = encode_request(4, "c", request)[4:]
    table = KRAFT_APIS.with_apis(ApiVersionRange(46, 0, 1))
    with pytest.raises(MalformedFrame):
        decode_request(frame[:-3] + b"\xff\xff\xff", table)
    with pytest.raises(MalformedFrame):
        decode_request(frame + b"\x00", table)


def test_api_versions_v0_to_4_of_kafkas_json_are_kios_bytes() -> None:
    """Kafka 4.4.0's ApiVersions JSON generates, at v0-4, exactly kio's bytes (so the v5
    class pykraft serves is that same message one version on)."""
    from pykraft.protocol import build_api_versions_response
    from pykraft.protocol.generated.api_versions_response import (
        ApiVersionsResponse as Generated,
    )

    for version in range(5):
        kio_message = build_api_versions_response(
            version,
            KRAFT_APIS,
            finalized_features={"metadata.version": 33},
            finalized_features_epoch=7,
        )
        out = io.BytesIO()
        entity_writer(type(kio_message))(out, kio_message)
        fields = {
            "error_code": 0,
            "api_keys": [
                {"api_key": r.api_key, "min_version": r.min_version, "max_version": r.max_version}
                for r in KRAFT_APIS
            ],
            "throttle_time_ms": 0,
        }
        if version >= 3:
            fields.update(
                supported_features=[{"name": "kraft.version", "min_version": 0, "max_version": 1}]
                if version >= 4
                else [],
                finalized_features_epoch=7,
                finalized_features=[
                    {"name": "metadata.version", "max_version_level": 33, "min_version_level": 33}
                ],
            )
        assert make_generated(Generated, fields).encode(version) == out.getvalue()


def test_api_versions_v5_round_trips_through_the_codec() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from pykraft.protocol.generated import api_versions_request, api_versions_response
    from pykraft.schema.spec import load_spec
    from tests.schema.strategies import message_values

    root = Path(api_versions_request.__file__).parents[1] / "schemas"
    cases = []
    for module, kind in ((api_versions_request, "Request"), (api_versions_response, "Response")):
        spec = load_spec(root / f"ApiVersions{kind}.json")
        cases.append((getattr(module, f"ApiVersions{kind}"), spec))

    @settings(max_examples=60, deadline=None)
    @given(data=st.data())
    def round_trip(data: st.DataObject) -> None:
        (req_cls, req_spec), (resp_cls, resp_spec) = cases
        request = data.draw(message_values(req_cls, req_spec, 5, unknown=False))
        wire_request = make_generated(request_schema(18, 5), dataclasses.asdict(request))
        decoded = decode_request(encode_request(3, "c", wire_request)[4:], KRAFT_APIS)
        assert decoded.api_version == 5 and decoded.message == wire_request
        response = data.draw(message_values(resp_cls, resp_spec, 5, unknown=False))
        wire_response = make_generated(response_schema(18, 5), dataclasses.asdict(response))
        frame = encode_response(4, wire_response)
        assert decode_response(frame[4:], {4: (18, 5)}).message == wire_response

    round_trip()
