"""The cluster's metadata as the controller sees it: built only by replaying metadata records
(Kafka's ``MetadataImage`` + the control managers' timeline state), on every controller.

Theory of operation. ``replay(record, offset)`` applies one record, exactly as a Kafka broker
or controller applies it; nothing else changes the image. Metadata transactions
(Begin/End/AbortTransactionRecord, MV >= 3.6-IV1) are applied all or nothing: records between
Begin and End are held and applied at End, dropped at Abort (Kafka's brokers do the same).
A partition is mutable state replaced in place; the replay rule of PartitionChangeRecord is
Kafka's ``PartitionRegistration.merge``: absent list fields keep their value, the partition
epoch always grows by one, and the leader epoch by one whenever ``Leader`` is present (-2
means "no change"), even if it names the same leader.

``records()`` writes the image back out as records (a snapshot): features first
(``metadata.version`` leading), then controllers, brokers, topics with their partitions,
configs, producer ids, then the parts of ``metadata/parts/`` (ACLs, client quotas, SCRAM
credentials, delegation tokens: each owns its replay, indexes, snapshot records and
invariants); each kind in a fixed order (by id or name), so that equal images write equal
records.

Invariants (checked by ``check``): every partition's topic exists; ISR is a subset of
replicas; a leader, when there is one, is in the ISR and among the replicas; topic names and
ids map one to one; each partition's topic is in ``broker_topics`` of each of its replicas;
``colliding_names`` indexes exactly the names with '.' or '_', and ``leaderless`` exactly the
partitions without a leader; a partition's kept encoding (``PartitionState.value``), when it
has one, encodes it as it is.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from pykraft.metadata import records as r
from pykraft.metadata.delta import Change, MetadataDelta, change_of
from pykraft.metadata.parts.acls import Acls
from pykraft.metadata.parts.quotas import ClientQuotas
from pykraft.metadata.parts.scram import ScramCredentials
from pykraft.metadata.parts.tokens import DelegationTokens
from pykraft.metadata.serde import MetadataRecordError, decode_record, encode_record
from pykraft.metadata.tagged import final_target_of, with_final_target
from pykraft.metadata.timeline import NOW, PinnedView, Timeline
from pykraft.metadata.versions import METADATA_VERSION

__all__ = [
    "NO_LEADER",
    "NO_LEADER_CHANGE",
    "BrokerState",
    "ControllerState",
    "Image",
    "ImageError",
    "PartitionState",
    "TopicState",
    "has_collision_chars",
    "normalized_topic_name",
]

NO_LEADER: Final = -1
NO_LEADER_CHANGE: Final = -2
BROKER_RESOURCE: Final = 4
TOPIC_RESOURCE: Final = 2



def has_collision_chars(name: str) -> bool:
    """Kafka's ``Topic.hasCollisionChars``: a '.' or a '_' in the name."""
    return "." in name or "_" in name


def normalized_topic_name(name: str) -> str:
    """Kafka's ``Topic.unifyCollisionChars``: every '.' made '_'."""
    return name.replace(".", "_")


class ImageError(ValueError):
    """A record that cannot be applied to the image (a log that cannot be replayed)."""


@dataclass(slots=True)
class BrokerState:
    broker_id: int
    incarnation_id: uuid.UUID
    epoch: int  # the offset of its RegisterBrokerRecord
    endpoints: tuple[r.register_broker_record.BrokerEndpoint, ...]
    features: dict[str, tuple[int, int]]
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool
    log_dirs: tuple[uuid.UUID, ...]
    is_migrating_zk_broker: bool = False
    # KIP-1066 (4.3-IV0): the directories its last heartbeat said are cordoned (no new
    # replicas); None until it says (a new registration starts uncordoned).
    cordoned_log_dirs: tuple[uuid.UUID, ...] | None = None
    # The offset its RegisterBrokerRecord was replayed at (the snapshot's for a registration
    # loaded from one): a heartbeat at or past it is caught up. Not metadata: not in records().
    register_offset: int = -1

    @property
    def active(self) -> bool:
        """May lead and be in an ISR: unfenced and not shutting down."""
        return not self.fenced and not self.in_controlled_shutdown

    @property
    def has_uncordoned_dirs(self) -> bool:
        """May get new replicas (Kafka's ``hasUncordonedDirs``): no directories known, none
        cordoned, or one not cordoned."""
        if not self.log_dirs or self.cordoned_log_dirs is None:
            return True
        return any(d not in self.cordoned_log_dirs for d in self.log_dirs)


@dataclass(slots=True)
class ControllerState:
    controller_id: int
    incarnation_id: uuid.UUID
    zk_migration_ready: bool
    endpoints: tuple[r.register_controller_record.ControllerEndpoint, ...]
    features: dict[str, tuple[int, int]]


