"""Topics and their partitions (Kafka's ``TopicsImage``, replayed as
``ReplicationControlManager.replay`` does), with the indexes the controller looks partitions up
by.

Theory of operation. A TopicRecord adds a topic, a RemoveTopicRecord removes it with its
partitions; a PartitionRecord adds (or replaces) a partition, a PartitionChangeRecord changes
one in place and a ClearElrRecord empties ELRs. The replay rule of PartitionChangeRecord is
Kafka's ``PartitionRegistration.merge``: absent list fields keep their value, the partition
epoch always grows by one, and the leader epoch by one whenever ``Leader`` is present (-2
means "no change"), even if it names the same leader.

Besides ``topics`` (by id) and ``by_name`` the part keeps, all on the image's timeline:
``colliding_names`` (Kafka's ``topicsWithCollisionChars``), ``stepping`` (partitions with a
KIP-435 final target), ``moving`` (a reassignment in flight), ``leaderless`` (Kafka's
``partitionsWithNoLeader``), ``imbalanced`` (led, not by the first replica: Kafka's
``imbalancedPartitions``), ``broker_topics`` (broker id -> the topics with a partition that
has it among its replicas: Kafka's ``BrokersToIsrs`` at the grain of topics, a superset) and
the counts the metrics read (partitions, offline, imbalanced: Kafka's
ControllerMetricsChanges), so that nothing walks a million partitions to answer them.

Invariants (``check``): every partition's topic exists; ISR is a subset of replicas; a
leader, when there is one, is in the ISR and among the replicas; names and ids map one to
one; each partition's topic is in ``broker_topics`` of each of its replicas; the indexes and
counts say exactly what a walk would; a partition's kept encoding (``PartitionState.value``),
when it has one, encodes it as it is.

Compiled by mypyc with the image (``pykraft.native``): a restarted controller replays a
million PartitionRecords through ``replay_partition``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

from pykraft.metadata import records as r
from pykraft.metadata.parts.errors import ImageError
from pykraft.metadata.serde import encode_record
from pykraft.metadata.tagged import final_target_of, with_final_target
from pykraft.metadata.timeline import NOW, PinnedView, Timeline

__all__ = [
    "NO_LEADER",
    "NO_LEADER_CHANGE",
    "RECOVERING",
    "PartitionKey",
    "PartitionState",
    "TopicState",
    "TopicsImage",
    "has_collision_chars",
    "normalized_topic_name",
    "partition_record",
]

NO_LEADER: Final = -1
NO_LEADER_CHANGE: Final = -2
RECOVERING: Final = 1  # LeaderRecoveryState.RECOVERING: the election was unclean

PartitionKey = tuple[uuid.UUID, int]  # (topic id, partition id)


def has_collision_chars(name: str) -> bool:
    """Kafka's ``Topic.hasCollisionChars``: a '.' or a '_' in the name."""
    return "." in name or "_" in name


def normalized_topic_name(name: str) -> str:
    """Kafka's ``Topic.unifyCollisionChars``: every '.' made '_'."""
    return name.replace(".", "_")


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
    # The broker ids whose ``TopicsImage.broker_topics`` set holds this topic: a memo of that
    # index, which only grows while the topic lives (RemoveTopic drops both), kept in the
    # timeline with it. It spares a UUID hash, computed in Python, per replica of each
    # PartitionRecord replayed (three of a snapshot's four per partition).
    indexed: set[int] = field(default_factory=set, compare=False, repr=False)


