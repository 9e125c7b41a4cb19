"""A minimal reader of Kafka ``.properties`` files, and the one ``ConfigError`` (the server
config built from them is ``node.config.NodeConfig``).

Supported syntax: ``key=value`` or ``key: value`` lines, ``#`` and ``!`` comments, blank
lines, and a trailing backslash continuing a line. Errors are one line naming the key.
"""

from __future__ import annotations

from pathlib import Path


class ConfigError(ValueError):
    """A missing or invalid configuration value, the one error of every config reader
    (storage's and the node's): ``str()`` is one line naming the key and, when known, the
    file. ``ConfigError(key, problem)`` reads "invalid config KEY: PROBLEM" and keeps both;
    ``ConfigError(message)`` is a whole line already (``key`` is then None)."""

    def __init__(self, key_or_message: str, problem: str | None = None) -> None:
        if problem is None:
            super().__init__(key_or_message)
            self.key: str | None = None
            self.problem = key_or_message
        else:
            super().__init__(f"invalid config {key_or_message}: {problem}")
            self.key = key_or_message
            self.problem = problem


def parse_properties(text: str, source: str = "<string>") -> dict[str, str]:
    props: dict[str, str] = {}
    pending = ""
    for number, raw in enumerate(text.splitlines(), start=1):
        line = pending + raw.strip() if pending else raw.strip()
        pending = ""
        if not line or line[0] in "#!":
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending = line[:-1]
            continue
        cut = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if cut <= 0:
            raise ConfigError(f"{source}:{number}: expected key=value, got {raw.strip()!r}")
        props[line[:cut].strip()] = line[cut + 1 :].strip()
    return props


def load_properties(path: Path) -> dict[str, str]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror}") from None
    return parse_properties(text, str(path))
