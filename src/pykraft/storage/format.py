"""``pykraft storage format``: meta.properties and the bootstrap checkpoint (SPEC D3).

The bootstrap checkpoint ``00000000000000000000-0000000000.checkpoint`` holds
SnapshotHeader, KRaftVersion, Voters (when there is an initial voter set) and
SnapshotFooter; a kraft.version 0 cluster (static ``controller.quorum.voters``) gets none.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pykraft.metadata.versions import (
    DEFAULT_METADATA_VERSION,
    IBP_3_5_IV2,
    METADATA_VERSION,
    release_features,
)
from pykraft.raft.types import Endpoint
from pykraft.records import VoterRecordEntry
from pykraft.storage._files import StorageError, fsync_dir
from pykraft.storage.bootstrap import write_bootstrap_metadata
from pykraft.storage.log import PARTITION_DIR_NAME
from pykraft.storage.meta import (
    MetaProperties,
    kafka_to_uuid,
    random_uuid,
    read_meta_properties,
    write_meta_properties,
)
from pykraft.storage.properties import ConfigError
from pykraft.storage.snapshots import BOOTSTRAP_SNAPSHOT_ID, FileSnapshotStore, write_snapshot

DEFAULT_LISTENER_NAME = "CONTROLLER"
KRAFT_VERSIONS = (0, 1)


class StorageConfig(Protocol):
    """What formatting reads of a server's config: ``node.config.NodeConfig`` is one."""

    @property
    def node_id(self) -> int: ...
    @property
    def process_roles(self) -> tuple[str, ...]: ...
    @property
    def listeners(self) -> tuple[Endpoint, ...]: ...
    @property
    def controller_listener_names(self) -> tuple[str, ...]: ...
    @property
    def metadata_log_dir(self) -> Path: ...
    @property
    def quorum_voters(self) -> tuple[object, ...]: ...


class AlreadyFormattedError(StorageError):
    """The directory already holds meta.properties (pass ignore_formatted to skip it)."""


@dataclass(frozen=True, slots=True)
class InitialController:
    node_id: int
    host: str
    port: int
    directory_id: uuid.UUID


def parse_initial_controllers(text: str) -> list[InitialController]:
    """``id@host:port:dirid,...`` as in Kafka's ``--initial-controllers``."""
    result = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        node_text, at, rest = item.partition("@")
        parts = rest.rsplit(":", 2)
        if not at or len(parts) != 3 or not node_text.isdigit() or not parts[1].isdigit():
            raise ConfigError(f"--initial-controllers: {item!r} is not id@host:port:directoryid")
        try:
            directory_id = kafka_to_uuid(parts[2])
        except ValueError as exc:
            raise ConfigError(f"--initial-controllers: {item!r}: {exc}") from None
        result.append(
            InitialController(int(node_text), parts[0].strip("[]"), int(parts[1]), directory_id)
        )
    if not result:
        raise ConfigError("--initial-controllers: empty list")
    ids = [c.node_id for c in result]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"--initial-controllers: duplicate node id in {text!r}")
    return result


def write_bootstrap_checkpoint(
    partition_dir: Path,
    kraft_version: int,
    voters: Sequence[VoterRecordEntry] | None,
    *,
    now_ms: int | None = None,
) -> Path:
    store = FileSnapshotStore.open(partition_dir)
    ts = int(time.time() * 1000) if now_ms is None else now_ms
    write_snapshot(
        store,
        BOOTSTRAP_SNAPSHOT_ID,
        [],
        timestamp_ms=ts,
        last_contained_log_timestamp_ms=-1,
        kraft_version=kraft_version,
        voters=voters,
    )
    return store.path(BOOTSTRAP_SNAPSHOT_ID)


def _check_mode(
    config: StorageConfig, dynamic: bool, no_initial_controllers: bool, kraft_version: int | None
) -> None:
    if "controller" not in config.process_roles:
        if dynamic:
            raise ConfigError("You can only use --standalone on a controller.")
        return
    if config.quorum_voters:  # kraft.version 0: a static voter set
        if dynamic:
            raise ConfigError(
                "You cannot specify controller.quorum.voters and format the node with "
                "--initial-controllers or --standalone. If you want to use dynamic quorum, "
                "please remove controller.quorum.voters and specify "
                "controller.quorum.bootstrap.servers instead."
            )
        if kraft_version is not None and kraft_version >= 1:
            raise ConfigError(
                "Cannot set kraft.version to 1 unless controller.quorum.voters is empty and "
                "one of the flags --standalone, --initial-controllers, or "
                "--no-initial-controllers is used."
            )
    elif not dynamic and not no_initial_controllers:
        raise ConfigError(
            "Because controller.quorum.voters is not set on this controller, you must specify "
            "one of the following: --standalone, --initial-controllers, or "
            "--no-initial-controllers."
        )


