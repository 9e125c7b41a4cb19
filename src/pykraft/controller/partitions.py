"""What partition changes are made of: who may lead or join an ISR (``acceptor``, online log
directories), eligible leader replicas being on and a topic's effective
``min.insync.replicas``, the directory a new replica goes to, and the record versions
metadata.version asks for. The change itself is built by ``partition_change.py`` (Kafka's
``PartitionChangeBuilder``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Final

from pykraft.metadata.image import (
    BROKER_RESOURCE,
    NO_LEADER,
    TOPIC_RESOURCE,
    BrokerState,
    Image,
    PartitionState,
)
from pykraft.metadata.parts.topics import RECOVERING
from pykraft.metadata.versions import ELR_VERSION, IBP_3_7_IV2, IBP_4_0_IV1

__all__ = [
    "ELECTION_DEFAULT",
    "ELECTION_PREFERRED",
    "ELECTION_UNCLEAN",
    "MIN_INSYNC",
    "RECOVERING",
    "Acceptable",
    "acceptor",
    "active",
    "dir_online",
    "directories_for",
    "directory_of",
    "effective_min_isr",
    "elr_enabled",
    "in_online_dir",
    "partition_version",
]

MIN_INSYNC: Final = "min.insync.replicas"
ELECTION_DEFAULT: Final = "default"
ELECTION_PREFERRED: Final = "preferred"
ELECTION_UNCLEAN: Final = "unclean"
RECOVERED: Final = 0
MIGRATING_DIR: Final = uuid.UUID(int=0)  # Kafka's DirectoryId.MIGRATING
UNASSIGNED_DIR: Final = uuid.UUID(int=1)  # DirectoryId.UNASSIGNED
LOST_DIR: Final = uuid.UUID(int=2)  # DirectoryId.LOST


def partition_version(metadata_version: int) -> int:
    """The PartitionRecord / PartitionChangeRecord version Kafka writes at this level."""
    if metadata_version >= IBP_4_0_IV1:
        return 2
    if metadata_version >= IBP_3_7_IV2:
        return 1
    return 0


def active(image: Image, broker_id: int) -> bool:
    broker = image.brokers.get(broker_id)
    return broker is not None and broker.active


Acceptable = Callable[[int], bool]


def acceptor(
    image: Image,
    *,
    removing: int = NO_LEADER,
    adding: int = NO_LEADER,
    unclean_shutdown: int = NO_LEADER,
) -> Acceptable:
    """Who may lead or join an ISR: active brokers, but never ``removing`` (being fenced or
    shut down) nor ``unclean_shutdown`` (restarting after an unclean shutdown), and always
    ``adding`` (being unfenced): the records that change their state are written in the
    same batch, after the image was read (Kafka's ``LeaderAcceptor``)."""

    def acceptable(broker_id: int) -> bool:
        if broker_id in (removing, unclean_shutdown):
            return False
        return broker_id == adding or active(image, broker_id)

    return acceptable


def dir_online(broker: BrokerState | None, directory: uuid.UUID | None) -> bool:
    """Kafka's ``DirectoryId.isOnline``: UNASSIGNED and MIGRATING count as online, LOST does
    not; a broker that registered no directories has every directory online."""
    if broker is None or directory is None or directory in (UNASSIGNED_DIR, MIGRATING_DIR):
        return True
    if directory == LOST_DIR:
        return False
    # A ZooKeeper-mode broker (KIP-866 migration, or rolled back to it) places its replicas
    # itself: the directories KRaft brokers reported before say nothing about its own.
    return not broker.log_dirs or broker.is_migrating_zk_broker or directory in broker.log_dirs


def in_online_dir(image: Image, p: PartitionState, acceptable: Acceptable) -> Acceptable:
    """``acceptable`` and, for ``p``, with its replica in an online directory (Kafka's
    ``LeaderAcceptor``: ``hasOnlineDir``)."""
    if len(p.directories) != len(p.replicas):
        return acceptable
    replicas, directories = p.replicas, p.directories

    def here(broker_id: int) -> bool:
        if not acceptable(broker_id):
            return False
        if broker_id not in replicas:
            return True
        directory = directories[replicas.index(broker_id)]
        return dir_online(image.brokers.get(broker_id), directory)

    return here


def elr_enabled(image: Image) -> bool:
    """Eligible leader replicas are kept (Kafka's ``isElrFeatureEnabled``)."""
    return image.features.get(ELR_VERSION, 0) >= 1


def effective_min_isr(image: Image, p: PartitionState) -> int:
    """Kafka's ``getTopicEffectiveMinIsr``: the topic's ``min.insync.replicas`` (else the
    cluster default, else 1), at most the topic's replication factor (its partition 0's)."""
    topic = image.topics.get(p.topic_id)
    value = None
    if topic is not None:
        value = image.configs.get((TOPIC_RESOURCE, topic.name), {}).get(MIN_INSYNC)
    if value is None:
        value = image.configs.get((BROKER_RESOURCE, ""), {}).get(MIN_INSYNC, "1")
    try:
        min_isr = int(value)
    except ValueError:
        min_isr = 1
    first = topic.partitions.get(0) if topic is not None else None
    factor = len(first.replicas) if first is not None else len(p.replicas)
    return min(min_isr, factor)


def directory_of(image: Image, broker_id: int) -> uuid.UUID:
    """The directory a new replica on ``broker_id`` goes to (Kafka's
    ``ClusterControlManager.defaultDir``): the broker's log directory when it has exactly
    one (so it never needs AssignReplicasToDirs), UNASSIGNED when it has several, MIGRATING
    when it registered none."""
    broker = image.brokers.get(broker_id)
    if broker is None or not broker.log_dirs:
        return MIGRATING_DIR
    if len(broker.log_dirs) == 1:
        return broker.log_dirs[0]
    return UNASSIGNED_DIR


def directories_for(
    image: Image, p: PartitionState, replicas: tuple[int, ...]
) -> tuple[uuid.UUID, ...]:
    """Directory of each replica: kept for replicas that stay, ``directory_of`` for new
    ones."""
    old = dict(zip(p.replicas, p.directories, strict=False))
    return tuple(old.get(b) or directory_of(image, b) for b in replicas)
