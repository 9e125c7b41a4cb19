"""The metadata record codec generated from Kafka's JSON (``pykraft.schema.generate``,
``pykraft.metadata.records``) and the record frame (``pykraft.metadata.serde``)."""

from __future__ import annotations

import contextlib
import pickle
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.metadata.records import (
    RECORD_TYPES,
    FeatureLevelRecord,
    PartitionChangeRecord,
    PartitionRecord,
)
from pykraft.metadata.serde import MetadataRecordError, decode_record, encode_record
from pykraft.schema.generate import PACKAGES, generate_package
from pykraft.schema.runtime import SchemaDecodeError, UnsupportedVersionError
from pykraft.schema.spec import load_spec

from .strategies import message_values

SCHEMAS = next(p.schemas for p in PACKAGES if p.module == "pykraft.metadata.records")
SPECS = {s.api_key: s for s in (load_spec(p) for p in sorted(SCHEMAS.glob("*.json")))}
CASES = [
    (api_key, version)
    for api_key, spec in sorted(SPECS.items())
    for version in range(spec.valid.low, spec.valid.high + 1)
]


def test_generated_modules_are_up_to_date() -> None:
    """The committed modules are what the generator makes of the committed JSON."""
    for package in PACKAGES:
        for path, text in generate_package(package).items():
            assert path.exists() and path.read_text() == text, (
                f"{path} is stale: run python -m pykraft.schema.generate"
            )


def test_every_schema_has_a_class() -> None:
    assert set(RECORD_TYPES) == set(SPECS)
    assert (
        len(RECORD_TYPES) == len(list(Path(SCHEMAS).glob("*.json"))) == 27
    )  # Kafka 4.4.0 added UnregisterControllerRecord


@pytest.mark.parametrize(("api_key", "version"), CASES, ids=lambda x: str(x))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_every_record_round_trips_at_every_version(
    api_key: int, version: int, data: st.DataObject
) -> None:
    cls = RECORD_TYPES[api_key]
    record = data.draw(message_values(cls, SPECS[api_key], version))
    value = encode_record(record, version)
    assert decode_record(value) == (record, version)
    # Pickled (Spark, processes) by its fields, whether the class is compiled or not.
    assert pickle.loads(pickle.dumps(record)) == record
    # Every strict prefix is refused, never misread.
    for cut in {0, 1, len(value) // 2, len(value) - 1}:
        with pytest.raises(SchemaDecodeError):
            decode_record(value[:cut])


def test_the_contracts_worked_example() -> None:
    """CONTROLLER-CONTRACT 2.1: FeatureLevelRecord{metadata.version, 25} at v0."""
    value = encode_record(FeatureLevelRecord(name="metadata.version", feature_level=25), 0)
    assert value == bytes.fromhex("010c00") + b"\x11metadata.version" + bytes.fromhex("001900")


def test_tagged_fields_only_when_not_default() -> None:
    topic = uuid.UUID(int=7)
    bare = PartitionChangeRecord(partition_id=3, topic_id=topic).encode(0)
    assert bare == (3).to_bytes(4, "big") + topic.bytes + b"\x00"  # no tagged fields
    moved = PartitionChangeRecord(partition_id=3, topic_id=topic, leader=2).encode(0)
    assert moved == bare[:-1] + bytes([1, 1, 4]) + (2).to_bytes(4, "big")


def test_a_field_the_version_lacks_is_refused_unless_default() -> None:
    topic = uuid.UUID(int=1)
    with pytest.raises(UnsupportedVersionError, match="Directories"):
        PartitionRecord(topic_id=topic, replicas=(1,), directories=(topic,)).encode(0)
    PartitionRecord(topic_id=topic, replicas=(1,)).encode(0)  # default: fine


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (bytes.fromhex("000c00"), "frame version 0"),
        (bytes.fromhex("020c00"), "frame version 2"),
        (bytes.fromhex("01630000"), "unknown metadata record type 99"),
        (bytes.fromhex("010c05") + b"\x00\x00\x00\x00", "no version 5"),
        (encode_record(FeatureLevelRecord(name="x", feature_level=1), 0) + b"\x00", "after"),
    ],
)
def test_values_that_are_not_records(value: bytes, reason: str) -> None:
    with pytest.raises(MetadataRecordError, match=reason):
        decode_record(value)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_garbage_raises_only_the_codec_error(value: bytes) -> None:
    with contextlib.suppress(MetadataRecordError):
        decode_record(b"\x01" + value)


def test_a_hostile_array_length_allocates_nothing() -> None:
    # PartitionRecord v0 whose Replicas claims 2**28 elements in 5 bytes.
    body = (0).to_bytes(4, "big") + bytes(16) + bytes([0x80, 0x80, 0x80, 0x80, 0x01])
    with pytest.raises(MetadataRecordError, match="exceeds"):
        decode_record(bytes.fromhex("010300") + body)
