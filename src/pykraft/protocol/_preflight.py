"""A length check run over untrusted bytes *before* kio parses them.

Why this exists: kio 0.6.5's native reader reserves memory for an array from its declared
length before reading any element.  A nine-byte request declaring a compact array of
``2**32 - 2`` elements makes it ask for 34 GB, and the Rust allocator then *aborts the whole
process* (``memory allocation of 34359738352 bytes failed``, SIGABRT) -- no Python exception
to catch.  SPEC I4 says bad input never crashes a node, so every declared length is checked
here against the bytes that remain, as Kafka's generated Java readers do ("Tried to allocate a
collection of size N, but there are only M bytes remaining").  ``tests/protocol`` keeps a
subprocess test that shows the abort, so this module can be deleted once kio checks lengths.

This is not a second codec: it decodes no values, it only steps over the wire layout that
kio's dataclass metadata describes, and checks that each length fits.  Its plans are built
once per message class.
"""

from __future__ import annotations

import dataclasses
from functools import cache
from typing import TypeAlias

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)

from .errors import MalformedFrame

__all__ = ["check_lengths"]

_FIXED_BYTES = {
    "int8": 1,
    "uint8": 1,
    "bool": 1,
    "int16": 2,
    "uint16": 2,
    "error_code": 2,
    "int32": 4,
    "uint32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "uint64": 8,
    "float64": 8,
    "timedelta_i64": 8,
    "datetime_i64": 8,
    "uuid": 16,
}

# A plan step: ("fixed", n) | ("blob", length_kind) | ("array", flexible, element step)
# | ("struct", nullable, plan).  A plan is (steps, tagged steps by tag, flexible).
Step: TypeAlias = tuple[object, ...]
Plan: TypeAlias = tuple[tuple[Step, ...], dict[int, Step], bool]


class _Short(Exception):
    """Internal: a declared length does not fit in the bytes that remain."""


@cache
def _plan(entity_type: type) -> Plan:
    flexible = bool(getattr(entity_type, "__flexible__", False))
    steps: list[Step] = []
    tagged: dict[int, Step] = {}
    for field in dataclasses.fields(entity_type):
        tag = get_field_tag(field)
        step = _step(field, flexible, optional=tag is None and is_optional(field))
        if tag is None:
            steps.append(step)
        else:
            tagged[int(tag)] = step
    return tuple(steps), tagged, flexible


def _step(field: dataclasses.Field[object], flexible: bool, optional: bool) -> Step:
    match classify_field(field):
        case PrimitiveField():
            return _primitive(get_schema_field_type(field), flexible)
        case PrimitiveTupleField():
            return ("array", flexible, _primitive(get_schema_field_type(field), flexible))
        case EntityField(entity_type):
            return ("struct", optional, _plan(entity_type))
        case EntityTupleField(entity_type):
            return ("array", flexible, ("struct", False, _plan(entity_type)))
    raise AssertionError(f"unclassifiable field {field.name}")


def _primitive(kafka_type: str, flexible: bool) -> Step:
    if kafka_type in _FIXED_BYTES:
        return ("fixed", _FIXED_BYTES[kafka_type])
    if kafka_type in ("string", "bytes", "records"):
        if flexible:
            return ("blob", "compact")
        return ("blob", "int16" if kafka_type == "string" else "int32")
    raise AssertionError(f"no preflight rule for kafka type {kafka_type!r}")


def check_lengths(entity_type: type, buf: bytes, pos: int, end: int) -> None:
    """Raise :class:`MalformedFrame` unless every length in ``buf[pos:end]``, read as an
    ``entity_type``, fits in the bytes that remain (and arrays are not absurdly long)."""
    try:
        _walk_plan(_plan(entity_type), buf, pos, end)
    except _Short as e:
        raise MalformedFrame(f"{entity_type.__name__}: {e}") from None


def _uvarint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    value = 0
    for shift in range(0, 35, 7):
        if pos >= end:
            raise _Short("truncated varint")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
    raise _Short("varint longer than 5 bytes")


def _signed(buf: bytes, pos: int, end: int, size: int) -> tuple[int, int]:
    if end - pos < size:
        raise _Short("truncated length")
    return int.from_bytes(buf[pos : pos + size], "big", signed=True), pos + size


def _walk_plan(plan: Plan, buf: bytes, pos: int, end: int) -> int:
    steps, tagged, flexible = plan
    for step in steps:
        pos = _walk(step, buf, pos, end)
    if not flexible:
        return pos
    count, pos = _uvarint(buf, pos, end)
    if count > end - pos:
        raise _Short(f"{count} tagged fields in {end - pos} bytes")
    for _ in range(count):
        tag, pos = _uvarint(buf, pos, end)
        size, pos = _uvarint(buf, pos, end)
        if size > end - pos:
            raise _Short(f"tagged field of {size} bytes in {end - pos} bytes")
        tagged_step = tagged.get(tag)
        if tagged_step is not None:
            _walk(tagged_step, buf, pos, pos + size)
        pos += size
    return pos


def _walk(step: Step, buf: bytes, pos: int, end: int) -> int:
    kind = step[0]
    if kind == "fixed":
        size = step[1]
        assert isinstance(size, int)
        if end - pos < size:
            raise _Short("truncated field")
        return pos + size
    if kind == "blob":
        if step[1] == "compact":
            length, pos = _uvarint(buf, pos, end)
            length -= 1
        else:
            length, pos = _signed(buf, pos, end, 2 if step[1] == "int16" else 4)
        if length > end - pos:
            raise _Short(f"{length} bytes declared, {end - pos} remain")
        return pos + max(length, 0)
    if kind == "array":
        if step[1]:
            count, pos = _uvarint(buf, pos, end)
            count -= 1
        else:
            count, pos = _signed(buf, pos, end, 4)
        if count > end - pos:
            raise _Short(f"array of {count} elements in {end - pos} bytes")
        element = step[2]
        assert isinstance(element, tuple)
        for _ in range(count):
            pos = _walk(element, buf, pos, end)
        return pos
    assert kind == "struct"
    if step[1]:
        marker, pos = _signed(buf, pos, end, 1)
        if marker < 0:
            return pos
    plan = step[2]
    return _walk_plan(plan, buf, pos, end)  # type: ignore[arg-type]
