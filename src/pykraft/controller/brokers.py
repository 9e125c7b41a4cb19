"""Brokers on the controller: registration, unregistration, and the partition changes that
fencing a broker or taking it out of an ISR writes (Kafka's ``ClusterControlManager`` and
the broker parts of ``ReplicationControlManager``). SPEC F1. Heartbeats and the next-state
machine are ``heartbeats.py`` (Kafka's ``BrokerHeartbeatManager``), sessions
``sessions.py``.

Theory of operation. A broker registers (BrokerRegistration); the controller writes a
``RegisterBrokerRecord`` whose ``BrokerEpoch`` is the offset that record is written at, with
the broker fenced; it is unfenced by a heartbeat once caught up. A registration is checked
against the finalized features (each within the broker's supported range), the migration
mode, its log directories and the cluster id; a registration of the same id is refused while
the old one's session lives (DUPLICATE_BROKER_REGISTRATION), as Kafka refuses it.

One deviation, for safety: Kafka lets a new incarnation replace a registration whose session
has expired but which was not fenced yet, and the old incarnation then stays leader of its
partitions while fenced. pykraft fences the old incarnation (ISR removal, leader moves) in the
same batch, before the new RegisterBrokerRecord, so a fenced broker never leads.
"""

from __future__ import annotations

import uuid
from collections.abc import Container, Iterator
from typing import Final

from kio.schema.errors import ErrorCode

from pykraft.controller.errors import ApiError
from pykraft.controller.migration import MIGRATION_SUPPORTED_MV, PRE_MIGRATION
from pykraft.controller.partition_change import PartitionChangeBuilder
from pykraft.controller.partitions import (
    ELECTION_DEFAULT,
    ELECTION_UNCLEAN,
    Acceptable,
    acceptor,
    effective_min_isr,
    elr_enabled,
    partition_version,
)
from pykraft.controller.result import RecordList
from pykraft.controller.sessions import BrokerSessions
from pykraft.metadata import records as r
from pykraft.metadata.image import (
    NO_LEADER,
    TOPIC_RESOURCE,
    BrokerState,
    Image,
    PartitionState,
    broker_record,
)
from pykraft.metadata.versions import (
    IBP_3_7_IV2,
    IBP_4_3_IV0,
    METADATA_VERSION,
    MINIMUM_METADATA_VERSION,
)
from pykraft.protocol import views

__all__ = [
    "UncleanTopics",
    "check_broker_epoch",
    "fence_records",
    "leader_and_isr_updates",
    "leads_any",
    "partitions_with",
    "register_broker",
    "register_broker_version",
    "unregister_broker",
]

FENCE: Final = 1
UNFENCE: Final = -1
KRAFT_VERSION: Final = "kraft.version"


def register_broker_version(metadata_version: int) -> int:
    """The RegisterBrokerRecord version Kafka writes at this level."""
    if metadata_version >= IBP_4_3_IV0:  # cordoned log directories
        return 4
    if metadata_version >= IBP_3_7_IV2:
        return 3
    if metadata_version >= 8:  # 3.4-IV0
        return 2
    return 1


def _reserved(directory: uuid.UUID) -> bool:
    """Kafka's ``DirectoryId.reserved``: the first 100 ids (msb 0)."""
    return directory.int >> 64 == 0 and directory.int & ((1 << 64) - 1) < 100


# -- partition updates --------------------------------------------------------------------


def partitions_with(image: Image, broker_id: int) -> Iterator[PartitionState]:
    """The partitions whose ISR holds ``broker_id``."""
    for p in image.partitions_near(broker_id):
        if broker_id in p.isr:
            yield p


def leads_any(image: Image, broker_id: int) -> bool:
    return any(p.leader == broker_id for p in image.partitions_near(broker_id))


def partitions_with_elr(image: Image, broker_id: int) -> Iterator[PartitionState]:
    """The partitions whose ELR holds ``broker_id``."""
    for p in image.partitions_near(broker_id):
        if p.elr and broker_id in p.elr:
            yield p


