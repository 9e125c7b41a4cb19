"""RPC versions kio does not have, served beside kio's: KIP-435's
ListPartitionReassignments v1 (pykraft's, ``schemas/ListPartitionReassignments*.json``),
Kafka 4.4.0's UnregisterController v0 (Kafka's JSON, ``schemas/UnregisterController*.json``)
and Kafka 4.4.0's ApiVersions v5 (KIP-1242, ``schemas/ApiVersions*.json``; kio stops at v4),
generated into ``generated/`` by ``python -m pykraft.schema.generate``.

``request_schema``/``response_schema`` return, for these versions, a subclass of the generated
dataclass that carries what the wire layer reads from kio's classes (``__api_key__``,
``__version__``, ``__flexible__``); ``codec`` encodes and decodes it with the generated
writer and reader, ``build.make`` builds it from plain values. Versions Kafka defines stay
kio's, so Kafka's clients (which negotiate them) see exactly Kafka's messages.
"""

from __future__ import annotations

import dataclasses
import importlib
import typing
from functools import cache
from typing import Any, Final

from pykraft.protocol.generated.api_versions_request import ApiVersionsRequest
from pykraft.protocol.generated.api_versions_response import ApiVersionsResponse
from pykraft.protocol.generated.list_partition_reassignments_request import (
    ListPartitionReassignmentsRequest,
)
from pykraft.protocol.generated.list_partition_reassignments_response import (
    ListPartitionReassignmentsResponse,
)
from pykraft.protocol.generated.unregister_controller_request import (
    UnregisterControllerRequest,
)
from pykraft.protocol.generated.unregister_controller_response import (
    UnregisterControllerResponse,
)

__all__ = ["EXTENSIONS", "UnknownFieldError", "is_generated", "make_generated", "read_generated"]

LIST_PARTITION_REASSIGNMENTS: Final = 46
UNREGISTER_CONTROLLER: Final = 94
API_VERSIONS: Final = 18


def _versioned(base: type, version: int) -> type:
    flexible = 0 <= base.FLEXIBLE_FROM <= version  # type: ignore[attr-defined]
    return type(
        f"{base.__name__}V{version}",
        (base,),
        {
            "__slots__": (),
            "__api_key__": base.API_KEY,  # type: ignore[attr-defined]
            "__version__": version,
            "__flexible__": flexible,
            "__generated_base__": base,
        },
    )


# (api key, version) -> (request class, response class)
EXTENSIONS: Final[dict[tuple[int, int], tuple[type, type]]] = {
    (LIST_PARTITION_REASSIGNMENTS, 1): (
        _versioned(ListPartitionReassignmentsRequest, 1),
        _versioned(ListPartitionReassignmentsResponse, 1),
    ),
    (UNREGISTER_CONTROLLER, 0): (
        _versioned(UnregisterControllerRequest, 0),
        _versioned(UnregisterControllerResponse, 0),
    ),
    (API_VERSIONS, 5): (
        _versioned(ApiVersionsRequest, 5),
        _versioned(ApiVersionsResponse, 5),
    ),
}


@cache
def extension_fields(class_name: str) -> frozenset[str]:
    """The field names of the extension classes (nested ones included) called
    ``class_name``: a kio class of the same message also accepts them (``build.make``),
    since one answer serves Kafka's versions and pykraft's."""
    names: set[str] = set()
    seen: set[type] = set()
    todo = [cls for pair in EXTENSIONS.values() for cls in pair]
    while todo:
        item = todo.pop()
        cls = getattr(item, "__generated_base__", item)
        if cls in seen:
            continue
        seen.add(cls)
        nested = _nested(cls)
        if cls.__name__ == class_name:
            names.update(nested)
        todo.extend(inner for inner in nested.values() if inner is not None)
    return frozenset(names)


class UnknownFieldError(ValueError):
    """A value named a field that no version of the message has (``build.make``)."""


def is_generated(cls: type) -> bool:
    return hasattr(cls, "__generated_base__")


def read_generated(cls: type, frame: bytes, pos: int) -> tuple[Any, int]:
    """Decode ``cls`` (an EXTENSIONS class) from ``frame[pos:]``: (message, bytes read)."""
    base = cls.__generated_base__  # type: ignore[attr-defined]
    body, end = base.read(frame, pos, cls.__version__)  # type: ignore[attr-defined]
    values = {f.name: getattr(body, f.name) for f in dataclasses.fields(body)}
    return cls(**values), end - pos


@cache
def _nested(cls: type) -> dict[str, type | None]:
    """Field name -> the generated struct class of its elements (None for primitives)."""
    base = getattr(cls, "__generated_base__", cls)
    hints = typing.get_type_hints(base, globalns=vars(importlib.import_module(base.__module__)))
    out: dict[str, type | None] = {}
    for name, hint in hints.items():
        inner: type | None = None
        for arg in typing.get_args(hint) or (hint,):
            for candidate in typing.get_args(arg) or (arg,):
                if isinstance(candidate, type) and dataclasses.is_dataclass(candidate):
                    inner = candidate
        out[name] = inner
    return out


def make_generated(cls: type, values: Any) -> Any:
    """``cls`` built from a mapping (nested structs as mappings, arrays as sequences), the
    fields it lacks left at their defaults and those it does not have dropped, as
    ``build.make`` does for kio's classes; ``throttle_time`` is accepted for
    ``throttle_time_ms`` (kio's name)."""
    if dataclasses.is_dataclass(values):
        return values
    nested = _nested(cls)
    kwargs: dict[str, Any] = {}
    names = {f.name for f in dataclasses.fields(cls)}
    for name, value in values.items():
        if name == "throttle_time" and "throttle_time_ms" in nested:
            name = "throttle_time_ms"
        if name == "timeout" and "timeout_ms" in nested:
            name = "timeout_ms"
        if name not in nested:  # every version's fields
            raise UnknownFieldError(f"{cls.__name__} has no field {name!r} in any version")
        if name not in names:
            continue
        inner = nested.get(name)
        if hasattr(value, "total_seconds"):
            value = int(value.total_seconds() * 1000)
        if value is None or inner is None:
            kwargs[name] = tuple(value) if isinstance(value, list) else value
        elif isinstance(value, list | tuple):
            kwargs[name] = tuple(make_generated(inner, v) for v in value)
        else:
            kwargs[name] = make_generated(inner, value)
    return cls(**kwargs)
