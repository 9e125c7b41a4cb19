"""Values pykraft carries in tagged fields Kafka does not define, so that every controller and
broker, pykraft's or Kafka's, replays the records as Kafka defines them (Kafka's generated
readers keep unknown tags aside and ignore them):

* ``NoOpRecord`` tag 8530: the debug appender's values (``pykraft.debug.append.interval.ms``),
  the simulator's workload and its application state in snapshots;
* ``PartitionRecord`` / ``PartitionChangeRecord`` tag 435: the final target replicas of a
  KIP-435 incremental reassignment, as a uvarint count and that many big-endian int32s; an
  empty list in a PartitionChangeRecord ends the reassignment."""

from __future__ import annotations

import dataclasses
import struct
from typing import Any, Final

from pykraft.metadata.records import NoOpRecord
from pykraft.metadata.serde import MetadataRecordError, decode_record, encode_record
from pykraft.schema.runtime import SchemaDecodeError, r_uvarint, w_uvarint

__all__ = [
    "FINAL_TARGET_TAG",
    "VALUE_TAG",
    "final_target_of",
    "tagged_noop",
    "tagged_value",
    "with_final_target",
]

VALUE_TAG: Final = 8530
FINAL_TARGET_TAG: Final = 435


def with_final_target(record: Any, final: tuple[int, ...]) -> Any:
    """``record`` (a PartitionRecord or PartitionChangeRecord) carrying ``final`` in tag 435
    (replacing any it carried)."""
    value = bytearray()
    w_uvarint(value, len(final))
    value += struct.pack(f">{len(final)}i", *final)
    tags = tuple(t for t in record.unknown_tagged_fields if t[0] != FINAL_TARGET_TAG)
    tags = tuple(sorted((*tags, (FINAL_TARGET_TAG, bytes(value)))))
    return dataclasses.replace(record, unknown_tagged_fields=tags)


def final_target_of(record: Any) -> tuple[int, ...] | None:
    """The final target a record carries in tag 435 (``()``: ended), None without the tag;
    a malformed value reads as None (the record is replayed as Kafka would)."""
    for tag, value in record.unknown_tagged_fields:
        if tag == FINAL_TARGET_TAG:
            try:
                count, pos = r_uvarint(value, 0)
                if len(value) != pos + 4 * count:
                    return None
                return struct.unpack_from(f">{count}i", value, pos)
            except (SchemaDecodeError, struct.error):
                return None
    return None


def tagged_noop(value: bytes) -> bytes:
    """A framed NoOpRecord carrying ``value``."""
    return encode_record(NoOpRecord(unknown_tagged_fields=((VALUE_TAG, value),)), 0)


def tagged_value(record_value: bytes | None) -> bytes | None:
    """The value a :func:`tagged_noop` record carries (None for any other record)."""
    if record_value is None or record_value[:1] != b"\x01":
        return None
    try:
        record, _ = decode_record(record_value)
    except MetadataRecordError:
        return None
    if isinstance(record, NoOpRecord):
        for tag, value in record.unknown_tagged_fields:
            if tag == VALUE_TAG:
                return value
    return None
