"""Kafka's message-definition JSON files, read into specs the code generator works from.

Kafka describes every RPC, control record and metadata record in a JSON file
(``clients/src/main/resources/common/message``, ``metadata/src/main/resources/common/
metadata``): the message's versions, which of them are *flexible* (compact strings and arrays,
tagged fields), and its fields, each with the versions it exists in, the versions it may be
null in, and, for tagged fields, its tag. The files carry ``//`` comment lines (the Apache
licence header); those are dropped before parsing.

Version ranges are written ``"3"``, ``"1-4"``, ``"2+"`` or ``"none"``; here they become
``VersionRange(low, high)`` with ``high`` = ``MAX_VERSION`` for an open range and an empty
range for ``"none"``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

__all__ = [
    "MAX_VERSION",
    "NONE",
    "PRIMITIVES",
    "FieldSpec",
    "MessageSpec",
    "SchemaError",
    "StructSpec",
    "VersionRange",
    "load_spec",
    "parse_spec",
]

MAX_VERSION: Final = 0x7FFF
PRIMITIVES: Final = frozenset(
    {
        "bool",
        "int8",
        "int16",
        "uint16",
        "int32",
        "uint32",
        "int64",
        "float64",
        "string",
        "bytes",
        "records",
        "uuid",
    }
)
_COMMENT = re.compile(r"^\s*//.*$", re.MULTILINE)


class SchemaError(ValueError):
    """A message-definition file this generator cannot read."""


@dataclass(frozen=True, slots=True)
class VersionRange:
    low: int
    high: int

    @classmethod
    def parse(cls, text: str | None) -> VersionRange:
        if text is None or text == "none":
            return NONE
        text = str(text).strip()
        if text.endswith("+"):
            return cls(int(text[:-1]), MAX_VERSION)
        if "-" in text:
            low, high = text.split("-", 1)
            return cls(int(low), int(high))
        return cls(int(text), int(text))

    @property
    def empty(self) -> bool:
        return self.low > self.high

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.low <= version <= self.high

    def intersect(self, other: VersionRange) -> VersionRange:
        return VersionRange(max(self.low, other.low), min(self.high, other.high))


NONE: Final = VersionRange(0, -1)


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One field. ``type`` is a primitive name, a struct name, or ``[]`` + either."""

    name: str
    type: str
    versions: VersionRange
    nullable: VersionRange
    tagged: VersionRange
    tag: int | None
    default: str | None
    ignorable: bool
    about: str
    fields: tuple[FieldSpec, ...]  # a struct (or array of structs) declared inline

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return self.element not in PRIMITIVES


@dataclass(frozen=True, slots=True)
class StructSpec:
    name: str
    versions: VersionRange
    fields: tuple[FieldSpec, ...]


@dataclass(frozen=True, slots=True)
class MessageSpec:
    """A whole file: a request, response, header, data record or metadata record."""

    name: str
    type: str  # "request", "response", "header", "data", "metadata"
    api_key: int | None
    valid: VersionRange
    flexible: VersionRange
    fields: tuple[FieldSpec, ...]
    common_structs: tuple[StructSpec, ...]

    def structs(self) -> list[StructSpec]:
        """Every struct of the message, the message itself last: inline ones depth first,
        then the common ones (each struct is a class of its own)."""
        found: dict[str, StructSpec] = {}

        def walk(fields: tuple[FieldSpec, ...], versions: VersionRange) -> None:
            for f in fields:
                if f.is_struct and f.fields:
                    walk(f.fields, f.versions)
                    if f.element in found:
                        raise SchemaError(f"{self.name}: struct {f.element} declared twice")
                    found[f.element] = StructSpec(f.element, f.versions, f.fields)

        for common in self.common_structs:
            walk(common.fields, common.versions)
            found[common.name] = common
        walk(self.fields, self.valid)
        for f in _all_fields(self.fields):
            if f.is_struct and f.element not in found:
                raise SchemaError(f"{self.name}: field {f.name} names unknown struct {f.element}")
        return [*found.values(), StructSpec(self.name, self.valid, self.fields)]


def _all_fields(fields: tuple[FieldSpec, ...]) -> list[FieldSpec]:
    out = []
    for f in fields:
        out.append(f)
        out.extend(_all_fields(f.fields))
    return out


def _field(raw: dict[str, Any], where: str) -> FieldSpec:
    try:
        name = str(raw["name"])
        kind = str(raw["type"])
    except KeyError as e:
        raise SchemaError(f"{where}: a field lacks {e}") from None
    versions = VersionRange.parse(raw.get("versions"))
    tag = raw.get("tag")
    tagged = VersionRange.parse(raw.get("taggedVersions"))
    if (tag is None) != tagged.empty:
        raise SchemaError(f"{where}.{name}: tag and taggedVersions go together")
    default = raw.get("default")
    return FieldSpec(
        name=name,
        type=kind,
        versions=versions,
        nullable=VersionRange.parse(raw.get("nullableVersions")),
        tagged=tagged,
        tag=None if tag is None else int(tag),
        default=None if default is None else str(default),
        ignorable=bool(raw.get("ignorable", False)),
        about=str(raw.get("about", "")),
        fields=tuple(_field(f, f"{where}.{name}") for f in raw.get("fields", ())),
    )


def parse_spec(text: str, where: str = "<schema>") -> MessageSpec:
    """A message definition from the text of a Kafka JSON file (``//`` comments allowed)."""
    try:
        raw = json.loads(_COMMENT.sub("", text))
    except json.JSONDecodeError as e:
        raise SchemaError(f"{where}: {e}") from None
    name = str(raw["name"])
    commons = tuple(
        StructSpec(
            str(c["name"]),
            VersionRange.parse(c.get("versions")),
            tuple(_field(f, f"{name}.{c['name']}") for f in c.get("fields", ())),
        )
        for c in raw.get("commonStructs", ())
    )
    api_key = raw.get("apiKey")
    return MessageSpec(
        name=name,
        type=str(raw["type"]),
        api_key=None if api_key is None else int(api_key),
        valid=VersionRange.parse(raw.get("validVersions")),
        flexible=VersionRange.parse(raw.get("flexibleVersions")),
        fields=tuple(_field(f, name) for f in raw.get("fields", ())),
        common_structs=commons,
    )


def load_spec(path: Path) -> MessageSpec:
    return parse_spec(path.read_text(), str(path))