def leader_and_isr_updates(
    image: Image,
    partitions: Iterator[PartitionState] | list[PartitionState],
    acceptable: Acceptable,
    remove: int,
    unclean: Container[uuid.UUID],
    unclean_shutdown: int = NO_LEADER,
) -> RecordList:
    """PartitionChangeRecords that drop ``remove`` (if not NO_LEADER) from each ISR and
    re-elect leaders under ``acceptable`` (Kafka's ``generateLeaderAndIsrUpdates``);
    ``unclean_shutdown`` leaves the ISR and the ELR."""
    version = partition_version(image.metadata_version or 0)
    out: RecordList = []
    elr_on = elr_enabled(image)
    min_isr_of: dict[uuid.UUID, int] = {}  # one min.insync.replicas lookup per topic
    for p in list(partitions):
        isr = tuple(b for b in p.isr if b != remove)
        election = ELECTION_UNCLEAN if p.topic_id in unclean else ELECTION_DEFAULT
        min_isr = None
        if elr_on:
            min_isr = min_isr_of.get(p.topic_id)
            if min_isr is None:
                min_isr = min_isr_of[p.topic_id] = effective_min_isr(image, p)
        builder = (
            PartitionChangeBuilder(image, p, version).set_target_isr(isr).set_acceptable(acceptable)
        )
        builder.set_election(election).set_unclean_shutdown_replica(unclean_shutdown)
        if min_isr is not None:
            builder.set_min_isr(min_isr)
        record = builder.build()
        if record is not None:
            out.append((record, version))
    return out


def _new_incarnation_records(
    image: Image,
    broker_id: int,
    existing: BrokerState | None,
    previous_epoch: int,
    unclean: Container[uuid.UUID],
) -> RecordList:
    """What a new incarnation of ``broker_id`` does to its partitions before its
    registration (Kafka's ``handleBrokerShutdown``). The restart was clean when the broker
    read its epoch back from its clean-shutdown file (``PreviousBrokerEpoch``, registration v3)
    and it is the epoch of the registration it replaces. With eligible leader replicas on, an
    unclean restart takes it out of every ISR *and* ELR (its log may have lost acknowledged
    records). Otherwise an old incarnation that is still unfenced is fenced in the same batch
    (a fenced broker never leads); one fenced already left the ISRs when it was fenced."""
    clean = existing is not None and previous_epoch == existing.epoch
    if elr_enabled(image) and not clean:
        seen: set[tuple[uuid.UUID, int]] = set()
        targets = []
        for p in [*partitions_with(image, broker_id), *partitions_with_elr(image, broker_id)]:
            if (p.topic_id, p.partition_id) not in seen:
                seen.add((p.topic_id, p.partition_id))
                targets.append(p)
        return leader_and_isr_updates(
            image,
            targets,
            acceptor(image, unclean_shutdown=broker_id),
            NO_LEADER,
            unclean,
            unclean_shutdown=broker_id,
        )
    if existing is not None and not existing.fenced:
        return fence_records(image, existing, unclean)
    # A fenced registration is out of every ISR already (but a last member, KIP-841); a first
    # registration keeps the ISRs it is in (a ZooKeeper broker joining a migration).
    return []


class UncleanTopics:
    """The topics whose ``unclean.leader.election.enable`` is on (the topic's config, else
    the cluster's default), asked one topic at a time (``topic_id in unclean``) as an
    election needs it: every heartbeat and tick asks for it, and a set built per call walked
    every topic (10,000 at a million partitions) for the few partitions that need a leader."""

    __slots__ = ("cluster_unclean", "image")

    def __init__(self, image: Image, cluster_unclean: bool) -> None:
        self.image = image
        self.cluster_unclean = cluster_unclean

    def __contains__(self, topic_id: object) -> bool:
        topic = self.image.topics.get(topic_id) if isinstance(topic_id, uuid.UUID) else None
        if topic is None:
            return False
        config = self.image.configs.get((TOPIC_RESOURCE, topic.name))
        value = None if config is None else config.get("unclean.leader.election.enable")
        return (value == "true") if value is not None else self.cluster_unclean


def fence_records(image: Image, broker: BrokerState, unclean: Container[uuid.UUID]) -> RecordList:
    """Fence ``broker``: out of every ISR, leaders moved, then the fencing record."""
    records = leader_and_isr_updates(
        image,
        partitions_with(image, broker.broker_id),
        acceptor(image, removing=broker.broker_id),
        broker.broker_id,
        unclean,
    )
    records.append(
        (
            r.BrokerRegistrationChangeRecord(
                broker_id=broker.broker_id, broker_epoch=broker.epoch, fenced=FENCE
            ),
            0,
        )
    )
    return records


# -- BrokerRegistration -------------------------------------------------------------------


