"""Build a kio message of any version from plain values.

Kafka's messages keep their field names from version to version; kio has one dataclass per
version, each with only that version's fields. ``make(cls, values)`` builds ``cls`` from a
mapping of field names (nested structures as mappings, arrays as sequences of mappings),
dropping what ``cls``'s version does not have and filling what the mapping leaves out with
the field's default (or the Kafka type's zero, as Kafka's generated classes do). So a
handler writes its answer once, and the same answer serves every version it is asked in.

A name that is a field of *no* version of the message is refused (``UnknownFieldError``):
a misspelt ``error_code`` must not turn a refusal into a success by being dropped.

Conversions: ``error_code`` fields take ints or ``ErrorCode``; ``datetime_i64`` fields take
epoch milliseconds; ``timedelta_i32/i64`` fields
(throttle times) take milliseconds.
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib
import pkgutil
import re
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
from .ext import UnknownFieldError, extension_fields, is_generated, make_generated

__all__ = ["UnknownFieldError", "known_fields", "make", "version_fields"]

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


_VERSION_PART = re.compile(r"v\d+")


def known_fields(cls: type) -> frozenset[str]:
    """The names ``make(cls, ...)`` accepts: the fields of every version of the message
    (imports them all the first time; ``version_fields`` reads one)."""
    if is_generated(cls):
        return version_fields(cls)  # a generated class carries every version's fields
    return _known(cls)


def version_fields(cls: type) -> frozenset[str]:
    """The field names of ``cls`` itself: what an answer at its version can carry (a
    generated class: its message's, every version's). Unlike ``make``'s check of a name no
    version has, it imports none of the message's other versions (a controller's first
    NOT_CONTROLLER answer held its loop 40-60 ms importing every CreateTopics version)."""
    base = getattr(cls, "__generated_base__", None)
    return frozenset(f.name for f in dataclasses.fields(base if base is not None else cls))


@cache
def _known(cls: type) -> frozenset[str]:
    """The field names of ``cls`` in every version of its message: kio keeps a version's
    classes in ``kio.schema.<api>.v<N>.<kind>``, the same class name in each."""
    names = {f.name for f in dataclasses.fields(cls)} | extension_fields(cls.__name__)
    parts = cls.__module__.split(".")
    at = next((i for i, p in enumerate(parts) if _VERSION_PART.fullmatch(p)), None)
    if at is None:
        return frozenset(names)
    family = ".".join(parts[:at])
    tail = parts[at + 1 :]
    for info in pkgutil.iter_modules(importlib.import_module(family).__path__):
        if not _VERSION_PART.fullmatch(info.name):
            continue
        try:
            module = importlib.import_module(".".join([family, info.name, *tail]))
        except ImportError:
            continue
        other = getattr(module, cls.__name__, None)
        if isinstance(other, type) and dataclasses.is_dataclass(other):
            names.update(f.name for f in dataclasses.fields(other))
    return frozenset(names)


def _refuse_unknown(cls: type, values: Mapping[str, Any], plan_names: frozenset[str]) -> None:
    known = _known(cls)
    unknown = sorted(k for k in values if k not in plan_names and k not in known)
    if unknown:
        raise UnknownFieldError(
            f"{cls.__name__} has no field {', '.join(map(repr, unknown))} in any version"
        )


@cache
def _plan_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls))


def _convert(kafka_type: str, value: Any) -> Any:
    if kafka_type == "error_code":
        return ErrorCode(int(value))
    if kafka_type in ("timedelta_i32", "timedelta_i64") and isinstance(value, int):
        return datetime.timedelta(milliseconds=value)
    if kafka_type == "datetime_i64" and isinstance(value, int):
        return datetime.datetime.fromtimestamp(value / 1000, datetime.UTC)
    return value


def make(cls: type[T], values: Mapping[str, Any]) -> T:
    """``cls`` built from ``values`` (see the module docstring)."""
    if is_generated(cls):
        return cast(T, make_generated(cls, values))
    kwargs: dict[str, Any] = {}
    plan: tuple[tuple[str, str, Any, bool, bool], ...] = _plan(cast(Any, cls))
    found = 0
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
        found += 1
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
    if found < len(values):  # names this version lacks: dropped, unless no version has them
        _refuse_unknown(cls, values, _plan_names(cast(Any, cls)))
    return cls(**kwargs)