class TopicsImage:
    """Invariant: ``by_name[t.name] == t.topic_id`` for every ``t`` in ``topics``."""

    def __init__(self, timeline: Timeline) -> None:
        self._tl = timeline
        self.topics: dict[uuid.UUID, TopicState] = {}
        self.by_name: dict[str, uuid.UUID] = {}
        # A topic name with '.' or '_' under the name with every '.' made '_' (two such names
        # may not both exist: their metrics would collide). Spares CreateTopics a walk.
        self.colliding_names: dict[str, set[str]] = {}
        self.stepping: set[PartitionKey] = set()
        self.moving: set[PartitionKey] = set()
        self.leaderless: set[PartitionKey] = set()
        # Led, but not by their first replica (Kafka's ``imbalancedPartitions``): what the
        # periodic preferred-leader election looks at, without a walk over every partition.
        self.imbalanced: set[PartitionKey] = set()
        self.broker_topics: dict[int, set[uuid.UUID]] = {}
        self.partition_count = 0
        self.offline_count = 0
        self.imbalanced_count = 0
        # Elections the replayed PartitionChangeRecords made (Kafka's TopicDelta
        # ``updateElectionStats``, read by ControllerStats' UncleanLeaderElectionsPerSec and
        # ElectionFromEligibleLeaderReplicasPerSec): unclean when the record sets the leader
        # RECOVERING, from the ELR when the new leader was in the partition's ELR before.
        self.unclean_elections = 0
        self.elr_elections = 0
        # ``check``'s memo: each partition whose kept encoding it verified, with that encoding
        # and the fields it was verified against (unchanged both: no need to encode again).
        self._verified: dict[int, tuple[PartitionState, bytes, PartitionFields]] = {}

    # -- queries ---------------------------------------------------------------------------

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

    # -- replay ----------------------------------------------------------------------------

    def replay_topic(self, rec: r.TopicRecord) -> None:
        if rec.name in self.by_name or rec.topic_id in self.topics:
            raise ImageError(f"topic {rec.name} ({rec.topic_id}) exists already")
        tl = self._tl
        tl.put(self.topics, rec.topic_id, TopicState(rec.name, rec.topic_id))
        tl.put(self.by_name, rec.name, rec.topic_id)
        if has_collision_chars(rec.name):
            key = normalized_topic_name(rec.name)
            names = self.colliding_names.get(key)
            if names is None:
                tl.put(self.colliding_names, key, {rec.name})
            else:
                tl.add(names, rec.name)

    def replay_remove(self, rec: r.RemoveTopicRecord) -> str:
        """The topic and its partitions gone; its name (the image drops its configs)."""
        topic = self.topics.get(rec.topic_id)
        if topic is None:
            raise ImageError(f"RemoveTopic of unknown topic {rec.topic_id}")
        tl = self._tl
        tl.delete(self.topics, rec.topic_id)
        tl.delete(self.by_name, topic.name)
        if has_collision_chars(topic.name):
            key = normalized_topic_name(topic.name)
            names = self.colliding_names[key]
            tl.discard(names, topic.name)
            if not names:
                tl.delete(self.colliding_names, key)
        offline = imbalanced = 0
        for topics in self.broker_topics.values():  # those it left by a reassignment too
            tl.discard(topics, rec.topic_id)
        for pid, p in topic.partitions.items():
            tl.discard(self.stepping, (rec.topic_id, pid))
            tl.discard(self.moving, (rec.topic_id, pid))
            tl.discard(self.leaderless, (rec.topic_id, pid))
            tl.discard(self.imbalanced, (rec.topic_id, pid))
            offline += p.leader < 0
            imbalanced += _imbalanced(p)
        self._count(-len(topic.partitions), -offline, -imbalanced)
        return topic.name

    def replay_partition(self, rec: r.PartitionRecord, value: bytes | None) -> None:
        """``value``: the record's encoding when the caller has it (kept, ``PartitionState``)."""
        topic = self.topics.get(rec.topic_id)
        if topic is None:
            raise ImageError(f"PartitionRecord for unknown topic {rec.topic_id}")
        old = topic.partitions.get(rec.partition_id)
        if old is not None:  # a PartitionRecord replaces the partition
            self._count(-1, -(old.leader < 0), -_imbalanced(old))
        p = PartitionState(
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
            value=value,
        )
        self._tl.put(topic.partitions, rec.partition_id, p)
        self._count(1, p.leader < 0, _imbalanced(p))
        self._track(p)
        self._index(topic, rec.replicas)

    def replay_change(self, rec: r.PartitionChangeRecord) -> None:
        topic = self.topics.get(rec.topic_id)
        p = None if topic is None else topic.partitions.get(rec.partition_id)
        if topic is None or p is None:
            raise ImageError(f"PartitionChange of unknown {rec.topic_id}-{rec.partition_id}")
        was_offline, was_imbalanced = p.leader < 0, _imbalanced(p)
        set_ = self._tl.assign
        if rec.leader_recovery_state == RECOVERING:
            set_(self, "unclean_elections", self.unclean_elections + 1)
        elif rec.leader >= 0 and rec.leader in (p.elr or ()):
            set_(self, "elr_elections", self.elr_elections + 1)
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

    def replay_clear_elr(self, rec: r.ClearElrRecord) -> None:
        """ClearElrRecord (KIP-966): the ELR and LastKnownElr of every partition of the topic
        (of every topic when the name is empty) emptied, a partition epoch for each partition
        that had any (Kafka's ``ReplicationControlManager.replay(ClearElrRecord)``)."""
        if rec.topic_name:
            topic_id = self.by_name.get(rec.topic_name)
            if topic_id is None:
                raise ImageError(f"ClearElrRecord of unknown topic {rec.topic_name}")
            topics = [self.topics[topic_id]]
        else:
            topics = list(self.topics.values())
        set_ = self._tl.assign
        for topic in topics:
            for p in topic.partitions.values():
                if p.elr or p.last_known_elr:
                    set_(p, "elr", ())
                    set_(p, "last_known_elr", ())
                    set_(p, "partition_epoch", p.partition_epoch + 1)
                    set_(p, "value", None)

    def _count(self, partitions: int, offline: int, imbalanced: int) -> None:
        set_ = self._tl.assign
        if partitions:
            set_(self, "partition_count", self.partition_count + partitions)
        if offline:
            set_(self, "offline_count", self.offline_count + offline)
        if imbalanced:
            set_(self, "imbalanced_count", self.imbalanced_count + imbalanced)

    def _track(self, p: PartitionState) -> None:
        # An empty set is not asked to discard: a key's hash is a UUID's, computed in Python
        # (two of the six hashes a snapshot's PartitionRecord cost when loaded).
        tl = self._tl
        key = (p.topic_id, p.partition_id)
        if p.final_target is not None:
            tl.add(self.stepping, key)
        elif self.stepping:
            tl.discard(self.stepping, key)
        if p.adding or p.removing:
            tl.add(self.moving, key)
        elif self.moving:
            tl.discard(self.moving, key)
        if p.leader < 0:
            tl.add(self.leaderless, key)
        elif self.leaderless:
            tl.discard(self.leaderless, key)
        if p.leader >= 0 and p.leader != p.replicas[0]:
            tl.add(self.imbalanced, key)
        elif self.imbalanced:
            tl.discard(self.imbalanced, key)

    def _index(self, topic: TopicState, replicas: tuple[int, ...]) -> None:
        indexed = topic.indexed
        index = self.broker_topics
        tl = self._tl
        for b in replicas:
            if b in indexed:
                continue
            topics = index.get(b)
            if topics is None:
                tl.put(index, b, {topic.topic_id})
            else:
                tl.add(topics, topic.topic_id)
            tl.add(indexed, b)

    # -- writing out -----------------------------------------------------------------------

    def records(
        self, partition_version: int, view: PinnedView = NOW
    ) -> Iterator[tuple[r.TopicRecord | r.PartitionRecord, int]]:
        """Each topic (by name) then its partitions (by id)."""
        for _, topic in sorted(view.items(self.topics), key=lambda kv: kv[1].name):
            yield (r.TopicRecord(name=topic.name, topic_id=topic.topic_id), 0)
            for _, p in sorted(view.items(topic.partitions)):
                yield (partition_record(view.obj(p), partition_version), partition_version)

    def values(self, partition_version: int, view: PinnedView = NOW) -> Iterator[bytes]:
        """``records`` encoded. A partition's encoding is its ``value`` when it has one at
        ``partition_version``; one it has not is encoded and, when the partition is the
        part's own object (unchanged since ``view``'s offset), kept for the next snapshot."""
        obj = view.obj
        for _, topic in sorted(view.items(self.topics), key=lambda kv: kv[1].name):
            yield encode_record(r.TopicRecord(name=topic.name, topic_id=topic.topic_id), 0)
            for _, p in sorted(view.items(topic.partitions)):
                at = obj(p)
                value = at.value
                if value is None or value[2] != partition_version:
                    value = encode_record(
                        partition_record(at, partition_version), partition_version
                    )
                    if at is p:
                        p.value = value
                yield value

    # -- invariants ------------------------------------------------------------------------

    def check(self) -> None:
        assert len(self.topics) == len(self.by_name)
        colliding: dict[str, set[str]] = {}
        for name in self.by_name:
            if has_collision_chars(name):
                colliding.setdefault(normalized_topic_name(name), set()).add(name)
        assert colliding == self.colliding_names, (colliding, self.colliding_names)
        stepping: set[PartitionKey] = set()
        moving: set[PartitionKey] = set()
        imbalanced: set[PartitionKey] = set()
        counts = [0, 0, 0]  # partitions, offline, imbalanced
        verified: dict[int, tuple[PartitionState, bytes, PartitionFields]] = {}
        for topic in self.topics.values():
            assert self.by_name[topic.name] == topic.topic_id, topic.name
            for b in topic.indexed:  # the memo of broker_topics says only what is there
                assert topic.topic_id in self.broker_topics.get(b, ()), (b, topic.name)
            for p in topic.partitions.values():
                _check_partition(p, self.broker_topics, topic.name)
                _check_value(p, self._verified, verified)
                counts[0] += 1
                counts[1] += p.leader < 0
                counts[2] += _imbalanced(p)
                if p.final_target is not None:
                    stepping.add((p.topic_id, p.partition_id))
                if p.adding or p.removing:
                    moving.add((p.topic_id, p.partition_id))
                if p.leader >= 0 and p.leader != p.replicas[0]:
                    imbalanced.add((p.topic_id, p.partition_id))
        self._verified = verified
        assert self.stepping == stepping, (self.stepping, stepping)
        assert self.imbalanced == imbalanced, (self.imbalanced, imbalanced)
        assert self.moving == moving, (self.moving, moving)
        kept = [self.partition_count, self.offline_count, self.imbalanced_count]
        assert kept == counts, (kept, counts)
        assert len(self.leaderless) == self.offline_count, (self.leaderless, counts)
        for topic_id, pid in self.leaderless:
            assert self.topics[topic_id].partitions[pid].leader < 0, (topic_id, pid)