def _check_feature(broker_id: int, name: str, finalized: int, low: int, high: int) -> None:
    if not low <= finalized <= high:
        raise ApiError(
            ErrorCode.unsupported_version,
            f"Unable to register because the broker does not support finalized version "
            f"{finalized} of {name}. The broker wants a version between {low} and {high}, "
            f"inclusive.",
        )


def _check_migration_mode(
    image: Image,
    request: views.BrokerRegistrationRequest,
    broker_id: int,
    mv: int,
    zk_migration: bool,
    inter_broker_listener: str,
) -> None:
    """KIP-866: a ZooKeeper broker in migration mode registers only on a migrating quorum
    (with the inter-broker listener, KAFKA-16468); a KRaft broker waits until the metadata
    is migrated."""
    migrating = bool(getattr(request, "is_migrating_zk_broker", False))
    if migrating and (not zk_migration or mv < MIGRATION_SUPPORTED_MV):
        raise ApiError(
            ErrorCode.broker_id_not_registered,
            "Controller does not support registering ZK brokers.",
        )
    if migrating and not any(lst.name == inter_broker_listener for lst in request.listeners):
        raise ApiError(
            ErrorCode.invalid_registration,
            f"Broker {broker_id} is a ZK broker in migration mode without a listener named "
            f"{inter_broker_listener} (the controller's inter.broker.listener.name).",
        )
    if not migrating and image.migration_state == PRE_MIGRATION:
        raise ApiError(
            ErrorCode.broker_id_not_registered,
            "Controller is in pre-migration mode and cannot register KRaft brokers until the "
            "metadata migration is complete.",
        )


def _check_log_dirs(image: Image, broker_id: int, log_dirs: tuple[uuid.UUID, ...]) -> None:
    """From 3.7-IV2 (KIP-858): at least one directory, none reserved, none repeated, none
    registered by another broker."""
    if not log_dirs:
        raise ApiError(ErrorCode.invalid_registration, "No directories specified in request")
    if any(d is None or _reserved(d) for d in log_dirs):
        raise ApiError(ErrorCode.invalid_registration, "Reserved directory ID in request")
    if len(set(log_dirs)) != len(log_dirs):
        raise ApiError(ErrorCode.invalid_registration, "Duplicate directory ID in request")
    for other in image.brokers.values():
        if other.broker_id != broker_id:
            for d in log_dirs:
                if d in other.log_dirs:
                    raise ApiError(
                        ErrorCode.invalid_registration,
                        f"Broker {other.broker_id} is already registered with directory {d}",
                    )


def _registered_features(
    image: Image, request: views.BrokerRegistrationRequest, broker_id: int, kraft_version: int
) -> dict[str, tuple[int, int]]:
    """The broker's supported feature ranges. Every finalized feature (kraft.version from
    the quorum included) must be within them; a feature the broker does not list is 0..0;
    a registration without metadata.version is refused (Kafka 4.4.0's ClusterControlManager,
    in its order: the listed ranges first)."""
    finalized = {**image.features, KRAFT_VERSION: kraft_version}
    features: dict[str, tuple[int, int]] = {}
    for f in request.features:
        low, high = int(f.min_supported_version), int(f.max_supported_version)
        _check_feature(broker_id, f.name, finalized.get(f.name, 0), low, high)
        features[f.name] = (low, high)
    if METADATA_VERSION not in features:
        raise ApiError(
            ErrorCode.invalid_registration,
            f"Request features do not contain '{METADATA_VERSION}'",
        )
    for name, level in finalized.items():
        if level != 0 and name not in features:
            _check_feature(broker_id, name, level, 0, 0)
    return features


def _check_identity(
    image: Image,
    sessions: BrokerSessions,
    request: views.BrokerRegistrationRequest,
    cluster_id: str,
    now_ms: int,
) -> tuple[int, uuid.UUID, BrokerState | None]:
    """(broker id, incarnation id, its registration if any) of a BrokerRegistration that
    names this cluster, a valid id and an incarnation, and no other live incarnation holds
    the id (Kafka's ClusterControlManager.registerBroker, in its order)."""
    if request.cluster_id != cluster_id:
        raise ApiError(
            ErrorCode.inconsistent_cluster_id,
            f"Expected cluster ID {cluster_id}, but got cluster ID {request.cluster_id}",
        )
    broker_id = int(request.broker_id)
    if broker_id < 0:
        raise ApiError(ErrorCode.invalid_request, f"Invalid broker id {broker_id}")
    incarnation = request.incarnation_id
    if incarnation is None:
        raise ApiError(ErrorCode.invalid_request, "No incarnation id in request")
    existing = image.brokers.get(broker_id)
    if (
        existing is not None
        and sessions.valid(existing, now_ms)
        and existing.incarnation_id != incarnation
    ):
        raise ApiError(
            ErrorCode.duplicate_broker_registration,
            "Another broker is registered with that broker id. If the broker was recently "
            "restarted this should self-resolve once the heartbeat manager expires the "
            "broker's session.",
        )
    return broker_id, incarnation, existing


