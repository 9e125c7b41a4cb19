"""Hypothesis strategies for any kio message class, derived from its dataclass metadata.

kio ships no strategies, so these walk the same field metadata kio's own serializers use
(``kafka_type``, tags, optionality) and draw in-range values: non-default ints, unicode
strings, raw bytes for ``records``, every known error code.
"""

from __future__ import annotations

import dataclasses
import datetime
from functools import cache
from typing import Any

from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    get_schema_field_type,
    is_optional,
)

from pykraft.net.apis import KRAFT_APIS
from pykraft.protocol import request_schema
from pykraft.protocol.ext import is_generated

# Every (api key, version) pykraft serves with kio's classes: what the codec tests cover
# (the generated versions, ApiVersions v5, are drawn by tests/schema's strategies).
SERVED = [
    (row.api_key, v)
    for row in KRAFT_APIS
    for v in row.versions
    if not is_generated(request_schema(row.api_key, v))
]

_INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_UINT_BITS = {"uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}


def _primitive(kafka_type: str) -> st.SearchStrategy[Any]:
    if kafka_type in _INT_BITS:
        bits = _INT_BITS[kafka_type]
        return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if kafka_type in _UINT_BITS:
        return st.integers(0, 2 ** _UINT_BITS[kafka_type] - 1)
    match kafka_type:
        case "bool":
            return st.booleans()
        case "string":
            return st.text(max_size=12)
        case "bytes" | "records":
            return st.binary(max_size=24)
        case "uuid":
            return st.uuids()
        case "error_code":
            return st.sampled_from(list(ErrorCode))
        case "float64":
            return st.floats(allow_nan=False, allow_infinity=False)
        case "timedelta_i32":
            return st.integers(0, 2**31 - 1).map(lambda ms: datetime.timedelta(milliseconds=ms))
        case "timedelta_i64":
            return st.integers(0, 2**40).map(lambda ms: datetime.timedelta(milliseconds=ms))
        case "datetime_i64":
            return st.integers(0, 2**41).map(
                lambda ms: datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC)
            )
    raise AssertionError(kafka_type)


@cache
def entities(entity_type: type) -> st.SearchStrategy[Any]:
    """Instances of ``entity_type`` with every field drawn (tagged fields included)."""
    fields: dict[str, st.SearchStrategy[Any]] = {}
    for field in dataclasses.fields(entity_type):
        tagged = "tag" in field.metadata
        optional = not tagged and is_optional(field)
        match classify_field(field):
            case PrimitiveField():
                s = _primitive(get_schema_field_type(field))
            case PrimitiveTupleField():
                s = st.lists(_primitive(get_schema_field_type(field)), max_size=3).map(tuple)
            case EntityField(nested):
                s = st.deferred(lambda nested=nested: entities(nested))
            case EntityTupleField(nested):
                s = st.lists(st.deferred(lambda nested=nested: entities(nested)), max_size=2).map(
                    tuple
                )
        fields[field.name] = st.none() | s if optional else s
    return st.builds(entity_type, **fields)
