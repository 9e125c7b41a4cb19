"""``meta.properties`` (version 1: cluster.id, node.id, directory.id) and Kafka's Uuid
text form (22-character base64url without padding)."""

from __future__ import annotations

import base64
import datetime
import logging
import uuid
from dataclasses import dataclass
from pathlib import Path

from pykraft.storage._files import StorageError, atomic_write
from pykraft.storage.properties import ConfigError, load_properties

log = logging.getLogger(__name__)

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


def read_meta_properties(
    log_dir: Path, *, assign_directory_id: bool = False
) -> MetaProperties | None:
    """None when the directory is not formatted; ``StorageError`` when the file is bad.

    A ``meta.properties`` written before KIP-858 (Kafka < 3.7) has no ``directory.id``.
    With ``assign_directory_id`` (a starting node, as Kafka's ``KafkaRaftServer`` does) one
    is generated and the file rewritten (D1); otherwise that is a ``StorageError``."""
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
        text = props.get("directory.id")
        if text is None and not assign_directory_id:
            raise StorageError(
                f"{path}: directory.id is missing (a node assigns one when it starts)"
            )
        meta = MetaProperties(
            cluster_id=props["cluster.id"],
            node_id=int(props["node.id"]),
            directory_id=random_uuid() if text is None else kafka_to_uuid(text),
            version=version,
        )
        if text is None:
            write_meta_properties(log_dir, meta)  # tmp + fsync + rename
            log.warning(
                "%s had no directory.id (written before KIP-858): assigned %s",
                path,
                uuid_to_kafka(meta.directory_id),
            )
        return meta
    except KeyError as exc:
        raise StorageError(f"{path}: {exc.args[0]} is missing") from None
    except ValueError as exc:
        raise StorageError(f"{path}: {exc}") from None
