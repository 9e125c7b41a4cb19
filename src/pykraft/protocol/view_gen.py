"""Generate the typed request views of the controller's APIs (``pykraft/protocol/views/``).

    python -m pykraft.protocol.view_gen            # write them
    python -m pykraft.protocol.view_gen --check    # exit 1 if one is stale (scripts/test.sh)

A request reaches a controller handler as the message class of the version the client spoke:
kio has one class per version (``kio.schema.create_topics.v2.request.CreateTopicsRequest``,
..., ``v7``), pykraft's own codecs one for the versions kio lacks (``protocol/ext.py``). A
handler serves every version of its row in ``protocol/controller_apis.py``, so its parameter
is typed by a ``typing.Protocol`` of what *every* served version has: one module per API,
one protocol per struct (the request and each nested entity, named as Kafka names them),
one read-only property per field present in all served versions, with the field's own type
(the union where versions differ; nested structs by their protocol). A field that only some
versions have is absent from the protocol, so mypy refuses ``request.field`` and the
handler must say what an older version means (``getattr(request, name, default)``).

Each module ends with a function, seen only by mypy, that returns every served version's
class as the protocol: the views are checked against the real classes on every ``mypy`` run,
so a view cannot claim a field or a type a served version does not have.

The views are read from the message classes themselves (``dataclasses.fields`` and
``typing.get_type_hints``), not from the JSON: the classes are what the decoder builds.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import sys
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from pykraft.protocol.apis import ApiKey, request_schema, response_schema
from pykraft.protocol.controller_apis import CONTROLLER_APIS

__all__ = ["CONTROLLER_REGISTRATION_VERSIONS", "TARGET", "generate_views", "main"]

TARGET: Final = Path(__file__).resolve().parent / "views"
_HEADER: Final = (
    '"""Typed views of {what} (``python -m pykraft.protocol.view_gen``, from the message'
    ' classes). Do not edit."""'
)


@dataclass
class _Struct:
    """One protocol: a struct's fields over every served version (``None``: not in all)."""

    name: str
    fields: dict[str, list[str]] = field(default_factory=dict)  # name -> rendered types
    seen: int = 0  # how many versions' classes were merged
    every: bool = True  # the fields of every version (a request), else of any (a response)

    def add(self, cls: type, render: typing.Callable[[object], str]) -> None:
        hints = typing.get_type_hints(cls)
        # The tags a version does not know (pykraft's codecs) are no field of Kafka's.
        names = [f.name for f in dataclasses.fields(cls) if f.name != "unknown_tagged_fields"]
        if self.seen == 0:
            self.fields = {n: [] for n in names}
        elif self.every:
            self.fields = {n: t for n, t in self.fields.items() if n in names}
        else:
            self.fields.update({n: [] for n in names if n not in self.fields})
        for name in names:
            if name not in self.fields:
                continue
            rendered = render(hints[name])
            if rendered not in self.fields[name]:
                self.fields[name].append(rendered)
        self.seen += 1


class _Module:
    """The protocols and imports of one API's view module (``answer``: the TypedDicts of its
    response, the fields of any served version, as the handlers build them: plain ints for
    Kafka's integers and error codes, ms or a ``timedelta`` for durations, ms or a
    ``datetime`` for timestamps, any sequence for an array)."""

    def __init__(self, answer: bool = False) -> None:
        self.structs: dict[str, _Struct] = {}
        self.imports: dict[str, str] = {}  # name -> module
        self.answer = answer

    def merge(self, cls: type) -> str:
        name = _class_ref(cls)[1]
        struct = self.structs.setdefault(name, _Struct(name, every=not self.answer))
        struct.add(cls, self.render)
        return name

    def render(self, tp: object) -> str:
        origin = typing.get_origin(tp)
        args = typing.get_args(tp)
        if self.answer and origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            self.imports["Sequence"] = "collections.abc"
            return f"Sequence[{self.render(args[0])}]"
        if self.answer and isinstance(tp, type) and not dataclasses.is_dataclass(tp):
            if issubclass(tp, datetime.timedelta):
                self.imports["timedelta"] = "datetime"
                return "int | timedelta"
            if issubclass(tp, datetime.datetime):  # a timestamp: ms, or a datetime
                self.imports["datetime"] = "datetime"
                return "int | datetime"
            for plain in (bool, int, float, str, bytes):
                if issubclass(tp, plain):
                    return plain.__name__
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            return f"tuple[{self.render(args[0])}, ...]"
        if origin is tuple:
            return f"tuple[{', '.join(self.render(a) for a in args)}]"
        if origin in (typing.Union, types.UnionType):
            return " | ".join(self.render(a) for a in args)
        if tp is type(None):
            return "None"
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            return self.merge(tp)
        module = getattr(tp, "__module__", "builtins")
        name = getattr(tp, "__name__", None)
        if not isinstance(name, str):
            raise TypeError(f"cannot render the field type {tp!r}")
        if module != "builtins":
            known = self.imports.setdefault(name, module)
            if known != module:
                raise TypeError(f"{name} comes from both {known} and {module}")
        return name


def _union(rendered: list[str]) -> str:
    parts: list[str] = []
    for text in rendered:
        for part in text.split(" | ") if not text.startswith("tuple[") else [text]:
            if part not in parts:
                parts.append(part)
    return " | ".join(p for p in parts if p != "None") + (" | None" if "None" in parts else "")


