"""Decoded columns as Arrow: how ingest's Python tasks hand tables to the JVM.

Ingest runs two kinds of ``mapInArrow`` tasks. The decode task (one per file) turns each
``decode.Columns`` chunk into an Arrow record batch of that table's schema and ships it as a
*payload*: one row of ``ENCODED`` (node, table, row count, the batch in Arrow's IPC stream
format). Those few, large rows are what Spark caches, so the JVM never converts or caches
the decoded rows themselves. Then, per table, ``payload_batches`` (a pass-through task)
opens that table's payloads and yields the record batches as they are, which the JVM reads
column by column into the Parquet writer. Every table has its own schema while a
``mapInArrow`` function has one; payloads are how one decode pass feeds six tables.

Arrow types come from the Spark schemas (``pykraft.pipeline.schemas``) through PySpark's own
conversion, so every table has one definition. Decoding stays in ``pykraft.pipeline.decode``
(plain Python lists); this module only builds and moves arrays.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import BinaryType, IntegerType, LongType, StringType, StructField, StructType

from pykraft.pipeline import decode, schemas

NODE = "node"
TABLE = "table"
ROWS = "rows"
PAYLOAD = "payload"

ENCODED = StructType(
    [
        StructField(NODE, IntegerType(), False),
        StructField(TABLE, StringType(), False),
        StructField(ROWS, LongType(), False),
        StructField(PAYLOAD, BinaryType(), False),
    ]
)

_ENCODED_ARROW = to_arrow_schema(ENCODED)
ARROW_SCHEMAS: dict[str, Any] = {
    name: to_arrow_schema(schema) for name, schema in schemas.BY_TABLE.items()
}


def to_record_batch(cols: decode.Columns) -> Any:
    """One chunk of a table's columns as a ``pa.RecordBatch`` of that table's schema."""
    schema = ARROW_SCHEMAS[cols.table]
    assert len(schema) == len(cols.columns), cols.table
    arrays = [pa.array(c, type=f.type) for c, f in zip(cols.columns, schema, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def ipc_bytes(batch: Any) -> bytes:
    """A record batch in Arrow's IPC stream format (schema, then the batch)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return bytes(sink.getvalue().to_pybytes())


def encoded(node: int, table: str, rows: int, payload: bytes) -> Any:
    """One ``ENCODED`` row as a record batch."""
    return pa.RecordBatch.from_arrays(
        [
            pa.array([node], type=pa.int32()),
            pa.array([table], type=pa.string()),
            pa.array([rows], type=pa.int64()),
            pa.array([payload], type=pa.binary()),
        ],
        schema=_ENCODED_ARROW,
    )


def encode_columns(node: int, cols: decode.Columns) -> Any:
    """A ``decode.Columns`` chunk as one ``ENCODED`` payload row."""
    return encoded(node, cols.table, len(cols), ipc_bytes(to_record_batch(cols)))


def payload_batches(batches: Iterable[Any]) -> Iterator[Any]:
    """``mapInArrow`` function: batches of a ``payload`` column -> the record batches inside
    (all of one table, so of one schema)."""
    for batch in batches:
        for payload in batch.column(PAYLOAD):
            yield from pa.ipc.open_stream(payload.as_buffer())