@dataclass(slots=True, init=False)
class PartitionState:
    """One partition's state (Kafka's ``PartitionRegistration``). Its initializer is written
    out (not generated) so that the compiled image (``pykraft.native``) builds a million of
    them natively: mypyc leaves a dataclass's generated initializer interpreted."""

    topic_id: uuid.UUID
    partition_id: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    removing: tuple[int, ...] = ()
    adding: tuple[int, ...] = ()
    leader: int = NO_LEADER
    leader_epoch: int = 0
    partition_epoch: int = 0
    leader_recovery_state: int = 0
    directories: tuple[uuid.UUID, ...] = ()
    elr: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None
    # KIP-435: the final target replicas of an incremental reassignment (tag 435 of the
    # partition records, see ``metadata/tagged.py``); None when none is in progress.
    final_target: tuple[int, ...] | None = None
    # The partition as an encoded PartitionRecord (its version at byte 2), or None: the
    # bytes it was replayed from or last written to a snapshot as, forgotten (through the
    # timeline) by every change, so that a snapshot re-encodes only what changed since the
    # last one (``Image.iter_values``). A cache, not state: not compared, not in ``repr``.
    value: bytes | None = field(default=None, compare=False, repr=False)

    def __init__(
        self,
        topic_id: uuid.UUID,
        partition_id: int,
        replicas: tuple[int, ...],
        isr: tuple[int, ...],
        removing: tuple[int, ...] = (),
        adding: tuple[int, ...] = (),
        leader: int = NO_LEADER,
        leader_epoch: int = 0,
        partition_epoch: int = 0,
        leader_recovery_state: int = 0,
        directories: tuple[uuid.UUID, ...] = (),
        elr: tuple[int, ...] | None = None,
        last_known_elr: tuple[int, ...] | None = None,
        final_target: tuple[int, ...] | None = None,
        value: bytes | None = None,
    ) -> None:
        self.topic_id = topic_id
        self.partition_id = partition_id
        self.replicas = replicas
        self.isr = isr
        self.removing = removing
        self.adding = adding
        self.leader = leader
        self.leader_epoch = leader_epoch
        self.partition_epoch = partition_epoch
        self.leader_recovery_state = leader_recovery_state
        self.directories = directories
        self.elr = elr
        self.last_known_elr = last_known_elr
        self.final_target = final_target
        self.value = value


@dataclass(slots=True)
class TopicState:
    name: str
    topic_id: uuid.UUID
    partitions: dict[int, PartitionState] = field(default_factory=dict)
    # The broker ids whose ``Image.broker_topics`` set holds this topic: a memo of that
    # index, which only grows while the topic lives (RemoveTopic drops both), kept in the
    # timeline with it. It spares a UUID hash, computed in Python, per replica of each
    # PartitionRecord replayed (three of a snapshot's four per partition).
    indexed: set[int] = field(default_factory=set, compare=False, repr=False)