def _check_partition(
    p: PartitionState, broker_topics: dict[int, set[uuid.UUID]], topic: str
) -> None:
    for b in p.replicas:
        assert p.topic_id in broker_topics.get(b, ()), (b, topic, p)
    assert set(p.isr) <= set(p.replicas), (topic, p)
    assert p.leader == NO_LEADER or (p.leader in p.isr and p.leader in p.replicas), (topic, p)


PartitionFields = tuple[object, ...]


def state_fields(p: PartitionState) -> PartitionFields:
    """Every field of the partition's state (not its kept encoding), as a tuple (the topic id
    as its int: a UUID hashes and compares in Python code, an int in C)."""
    return (
        p.topic_id.int,
        p.partition_id,
        p.replicas,
        p.isr,
        p.removing,
        p.adding,
        p.leader,
        p.leader_epoch,
        p.partition_epoch,
        p.leader_recovery_state,
        p.directories,
        p.elr,
        p.last_known_elr,
        p.final_target,
    )


def _check_value(
    p: PartitionState,
    before: dict[int, tuple[PartitionState, bytes, PartitionFields]],
    now: dict[int, tuple[PartitionState, bytes, PartitionFields]],
) -> None:
    """The kept encoding is the partition's now: encoded again unless the last check saw the
    same encoding with the same fields (the encoding is a function of them)."""
    value = p.value
    if value is None:
        return
    fields = state_fields(p)
    seen = before.get(id(p))
    if seen is None or seen[0] is not p or seen[1] is not value or seen[2] != fields:
        version = value[2]
        assert value == encode_record(partition_record(p, version), version), p
    now[id(p)] = (p, value, fields)


def _imbalanced(p: PartitionState) -> int:
    """1 when the partition is not led by its first (preferred) replica."""
    return int(bool(p.replicas) and p.leader != p.replicas[0])


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
