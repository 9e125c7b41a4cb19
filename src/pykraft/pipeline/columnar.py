"""The decoded tables as Arrow record batches: what one ingest task hands back to Spark.

``decode_files`` is the ``mapInArrow`` function of ingest: its input batches are rows of
``(node, path, content)``, one file each (ingest gives every file its own task), and it yields
record batches of the ``DECODED`` schema. Every table has a different schema, and a
``mapInArrow`` function has one, so ``DECODED`` holds one nullable struct column per table
plus ``node`` and ``table``: a batch carries the rows of one table in that table's column and
nulls in the others, and ingest splits them again with ``where(table = ...)`` in the JVM.

Arrow types come from the Spark schemas (``pykraft.pipeline.schemas``) through PySpark's own
conversion, so there is one definition of every table. Decoding stays in
``pykraft.pipeline.decode`` (plain Python lists); this module only builds arrays.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from pykraft.pipeline import decode, schemas

NODE = "node"
TABLE = "table"

DECODED = StructType(
    [StructField(NODE, IntegerType(), False), StructField(TABLE, StringType(), False)]
    + [StructField(name, schema, True) for name, schema in schemas.BY_TABLE.items()]
)

_ARROW = to_arrow_schema(DECODED)
_TABLE_TYPES: dict[str, Any] = {name: _ARROW.field(name).type for name in schemas.BY_TABLE}


def to_record_batch(node: int, cols: decode.Columns) -> Any:
    """One ``Columns`` chunk as a ``DECODED`` record batch (a ``pa.RecordBatch``)."""
    struct_type = _TABLE_TYPES[cols.table]
    fields = [struct_type.field(i) for i in range(struct_type.num_fields)]
    assert len(fields) == len(cols.columns), cols.table
    arrays = [pa.array(c, type=f.type) for c, f in zip(cols.columns, fields, strict=True)]
    rows = len(cols)
    columns = [
        pa.array([node] * rows, type=pa.int32()),
        pa.array([cols.table] * rows, type=pa.string()),
    ]
    for name, kind in _TABLE_TYPES.items():
        if name == cols.table:
            columns.append(pa.StructArray.from_arrays(arrays, fields=fields))
        else:
            columns.append(pa.nulls(rows, type=kind))
    return pa.RecordBatch.from_arrays(columns, schema=_ARROW)


def decode_files(batches: Iterable[Any]) -> Iterator[Any]:
    """``mapInArrow`` function: ``(node, path, content)`` batches -> ``DECODED`` batches."""
    for batch in batches:
        nodes = batch.column(NODE).to_pylist()
        paths = batch.column("path").to_pylist()
        contents = batch.column("content")
        for i in range(batch.num_rows):
            content = contents[i].as_py()
            for cols in decode.decode_file(nodes[i], paths[i], content):
                yield to_record_batch(nodes[i], cols)
