"""``meta.properties`` (version 1: cluster.id, node.id, directory.id) and Kafka's Uuid
text form (22-character base64url without padding)."""

from __future__ import annotations

import base64
import datetime
import uuid
from dataclasses import dataclass
from pathlib import Path

from pykraft.storage._files import StorageError, atomic_write
from pykraft.storage.properties import ConfigError, load_properties

META_PROPERTIES = "meta.properties"
ZERO_UUID = uuid.UUID(int=0)
_RESERVED = (ZERO_UUID, uuid.UUID(int=1))


def uuid_to_kafka(value: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def kafka_to_uuid(text: str) -> uuid.UUID:
    if len(text) != 22:
        raise ValueError(f"{text!r} is not a 22-character Kafka uuid")
    try:
        return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))
    except (ValueError, TypeError):
        raise ValueError(f"{text!r} is not a base64url Kafka uuid") from None


def random_uuid() -> uuid.UUID:
    """Kafka's Uuid.randomUuid: never a reserved value, never text starting with '-'."""
    while True:
        value = uuid.uuid4()
        if value not in _RESERVED and not uuid_to_kafka(value).startswith("-"):
            return value


@dataclass(frozen=True, slots=True)
class MetaProperties:
    cluster_id: str
    node_id: int
    directory_id: uuid.UUID
    version: int = 1

    def to_text(self) -> str:
        stamp = datetime.datetime.now(datetime.UTC).strftime("%a %b %d %H:%M:%S UTC %Y")
        return (
            f"#\n#{stamp}\ncluster.id={self.cluster_id}\n"
            f"directory.id={uuid_to_kafka(self.directory_id)}\n"
            f"node.id={self.node_id}\nversion={self.version}\n"
        )


def write_meta_properties(log_dir: Path, meta: MetaProperties) -> None:
    atomic_write(log_dir / META_PROPERTIES, meta.to_text().encode())


def read_meta_properties(log_dir: Path) -> MetaProperties | None:
    """None when the directory is not formatted; ``StorageError`` when the file is bad."""
    path = log_dir / META_PROPERTIES
    if not path.exists():
        return None
    try:
        props = load_properties(path)
    except ConfigError as exc:
        raise StorageError(str(exc)) from None
    try:
        version = int(props["version"])
        if version != 1:
            raise StorageError(f"{path}: version {version} is not supported (want 1)")
        return MetaProperties(
            cluster_id=props["cluster.id"],
            node_id=int(props["node.id"]),
            directory_id=kafka_to_uuid(props["directory.id"]),
            version=version,
        )
    except KeyError as exc:
        raise StorageError(f"{path}: {exc.args[0]} is missing") from None
    except ValueError as exc:
        raise StorageError(f"{path}: {exc}") from None
