"""Build a kio message of any version from plain values.

Kafka's messages keep their field names from version to version; kio has one dataclass per
version, each with only that version's fields. ``make(cls, values)`` builds ``cls`` from a
mapping of field names (nested structures as mappings, arrays as sequences of mappings),
dropping what ``cls``'s version does not have and filling what the mapping leaves out with
the field's default (or the Kafka type's zero, as Kafka's generated classes do). So a
handler writes its answer once, and the same answer serves every version it is asked in.

Conversions: ``error_code`` fields take ints or ``ErrorCode``; ``timedelta_i32/i64`` fields
(throttle times) take milliseconds.
"""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from collections.abc import Mapping
from functools import cache
from typing import Any, TypeVar, cast

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    get_schema_field_type,
    is_optional,
)

from .errors import ErrorCode
from .ext import is_generated, make_generated

__all__ = ["make"]

T = TypeVar("T")

_ZERO: dict[str, object] = {
    "string": "",
    "bytes": b"",
    "records": b"",
    "bool": False,
    "uuid": uuid.UUID(int=0),
    "timedelta_i32": datetime.timedelta(0),
    "timedelta_i64": datetime.timedelta(0),
    "datetime_i64": datetime.datetime.fromtimestamp(0, datetime.UTC),
    "float64": 0.0,
}


@cache
def _plan(cls: type) -> tuple[tuple[str, str, Any, bool, bool], ...]:
    """Per field: (name, kind, nested type or kafka type, optional, has default)."""
    out: list[tuple[str, str, Any, bool, bool]] = []
    for field in dataclasses.fields(cls):
        has_default = (
            field.default is not dataclasses.MISSING
            or field.default_factory is not dataclasses.MISSING
        )
        match classify_field(field):
            case EntityTupleField(nested):
                out.append((field.name, "entities", nested, is_optional(field), has_default))
            case EntityField(nested):
                out.append((field.name, "entity", nested, is_optional(field), has_default))
            case PrimitiveTupleField():
                kafka_type = get_schema_field_type(field)
                out.append((field.name, "values", kafka_type, is_optional(field), has_default))
            case PrimitiveField():
                kafka_type = get_schema_field_type(field)
                out.append((field.name, "value", kafka_type, is_optional(field), has_default))
    return tuple(out)


def _convert(kafka_type: str, value: Any) -> Any:
    if kafka_type == "error_code":
        return ErrorCode(int(value))
    if kafka_type in ("timedelta_i32", "timedelta_i64") and isinstance(value, int):
        return datetime.timedelta(milliseconds=value)
    return value


def make(cls: type[T], values: Mapping[str, Any]) -> T:
    """``cls`` built from ``values`` (see the module docstring)."""
    if is_generated(cls):
        return cast(T, make_generated(cls, values))
    kwargs: dict[str, Any] = {}
    plan: tuple[tuple[str, str, Any, bool, bool], ...] = _plan(cast(Any, cls))
    for name, kind, inner, optional, has_default in plan:
        if name not in values:
            if has_default:
                continue
            if optional:
                kwargs[name] = None
            elif kind in ("entities", "values"):
                kwargs[name] = ()
            elif kind == "entity":
                kwargs[name] = make(inner, {})
            elif inner == "error_code":
                kwargs[name] = ErrorCode.none
            else:
                kwargs[name] = _ZERO.get(inner, 0)
            continue
        value = values[name]
        if value is None:
            kwargs[name] = None
        elif kind == "entities":
            kwargs[name] = tuple(
                v if dataclasses.is_dataclass(v) else make(inner, v) for v in value
            )
        elif kind == "entity":
            kwargs[name] = value if dataclasses.is_dataclass(value) else make(inner, value)
        elif kind == "values":
            kwargs[name] = tuple(_convert(inner, v) for v in value)
        else:
            kwargs[name] = _convert(inner, value)
    return cls(**kwargs)
