"""A reader for Java ``.properties`` files, the format of Kafka's ``server.properties``.

Covers what Kafka operators write: ``#`` and ``!`` comments, ``key=value``, ``key: value`` and
``key value`` separators, lines continued with a trailing backslash, and the escapes
``\\t \\n \\r \\f \\\\ \\= \\: \\#  \\! \\uXXXX``. Later keys override earlier ones, as
``java.util.Properties.load`` does.

(``pykraft.storage`` is expected to grow its own parser for ``meta.properties``; once it lands
this module should become a re-export of it, so that there is one parser.)
"""

from __future__ import annotations

__all__ = ["PropertiesSyntaxError", "parse_properties"]

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


class PropertiesSyntaxError(ValueError):
    """The text is not a valid properties file (only a bad ``\\u`` escape can cause it)."""


def _logical_lines(text: str) -> list[str]:
    """Join continued lines (an odd number of trailing backslashes) and drop comments."""
    out: list[str] = []
    pending: str | None = None
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f")
        if pending is None and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        continued = trailing % 2 == 1
        if continued:
            line = line[:-1]
        pending = line if pending is None else pending + line
        if not continued:
            out.append(pending)
            pending = None
    if pending is not None:
        out.append(pending)
    return out


def _unescape(text: str, line_no: int) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c != "\\" or i + 1 == len(text):
            out.append(c)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2 : i + 6]
            try:
                out.append(chr(int(digits, 16)))
            except ValueError:
                raise PropertiesSyntaxError(
                    f"line {line_no}: bad unicode escape \\u{digits}"
                ) from None
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def _split(line: str) -> tuple[str, str]:
    """Split at the first unescaped ``=``, ``:`` or whitespace, as Java does."""
    i = 0
    while i < len(line):
        c = line[i]
        if c == "\\":
            i += 2
            continue
        if c in "=: \t\f":
            break
        i += 1
    key = line[:i]
    rest = line[i:]
    if rest[:1] in ("=", ":"):
        return key, rest[1:].lstrip(" \t\f")
    rest = rest.lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


def parse_properties(text: str) -> dict[str, str]:
    """Parse the contents of a ``.properties`` file into an ordered dict."""
    result: dict[str, str] = {}
    for line_no, line in enumerate(_logical_lines(text), start=1):
        key, value = _split(line)
        result[_unescape(key, line_no)] = _unescape(value, line_no)
    return result
