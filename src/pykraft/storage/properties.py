"""A minimal reader of Kafka ``.properties`` files and the server keys storage needs.

Supported syntax: ``key=value`` or ``key: value`` lines, ``#`` and ``!`` comments, blank
lines, and a trailing backslash continuing a line. Errors are one line naming the key.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pykraft.raft.types import Endpoint


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


def parse_listeners(value: str, key: str = "listeners") -> tuple[Endpoint, ...]:
    """``NAME://host:port,...`` (an empty host stays empty)."""
    endpoints = []
    for item in filter(None, (part.strip() for part in value.split(","))):
        name, sep, address = item.partition("://")
        host, colon, port_text = address.rpartition(":")
        if not sep or not colon or not name:
            raise ConfigError(f"{key}: {item!r} is not NAME://host:port")
        endpoints.append(Endpoint(name, host.strip("[]"), _port(port_text, key)))
    return tuple(endpoints)


def _port(text: str, key: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise ConfigError(f"{key}: port {text!r} is not in 0..65535")
    return int(text)


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """The keys ``pykraft storage`` reads from a server properties file."""

    node_id: int
    metadata_log_dir: Path
    listeners: tuple[Endpoint, ...]
    controller_listener_names: tuple[str, ...]
    static_voters: bool = False  # controller.quorum.voters is set (kraft.version 0)
    roles: tuple[str, ...] = ("controller",)  # process.roles

    @property
    def controller_endpoints(self) -> tuple[Endpoint, ...]:
        return tuple(e for e in self.listeners if e.name in self.controller_listener_names)

    @classmethod
    def from_properties(cls, props: dict[str, str], source: str = "config") -> ServerConfig:
        raw_id = props.get("node.id")
        if raw_id is None:
            raise ConfigError(f"{source}: node.id is required")
        try:
            node_id = int(raw_id)
        except ValueError:
            raise ConfigError(f"{source}: node.id {raw_id!r} is not an integer") from None
        if node_id < 0:
            raise ConfigError(f"{source}: node.id {node_id} must be >= 0")
        log_dir = props.get("metadata.log.dir") or props.get("log.dirs", "").split(",")[0].strip()
        if not log_dir:
            raise ConfigError(f"{source}: metadata.log.dir (or log.dirs) is required")
        listeners = parse_listeners(props.get("listeners", ""))
        names = tuple(
            n.strip() for n in props.get("controller.listener.names", "").split(",") if n.strip()
        )
        voters = bool(props.get("controller.quorum.voters", "").strip())
        roles = tuple(r.strip() for r in props.get("process.roles", "").split(",") if r.strip())
        return cls(node_id, Path(log_dir), listeners, names, voters, roles)

    @classmethod
    def load(cls, path: Path) -> ServerConfig:
        return cls.from_properties(load_properties(path), str(path))
