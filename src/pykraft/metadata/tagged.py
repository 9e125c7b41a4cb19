"""Values carried by metadata ``NoOpRecord``s in a tagged field Kafka does not define, so that
every controller, pykraft's or Kafka's, replays them as no-ops: the debug appender's values
(``pykraft.debug.append.interval.ms``), the simulator's workload and its application state in
snapshots."""

from __future__ import annotations

from typing import Final

from pykraft.metadata.records import NoOpRecord
from pykraft.metadata.serde import MetadataRecordError, decode_record, encode_record

__all__ = ["VALUE_TAG", "tagged_noop", "tagged_value"]

VALUE_TAG: Final = 8530


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
