"""Decode one metadata log file (segment or snapshot) into table rows, without Spark.

This is the pure half of the ingest job: ``decode_file(node, path, content)`` turns the bytes
of one file into ``(table, row)`` pairs, where ``row`` is a plain tuple in the column order of
``pykraft.pipeline.schemas``. Spark only moves files to tasks and rows to Parquet, so every
rule about what a log holds lives here and is tested on bytes built in memory.

One reader for everything: segments and snapshots are both concatenated v2 batches, and both
go through ``pykraft.records`` (``read_header`` / ``iter_batches`` / ``decode_records`` /
``decode_control``). The reader never raises on bad data: a CRC mismatch marks the batch
``crc_ok = False`` (its records are not decoded), and a framing error or torn tail stops the
file and is reported in the ``files`` table, as log recovery would see it.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import json
import re
import uuid
from collections.abc import Iterator
from typing import Any

from pykraft.records import (
    BatchHeader,
    ControlRecordType,
    CorruptRecordError,
    Record,
    decode_control,
    decode_records,
    iter_batches,
    read_header,
)

# Table names, in the order ``ingest`` writes them.
BATCHES = "batches"
RECORDS = "records"
LEADER_CHANGES = "leader_changes"
VOTER_SETS = "voter_sets"
SNAPSHOTS = "snapshots"
FILES = "files"
TABLES = (BATCHES, RECORDS, LEADER_CHANGES, VOTER_SETS, SNAPSHOTS, FILES)

SEGMENT = "segment"
SNAPSHOT = "snapshot"

_SEGMENT_NAME = re.compile(r"^(\d{20})\.log$")
_SNAPSHOT_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")

# A data value longer than this is rendered by its size and the hex of its first bytes only:
# the records table is for looking at a log, not for copying it.
VALUE_RENDER_MAX_BYTES = 4096
_HEX_PREVIEW_BYTES = 64

Row = tuple[Any, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class FileName:
    """What a file's name says: segment (base offset) or snapshot (end offset, epoch)."""

    kind: str
    offset: int  # segment base offset, or snapshot end offset (exclusive)
    epoch: int | None  # snapshot epoch; None for a segment


def parse_file_name(path: str) -> FileName | None:
    """Kafka's names: ``<base:20>.log`` and ``<end offset:20>-<epoch:10>.checkpoint``."""
    name = path.rstrip("/").rsplit("/", 1)[-1]
    if m := _SEGMENT_NAME.match(name):
        return FileName(SEGMENT, int(m.group(1)), None)
    if m := _SNAPSHOT_NAME.match(name):
        return FileName(SNAPSHOT, int(m.group(1)), int(m.group(2)))
    return None


def decode_file(node: int, path: str, content: bytes) -> Iterator[tuple[str, Row]]:
    """Every row that one file contributes, tagged with its table name.

    Always yields exactly one ``files`` row (last) and, for a snapshot, one ``snapshots``
    row; never raises on bad bytes.
    """
    name = parse_file_name(path)
    if name is None:
        yield FILES, (node, "unknown", path, len(content), None, 0, 0, "not a segment or snapshot")
        return
    source = name.kind
    snap = _SnapshotSummary() if source == SNAPSHOT else None
    batches = valid_bytes = 0
    error: str | None = None
    for header, pos, crc_ok in _scan(content):
        if header is None:
            error = f"stopped at position {pos}: {crc_ok}"
            break
        batches += 1
        valid_bytes = pos + header.size
        yield BATCHES, _batch_row(node, source, path, pos, header, crc_ok is True)
        if crc_ok is not True:
            if snap is not None:
                snap.crc_ok = False
            continue
        records = decode_records(memoryview(content)[pos : pos + header.size])
        for record in records:
            yield from _record_rows(node, source, path, header, record, snap, name)
    if snap is not None:
        assert name.epoch is not None
        yield SNAPSHOTS, snap.row(node, path, name.offset, name.epoch, len(content), batches)
    base = name.offset if source == SEGMENT else None
    yield FILES, (node, source, path, len(content), base, batches, valid_bytes, error)


def _scan(content: bytes) -> Iterator[tuple[BatchHeader | None, int, bool | str]]:
    """(header, position, crc_ok) for each whole batch; then, if the file does not end on a
    batch boundary, one (None, position, reason) entry."""
    mv = memoryview(content)
    pos = 0
    end = len(mv)
    while pos < end:
        try:
            header = read_header(mv, pos)
        except CorruptRecordError as exc:
            yield None, pos, str(exc)
            return
        if pos + header.size > end:
            yield None, pos, f"torn batch at offset {header.base_offset}"
            return
        try:
            # The same CRC check the log uses, on just this batch.
            for _ in iter_batches(mv[pos : pos + header.size], verify_crc=True):
                pass
            crc_ok = True
        except CorruptRecordError:
            crc_ok = False
        yield header, pos, crc_ok
        pos += header.size


def _batch_row(
    node: int, source: str, path: str, pos: int, header: BatchHeader, crc_ok: bool
) -> Row:
    return (
        node,
        source,
        path,
        pos,
        header.base_offset,
        header.last_offset,
        header.epoch,
        header.max_timestamp,
        header.size,
        header.record_count,
        header.is_control,
        header.crc,
        crc_ok,
    )


