"""Decode one metadata log file (segment or snapshot) into table rows, without Spark.

This is the pure half of the ingest job: ``decode_file(node, path, content)`` turns the bytes
of one file into ``Columns`` chunks, one table's rows column by column, in the column order of
``pykraft.pipeline.schemas``. Spark only moves files to tasks and columns to Parquet (through
Arrow, ``pykraft.pipeline.columnar``), so every rule about what a log holds lives here and is
tested on bytes built in memory (``decode_rows`` gives the same as rows).

One reader for everything: segments and snapshots are both concatenated v2 batches, and both
go through ``pykraft.records`` (``read_header`` / ``iter_batches`` / ``decode_records`` /
``decode_control``). The reader never raises on bad data: a CRC mismatch marks the batch
``crc_ok = False`` (its records are not decoded), and a framing error, a torn tail or
malformed records under a valid CRC stop the file and are reported in the ``files`` table, as
log recovery would see it.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import json
import re
import uuid
from collections.abc import Iterator
from itertools import repeat
from typing import Any

from pykraft.pipeline import metadata_tables as mt
from pykraft.records import (
    BatchHeader,
    ControlRecordType,
    CorruptRecordError,
    Record,
    decode_control,
    decode_records,
    iter_batches,
    read_header,
    target_of,
)

# Table names, in the order ``ingest`` writes them.
BATCHES = "batches"
RECORDS = "records"
LEADER_CHANGES = "leader_changes"
VOTER_SETS = "voter_sets"
SNAPSHOTS = "snapshots"
FILES = "files"
# The log's own tables, then one per concept of Kafka's metadata records (metadata_tables.py).
TABLES = (BATCHES, RECORDS, LEADER_CHANGES, VOTER_SETS, SNAPSHOTS, FILES, *mt.METADATA_TABLES)

SEGMENT = "segment"
SNAPSHOT = "snapshot"

_SEGMENT_NAME = re.compile(r"^(\d{20})\.log$")
_SNAPSHOT_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")

# A data value longer than this is rendered by its size and the hex of its first bytes only:
# the records table is for looking at a log, not for copying it.
VALUE_RENDER_MAX_BYTES = 4096
_HEX_PREVIEW_BYTES = 64

Row = tuple[Any, ...]

# ``json.dumps(json.loads(text), sort_keys=True)`` without the per-call set-up of those two
# functions (same output): rendering values is a large share of ingest's time.
_DECODE = json.JSONDecoder().decode
_ENCODE_SORTED = json.JSONEncoder(sort_keys=True).encode


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


class Columns:
    """Rows of one table held column by column: ``columns[i][j]`` is field ``i`` of row ``j``.

    Invariant: every column has the same length. Columns are plain lists so that the decoder
    stays pure Python; ``pykraft.pipeline.columnar`` turns them into Arrow arrays.
    """

    __slots__ = ("columns", "table")

    def __init__(self, table: str, width: int) -> None:
        self.table = table
        self.columns: list[list[Any]] = [[] for _ in range(width)]

    def __len__(self) -> int:
        return len(self.columns[0])

    def add(self, row: Row) -> None:
        assert len(row) == len(self.columns), (self.table, len(row))
        for column, value in zip(self.columns, row, strict=True):
            column.append(value)

    def rows(self) -> list[Row]:
        return list(zip(*self.columns, strict=True))


# Field counts of each table, in the column order of ``pykraft.pipeline.schemas``.
WIDTHS = {
    BATCHES: 13,
    RECORDS: 12,
    LEADER_CHANGES: 8,
    VOTER_SETS: 5,
    SNAPSHOTS: 13,
    FILES: 8,
    **mt.WIDTHS,
}
# A table's columns are handed over once they hold this many rows, so a large segment is
# never held in memory as Python objects all at once (nor as one huge Arrow payload).
CHUNK_ROWS_MAX = 16_384


class _Tables:
    """The open ``Columns`` of every table for one file; ``full`` hands over the big ones."""

    __slots__ = ("chunk_rows_max", "open")

    def __init__(self, chunk_rows_max: int) -> None:
        self.chunk_rows_max = chunk_rows_max
        self.open = {table: Columns(table, WIDTHS[table]) for table in TABLES}

    def full(self) -> Iterator[Columns]:
        for table, cols in self.open.items():
            if len(cols) >= self.chunk_rows_max:
                yield cols
                self.open[table] = Columns(table, WIDTHS[table])

    def rest(self) -> Iterator[Columns]:
        """What is left, the ``files`` row last."""
        for table, cols in self.open.items():
            if len(cols) and table != FILES:
                yield cols
        if len(self.open[FILES]):
            yield self.open[FILES]


def decode_file(
    node: int, path: str, content: bytes, *, chunk_rows_max: int = CHUNK_ROWS_MAX
) -> Iterator[Columns]:
    """Every row that one file contributes, as column chunks of at most about
    ``chunk_rows_max`` rows (a chunk is cut between batches).

    Always yields exactly one ``files`` row (last) and, for a snapshot, one ``snapshots``
    row; never raises on bad bytes. Tables without rows yield nothing.
    """
    tables = _Tables(chunk_rows_max)
    name = parse_file_name(path)
    if name is None:
        row = (node, "unknown", path, len(content), None, 0, 0, "not a segment or snapshot")
        tables.open[FILES].add(row)
        yield from tables.rest()
        return
    source = name.kind
    snap = _SnapshotSummary() if source == SNAPSHOT else None
    batches = valid_bytes = 0
    error: str | None = None
    mv = memoryview(content)
    for header, pos, crc_ok in _scan(mv):
        if header is None:
            error = f"stopped at position {pos}: {crc_ok}"
            break
        records: list[Record] = []
        if crc_ok is True:
            try:
                records = decode_records(mv[pos : pos + header.size])
            except CorruptRecordError as exc:  # a valid CRC over malformed records
                error = f"stopped at position {pos}: {exc}"
                break
        batches += 1
        valid_bytes = pos + header.size
        tables.open[BATCHES].add(_batch_row(node, source, path, pos, header, crc_ok is True))
        if crc_ok is not True:
            if snap is not None:
                snap.crc_ok = False
            continue
        if header.is_control:
            for record in records:
                _control_rows(tables, node, source, path, header, record, snap, name)
        else:
            snapshot_offset = name.offset - 1 if source == SNAPSHOT else None
            _data_rows(tables, node, source, path, header, records, snapshot_offset)
            if snap is not None:
                snap.records += len(records)
        yield from tables.full()
    if snap is not None:
        assert name.epoch is not None
        row = snap.row(node, path, name.offset, name.epoch, len(content), batches)
        tables.open[SNAPSHOTS].add(row)
    base = name.offset if source == SEGMENT else None
    tables.open[FILES].add((node, source, path, len(content), base, batches, valid_bytes, error))
    yield from tables.rest()


def decode_rows(node: int, path: str, content: bytes) -> dict[str, list[Row]]:
    """``decode_file`` as rows per table (every table present): for tests and small files."""
    out: dict[str, list[Row]] = {table: [] for table in TABLES}
    for cols in decode_file(node, path, content):
        out[cols.table].extend(cols.rows())
    return out


def _scan(mv: memoryview) -> Iterator[tuple[BatchHeader | None, int, bool | str]]:
    """(header, position, crc_ok) for each whole batch; then, if the file does not end on a
    batch boundary, one (None, position, reason) entry."""
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


def _data_rows(
    tables: _Tables,
    node: int,
    source: str,
    path: str,
    header: BatchHeader,
    records: list[Record],
    snapshot_offset: int | None,
) -> None:
    """The records of one data batch: the ``records`` rows column by column (the hot loop
    of ingest, so each column is one comprehension rather than one tuple per record), each
    value decoded once as a metadata record for its JSON and its concept's table
    (``metadata_tables``)."""
    epoch = header.epoch
    n = len(records)
    c = tables.open[RECORDS].columns
    rendered: list[str] = []
    open_tables = tables.open
    for record in records:
        value = record.value
        decoded = mt.decode_value(value)
        if isinstance(decoded, str):
            rendered.append(render_data_value(value))
        else:
            rendered.append(mt.record_json(*decoded))
        offset = record.offset if snapshot_offset is None else snapshot_offset
        common = (node, source, path, offset, header.base_offset, epoch, record.timestamp_ms)
        table, row = mt.row_of(common, decoded, value)
        if table:
            open_tables[table].add(row)
    c[0].extend(repeat(node, n))
    c[1].extend(repeat(source, n))
    c[2].extend(repeat(path, n))
    c[3].extend([r.offset for r in records])
    c[4].extend(repeat(epoch, n))
    c[5].extend([r.timestamp_ms for r in records])
    c[6].extend(repeat(False, n))
    c[7].extend(repeat("DATA", n))
    c[8].extend(repeat(None, n))
    c[9].extend([None if r.key is None else r.key.hex() for r in records])
    c[10].extend([-1 if r.value is None else len(r.value) for r in records])
    c[11].extend(rendered)


def _control_rows(
    tables: _Tables,
    node: int,
    source: str,
    path: str,
    header: BatchHeader,
    record: Record,
    snap: _SnapshotSummary | None,
    name: FileName,
) -> None:
    value_size = -1 if record.value is None else len(record.value)
    key_hex = None if record.key is None else record.key.hex()
    head = (node, source, path, record.offset, header.epoch, record.timestamp_ms, True)
    try:
        record_type, entity = decode_control(record)
    except CorruptRecordError as exc:
        error = json.dumps({"error": str(exc)})
        tables.open[RECORDS].add((*head, "UNKNOWN_CONTROL", None, key_hex, value_size, error))
        return
    target = target_of(record_type, entity)
    rendered = json.dumps(to_jsonable(entity), sort_keys=True)
    # pykraft's KIP-642 target record travels as a tagged LeaderChangeMessage: name it.
    kind = "TARGET_VOTERS" if target is not None else record_type.name
    tables.open[RECORDS].add((*head, kind, int(record_type), key_hex, value_size, rendered))
    if target is not None:
        return
    # In a snapshot the batch offsets are positions inside the file; the voter set it holds
    # is the one in force at the snapshot's last offset, as Kafka's VoterSetHistory puts it.
    offset = record.offset if snap is None else name.offset - 1
    e: Any = entity  # a record class of pykraft.records.control_records, by record type
    if record_type is ControlRecordType.LEADER_CHANGE:
        tables.open[LEADER_CHANGES].add(
            (
                node,
                source,
                offset,
                header.epoch,
                record.timestamp_ms,
                int(e.leader_id),
                _replica_keys(e.voters),
                _replica_keys(e.granting_voters),
            )
        )
    elif record_type is ControlRecordType.KRAFT_VOTERS:
        voters = _voters(e.voters)
        if snap is not None:
            snap.voters = voters
        tables.open[VOTER_SETS].add((node, source, offset, header.epoch, voters))
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
    """A decoded control record (frozen dataclasses of ints, strings, UUIDs, tuples) as
    JSON values."""
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
            return _ENCODE_SORTED(_DECODE(value.decode("utf-8")))
        except (UnicodeDecodeError, ValueError):
            return json.dumps({"size": len(value), "hex": value.hex()})
    preview = value[:_HEX_PREVIEW_BYTES].hex()
    return json.dumps({"size": len(value), "hex_prefix": preview, "truncated": True})
