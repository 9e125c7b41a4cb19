"""Hypothesis strategies for values of generated message classes, driven by the same JSON
specs the classes were generated from: every field present in the version gets a random
value of its type (nullable ones sometimes None); absent fields keep their defaults; flexible
versions also get unknown tagged fields (tags above every known one)."""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

from hypothesis import strategies as st

from pykraft.schema.codegen import snake
from pykraft.schema.spec import FieldSpec, MessageSpec

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
UNKNOWN_TAG_BASE = 10_000


def _scalar(
    kind: str, cls_of: dict[str, type], spec: MessageSpec, version: int, unknown: bool
) -> Any:
    if kind in _INT_RANGES:
        low, high = _INT_RANGES[kind]
        return st.integers(low, high)
    if kind == "float64":
        return st.floats(allow_nan=False)
    if kind == "bool":
        return st.booleans()
    if kind == "string":
        return st.text(max_size=12)
    if kind in ("bytes", "records"):
        return st.binary(max_size=24)
    if kind == "uuid":
        return st.uuids()
    return instances(cls_of[kind], spec, kind, version, cls_of, unknown)


# Values a reader restricts, by field-name suffix (kio maps ErrorCode to its enum and
# timestamps to datetimes); a test sets and clears it.
OVERRIDES: dict[str, Any] = {}


def _override(name: str) -> Any:
    for suffix, strategy in OVERRIDES.items():
        if name.endswith(suffix):
            return strategy
    return None


def _field(
    f: FieldSpec, cls_of: dict[str, type], spec: MessageSpec, version: int, unknown: bool
) -> Any:
    element = _override(f.name)
    if element is None:
        element = _scalar(f.element, cls_of, spec, version, unknown)
    value = st.lists(element, max_size=4).map(tuple) if f.is_array else element
    if version in f.nullable:
        value = st.none() | value
    return value


def unknown_tags(spec: MessageSpec, version: int, unknown: bool) -> Any:
    if version not in spec.flexible or not unknown:
        return st.just(())
    return st.lists(
        st.tuples(st.integers(UNKNOWN_TAG_BASE, UNKNOWN_TAG_BASE + 50), st.binary(max_size=6)),
        max_size=2,
        unique_by=lambda t: t[0],
    ).map(lambda items: tuple(sorted(items)))


def instances(
    cls: type,
    spec: MessageSpec,
    struct: str,
    version: int,
    cls_of: dict[str, type],
    unknown: bool,
) -> Any:
    structs = {s.name: s for s in spec.structs()}
    fields = {
        snake(f.name): _field(f, cls_of, spec, version, unknown)
        for f in structs[struct].fields
        if version in f.versions
    }
    fields["unknown_tagged_fields"] = unknown_tags(spec, version, unknown)
    return st.builds(cls, **fields)


def message_values(cls: type, spec: MessageSpec, version: int, *, unknown: bool = True) -> Any:
    """Values of ``cls`` at ``version``; ``unknown`` adds unknown tagged fields."""
    module = sys.modules[cls.__module__]
    cls_of = {s.name: getattr(module, s.name) for s in spec.structs() if hasattr(module, s.name)}
    assert all(dataclasses.is_dataclass(c) for c in cls_of.values())
    return instances(cls, spec, spec.name, version, cls_of, unknown)