class Image:
    """Invariant: ``topics_by_name[t.name] == t.topic_id`` for every ``t`` in
    ``topics``; ``last_offset`` is the offset of the last record replayed (-1: none)."""

    def __init__(self) -> None:
        self.features: dict[str, int] = {}
        self.features_epoch = -1  # offset of the last FeatureLevelRecord (ApiVersions)
        self.brokers: dict[int, BrokerState] = {}
        self.controllers: dict[int, ControllerState] = {}
        self.topics: dict[uuid.UUID, TopicState] = {}
        self.topics_by_name: dict[str, uuid.UUID] = {}
        # Kafka's ``topicsWithCollisionChars``: a topic name with '.' or '_' under the name
        # with every '.' made '_' (two such names may not both exist: their metrics would
        # collide). Spares CreateTopics a walk over every topic name per topic.
        self.colliding_names: dict[str, set[str]] = {}
        self.configs: dict[tuple[int, str], dict[str, str]] = {}
        self.next_producer_id = 0
        self.producer_ids_owner: tuple[int, int] = (-1, -1)  # (broker id, broker epoch)
        self.migration_state = 0  # ZkMigrationStateRecord (KIP-866), 0 = NONE
        # Partitions with a KIP-435 final target: (topic id, partition id).
        self.stepping: set[tuple[uuid.UUID, int]] = set()
        # Partitions with a reassignment in flight (adding or removing replicas).
        self.moving: set[tuple[uuid.UUID, int]] = set()
        # Partitions without a leader (Kafka's ``BrokersToIsrs.partitionsWithNoLeader``): what
        # an unfenced broker may lead, found without a walk over every partition.
        self.leaderless: set[tuple[uuid.UUID, int]] = set()
        # broker id -> the topics with a partition that has it among its replicas (so in
        # its ISR, ELR, leadership or reassignment), at least: Kafka's ``BrokersToIsrs``
        # at the grain of topics. A superset (a topic stays after the broker left its
        # replicas), so ``partitions_near``'s callers filter; it spares fencing a broker, controlled
        # shutdown and directory failures a walk over every partition.
        self.broker_topics: dict[int, set[uuid.UUID]] = {}
        self.last_offset = -1
        self.last_change_offset = -1  # the last record that was not a NoOpRecord
        # Kept as partitions change (Kafka's ControllerMetricsChanges), so that the metrics
        # never walk a million partitions: partitions, those without a leader, those not led
        # by their first replica.
        self.partition_count = 0
        self.offline_count = 0
        self.imbalanced_count = 0
        self._offset = -1  # the offset of the record being applied
        self._value: bytes | None = None  # its encoding, when the replay was given it
        self._transaction: list[tuple[Any, int, int, bytes | None]] | None = None
        # Every change below goes through the timeline: on the active controller it can be
        # reverted to the committed offset and read as of it (``timeline.py``).
        self.timeline = Timeline()
        # The parts, one per concern (``metadata/parts/``), on the same timeline.
        self.acls = Acls(self.timeline)
        self.client_quotas = ClientQuotas(self.timeline)
        self.scram = ScramCredentials(self.timeline)
        self.tokens = DelegationTokens(self.timeline)
        # What ZooKeeper mirrors, changed by each applied record (KIP-866's dual write reads
        # it instead of the whole image: Kafka's MetadataDelta); None when nobody follows.
        self.changes: list[Change] | None = None

    # -- the committed state (the active controller) -----------------------------------------

    def record_uncommitted(self, on: bool) -> None:
        """Remember what each applied record changes, until it commits (the active
        controller applies records before they commit); off, the undo log is dropped."""
        self.timeline.record_uncommitted(on)
        if not on:
            self.timeline.commit(self.last_offset)

    def committed(self, offset: int) -> None:
        """Every record up to ``offset`` committed."""
        self.timeline.commit(offset)

    def revert(self, offset: int) -> int:
        """Back to the state after the record at ``offset`` (the last committed one): the
        changes of every later record undone. The count of changes undone."""
        return self.timeline.revert(offset)

    # -- queries ---------------------------------------------------------------------------

    @property
    def metadata_version(self) -> int | None:
        return self.features.get(METADATA_VERSION)

    def partition(self, topic_id: uuid.UUID, partition_id: int) -> PartitionState | None:
        topic = self.topics.get(topic_id)
        return None if topic is None else topic.partitions.get(partition_id)

    def all_partitions(self) -> Iterator[PartitionState]:
        for topic in self.topics.values():
            yield from topic.partitions.values()

    def partitions_near(self, broker_id: int) -> Iterator[PartitionState]:
        """Every partition with ``broker_id`` among its replicas, and others of the same
        topics (the caller filters): a walk over the topics ``broker_topics`` names, not
        over every partition."""
        topics = self.topics
        for topic_id in list(self.broker_topics.get(broker_id, ())):
            topic = topics.get(topic_id)
            if topic is not None:
                yield from topic.partitions.values()

    def _index(self, topic: TopicState, replicas: tuple[int, ...]) -> None:
        indexed = topic.indexed
        index = self.broker_topics
        tl = self.timeline
        for b in replicas:
            if b in indexed:
                continue
            topics = index.get(b)
            if topics is None:
                tl.put(index, b, {topic.topic_id})
            else:
                tl.add(topics, topic.topic_id)
            tl.add(indexed, b)

    @property
    def in_transaction(self) -> bool:
        return self._transaction is not None

    # -- replay ----------------------------------------------------------------------------

    def replay(self, record: Any, version: int, offset: int, value: bytes | None = None) -> None:
        """Apply one committed (or, on the active controller, appended) record; ``value``:
        its encoding when the caller has it (a partition keeps it, ``PartitionState.value``)."""
        tl = self.timeline
        tl.offset = offset
        if isinstance(record, r.BeginTransactionRecord):
            if self._transaction is not None:
                raise ImageError(f"offset {offset}: BeginTransaction inside a transaction")
            tl.assign(self, "_transaction", [])
        elif isinstance(record, r.EndTransactionRecord):
            held = self._transaction
            if held is None:
                raise ImageError(f"offset {offset}: EndTransaction without a transaction")
            tl.assign(self, "_transaction", None)
            for held_record, held_version, held_offset, held_value in held:
                self._apply(held_record, held_version, held_offset, held_value)
        elif isinstance(record, r.AbortTransactionRecord):
            if self._transaction is None:
                raise ImageError(f"offset {offset}: AbortTransaction without a transaction")
            tl.assign(self, "_transaction", None)
        elif self._transaction is not None:
            tl.append(self._transaction, (record, version, offset, value))
        else:
            self._apply(record, version, offset, value)
        tl.assign(self, "last_offset", offset)
        if not isinstance(record, r.NoOpRecord):
            tl.assign(self, "last_change_offset", offset)

    def replay_encoded(self, values: Sequence[bytes], offset: int) -> list[str]:
        """Decode and replay each encoded record, all at ``offset``; the message of each
        that is not a metadata record or that the image refuses (``MetadataRecordError``,
        ``ImageError``), the others applied. One compiled loop: a snapshot's load replays
        a million this way (the caller's chunks keep its event loop's turns short)."""
        errors: list[str] = []
        for value in values:
            try:
                record, version = decode_record(value)
                self.replay(record, version, offset, value)
            except (MetadataRecordError, ImageError) as e:
                errors.append(str(e))
        return errors

    def _apply(self, record: Any, version: int, offset: int, value: bytes | None) -> None:
        handler = _REPLAY.get(type(record))
        if handler is None:
            raise ImageError(f"no replay rule for {type(record).__name__}")
        self._offset = offset
        self._value = value
        if self.changes is not None:
            self._note_change(record)
        handler(self, record, version)

    def track_changes(self, on: bool) -> None:
        """Start (or stop) noting in ``changes`` what each applied record changes of what
        ZooKeeper mirrors (``metadata/delta.py``)."""
        self.changes = [] if on else None

    def take_changes(self, upto: int) -> MetadataDelta:
        """What the records up to offset ``upto`` (committed) changed; their notes are
        forgotten here."""
        changes = self.changes
        if not changes:
            return MetadataDelta()
        count = 0
        while count < len(changes) and changes[count].offset <= upto:
            count += 1
        taken = changes[:count]
        del changes[:count]
        return MetadataDelta.of(taken)

    def _note_change(self, record: Any) -> None:
        changes = self.changes
        assert changes is not None
        topic = self.topics.get(record.topic_id) if hasattr(record, "topic_id") else None
        note = change_of(record, self.timeline.offset, None if topic is None else topic.name)
        if note is not None:
            self.timeline.append(changes, note)

    def _feature(self, rec: r.FeatureLevelRecord, _v: int) -> None:
        tl = self.timeline
        tl.assign(self, "features_epoch", self._offset)
        if rec.feature_level == 0 and rec.name != METADATA_VERSION:
            tl.delete(self.features, rec.name)
        else:
            tl.put(self.features, rec.name, rec.feature_level)

    def _register_broker(self, rec: r.RegisterBrokerRecord, _v: int) -> None:
        self.timeline.put(
            self.brokers,
            rec.broker_id,
            BrokerState(
                broker_id=rec.broker_id,
                incarnation_id=rec.incarnation_id,
                epoch=rec.broker_epoch,
                endpoints=rec.end_points,
                features={
                    f.name: (f.min_supported_version, f.max_supported_version) for f in rec.features
                },
                rack=rec.rack or None,
                fenced=rec.fenced,
                in_controlled_shutdown=rec.in_controlled_shutdown,
                log_dirs=rec.log_dirs,
                is_migrating_zk_broker=rec.is_migrating_zk_broker,
                cordoned_log_dirs=rec.cordoned_log_dirs,
                register_offset=self._offset,
            ),
        )

    def _broker(self, broker_id: int, epoch: int, what: str) -> BrokerState:
        broker = self.brokers.get(broker_id)
        if broker is None or broker.epoch != epoch:
            raise ImageError(f"{what} for broker {broker_id} epoch {epoch}: not registered so")
        return broker

    def _broker_change(self, rec: r.BrokerRegistrationChangeRecord, version: int) -> None:
        broker = self._broker(rec.broker_id, rec.broker_epoch, "BrokerRegistrationChange")
        tl = self.timeline
        if rec.fenced == 1:
            tl.assign(broker, "fenced", True)
        elif rec.fenced == -1:
            tl.assign(broker, "fenced", False)
        if rec.in_controlled_shutdown == 1:
            tl.assign(broker, "in_controlled_shutdown", True)
        if version >= 2 and rec.log_dirs:
            tl.assign(broker, "log_dirs", rec.log_dirs)
        if version >= 3 and rec.cordoned_log_dirs is not None:
            tl.assign(broker, "cordoned_log_dirs", rec.cordoned_log_dirs)

    def _fence(self, rec: r.FenceBrokerRecord, _v: int) -> None:
        self.timeline.assign(self._broker(rec.id, rec.epoch, "FenceBroker"), "fenced", True)

    def _unfence(self, rec: r.UnfenceBrokerRecord, _v: int) -> None:
        self.timeline.assign(self._broker(rec.id, rec.epoch, "UnfenceBroker"), "fenced", False)

    def _unregister(self, rec: r.UnregisterBrokerRecord, _v: int) -> None:
        broker = self.brokers.get(rec.broker_id)
        if broker is not None and broker.epoch == rec.broker_epoch:
            self.timeline.delete(self.brokers, rec.broker_id)

    def _register_controller(self, rec: r.RegisterControllerRecord, _v: int) -> None:
        controller = ControllerState(
            rec.controller_id,
            rec.incarnation_id,
            rec.zk_migration_ready,
            rec.end_points,
            {f.name: (f.min_supported_version, f.max_supported_version) for f in rec.features},
        )
        self.timeline.put(self.controllers, rec.controller_id, controller)

    def _unregister_controller(self, rec: r.UnregisterControllerRecord, _v: int) -> None:
        """Kafka 4.4-IV2: the controller's registration is gone (it left the quorum)."""
        if rec.controller_id in self.controllers:
            self.timeline.delete(self.controllers, rec.controller_id)

    def _topic(self, rec: r.TopicRecord, _v: int) -> None:
        if rec.name in self.topics_by_name or rec.topic_id in self.topics:
            raise ImageError(f"topic {rec.name} ({rec.topic_id}) exists already")
        self.timeline.put(self.topics, rec.topic_id, TopicState(rec.name, rec.topic_id))
        self.timeline.put(self.topics_by_name, rec.name, rec.topic_id)
        if has_collision_chars(rec.name):
            key = normalized_topic_name(rec.name)
            names = self.colliding_names.get(key)
            if names is None:
                self.timeline.put(self.colliding_names, key, {rec.name})
            else:
                self.timeline.add(names, rec.name)

    def _remove_topic(self, rec: r.RemoveTopicRecord, _v: int) -> None:
        topic = self.topics.get(rec.topic_id)
        if topic is None:
            raise ImageError(f"RemoveTopic of unknown topic {rec.topic_id}")
        tl = self.timeline
        tl.delete(self.topics, rec.topic_id)
        tl.delete(self.topics_by_name, topic.name)
        if has_collision_chars(topic.name):
            key = normalized_topic_name(topic.name)
            names = self.colliding_names[key]
            tl.discard(names, topic.name)
            if not names:
                tl.delete(self.colliding_names, key)
        tl.delete(self.configs, (TOPIC_RESOURCE, topic.name))
        offline = imbalanced = 0
        for topics in self.broker_topics.values():  # those it left by a reassignment too
            tl.discard(topics, rec.topic_id)
        for pid, p in topic.partitions.items():
            tl.discard(self.stepping, (rec.topic_id, pid))
            tl.discard(self.moving, (rec.topic_id, pid))
            tl.discard(self.leaderless, (rec.topic_id, pid))
            offline += p.leader < 0
            imbalanced += _imbalanced(p)
        self._count(-len(topic.partitions), -offline, -imbalanced)

    def _partition(self, rec: r.PartitionRecord, _v: int) -> None:
        topic = self.topics.get(rec.topic_id)
        if topic is None:
            raise ImageError(f"PartitionRecord for unknown topic {rec.topic_id}")
        old = topic.partitions.get(rec.partition_id)
        if old is not None:  # a PartitionRecord replaces the partition
            self._count(-1, -(old.leader < 0), -_imbalanced(old))
        self.timeline.put(
            topic.partitions,
            rec.partition_id,
            PartitionState(
                topic_id=rec.topic_id,
                partition_id=rec.partition_id,
                replicas=rec.replicas,
                isr=rec.isr,
                removing=rec.removing_replicas,
                adding=rec.adding_replicas,
                leader=rec.leader,
                leader_epoch=rec.leader_epoch,
                partition_epoch=rec.partition_epoch,
                leader_recovery_state=rec.leader_recovery_state,
                directories=rec.directories,
                elr=rec.eligible_leader_replicas,
                last_known_elr=rec.last_known_elr,
                final_target=final_target_of(rec) or None,
                value=self._value,
            ),
        )
        p = topic.partitions[rec.partition_id]
        self._count(1, p.leader < 0, _imbalanced(p))
        self._track(p)
        self._index(topic, rec.replicas)

    def _count(self, partitions: int, offline: int, imbalanced: int) -> None:
        set_ = self.timeline.assign
        if partitions:
            set_(self, "partition_count", self.partition_count + partitions)
        if offline:
            set_(self, "offline_count", self.offline_count + offline)
        if imbalanced:
            set_(self, "imbalanced_count", self.imbalanced_count + imbalanced)

    def _partition_change(self, rec: r.PartitionChangeRecord, _v: int) -> None:
        topic = self.topics.get(rec.topic_id)
        p = None if topic is None else topic.partitions.get(rec.partition_id)
        if topic is None or p is None:
            raise ImageError(f"PartitionChange of unknown {rec.topic_id}-{rec.partition_id}")
        was_offline, was_imbalanced = p.leader < 0, _imbalanced(p)
        set_ = self.timeline.assign
        if rec.replicas is not None:
            set_(p, "replicas", rec.replicas)
            self._index(topic, rec.replicas)
        if rec.isr is not None:
            set_(p, "isr", rec.isr)
        if rec.removing_replicas is not None:
            set_(p, "removing", rec.removing_replicas)
        if rec.adding_replicas is not None:
            set_(p, "adding", rec.adding_replicas)
        if rec.leader != NO_LEADER_CHANGE:
            set_(p, "leader", rec.leader)
            set_(p, "leader_epoch", p.leader_epoch + 1)
        if rec.leader_recovery_state != -1:
            set_(p, "leader_recovery_state", rec.leader_recovery_state)
        if rec.directories is not None:
            set_(p, "directories", rec.directories)
        if rec.eligible_leader_replicas is not None:
            set_(p, "elr", rec.eligible_leader_replicas)
        if rec.last_known_elr is not None:
            set_(p, "last_known_elr", rec.last_known_elr)
        set_(p, "partition_epoch", p.partition_epoch + 1)
        set_(p, "value", None)
        final = final_target_of(rec)
        if final is not None:
            set_(p, "final_target", final or None)
        elif rec.replicas is not None and p.final_target is not None:
            # Written by a controller that does not know KIP-435 (Kafka's, in a mixed
            # quorum): the stepped plan ends where that controller left the replicas.
            set_(p, "final_target", None)
        self._count(0, (p.leader < 0) - was_offline, _imbalanced(p) - was_imbalanced)
        self._track(p)

    def _track(self, p: PartitionState) -> None:
        # An empty set is not asked to discard: a key's hash is a UUID's, computed in Python
        # (two of the six hashes a snapshot's PartitionRecord cost when loaded).
        tl = self.timeline
        if p.final_target is not None:
            tl.add(self.stepping, (p.topic_id, p.partition_id))
        elif self.stepping:
            tl.discard(self.stepping, (p.topic_id, p.partition_id))
        if p.adding or p.removing:
            tl.add(self.moving, (p.topic_id, p.partition_id))
        elif self.moving:
            tl.discard(self.moving, (p.topic_id, p.partition_id))
        if p.leader < 0:
            tl.add(self.leaderless, (p.topic_id, p.partition_id))
        elif self.leaderless:
            tl.discard(self.leaderless, (p.topic_id, p.partition_id))

    def _config(self, rec: r.ConfigRecord, _v: int) -> None:
        key = (rec.resource_type, rec.resource_name)
        tl = self.timeline
        configs = self.configs.get(key)
        if rec.value is None:
            if configs is not None:
                tl.delete(configs, rec.name)
                if not configs:
                    tl.delete(self.configs, key)
        elif configs is None:
            tl.put(self.configs, key, {rec.name: rec.value})
        else:
            tl.put(configs, rec.name, rec.value)

    def _producer_ids(self, rec: r.ProducerIdsRecord, _v: int) -> None:
        self.timeline.assign(self, "next_producer_id", rec.next_producer_id)
        self.timeline.assign(self, "producer_ids_owner", (rec.broker_id, rec.broker_epoch))

    def _migration(self, rec: r.ZkMigrationStateRecord, _v: int) -> None:
        self.timeline.assign(self, "migration_state", rec.zk_migration_state)

    def _clear_elr(self, rec: r.ClearElrRecord, _v: int) -> None:
        """ClearElrRecord (KIP-966): the ELR and LastKnownElr of every partition of the topic
        (of every topic when the name is empty) emptied, a partition epoch for each partition
        that had any (Kafka's ``ReplicationControlManager.replay(ClearElrRecord)``)."""
        if rec.topic_name:
            topic_id = self.topics_by_name.get(rec.topic_name)
            if topic_id is None:
                raise ImageError(f"ClearElrRecord of unknown topic {rec.topic_name}")
            topics = [self.topics[topic_id]]
        else:
            topics = list(self.topics.values())
        set_ = self.timeline.assign
        for topic in topics:
            for p in topic.partitions.values():
                if p.elr or p.last_known_elr:
                    set_(p, "elr", ())
                    set_(p, "last_known_elr", ())
                    set_(p, "partition_epoch", p.partition_epoch + 1)
                    set_(p, "value", None)

    def _noop(self, rec: Any, _v: int) -> None:
        pass

    # -- writing the image out -------------------------------------------------------------

    def records(self, partition_version: int, broker_version: int) -> list[tuple[Any, int]]:
        """The image as (record, version) pairs, in the order a snapshot holds them."""
        return list(self.iter_records(partition_version, broker_version))

    def iter_records(
        self, partition_version: int, broker_version: int, view: PinnedView = NOW
    ) -> Iterator[tuple[Any, int]]:
        """``records`` one at a time, read through ``view``: the image now, or as of a
        pinned offset (``Timeline.view``) however it changes between the steps of the
        iteration (the snapshot generator's slices)."""
        yield from self._head_records(broker_version, view)
        for _, topic in sorted(view.items(self.topics), key=lambda kv: kv[1].name):
            yield (r.TopicRecord(name=topic.name, topic_id=topic.topic_id), 0)
            for _, p in sorted(view.items(topic.partitions)):
                yield (partition_record(view.obj(p), partition_version), partition_version)
        yield from self._tail_records(view)

    def iter_values(
        self, partition_version: int, broker_version: int, view: PinnedView = NOW
    ) -> Iterator[bytes]:
        """``iter_records`` encoded (a snapshot's record values). A partition's encoding is
        its ``value`` when it has one at ``partition_version``; one it has not is encoded
        and, when the partition is the image's own object (unchanged since ``view``'s
        offset), kept there for the next snapshot."""
        for record, version in self._head_records(broker_version, view):
            yield encode_record(record, version)
        obj = view.obj
        for _, topic in sorted(view.items(self.topics), key=lambda kv: kv[1].name):
            yield encode_record(r.TopicRecord(name=topic.name, topic_id=topic.topic_id), 0)
            for _, p in sorted(view.items(topic.partitions)):
                at = obj(p)
                value = at.value
                if value is None or value[2] != partition_version:
                    value = encode_record(partition_record(at, partition_version), partition_version)
                    if at is p:
                        p.value = value
                yield value
        for record, version in self._tail_records(view):
            yield encode_record(record, version)

    def _head_records(self, broker_version: int, view: PinnedView) -> Iterator[tuple[Any, int]]:
        """Features (``metadata.version`` first), the migration state, controllers, brokers."""
        features = dict(view.items(self.features))
        if METADATA_VERSION in features:
            yield (
                r.FeatureLevelRecord(
                    name=METADATA_VERSION, feature_level=features[METADATA_VERSION]
                ),
                0,
            )
        for name, level in sorted(features.items()):
            if name != METADATA_VERSION:
                yield (r.FeatureLevelRecord(name=name, feature_level=level), 0)
        migration_state = view.attr(self, "migration_state")
        assert isinstance(migration_state, int)
        if migration_state:
            yield (r.ZkMigrationStateRecord(zk_migration_state=migration_state), 0)
        for _, c in sorted(view.items(self.controllers)):
            c = view.obj(c)
            yield (
                r.RegisterControllerRecord(
                    controller_id=c.controller_id,
                    incarnation_id=c.incarnation_id,
                    zk_migration_ready=c.zk_migration_ready,
                    end_points=c.endpoints,
                    features=tuple(
                        r.register_controller_record.ControllerFeature(
                            name=n, min_supported_version=lo, max_supported_version=hi
                        )
                        for n, (lo, hi) in sorted(c.features.items())
                    ),
                ),
                0,
            )
        for _, b in sorted(view.items(self.brokers)):
            yield (broker_record(view.obj(b), broker_version), broker_version)

    def _tail_records(self, view: PinnedView) -> Iterator[tuple[Any, int]]:
        """Configs, producer ids, then the parts (in the order their records had when the
        image kept them in one map, sorted by key: ACLs, quotas, SCRAM, tokens)."""
        for (resource_type, resource_name), configs in sorted(view.items(self.configs)):
            for name, value in sorted(view.items(configs)):
                yield (
                    r.ConfigRecord(
                        resource_type=resource_type,
                        resource_name=resource_name,
                        name=name,
                        value=value,
                    ),
                    0,
                )
        next_producer_id = view.attr(self, "next_producer_id")
        assert isinstance(next_producer_id, int)
        if next_producer_id:
            owner = view.attr(self, "producer_ids_owner")
            assert isinstance(owner, tuple)
            broker_id, epoch = owner
            yield (
                r.ProducerIdsRecord(
                    broker_id=broker_id,
                    broker_epoch=epoch,
                    next_producer_id=next_producer_id,
                ),
                0,
            )
        yield from self.acls.records(view)
        yield from self.client_quotas.records(view)
        yield from self.scram.records(view)
        yield from self.tokens.records(view)

    # -- invariants ------------------------------------------------------------------------

    def check(self) -> None:
        assert len(self.topics) == len(self.topics_by_name)
        colliding: dict[str, set[str]] = {}
        for name in self.topics_by_name:
            if has_collision_chars(name):
                colliding.setdefault(normalized_topic_name(name), set()).add(name)
        assert colliding == self.colliding_names, (colliding, self.colliding_names)
        stepping: set[tuple[uuid.UUID, int]] = set()
        moving: set[tuple[uuid.UUID, int]] = set()
        counts = [0, 0, 0]  # partitions, offline, imbalanced
        for topic in self.topics.values():
            assert self.topics_by_name[topic.name] == topic.topic_id, topic.name
            for b in topic.indexed:  # the memo of broker_topics says only what is there
                assert topic.topic_id in self.broker_topics.get(b, ()), (b, topic.name)
            for p in topic.partitions.values():
                for b in p.replicas:
                    assert p.topic_id in self.broker_topics.get(b, ()), (b, topic.name, p)
                counts[0] += 1
                counts[1] += p.leader < 0
                counts[2] += _imbalanced(p)
                assert set(p.isr) <= set(p.replicas), (topic.name, p)
                assert p.leader == NO_LEADER or (p.leader in p.isr and p.leader in p.replicas), (
                    topic.name,
                    p,
                )
                if p.final_target is not None:
                    stepping.add((p.topic_id, p.partition_id))
                if p.adding or p.removing:
                    moving.add((p.topic_id, p.partition_id))
                if p.value is not None:  # the kept encoding is the partition's now
                    version = p.value[2]
                    assert p.value == encode_record(partition_record(p, version), version), p
        assert self.stepping == stepping, (self.stepping, stepping)
        assert self.moving == moving, (self.moving, moving)
        kept = [self.partition_count, self.offline_count, self.imbalanced_count]
        assert kept == counts, (kept, counts)
        assert len(self.leaderless) == self.offline_count, (self.leaderless, counts)
        for topic_id, pid in self.leaderless:
            assert self.topics[topic_id].partitions[pid].leader < 0, (topic_id, pid)
        for part in (self.acls, self.client_quotas, self.scram, self.tokens):
            part.check()


