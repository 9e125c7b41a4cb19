"""What the generated codecs (``pykraft.schema.generate``) call: Kafka's wire encodings of
variable-length values, and the errors.

Flexible versions use *compact* forms (unsigned varint of length + 1, 0 for null) and end
every struct with a tagged-field section (varint count, then per field varint tag, varint
size, bytes, in ascending tag order); older versions use int16-length strings and
int32-length arrays and bytes (-1 for null). Readers take ``(buf, pos)`` and return
``(value, next pos)``; writers append to a ``bytearray``.

Every length read from the input is checked against the bytes that are left before anything
is allocated, so a hostile or corrupt length fails with ``SchemaDecodeError`` instead of a
huge allocation.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Sequence
from typing import Final, TypeVar

__all__ = [
    "ZERO_UUID",
    "SchemaDecodeError",
    "SchemaEncodeError",
    "UnsupportedVersionError",
]

T = TypeVar("T")

ZERO_UUID: Final = uuid.UUID(int=0)
I32: Final = struct.Struct(">i")
I16: Final = struct.Struct(">h")
I64: Final = struct.Struct(">q")
UUID_BYTES: Final = 16


class SchemaDecodeError(ValueError):
    """Bytes that are not a valid encoding of the message at that version."""


class SchemaEncodeError(ValueError):
    """A value that cannot be encoded (out of range for its type, wrong type)."""


class UnsupportedVersionError(SchemaEncodeError):
    """The version does not exist, or a field set to a non-default value does not exist in
    it (Kafka's UnsupportedVersionException)."""


def is_compiled(module_file: str) -> bool:
    """Whether the module loaded from ``module_file`` runs compiled (``pykraft.native``
    loads a C extension in place of the ``.py`` source)."""
    return not module_file.endswith(".py")


def need(buf: bytes, pos: int, size: int) -> int:
    """``pos + size``, after checking that many bytes are left."""
    end = pos + size
    if size < 0 or end > len(buf):
        raise SchemaDecodeError(f"{size} bytes needed at {pos}, {len(buf) - pos} left")
    return end


# -- varints ---------------------------------------------------------------------------------


def w_uvarint(out: bytearray, value: int) -> None:
    if value < 0:
        raise SchemaEncodeError(f"unsigned varint {value} < 0")
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def r_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    if pos < len(buf) and buf[pos] < 0x80:  # one byte: most lengths and versions
        return buf[pos], pos + 1
    result = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise SchemaDecodeError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 28:
            raise SchemaDecodeError("varint longer than 5 bytes")


# -- lengths ----------------------------------------------------------------------------------


def w_clen(out: bytearray, length: int | None) -> None:
    """Compact length: ``length + 1``, 0 for null."""
    w_uvarint(out, 0 if length is None else length + 1)


def r_clen(buf: bytes, pos: int, min_size: int) -> tuple[int | None, int]:
    """A compact length, checked against the bytes left (each element at least
    ``min_size`` bytes); None for null."""
    if pos < len(buf) and buf[pos] < 0x80:
        raw = buf[pos]
        pos += 1
    else:
        raw, pos = r_uvarint(buf, pos)
    if raw == 0:
        return None, pos
    length = raw - 1
    if length * min_size > len(buf) - pos:
        raise SchemaDecodeError(f"length {length} at {pos} exceeds the {len(buf) - pos} bytes left")
    return length, pos


def r_len32(buf: bytes, pos: int, min_size: int) -> tuple[int | None, int]:
    end = need(buf, pos, 4)
    (length,) = I32.unpack_from(buf, pos)
    if length < 0:
        return None, end
    if length * min_size > len(buf) - end:
        raise SchemaDecodeError(f"length {length} at {pos} exceeds the {len(buf) - end} bytes left")
    return length, end


def r_len16(buf: bytes, pos: int) -> tuple[int | None, int]:
    end = need(buf, pos, 2)
    (length,) = I16.unpack_from(buf, pos)
    return (None if length < 0 else length), end


def nonnull(value: T | None, what: str) -> T:
    if value is None:
        raise SchemaDecodeError(f"{what} is null in a version where it may not be")
    return value


# -- strings and bytes ------------------------------------------------------------------------


def w_cstr(out: bytearray, value: str | None) -> None:
    if value is None:
        out.append(0)
        return
    data = value.encode()
    w_uvarint(out, len(data) + 1)
    out += data


def r_cstr(buf: bytes, pos: int) -> tuple[str | None, int]:
    length, pos = r_clen(buf, pos, 1)
    if length is None:
        return None, pos
    end = pos + length
    return buf[pos:end].decode(), end


def w_str(out: bytearray, value: str | None) -> None:
    if value is None:
        out += b"\xff\xff"
        return
    data = value.encode()
    if len(data) > 0x7FFF:
        raise SchemaEncodeError(f"string of {len(data)} bytes is longer than 32767")
    out += I16.pack(len(data))
    out += data


def r_str(buf: bytes, pos: int) -> tuple[str | None, int]:
    length, pos = r_len16(buf, pos)
    if length is None:
        return None, pos
    end = need(buf, pos, length)
    return buf[pos:end].decode(), end


def w_cbytes(out: bytearray, value: bytes | None) -> None:
    if value is None:
        out.append(0)
        return
    w_uvarint(out, len(value) + 1)
    out += value


def r_cbytes(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    length, pos = r_clen(buf, pos, 1)
    if length is None:
        return None, pos
    end = pos + length
    return bytes(buf[pos:end]), end


def w_bytes(out: bytearray, value: bytes | None) -> None:
    if value is None:
        out += I32.pack(-1)
        return
    out += I32.pack(len(value))
    out += value


def r_bytes(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    length, pos = r_len32(buf, pos, 1)
    if length is None:
        return None, pos
    end = pos + length
    return bytes(buf[pos:end]), end


def r_cstr_nn(buf: bytes, pos: int) -> tuple[str, int]:
    value, pos = r_cstr(buf, pos)
    return nonnull(value, "string"), pos


def r_str_nn(buf: bytes, pos: int) -> tuple[str, int]:
    value, pos = r_str(buf, pos)
    return nonnull(value, "string"), pos


def r_cbytes_nn(buf: bytes, pos: int) -> tuple[bytes, int]:
    value, pos = r_cbytes(buf, pos)
    return nonnull(value, "bytes"), pos


def r_bytes_nn(buf: bytes, pos: int) -> tuple[bytes, int]:
    value, pos = r_bytes(buf, pos)
    return nonnull(value, "bytes"), pos


def w_uuid(out: bytearray, value: uuid.UUID) -> None:
    out += value.bytes


_UUIDS: dict[bytes, uuid.UUID] = {}
_UUIDS_MAX = 1 << 16


def as_uuid(raw: bytes) -> uuid.UUID:
    """The UUID of 16 bytes; the same bytes give the same (immutable) object while it is in a
    bounded cache: a metadata log repeats the same topic and directory ids many times over."""
    value = _UUIDS.get(raw)
    if value is None:
        if len(_UUIDS) >= _UUIDS_MAX:
            _UUIDS.clear()
        value = _UUIDS[raw] = uuid.UUID(bytes=raw)
    return value


def r_uuid(buf: bytes, pos: int) -> tuple[uuid.UUID, int]:
    end = pos + UUID_BYTES
    if end > len(buf):
        need(buf, pos, UUID_BYTES)
    return as_uuid(bytes(buf[pos:end])), end


# -- arrays -----------------------------------------------------------------------------------


def r_array(
    buf: bytes,
    pos: int,
    compact: bool,
    min_size: int,
    read: Callable[[bytes, int], tuple[T, int]],
) -> tuple[tuple[T, ...] | None, int]:
    """An array (None when null) whose elements ``read`` decodes one at a time."""
    if compact:
        length, pos = r_clen(buf, pos, min_size)
    else:
        length, pos = r_len32(buf, pos, min_size)
    if length is None:
        return None, pos
    items = []
    for _ in range(length):
        item, pos = read(buf, pos)
        items.append(item)
    return tuple(items), pos


def r_fixed_array(
    buf: bytes, pos: int, compact: bool, fmt: struct.Struct
) -> tuple[tuple[int, ...] | None, int]:
    """An array of fixed-size numbers, unpacked in one call."""
    if compact:
        length, pos = r_clen(buf, pos, fmt.size)
    else:
        length, pos = r_len32(buf, pos, fmt.size)
    if length is None:
        return None, pos
    if length == 0:
        return (), pos
    end = need(buf, pos, length * fmt.size)
    values: tuple[int, ...] = _many(fmt.format, length).unpack_from(buf, pos)
    return values, end


# The Struct of ``length`` numbers of one format, by format then length: a dict of lists for
# the short arrays a metadata record holds (replicas, ISR), not an lru_cache over a
# (str, int) key, which cost 0.19 us of the 0.77 of reading a replica list.
_MANY: dict[str, list[struct.Struct]] = {}
_MANY_KEPT = 64  # longer arrays get a Struct each time


def _many(fmt: str, length: int) -> struct.Struct:
    by_length = _MANY.get(fmt)
    if by_length is None:
        by_length = _MANY[fmt] = []
    if length < len(by_length):
        return by_length[length]
    if length >= _MANY_KEPT:
        return struct.Struct(f">{length}{fmt[1:]}")
    while len(by_length) <= length:
        by_length.append(struct.Struct(f">{len(by_length)}{fmt[1:]}"))
    return by_length[length]


def w_array_len(out: bytearray, compact: bool, items: Sequence[object] | None) -> None:
    if compact:
        w_clen(out, None if items is None else len(items))
    else:
        out += I32.pack(-1 if items is None else len(items))


def w_fixed_array(
    out: bytearray, compact: bool, fmt: struct.Struct, items: Sequence[int] | None
) -> None:
    w_array_len(out, compact, items)
    if items:
        out += struct.pack(f">{len(items)}{fmt.format[1:]}", *items)


# -- tagged fields ----------------------------------------------------------------------------


def w_tagged(
    out: bytearray,
    known: list[tuple[int, bytes]],
    unknown: Sequence[tuple[int, bytes]],
) -> None:
    """The tagged-field section: every field in ascending tag order."""
    fields = sorted([*known, *unknown]) if unknown else known
    w_uvarint(out, len(fields))
    for tag, data in fields:
        w_uvarint(out, tag)
        w_uvarint(out, len(data))
        out += data


def r_tag_header(buf: bytes, pos: int) -> tuple[int, int, int]:
    """(tag, end of its data, start of its data) of one tagged field."""
    tag, pos = r_uvarint(buf, pos)
    size, pos = r_uvarint(buf, pos)
    return tag, need(buf, pos, size), pos


def tagged_only(value: T, end: int, pos: int, tag: int) -> T:
    """A tagged field's value, checking it used exactly its declared size."""
    if pos != end:
        raise SchemaDecodeError(f"tagged field {tag} has {end - pos} unread bytes")
    return value


def guard(decode: Callable[[bytes, int], tuple[T, int]], data: bytes, what: str) -> T:
    """Decode the whole of ``data`` with ``decode``: trailing bytes and any read past the
    end are a ``SchemaDecodeError``."""
    try:
        value, end = decode(data, 0)
    except SchemaDecodeError:
        raise
    except (struct.error, IndexError, UnicodeDecodeError, ValueError, OverflowError) as e:
        raise SchemaDecodeError(f"{what}: {e}") from None
    if end != len(data):
        raise SchemaDecodeError(f"{what}: {len(data) - end} bytes after the message")
    return value


def check_default(value: object, default: object, name: str, version: int) -> None:
    if value != default:
        raise UnsupportedVersionError(f"{name} is not supported in version {version}")


def encode_with(write: Callable[[bytearray], None], what: str) -> bytes:
    out = bytearray()
    try:
        write(out)
    except struct.error as e:
        raise SchemaEncodeError(f"{what}: {e}") from None
    except (AttributeError, TypeError) as e:
        raise SchemaEncodeError(f"{what}: {e}") from None
    return bytes(out)
