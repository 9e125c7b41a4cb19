"""The code generator behind ``schema/generate.py``: one Kafka message-definition (a
``MessageSpec``) becomes the text of one Python module -- its dataclasses, a straight-line
writer and reader per version, and Kafka's field rules (see ``generate.py``'s docstring).
Names: ``snake`` (Kafka's camelCase field names) and ``module_name`` (a message's module)."""

from __future__ import annotations

import dataclasses
import keyword
import re
import textwrap
from collections.abc import Iterable
from typing import Final

from pykraft.schema.spec import NONE, FieldSpec, MessageSpec, SchemaError, StructSpec

__all__ = ["MessageGenerator", "module_name", "snake", "struct_size"]


_FIXED: Final = {
    "bool": "?",
    "int8": "b",
    "int16": "h",
    "uint16": "H",
    "int32": "i",
    "uint32": "I",
    "int64": "q",
    "float64": "d",
    "uuid": "16s",
}
_INTS: Final = frozenset({"int8", "int16", "uint16", "int32", "uint32", "int64"})


def snake(name: str) -> str:
    s = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()
    return f"{s}_" if keyword.iskeyword(s) or s in _RESERVED else s


_RESERVED: Final = frozenset({"encode", "decode", "write", "read", "unknown_tagged_fields"})


def module_name(message: str) -> str:
    return snake(message)


# Every generated module's fixed preamble (unused runtime imports are dropped afterwards).
_STATIC_HEADER: Final = (
    "# ruff: noqa: E501, RUF100, SIM108",
    "",
    "from __future__ import annotations",
    "",
    "import struct",
    "import uuid",
    "from collections.abc import Callable, Mapping",
    "from dataclasses import dataclass",
    "from typing import ClassVar, Final, TypeVar",
    "",
    "from pykraft.schema.runtime import (",
    "    ZERO_UUID,",
    "    SchemaEncodeError,",
    "    UnsupportedVersionError,",
    "    as_uuid,",
    "    check_default,",
    "    encode_with,",
    "    guard,",
    "    is_compiled,",
    "    nonnull,",
    "    r_array,",
    "    r_bytes,",
    "    r_bytes_nn,",
    "    r_cbytes,",
    "    r_cbytes_nn,",
    "    r_cstr,",
    "    r_cstr_nn,",
    "    r_fixed_array,",
    "    r_str,",
    "    r_str_nn,",
    "    r_tag_header,",
    "    r_uuid,",
    "    r_uvarint,",
    "    tagged_only,",
    "    w_array_len,",
    "    w_bytes,",
    "    w_cbytes,",
    "    w_cstr,",
    "    w_fixed_array,",
    "    w_str,",
    "    w_tagged,",
    ")",
    "",
)


def _lookup_functions(name: str) -> list[str]:
    """The version lookups of a generated module (``_writer`` / ``_reader``)."""
    return [
        "",
        "",
        "def _writer(table: Mapping[int, _T], version: int) -> _T:",
        "    try:",
        "        return table[version]",
        "    except KeyError:",
        f'        raise UnsupportedVersionError("{name} has no version %d" % version) from None',
        "",
        "",
        "def _reader(table: Mapping[int, _T], version: int) -> _T:",
        "    return _writer(table, version)",
        "",
        "",
    ]