def _imbalanced(p: PartitionState) -> int:
    """1 when the partition is not led by its first (preferred) replica."""
    return int(bool(p.replicas) and p.leader != p.replicas[0])


def broker_record(b: BrokerState, version: int) -> r.RegisterBrokerRecord:
    return r.RegisterBrokerRecord(
        broker_id=b.broker_id,
        is_migrating_zk_broker=b.is_migrating_zk_broker and version >= 2,
        incarnation_id=b.incarnation_id,
        broker_epoch=b.epoch,
        end_points=b.endpoints,
        features=tuple(
            r.register_broker_record.BrokerFeature(
                name=n, min_supported_version=lo, max_supported_version=hi
            )
            for n, (lo, hi) in sorted(b.features.items())
        ),
        rack=b.rack,
        fenced=b.fenced,
        in_controlled_shutdown=b.in_controlled_shutdown and version >= 1,
        log_dirs=b.log_dirs if version >= 3 else (),
        cordoned_log_dirs=b.cordoned_log_dirs if version >= 4 else None,
    )


def partition_record(p: PartitionState, version: int) -> r.PartitionRecord:
    record = _partition_record(p, version)
    return record if p.final_target is None else with_final_target(record, p.final_target)


def _partition_record(p: PartitionState, version: int) -> r.PartitionRecord:
    return r.PartitionRecord(
        partition_id=p.partition_id,
        topic_id=p.topic_id,
        replicas=p.replicas,
        isr=p.isr,
        removing_replicas=p.removing,
        adding_replicas=p.adding,
        leader=p.leader,
        leader_recovery_state=p.leader_recovery_state,
        leader_epoch=p.leader_epoch,
        partition_epoch=p.partition_epoch,
        directories=p.directories if version >= 1 else (),
        eligible_leader_replicas=p.elr if version >= 2 else None,
        last_known_elr=p.last_known_elr if version >= 2 else None,
    )