def _class_ref(cls: type) -> tuple[str, str]:
    base = getattr(cls, "__generated_base__", cls)
    return base.__module__, base.__name__


def _view_module(key: ApiKey, versions: tuple[int, int]) -> str:
    module = _Module()
    classes = [request_schema(key, v) for v in range(versions[0], versions[1] + 1)]
    top = ""
    for cls in classes:
        top = module.merge(cls)
    lines = [_HEADER.format(what=f"{key.name}'s request, v{versions[0]}-v{versions[1]}"), ""]
    lines += [
        "from __future__ import annotations",
        "",
        "from typing import TYPE_CHECKING, Protocol",
    ]
    lines.append("")
    for name, source in sorted(module.imports.items(), key=lambda i: (i[1], i[0])):
        lines.append(f"from {source} import {name}")
    lines += ["", f"__all__ = [{', '.join(repr(s) for s in sorted(module.structs))}]", ""]
    # Nested structs first (their names are the field types of the ones above them).
    for struct in reversed(list(module.structs.values())):
        lines += ["", f"class {struct.name}(Protocol):"]
        if not struct.fields:
            lines.append("    pass")
        for name, rendered in struct.fields.items():
            lines += ["    @property", f"    def {name}(self) -> {_union(rendered)}: ..."]
        lines.append("")
    lines += ["", "if TYPE_CHECKING:"]
    refs = []
    for i, cls in enumerate(classes):
        source, name = _class_ref(cls)
        alias = f"_V{versions[0] + i}"
        lines.append(f"    from {source} import {name} as {alias}")
        refs.append(alias)
    params = ", ".join(f"{a.lower()[1:]}: {a}" for a in refs)
    lines += [
        "",
        f"    def _every_version_is_a_view({params}) -> tuple[{top}, ...]:",
        f"        return ({', '.join(a.lower()[1:] for a in refs)},)",
        "",
    ]
    return "\n".join(lines)


# ControllerRegistration: a node API (its row is in ``net/apis.py``, a floor above this one)
# whose request ``controller/registration.py`` reads; a test keeps the range equal to the row's.
CONTROLLER_REGISTRATION_VERSIONS: Final = (0, 0)


def _apis() -> list[tuple[ApiKey, tuple[int, int]]]:
    """The controller's APIs, and ControllerRegistration."""
    apis = [(key, row.versions) for key, row in CONTROLLER_APIS.items()]
    apis.append((ApiKey.CONTROLLER_REGISTRATION, CONTROLLER_REGISTRATION_VERSIONS))
    return sorted(apis)


def _answer_module(key: ApiKey, versions: tuple[int, int]) -> str:
    module = _Module(answer=True)
    for v in range(versions[0], versions[1] + 1):
        module.merge(response_schema(key, v))
    what = f"{key.name}'s response, v{versions[0]}-v{versions[1]}, as the handlers build it"
    lines = [_HEADER.format(what=what), "", "from __future__ import annotations", ""]
    lines += ["from typing import TypedDict", ""]
    for name, source in sorted(module.imports.items(), key=lambda i: (i[1], i[0])):
        lines.append(f"from {source} import {name}")
    lines += ["", f"__all__ = [{', '.join(repr(s) for s in sorted(module.structs))}]", ""]
    for struct in reversed(list(module.structs.values())):
        lines += ["", f"class {struct.name}(TypedDict, total=False):"]
        if not struct.fields:
            lines.append("    pass")
        for name, rendered in struct.fields.items():
            lines.append(f"    {name}: {_union(rendered)}")
        lines.append("")
    return "\n".join(lines)


def generate_views() -> dict[Path, str]:
    """``{path: text}`` of the view modules (nothing is written)."""
    files: dict[Path, str] = {}
    names = []
    for key, versions in _apis():
        module_name = key.name.lower()
        files[TARGET / f"{module_name}.py"] = _view_module(key, versions)
        names.append((module_name, _class_ref(request_schema(key, versions[1]))[1]))
        if key != ApiKey.CONTROLLER_REGISTRATION:  # answered by the node, not a handler
            answer = f"{module_name}_response"
            files[TARGET / f"{answer}.py"] = _answer_module(key, versions)
            names.append((answer, _class_ref(response_schema(key, versions[1]))[1]))
    lines = [
        _HEADER.format(what="the controller's requests"),
        "",
        "from __future__ import annotations",
        "",
    ]
    lines += [f"from pykraft.protocol.views.{m} import {n}" for m, n in names]
    lines += [
        "",
        f"__all__ = [{', '.join(repr(n) for _, n in sorted(names, key=lambda x: x[1]))}]",
        "",
    ]
    files[TARGET / "__init__.py"] = "\n".join(lines)
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pykraft.protocol.view_gen")
    parser.add_argument("--check", action="store_true", help="fail if a view is stale")
    args = parser.parse_args(argv)
    files = generate_views()
    stale = [p for p, text in files.items() if not p.exists() or p.read_text() != text]
    stale += [p for p in TARGET.glob("*.py") if p not in files]
    for path in stale:
        print(f"{'stale' if args.check else 'wrote'} {path}")
        if args.check:
            continue
        if path in files:
            TARGET.mkdir(parents=True, exist_ok=True)
            path.write_text(files[path])
        else:
            path.unlink()
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
