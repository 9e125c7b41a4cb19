"""The cluster's metadata as the controller sees it: built only by replaying metadata records
(Kafka's ``MetadataImage`` + the control managers' timeline state), on every controller.

Theory of operation. The image is its parts, one per concern (``metadata/parts/``): features,
cluster (brokers and controllers), topics and partitions, configs, producer ids, ACLs, client
quotas, SCRAM credentials and delegation tokens. Each part owns its state, its indexes, its
replay, its snapshot records and its invariants, all on the one ``Timeline`` (the role of
Kafka's ``SnapshotRegistry``), so the active controller's revert to the committed offset and
its reads at that offset cover every part. The image itself owns only what spans them:

* ``replay(record, offset)`` applies one record, exactly as a Kafka broker or controller
  applies it, by handing it to its part (``_REPLAY``); nothing else changes the image. A
  RemoveTopicRecord drops the topic's configs too. Metadata transactions (Begin/End/Abort-
  TransactionRecord, MV >= 3.6-IV1) are applied all or nothing: records between Begin and
  End are held and applied at End, dropped at Abort (Kafka's brokers do the same).
* ``take_changes`` hands out what the committed records changed, as a typed
  ``MetadataDelta`` (``metadata/delta.py``), to the dual write.
* ``records()`` writes the image out as records (a snapshot): features first
  (``metadata.version`` leading) and the migration state, then controllers, brokers, topics
  with their partitions, configs, producer ids, ACLs, client quotas, SCRAM credentials,
  delegation tokens; each kind in a fixed order, so that equal images write equal records.

The maps readers use most are also properties of the image under the names they had before
the parts (``brokers``, ``topics``, ``configs``, ...): each returns the part's own map
(Kafka's ``image.cluster().brokers()``), read-only by convention -- only replay changes them.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final

from pykraft.metadata import records as r
from pykraft.metadata.delta import Change, MetadataDelta, change_of
from pykraft.metadata.parts.acls import Acls
from pykraft.metadata.parts.cluster import BrokerState, ClusterImage, ControllerState, broker_record
from pykraft.metadata.parts.configs import ConfigResource, ConfigurationsImage
from pykraft.metadata.parts.errors import ImageError
from pykraft.metadata.parts.features import FeaturesImage
from pykraft.metadata.parts.producer_ids import ProducerIdsImage
from pykraft.metadata.parts.quotas import ClientQuotas
from pykraft.metadata.parts.scram import ScramCredentials
from pykraft.metadata.parts.tokens import DelegationTokens
from pykraft.metadata.parts.topics import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    PartitionKey,
    PartitionState,
    TopicsImage,
    TopicState,
    has_collision_chars,
    normalized_topic_name,
    partition_record,
)
from pykraft.metadata.serde import MetadataRecordError, decode_record, encode_record
from pykraft.metadata.timeline import NOW, PinnedView, Timeline

__all__ = [
    "BROKER_RESOURCE",
    "NO_LEADER",
    "NO_LEADER_CHANGE",
    "TOPIC_RESOURCE",
    "BrokerState",
    "ControllerState",
    "Image",
    "ImageError",
    "PartitionState",
    "TopicState",
    "broker_record",
    "has_collision_chars",
    "normalized_topic_name",
    "partition_record",
]

BROKER_RESOURCE: Final = 4
TOPIC_RESOURCE: Final = 2


class Image:
    """Invariant: every part's ``check``; ``last_offset`` is the offset of the last record
    replayed (-1: none)."""

    def __init__(self) -> None:
        self.last_offset = -1
        self.last_change_offset = -1  # the last record that was not a NoOpRecord
        self._transaction: list[tuple[Any, int, int, bytes | None]] | None = None
        # Every change below goes through the timeline: on the active controller it can be
        # reverted to the committed offset and read as of it (``timeline.py``).
        self.timeline = tl = Timeline()
        self.features_image = FeaturesImage(tl)
        self.cluster_image = ClusterImage(tl)
        self.topics_image = TopicsImage(tl)
        self.configs_image = ConfigurationsImage(tl)
        self.producer_ids_image = ProducerIdsImage(tl)
        self.acls = Acls(tl)
        self.client_quotas = ClientQuotas(tl)
        self.scram = ScramCredentials(tl)
        self.tokens = DelegationTokens(tl)
        # What ZooKeeper mirrors, changed by each applied record (KIP-866's dual write reads
        # it instead of the whole image: Kafka's MetadataDelta); None when nobody follows.
        self.changes: list[Change] | None = None

    # -- the parts' maps, under the names readers use ----------------------------------------

    @property
    def features(self) -> dict[str, int]:
        return self.features_image.levels

    @property
    def features_epoch(self) -> int:
        """The offset of the last FeatureLevelRecord (ApiVersions)."""
        return self.features_image.epoch

    @property
    def metadata_version(self) -> int | None:
        return self.features_image.metadata_version

    @property
    def migration_state(self) -> int:
        """ZkMigrationStateRecord (KIP-866), 0 = NONE."""
        return self.features_image.migration_state

    @property
    def brokers(self) -> dict[int, BrokerState]:
        return self.cluster_image.brokers

    @property
    def controllers(self) -> dict[int, ControllerState]:
        return self.cluster_image.controllers

    @property
    def topics(self) -> dict[uuid.UUID, TopicState]:
        return self.topics_image.topics

    @property
    def topics_by_name(self) -> dict[str, uuid.UUID]:
        return self.topics_image.by_name

    @property
    def configs(self) -> dict[ConfigResource, dict[str, str]]:
        return self.configs_image.by_resource

    @property
    def next_producer_id(self) -> int:
        return self.producer_ids_image.next_producer_id

    @property
    def stepping(self) -> set[PartitionKey]:
        """Partitions with a KIP-435 final target."""
        return self.topics_image.stepping

    @property
    def moving(self) -> set[PartitionKey]:
        """Partitions with a reassignment in flight (adding or removing replicas)."""
        return self.topics_image.moving

    def partition(self, topic_id: uuid.UUID, partition_id: int) -> PartitionState | None:
        return self.topics_image.partition(topic_id, partition_id)

    def all_partitions(self) -> Iterator[PartitionState]:
        return self.topics_image.all_partitions()

    def partitions_near(self, broker_id: int) -> Iterator[PartitionState]:
        return self.topics_image.partitions_near(broker_id)

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
        if self.changes is not None:
            self._note_change(record)
        handler(self, record, version, offset, value)

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
        topics = self.topics_image.topics
        topic = topics.get(record.topic_id) if hasattr(record, "topic_id") else None
        note = change_of(record, self.timeline.offset, None if topic is None else topic.name)
        if note is not None:
            self.timeline.append(changes, note)

    def _remove_topic(self, rec: r.RemoveTopicRecord) -> None:
        name = self.topics_image.replay_remove(rec)
        self.configs_image.remove_resource((TOPIC_RESOURCE, name))

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
        yield from self.topics_image.records(partition_version, view)
        yield from self._tail_records(view)

    def records_besides_topics(self, broker_version: int) -> Iterator[tuple[Any, int]]:
        """``iter_records`` without the topics and partitions (which a reader may take from
        ``topics`` directly)."""
        yield from self._head_records(broker_version, NOW)
        yield from self._tail_records(NOW)

    def iter_values(
        self, partition_version: int, broker_version: int, view: PinnedView = NOW
    ) -> Iterator[bytes]:
        """``iter_records`` encoded (a snapshot's record values); partitions through their
        kept encodings (``TopicsImage.values``)."""
        for record, version in self._head_records(broker_version, view):
            yield encode_record(record, version)
        yield from self.topics_image.values(partition_version, view)
        for record, version in self._tail_records(view):
            yield encode_record(record, version)

    def _head_records(self, broker_version: int, view: PinnedView) -> Iterator[tuple[Any, int]]:
        """Features (``metadata.version`` first), the migration state, controllers, brokers."""
        yield from self.features_image.records(view)
        yield from self.cluster_image.records(broker_version, view)

    def _tail_records(self, view: PinnedView) -> Iterator[tuple[Any, int]]:
        """Configs, producer ids, then ACLs, quotas, SCRAM, tokens (the order their records
        had when the image kept them in one map, sorted by key)."""
        yield from self.configs_image.records(view)
        yield from self.producer_ids_image.records(view)
        yield from self.acls.records(view)
        yield from self.client_quotas.records(view)
        yield from self.scram.records(view)
        yield from self.tokens.records(view)

    # -- invariants ------------------------------------------------------------------------

    def check(self) -> None:
        parts = (
            self.features_image,
            self.cluster_image,
            self.topics_image,
            self.configs_image,
            self.producer_ids_image,
            self.acls,
            self.client_quotas,
            self.scram,
            self.tokens,
        )
        for part in parts:
            part.check()


# record type -> its replay: (image, record, version, offset, encoding or None).
_Replay = Callable[[Image, Any, int, int, "bytes | None"], None]
_REPLAY: Final[dict[type, _Replay]] = {
    r.FeatureLevelRecord: lambda i, rec, _v, offset, _b: i.features_image.replay(rec, offset),
    r.ZkMigrationStateRecord: lambda i, rec, _v, _o, _b: i.features_image.replay_migration(rec),
    r.RegisterBrokerRecord: lambda i, rec, _v, o, _b: i.cluster_image.replay_register(rec, o),
    r.BrokerRegistrationChangeRecord: lambda i, rec, v, _o, _b: i.cluster_image.replay_change(
        rec, v
    ),
    r.FenceBrokerRecord: lambda i, rec, _v, _o, _b: i.cluster_image.replay_fence(rec),
    r.UnfenceBrokerRecord: lambda i, rec, _v, _o, _b: i.cluster_image.replay_unfence(rec),
    r.UnregisterBrokerRecord: lambda i, rec, _v, _o, _b: i.cluster_image.replay_unregister(rec),
    r.RegisterControllerRecord: lambda i, rec, _v, _o, _b: (
        i.cluster_image.replay_register_controller(rec)
    ),
    r.UnregisterControllerRecord: lambda i, rec, _v, _o, _b: (
        i.cluster_image.replay_unregister_controller(rec)
    ),
    r.TopicRecord: lambda i, rec, _v, _o, _b: i.topics_image.replay_topic(rec),
    r.RemoveTopicRecord: lambda i, rec, _v, _o, _b: i._remove_topic(rec),
    r.PartitionRecord: lambda i, rec, _v, _o, value: i.topics_image.replay_partition(rec, value),
    r.PartitionChangeRecord: lambda i, rec, _v, _o, _b: i.topics_image.replay_change(rec),
    r.ClearElrRecord: lambda i, rec, _v, _o, _b: i.topics_image.replay_clear_elr(rec),
    r.ConfigRecord: lambda i, rec, _v, _o, _b: i.configs_image.replay(rec),
    r.ProducerIdsRecord: lambda i, rec, _v, _o, _b: i.producer_ids_image.replay(rec),
    r.NoOpRecord: lambda _i, _rec, _v, _o, _b: None,
    r.AccessControlEntryRecord: lambda i, rec, _v, _o, _b: i.acls.replay(rec),
    r.RemoveAccessControlEntryRecord: lambda i, rec, _v, _o, _b: i.acls.replay_remove(rec),
    r.ClientQuotaRecord: lambda i, rec, _v, _o, _b: i.client_quotas.replay(rec),
    r.UserScramCredentialRecord: lambda i, rec, _v, _o, _b: i.scram.replay(rec),
    r.RemoveUserScramCredentialRecord: lambda i, rec, _v, _o, _b: i.scram.replay_remove(rec),
    r.DelegationTokenRecord: lambda i, rec, _v, _o, _b: i.tokens.replay(rec),
    r.RemoveDelegationTokenRecord: lambda i, rec, _v, _o, _b: i.tokens.replay_remove(rec),
}