def _record_rows(
    node: int,
    source: str,
    path: str,
    header: BatchHeader,
    record: Record,
    snap: _SnapshotSummary | None,
    name: FileName,
) -> Iterator[tuple[str, Row]]:
    value_size = -1 if record.value is None else len(record.value)
    key_hex = None if record.key is None else record.key.hex()
    if not header.is_control:
        if snap is not None:
            snap.records += 1
        yield (
            RECORDS,
            (
                node,
                source,
                path,
                record.offset,
                header.epoch,
                record.timestamp_ms,
                False,
                "DATA",
                None,
                key_hex,
                value_size,
                render_data_value(record.value),
            ),
        )
        return
    try:
        record_type, entity = decode_control(record)
    except CorruptRecordError as exc:
        yield (
            RECORDS,
            (
                node,
                source,
                path,
                record.offset,
                header.epoch,
                record.timestamp_ms,
                True,
                "UNKNOWN_CONTROL",
                None,
                key_hex,
                value_size,
                json.dumps({"error": str(exc)}),
            ),
        )
        return
    yield (
        RECORDS,
        (
            node,
            source,
            path,
            record.offset,
            header.epoch,
            record.timestamp_ms,
            True,
            record_type.name,
            int(record_type),
            key_hex,
            value_size,
            json.dumps(to_jsonable(entity), sort_keys=True),
        ),
    )
    # In a snapshot the batch offsets are positions inside the file; the voter set it holds
    # is the one in force at the snapshot's last offset, as Kafka's VoterSetHistory puts it.
    offset = record.offset if snap is None else name.offset - 1
    e: Any = entity  # a kio dataclass whose class depends on the record type
    if record_type is ControlRecordType.LEADER_CHANGE:
        yield (
            LEADER_CHANGES,
            (
                node,
                source,
                offset,
                header.epoch,
                record.timestamp_ms,
                int(e.leader_id),
                _replica_keys(e.voters),
                _replica_keys(e.granting_voters),
            ),
        )
    elif record_type is ControlRecordType.KRAFT_VOTERS:
        voters = _voters(e.voters)
        if snap is not None:
            snap.voters = voters
        yield VOTER_SETS, (node, source, offset, header.epoch, voters)
    elif snap is not None:
        snap.observe(record_type, entity)


class _SnapshotSummary:
    """What a snapshot file holds, gathered while its batches are read."""

    __slots__ = ("crc_ok", "footer", "header", "kraft_version", "last_ts", "records", "voters")

    def __init__(self) -> None:
        self.crc_ok = True
        self.header = False
        self.footer = False
        self.records = 0
        self.last_ts: int | None = None
        self.kraft_version: int | None = None
        self.voters: list[Row] | None = None

    def observe(self, record_type: ControlRecordType, entity: Any) -> None:
        if record_type is ControlRecordType.SNAPSHOT_HEADER:
            self.header = True
            self.last_ts = int(entity.last_contained_log_timestamp)
        elif record_type is ControlRecordType.SNAPSHOT_FOOTER:
            self.footer = True
        elif record_type is ControlRecordType.KRAFT_VERSION:
            self.kraft_version = int(entity.k_raft_version)

    def row(
        self, node: int, path: str, end_offset: int, epoch: int, size: int, batches: int
    ) -> Row:
        return (
            node,
            path,
            end_offset,
            epoch,
            size,
            batches,
            self.records,
            self.crc_ok,
            self.header,
            self.footer,
            self.last_ts,
            self.kraft_version,
            self.voters,
        )


def _directory_id(value: object) -> str | None:
    if value is None or value == uuid.UUID(int=0):
        return None
    return str(value)


def _replica_keys(voters: tuple[Any, ...]) -> list[Row]:
    return [
        (int(v.voter_id), _directory_id(getattr(v, "voter_directory_id", None))) for v in voters
    ]


def _voters(voters: tuple[Any, ...]) -> list[Row]:
    rows: list[Row] = []
    for v in voters:
        feature = v.k_raft_version_feature
        endpoints = [(e.name, e.host, int(e.port)) for e in v.endpoints]
        rows.append(
            (
                int(v.voter_id),
                _directory_id(v.voter_directory_id),
                endpoints,
                int(feature.min_supported_version),
                int(feature.max_supported_version),
            )
        )
    return rows


def to_jsonable(value: object) -> Any:
    """A kio entity (frozen dataclasses of ints, strings, UUIDs, tuples) as JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [to_jsonable(v) for v in value]
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return str(value)  # UUID, datetime, ...


def render_data_value(value: bytes | None) -> str:
    """A JSON rendering of an application record's value: the value itself when it is UTF-8
    JSON, else its size and hex (a preview when longer than ``VALUE_RENDER_MAX_BYTES``)."""
    if value is None:
        return "null"
    if len(value) <= VALUE_RENDER_MAX_BYTES:
        try:
            return json.dumps(json.loads(value.decode("utf-8")), sort_keys=True)
        except (UnicodeDecodeError, ValueError):
            return json.dumps({"size": len(value), "hex": value.hex()})
    preview = value[:_HEX_PREVIEW_BYTES].hex()
    return json.dumps({"size": len(value), "hex_prefix": preview, "truncated": True})