def register_broker(
    image: Image,
    sessions: BrokerSessions,
    request: views.BrokerRegistrationRequest,
    *,
    cluster_id: str,
    kraft_version: int,
    next_offset: int,
    now_ms: int,
    unclean: Container[uuid.UUID],
    zk_migration: bool = False,
    inter_broker_listener: str = "PLAINTEXT",
) -> tuple[RecordList, int]:
    """(records, broker epoch) for a BrokerRegistration (any version); raises ApiError.
    ``zk_migration``: this quorum migrates a ZooKeeper cluster (KIP-866), so ZooKeeper
    brokers in migration mode register (with ``inter_broker_listener`` among their
    listeners, KAFKA-16468) and KRaft brokers wait until the metadata is migrated."""
    broker_id, incarnation, existing = _check_identity(image, sessions, request, cluster_id, now_ms)
    mv = image.metadata_version or MINIMUM_METADATA_VERSION.level
    migrating = bool(getattr(request, "is_migrating_zk_broker", False))
    _check_migration_mode(image, request, broker_id, mv, zk_migration, inter_broker_listener)
    log_dirs = tuple(getattr(request, "log_dirs", ()))
    if mv >= IBP_3_7_IV2:
        _check_log_dirs(image, broker_id, log_dirs)
    features = _registered_features(image, request, broker_id, kraft_version)
    records: RecordList = []
    same = existing is not None and existing.incarnation_id == incarnation
    if not same:
        previous_epoch = int(getattr(request, "previous_broker_epoch", -1))
        records.extend(
            _new_incarnation_records(image, broker_id, existing, previous_epoch, unclean)
        )
    version = register_broker_version(mv)
    state = BrokerState(
        broker_id=broker_id,
        incarnation_id=incarnation,
        epoch=existing.epoch if same and existing is not None else next_offset + len(records),
        endpoints=tuple(
            r.register_broker_record.BrokerEndpoint(
                name=listener.name,
                host=listener.host,
                port=int(listener.port),
                security_protocol=int(listener.security_protocol),
            )
            for listener in request.listeners
        ),
        features=features,
        rack=request.rack,
        fenced=existing.fenced if same and existing is not None else True,
        in_controlled_shutdown=existing.in_controlled_shutdown if same and existing else False,
        log_dirs=log_dirs if mv >= IBP_3_7_IV2 else (),
        is_migrating_zk_broker=migrating,
    )
    records.append((broker_record(state, version), version))
    if not same:
        sessions.forget(broker_id)  # the new registration's session starts at a heartbeat
    return records, state.epoch


def check_broker_epoch(image: Image, broker_id: int, epoch: int) -> BrokerState:
    broker = image.brokers.get(broker_id)
    if broker is None:
        raise ApiError(
            ErrorCode.stale_broker_epoch,
            f"No broker registration found for broker {broker_id}",
        )
    if broker.epoch != epoch:
        raise ApiError(
            ErrorCode.stale_broker_epoch,
            f"Expected broker epoch {broker.epoch}, but got broker epoch {epoch}",
        )
    return broker


def unregister_broker(
    image: Image, sessions: BrokerSessions, broker_id: int, unclean: Container[uuid.UUID]
) -> RecordList:
    """UnregisterBroker: out of every ISR, then UnregisterBrokerRecord; raises ApiError."""
    broker = image.brokers.get(broker_id)
    if broker is None:
        raise ApiError(
            ErrorCode.broker_id_not_registered, f"Broker ID {broker_id} is not currently registered"
        )
    # Kafka's handleBrokerUnregistered: its ISR partitions, then its ELR partitions.
    records = leader_and_isr_updates(
        image,
        [*partitions_with(image, broker_id), *partitions_with_elr(image, broker_id)],
        acceptor(image, removing=broker_id),
        broker_id,
        unclean,
    )
    records.append((r.UnregisterBrokerRecord(broker_id=broker_id, broker_epoch=broker.epoch), 0))
    sessions.forget(broker_id)
    return records
