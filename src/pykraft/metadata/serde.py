"""Metadata records as values of ``__cluster_metadata`` records (Kafka's
``MetadataRecordSerde``): ``uvarint frame version (1)``, ``uvarint api key`` (the record
type), ``uvarint record version``, then the record at that version. Nothing may follow.

A frame version other than 1 is refused (0 was 2.8's preview format), as is an api key
Kafka does not define and a version outside the record's range: a log that holds one cannot
be replayed, by Kafka or by pykraft.
"""

from __future__ import annotations

import struct
from typing import Final, Protocol, TypeAlias

from pykraft.metadata.records import RECORD_TYPES
from pykraft.schema.runtime import SchemaDecodeError, r_uvarint, w_uvarint

__all__ = [
    "FRAME_VERSION",
    "MetadataRecord",
    "MetadataRecordError",
    "decode_record",
    "encode_record",
    "record_type",
]

FRAME_VERSION: Final = 1


class MetadataRecordError(SchemaDecodeError):
    """A record value that is not a metadata record pykraft (and Kafka) can replay."""


class _Record(Protocol):
    @property
    def API_KEY(self) -> int: ...

    @property
    def LOWEST_VERSION(self) -> int: ...

    @property
    def HIGHEST_VERSION(self) -> int: ...

    def write(self, out: bytearray, version: int) -> None: ...


MetadataRecord: TypeAlias = _Record


def encode_record(record: MetadataRecord, version: int) -> bytes:
    """The framed value of ``record`` at ``version``."""
    if not record.LOWEST_VERSION <= version <= record.HIGHEST_VERSION:
        raise MetadataRecordError(
            f"{type(record).__name__} has versions {record.LOWEST_VERSION}-"
            f"{record.HIGHEST_VERSION}, not {version}"
        )
    out = bytearray()
    w_uvarint(out, FRAME_VERSION)
    w_uvarint(out, record.API_KEY)
    w_uvarint(out, version)
    record.write(out, version)
    return bytes(out)


def record_type(value: bytes) -> tuple[int, int, int]:
    """(api key, version, position of the body) of a framed value."""
    frame, pos = r_uvarint(value, 0)
    if frame != FRAME_VERSION:
        raise MetadataRecordError(f"unknown metadata record frame version {frame}")
    api_key, pos = r_uvarint(value, pos)
    version, pos = r_uvarint(value, pos)
    return api_key, version, pos


def decode_record(value: bytes) -> tuple[object, int]:
    """(record, version) from a framed value; ``MetadataRecordError`` when it is not one."""
    value = bytes(value)
    try:
        api_key, version, pos = record_type(value)
    except SchemaDecodeError as e:
        raise MetadataRecordError(str(e)) from None
    cls = RECORD_TYPES.get(api_key)
    if cls is None:
        raise MetadataRecordError(f"unknown metadata record type {api_key}")
    if not cls.LOWEST_VERSION <= version <= cls.HIGHEST_VERSION:
        raise MetadataRecordError(f"{cls.__name__} has no version {version}")
    try:
        record, end = cls.read(value, pos, version)
    except SchemaDecodeError as e:
        raise MetadataRecordError(f"{cls.__name__} v{version}: {e}") from None
    except (struct.error, ValueError, IndexError, OverflowError) as e:
        raise MetadataRecordError(f"{cls.__name__} v{version}: {e}") from None
    if end != len(value):
        raise MetadataRecordError(
            f"{cls.__name__} v{version}: {len(value) - end} bytes after the record"
        )
    return record, version
