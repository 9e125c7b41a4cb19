"""On-disk state of a KRaft replica in Kafka's layout (see ARCHITECTURE "Files on disk").

* ``FileLog`` -- segmented metadata log (``ReplicatedLog``).
* ``FileSnapshotStore`` -- ``.checkpoint`` snapshots (``SnapshotStore``).
* ``FileQuorumStateStore`` -- the ``quorum-state`` JSON file (``QuorumStateStore``).
* ``meta.properties``, the server ``.properties`` reader and ``format``.
"""

from pykraft.storage._files import StorageError
from pykraft.storage.compacted import lay_down_compacted
from pykraft.storage.format import (
    AlreadyFormattedError,
    InitialController,
    format_storage,
    parse_initial_controllers,
    write_bootstrap_checkpoint,
)
from pykraft.storage.log import PARTITION_DIR_NAME, FileLog, OffsetOutOfRangeError
from pykraft.storage.meta import (
    MetaProperties,
    kafka_to_uuid,
    random_uuid,
    read_meta_properties,
    uuid_to_kafka,
    write_meta_properties,
)
from pykraft.storage.properties import ConfigError, parse_properties
from pykraft.storage.quorum_state import FileQuorumStateStore, QuorumStateError
from pykraft.storage.snapshots import (
    CorruptSnapshotError,
    FileSnapshotStore,
    PositionOutOfRangeError,
    SnapshotContents,
    SnapshotNotFoundError,
    read_snapshot,
    write_snapshot,
)

__all__ = [
    "PARTITION_DIR_NAME",
    "AlreadyFormattedError",
    "ConfigError",
    "CorruptSnapshotError",
    "FileLog",
    "FileQuorumStateStore",
    "FileSnapshotStore",
    "InitialController",
    "MetaProperties",
    "OffsetOutOfRangeError",
    "PositionOutOfRangeError",
    "QuorumStateError",
    "SnapshotContents",
    "SnapshotNotFoundError",
    "StorageError",
    "format_storage",
    "kafka_to_uuid",
    "lay_down_compacted",
    "parse_initial_controllers",
    "parse_properties",
    "random_uuid",
    "read_meta_properties",
    "read_snapshot",
    "uuid_to_kafka",
    "write_bootstrap_checkpoint",
    "write_meta_properties",
    "write_snapshot",
]