_REPLAY: Final[dict[type, Any]] = {
    r.FeatureLevelRecord: Image._feature,
    r.RegisterBrokerRecord: Image._register_broker,
    r.BrokerRegistrationChangeRecord: Image._broker_change,
    r.FenceBrokerRecord: Image._fence,
    r.UnfenceBrokerRecord: Image._unfence,
    r.UnregisterBrokerRecord: Image._unregister,
    r.RegisterControllerRecord: Image._register_controller,
    r.UnregisterControllerRecord: Image._unregister_controller,
    r.TopicRecord: Image._topic,
    r.RemoveTopicRecord: Image._remove_topic,
    r.PartitionRecord: Image._partition,
    r.PartitionChangeRecord: Image._partition_change,
    r.ConfigRecord: Image._config,
    r.ProducerIdsRecord: Image._producer_ids,
    r.ZkMigrationStateRecord: Image._migration,
    r.NoOpRecord: Image._noop,
    r.ClearElrRecord: Image._clear_elr,
    # The parts' records (``metadata/parts/``).
    r.AccessControlEntryRecord: lambda image, rec, _v: image.acls.replay(rec),
    r.RemoveAccessControlEntryRecord: lambda image, rec, _v: image.acls.replay_remove(rec),
    r.ClientQuotaRecord: lambda image, rec, _v: image.client_quotas.replay(rec),
    r.UserScramCredentialRecord: lambda image, rec, _v: image.scram.replay(rec),
    r.RemoveUserScramCredentialRecord: lambda image, rec, _v: image.scram.replay_remove(rec),
    r.DelegationTokenRecord: lambda image, rec, _v: image.tokens.replay(rec),
    r.RemoveDelegationTokenRecord: lambda image, rec, _v: image.tokens.replay_remove(rec),
}