class MessageGenerator:
    def __init__(self, spec: MessageSpec) -> None:
        self.spec = spec
        self.structs = {s.name: s for s in spec.structs()}
        self.formats: dict[str, str] = {}
        self.lines: list[str] = []

    # -- types and defaults --------------------------------------------------------------------

    def py_type(self, f: FieldSpec) -> str:
        base = {
            "bool": "bool",
            "float64": "float",
            "string": "str",
            "bytes": "bytes",
            "records": "bytes",
            "uuid": "uuid.UUID",
        }
        element = base.get(f.element, "int" if f.element in _INTS else f.element)
        kind = f"tuple[{element}, ...]" if f.is_array else element
        return f"{kind} | None" if not f.nullable.empty else kind

    def default(self, f: FieldSpec) -> str:
        d = f.default
        if d == "null":
            if f.nullable.empty:
                raise SchemaError(f"{self.spec.name}.{f.name}: default null but never nullable")
            return "None"
        if f.is_array:
            if d not in (None, ""):
                raise SchemaError(f"{self.spec.name}.{f.name}: array default {d!r}")
            return "()"
        t = f.type
        if t in _INTS:
            return str(int(d, 0)) if d not in (None, "") else "0"
        if t == "float64":
            return repr(float(d)) if d not in (None, "") else "0.0"
        if t == "bool":
            return "True" if (d or "").lower() == "true" else "False"
        if t == "string":
            return repr(d or "")
        if t in ("bytes", "records"):
            return 'b""'
        if t == "uuid":
            if d not in (None, "", "AAAAAAAAAAAAAAAAAAAAAA"):
                raise SchemaError(f"{self.spec.name}.{f.name}: uuid default {d!r}")
            return "ZERO_UUID"
        return f"{t}()"

    def fmt(self, code: str) -> str:
        name = self.formats.get(code)
        if name is None:
            name = f"_F{len(self.formats)}"
            self.formats[code] = name
        return name

    # -- emit ----------------------------------------------------------------------------------

    def emit(self, text: str = "", indent: int = 0) -> None:
        self.lines.append(("    " * indent + text) if text else "")

    def versions_of(self, struct: StructSpec) -> list[int]:
        """The versions of the message in which ``struct`` can appear."""
        found: dict[str, set[int]] = {}

        def walk(fields: Iterable[FieldSpec], version: int) -> None:
            for f in fields:
                seen = found.setdefault(f.element, set()) if f.is_struct else None
                if seen is not None and version in f.versions and version not in seen:
                    seen.add(version)
                    walk(self.structs[f.element].fields, version)

        top = self.spec.valid
        for v in range(top.low, top.high + 1):
            walk(self.spec.fields, v)
            found.setdefault(self.spec.name, set()).add(v)
        return sorted(found.get(struct.name, ()))

    def dataclass(self, struct: StructSpec, top: bool) -> None:
        if top:
            # The message's constants live in a base class, not in the dataclass: mypyc (which
            # compiles the hot codecs, ``pykraft.native``) hands a dataclass's ClassVars to
            # ``dataclass`` as fields.
            self.emit(f"class _{struct.name}Constants:")
            key = -1 if self.spec.api_key is None else self.spec.api_key
            self.emit("__slots__ = ()", 1)
            self.emit(f"API_KEY: ClassVar[int] = {key}", 1)
            self.emit(f"LOWEST_VERSION: ClassVar[int] = {self.spec.valid.low}", 1)
            self.emit(f"HIGHEST_VERSION: ClassVar[int] = {self.spec.valid.high}", 1)
            flexible = self.spec.flexible.low if not self.spec.flexible.empty else -1
            self.emit(f"FLEXIBLE_FROM: ClassVar[int] = {flexible}  # -1: never", 1)
            self.emit()
            self.emit()
        self.emit("@dataclass(frozen=True, slots=True)")
        self.emit(
            f"class {struct.name}(_{struct.name}Constants):" if top else f"class {struct.name}:"
        )
        if top:
            about = f"Kafka's {struct.name}"
            if self.spec.api_key is not None:
                about += f" (api key {self.spec.api_key})"
            about += f", versions {self.spec.valid.low}-{self.spec.valid.high}."
            self.emit(f'"""{about}"""', 1)
            self.emit()
        for f in struct.fields:
            if f.about:
                for line in textwrap.wrap(f.about, 92):
                    self.emit(f"# {line}", 1)
            self.emit(f"{snake(f.name)}: {self.py_type(f)} = {self.default(f)}", 1)
        self.emit("unknown_tagged_fields: tuple[tuple[int, bytes], ...] = ()", 1)
        self.initializer(struct)
        # Pickled by its fields, in order (a compiled frozen class has no settable state).
        self.emit()
        self.emit("def __reduce__(self) -> tuple[object, tuple[object, ...]]:", 1)
        values = "".join(f"self.{snake(f.name)}, " for f in struct.fields)
        self.emit(f"return ({struct.name}, ({values}self.unknown_tagged_fields,))", 2)
        if top:
            name = struct.name
            self.emit()
            self.emit("def encode(self, version: int) -> bytes:", 1)
            self.emit(f'return encode_with(lambda out: self.write(out, version), "{name}")', 2)
            self.emit()
            self.emit("def write(self, out: bytearray, version: int) -> None:", 1)
            self.emit(f"_writer(_W_{name}, version)(self, out)", 2)
            self.emit()
            self.emit("@classmethod", 1)
            self.emit(f"def decode(cls, data: bytes, version: int) -> {name}:", 1)
            self.emit(f'return guard(_reader(_R_{name}, version), bytes(data), "{name}")', 2)
            self.emit()
            self.emit("@classmethod", 1)
            self.emit(
                f"def read(cls, buf: bytes, pos: int, version: int) -> tuple[{name}, int]:", 1
            )
            self.emit(f"return _reader(_R_{name}, version)(buf, pos)", 2)
        self.emit()
        self.emit()

    def initializer(self, struct: StructSpec) -> None:
        """The initializer, written out: the dataclass's own is generated Python that mypyc
        leaves interpreted (2 us of a compiled PartitionRecord read's 4.3). Compiled, the
        stores go straight to the instance's slots (the frozen ``__setattr__`` guards
        Python code only); interpreted, they pass it as the dataclass's own initializer
        does."""
        params = [(snake(f.name), self.py_type(f), self.default(f)) for f in struct.fields]
        params.append(("unknown_tagged_fields", "tuple[tuple[int, bytes], ...]", "()"))
        self.emit()
        signature = ", ".join(f"{n}: {t} = {d}" for n, t, d in params)
        self.emit(f"def __init__(self, {signature}) -> None:", 1)
        self.emit("if _COMPILED:", 2)
        for n, _, _ in params:
            self.emit(f"self.{n} = {n}  # type: ignore[misc]", 3)
        self.emit("else:", 2)
        for n, _, _ in params:
            self.emit(f'object.__setattr__(self, "{n}", {n})', 3)

    def inline_groups(
        self, fields: Iterable[FieldSpec], version: int, flexible: bool
    ) -> list[list[FieldSpec] | FieldSpec]:
        """The fields written inline in ``version``, consecutive fixed-size ones grouped."""
        groups: list[list[FieldSpec] | FieldSpec] = []
        for f in fields:
            if version not in f.versions or (flexible and version in f.tagged):
                continue
            fixed = not f.is_array and f.type in _FIXED and version not in f.nullable
            if fixed:
                if groups and isinstance(groups[-1], list):
                    groups[-1].append(f)
                else:
                    groups.append([f])
            else:
                groups.append(f)
        return groups

    # writers

    def write_value(self, f: FieldSpec, expr: str, out: str, v: int, flex: bool, ind: int) -> None:
        """Code writing ``expr`` (the value of ``f``) to ``out`` in version ``v``."""
        t = f.element
        nullable = v in f.nullable
        if not nullable and not f.nullable.empty:
            self.emit(f"if {expr} is None:", ind)
            self.emit(
                f'raise SchemaEncodeError("{f.name} may not be null in version {v}")', ind + 1
            )
        if f.is_array:
            if t in _FIXED and t != "uuid":
                fmt = self.fmt(">" + _FIXED[t])
                self.emit(f"w_fixed_array({out}, {flex}, {fmt}, {expr})", ind)
                return
            self.emit(f"w_array_len({out}, {flex}, {expr})", ind)
            if nullable:
                self.emit(f"if {expr} is not None:", ind)
                ind += 1
            item = f"e_{snake(f.name)}"  # one name per field: mypy types each loop variable
            self.emit(f"for {item} in {expr}:", ind)
            element = dataclasses.replace(f, type=t, nullable=NONE, default=None)
            self.write_value(element, item, out, v, flex, ind + 1)
            return
        if t in _FIXED:
            code = ">" + _FIXED[t]
            value = f"{expr}.bytes" if t == "uuid" else expr
            self.emit(f"{out} += {self.fmt(code)}.pack({value})", ind)
        elif t == "string":
            self.emit(f"{'w_cstr' if flex else 'w_str'}({out}, {expr})", ind)
        elif t in ("bytes", "records"):
            self.emit(f"{'w_cbytes' if flex else 'w_bytes'}({out}, {expr})", ind)
        elif nullable:  # a nullable struct: int8 -1 for null, 1 before a value
            self.emit(f"if {expr} is None:", ind)
            self.emit(f"{out}.append(0xFF)", ind + 1)
            self.emit("else:", ind)
            self.emit(f"{out}.append(1)", ind + 1)
            self.emit(f"_w_{t}_v{v}({expr}, {out})", ind + 1)
        else:
            self.emit(f"_w_{t}_v{v}({expr}, {out})", ind)

    def writer(self, struct: StructSpec, v: int) -> None:
        flex = v in self.spec.flexible
        self.emit(f"def _w_{struct.name}_v{v}(o: {struct.name}, out: bytearray) -> None:")
        start = len(self.lines)
        for f in struct.fields:
            if v not in f.versions and not f.ignorable:
                default = self.default(f)
                self.emit(f'check_default(o.{snake(f.name)}, {default}, "{f.name}", {v})', 1)
        for group in self.inline_groups(struct.fields, v, flex):
            if isinstance(group, list):
                code = ">" + "".join(_FIXED[f.type] for f in group)
                values = ", ".join(
                    f"o.{snake(f.name)}.bytes" if f.type == "uuid" else f"o.{snake(f.name)}"
                    for f in group
                )
                self.emit(f"out += {self.fmt(code)}.pack({values})", 1)
            else:
                self.write_value(group, f"o.{snake(group.name)}", "out", v, flex, 1)
        if flex:
            tagged = [f for f in struct.fields if v in f.tagged and v in f.versions]
            if tagged:
                self.emit("tagged: list[tuple[int, bytes]] = []", 1)
                for f in sorted(tagged, key=lambda f: f.tag or 0):
                    name = f"o.{snake(f.name)}"
                    default = self.default(f)
                    test = "is not" if default == "None" else "!="
                    self.emit(f"if {name} {test} {default}:", 1)
                    self.emit("t = bytearray()", 2)
                    self.write_value(f, name, "t", v, flex, 2)
                    self.emit(f"tagged.append(({f.tag}, bytes(t)))", 2)
                self.emit("w_tagged(out, tagged, o.unknown_tagged_fields)", 1)
            else:
                self.emit("w_tagged(out, [], o.unknown_tagged_fields)", 1)
        if len(self.lines) == start:
            self.emit("pass  # no fields in this version", 1)
        self.emit()
        self.emit()

    # readers

    def read_value(self, f: FieldSpec, var: str, v: int, flex: bool, ind: int) -> None:
        """Code reading ``f``'s value at ``p`` into ``var``, advancing ``p``."""
        t = f.element
        nullable = v in f.nullable
        checked = not nullable and (f.is_array or t in ("string", "bytes", "records"))
        target = var
        if checked:  # read into a temporary of the Optional type, then check it
            var = f"n_{var}"
        if f.is_array:
            if t in _FIXED and t != "uuid":
                fmt = self.fmt(">" + _FIXED[t])
                self.emit(f"{var}, p = r_fixed_array(b, p, {flex}, {fmt})", ind)
            else:
                if t == "uuid":
                    reader, size = "r_uuid", 16
                elif t == "string":
                    reader, size = ("r_cstr_nn" if flex else "r_str_nn"), 1
                elif t in ("bytes", "records"):
                    reader, size = ("r_cbytes_nn" if flex else "r_bytes_nn"), 1
                else:
                    reader, size = f"_r_{t}_v{v}", 1
                self.emit(f"{var}, p = r_array(b, p, {flex}, {size}, {reader})", ind)
        elif t in _FIXED:
            code = ">" + _FIXED[t]
            fmt = self.fmt(code)
            if t == "uuid":
                self.emit(f"{var} = as_uuid({fmt}.unpack_from(b, p)[0])", ind)
            else:
                self.emit(f"({var},) = {fmt}.unpack_from(b, p)", ind)
            self.emit(f"p += {struct_size(code)}", ind)
        elif t == "string":
            self.emit(f"{var}, p = {'r_cstr' if flex else 'r_str'}(b, p)", ind)
        elif t in ("bytes", "records"):
            self.emit(f"{var}, p = {'r_cbytes' if flex else 'r_bytes'}(b, p)", ind)
        elif nullable:
            self.emit(f"if {self.fmt('>b')}.unpack_from(b, p)[0] < 0:", ind)
            self.emit(f"{var} = None", ind + 1)
            self.emit("p += 1", ind + 1)
            self.emit("else:", ind)
            self.emit(f"{var}, p = _r_{t}_v{v}(b, p + 1)", ind + 1)
        else:
            self.emit(f"{var}, p = _r_{t}_v{v}(b, p)", ind)
        if checked:
            self.emit(f'{target} = nonnull({var}, "{f.name}")', ind)

    def reader(self, struct: StructSpec, v: int) -> None:
        flex = v in self.spec.flexible
        name = struct.name
        self.emit(f"def _r_{name}_v{v}(b: bytes, p: int) -> tuple[{name}, int]:")
        for f in struct.fields:
            if v not in f.versions or (flex and v in f.tagged):
                self.emit(f"v_{snake(f.name)}: {self.py_type(f)} = {self.default(f)}", 1)
        for group in self.inline_groups(struct.fields, v, flex):
            if isinstance(group, list):
                code = ">" + "".join(_FIXED[f.type] for f in group)
                names = [f"v_{snake(f.name)}" for f in group]
                self.emit(f"({', '.join(names)},) = {self.fmt(code)}.unpack_from(b, p)", 1)
                self.emit(f"p += {struct_size(code)}", 1)
                for f in group:
                    if f.type == "uuid":
                        var = f"v_{snake(f.name)}"
                        self.emit(f"{var} = as_uuid({var})", 1)
            else:
                self.read_value(group, f"v_{snake(group.name)}", v, flex, 1)
        unknown = "()"
        if flex:
            tagged = [f for f in struct.fields if v in f.tagged and v in f.versions]
            self.emit("unknown: list[tuple[int, bytes]] = []", 1)
            self.emit("count, p = r_uvarint(b, p)", 1)
            self.emit("for _ in range(count):", 1)
            self.emit("tag, end, p = r_tag_header(b, p)", 2)
            keyword_ = "if"
            for f in sorted(tagged, key=lambda f: f.tag or 0):
                self.emit(f"{keyword_} tag == {f.tag}:", 2)
                self.read_value(f, f"v_{snake(f.name)}", v, flex, 3)
                self.emit(f"tagged_only(None, end, p, {f.tag})", 3)
                keyword_ = "elif"
            if tagged:
                self.emit("else:", 2)
                self.emit("unknown.append((tag, bytes(b[p:end])))", 3)
            else:
                self.emit("unknown.append((tag, bytes(b[p:end])))", 2)
            self.emit("p = end", 2)
            unknown = "tuple(unknown)"
        args = ", ".join(f"{snake(f.name)}=v_{snake(f.name)}" for f in struct.fields)
        sep = ", " if args else ""
        self.emit(f"return {name}({args}{sep}unknown_tagged_fields={unknown}), p", 1)
        self.emit()
        self.emit()

    def module(self, source: str) -> str:
        spec = self.spec
        body_start = len(self.lines)
        structs = list(self.structs.values())
        for s in structs:
            self.dataclass(s, top=s.name == spec.name)
        for s in structs:
            for v in self.versions_of(s):
                self.writer(s, v)
                self.reader(s, v)
        name = spec.name
        versions = self.versions_of(self.structs[name])
        self.emit(
            f"_W_{name}: Final = {{" + ", ".join(f"{v}: _w_{name}_v{v}" for v in versions) + "}"
        )
        self.emit(
            f"_R_{name}: Final = {{" + ", ".join(f"{v}: _r_{name}_v{v}" for v in versions) + "}"
        )
        body = self.lines[body_start:]
        header = [
            f'"""{name}: generated by ``python -m pykraft.schema.generate`` from',
            f'``{source}`` (Apache Kafka\'s message definition). Do not edit."""',
            "",
            *_STATIC_HEADER,
            f"__all__ = [{', '.join(repr(s.name) for s in sorted(structs, key=lambda s: s.name))}]",
            "",
            '_T = TypeVar("_T")',
            "_COMPILED: Final = is_compiled(__file__)",
            "",
        ]
        for code, fmt in self.formats.items():
            header.append(f"{fmt}: Final = struct.Struct({code!r})")
        header += _lookup_functions(name)
        text = "\n".join(header + body).rstrip() + "\n"
        return _unused_imports(text)


def struct_size(code: str) -> int:
    import struct

    return struct.calcsize(code)


_IMPORTED: Final = re.compile(r"^    (\w+),$", re.MULTILINE)


def _unused_imports(text: str) -> str:
    """Drop names of the runtime import list that the generated body does not use."""
    head, sep, rest = text.partition("from pykraft.schema.runtime import (\n")
    names, close, tail = rest.partition("\n)\n")
    kept = [
        line for line in names.splitlines() if re.search(rf"\b{line.strip().rstrip(',')}\b", tail)
    ]
    for module, usage in (
        ("import struct\n", r"\bstruct\."),
        ("import uuid\n", r"\buuid\."),
    ):
        if not re.search(usage, tail):
            head = head.replace(module, "")
    if not re.search(r"\bCallable\b", tail):
        head = head.replace(
            "from collections.abc import Callable, Mapping", "from collections.abc import Mapping"
        )
    return head + sep + "\n".join(kept) + close + tail