def initial_voters(
    config: StorageConfig,
    standalone: bool,
    initial_controllers: Sequence[InitialController] | None,
) -> tuple[uuid.UUID, list[VoterRecordEntry] | None]:
    """This node's new directory id and the voters of the bootstrap checkpoint: itself alone
    (``--standalone``, on its controller listeners), the ``--initial-controllers`` (whose entry
    for this node gives its directory id), or none (static voters / joining later)."""
    directory_id = random_uuid()
    if standalone:
        names = config.controller_listener_names
        endpoints = tuple(
            Endpoint(e.name, e.host or "localhost", e.port)
            for e in config.listeners
            if e.name in names
        )
        if not endpoints:
            raise ConfigError(
                "--standalone: listeners has no endpoint named in controller.listener.names"
            )
        return directory_id, [VoterRecordEntry(config.node_id, directory_id, endpoints)]
    if initial_controllers is None:
        return directory_id, None
    listener = (config.controller_listener_names or (DEFAULT_LISTENER_NAME,))[0]
    voters = []
    for c in initial_controllers:
        if c.node_id == config.node_id:
            directory_id = c.directory_id
        endpoint = Endpoint(listener, c.host, c.port)
        voters.append(VoterRecordEntry(c.node_id, c.directory_id, (endpoint,)))
    return directory_id, voters


def _kraft_version(
    config: StorageConfig, dynamic: bool, no_initial_controllers: bool, given: int | None
) -> int:
    """The kraft.version to format at: 1 for a dynamic quorum unless given; Kafka's mode
    rules checked."""
    _check_mode(config, dynamic, no_initial_controllers, given)
    version = (1 if dynamic else 0) if given is None else given
    if version not in KRAFT_VERSIONS:
        raise ConfigError(f"--feature kraft.version={version}: supported are 0 and 1")
    if dynamic and version == 0:
        raise ConfigError("--standalone/--initial-controllers need kraft.version=1")
    return version


def format_storage(
    config: StorageConfig,
    cluster_id: str,
    *,
    standalone: bool = False,
    initial_controllers: Sequence[InitialController] | None = None,
    kraft_version: int | None = None,
    ignore_formatted: bool = False,
    no_initial_controllers: bool = False,
    features: dict[str, int] | None = None,
    scram: Sequence[Any] = (),
) -> MetaProperties | None:
    """Format ``config.metadata_log_dir``; returns the new meta.properties, or None when
    the directory was formatted already and ``ignore_formatted`` is set.

    Kafka's rules (``kafka-storage format``, checked against Kafka 4.3.1): a controller
    without ``controller.quorum.voters`` needs one of ``standalone``, ``initial_controllers``
    or ``no_initial_controllers``; with it, neither of the first two, nor kraft.version 1.
    ``features`` (``metadata.version`` and other feature levels, from ``--release-version``
    and ``--feature``) go into ``bootstrap.checkpoint``; metadata.version defaults to
    ``DEFAULT_METADATA_VERSION``, every other feature to its default level at that
    metadata.version (Kafka's ``Feature.defaultLevel``; 0 is not written); ``scram`` (UserScramCredentialRecords of ``--add-scram``)
    follow them, and need metadata.version 3.5-IV2 or later."""
    try:
        kafka_to_uuid(cluster_id)
    except ValueError as exc:
        raise ConfigError(f"--cluster-id: {exc}") from None
    dynamic = standalone or initial_controllers is not None
    version = _kraft_version(config, dynamic, no_initial_controllers, kraft_version)
    log_dir = config.metadata_log_dir
    existing = read_meta_properties(log_dir) if log_dir.exists() else None
    if existing is not None:
        if ignore_formatted:
            return None
        raise AlreadyFormattedError(
            f"{log_dir} is already formatted (cluster.id {existing.cluster_id})"
        )

    level = (features or {}).get(METADATA_VERSION, DEFAULT_METADATA_VERSION.level)
    if scram and level < IBP_3_5_IV2:
        raise ConfigError(
            "SCRAM is only supported in metadata.version 3.5-IV2 or later (--add-scram)"
        )
    directory_id, voters = initial_voters(config, standalone, initial_controllers)
    partition_dir = log_dir / PARTITION_DIR_NAME
    partition_dir.mkdir(parents=True, exist_ok=True)
    if version >= 1:
        write_bootstrap_checkpoint(partition_dir, version, voters)
    # As kafka-storage: every feature at the release's default level unless given.
    bootstrap = {**release_features(level), **(features or {})}
    write_bootstrap_metadata(
        log_dir, {name: value for name, value in bootstrap.items() if value > 0}, scram
    )
    fsync_dir(log_dir)
    meta = MetaProperties(cluster_id, config.node_id, directory_id)
    # meta.properties last: its presence means "formatted".
    write_meta_properties(log_dir, meta)
    return meta
