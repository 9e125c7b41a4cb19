"""Partition changes: leader election and ISR updates as PartitionChangeRecords (Kafka's
``PartitionChangeBuilder``).

Rules (Kafka's, KRaft mode, metadata.version >= 3.6):

* a replica may lead or be in the ISR only while its broker is *active* (registered,
  unfenced, not in controlled shutdown);
* the current leader stays leader while it is in the new ISR and active; otherwise the first
  replica, in replica order, that is in the new ISR and active leads; with none, there is no
  leader (-1), unless unclean election is allowed, which picks the first active replica
  outside the ISR and marks the partition RECOVERING (leader recovery state 1);
* a preferred election moves leadership to the first replica when it is in the ISR and
  active;
* without eligible leader replicas, the ISR never becomes empty: removing its last member
  leaves the ISR as it was and the partition without a leader (KIP-841);
* with eligible leader replicas (KIP-966, ``eligible.leader.replicas.version`` >= 1; Kafka
  4.4.0's ``PartitionChangeBuilder``): while the new ISR is smaller than the topic's effective
  ``min.insync.replicas``, the members that leave the ISR join the ELR (the replicas that have
  every committed record although they fell out of the ISR), less any broker that restarted
  uncleanly; at or above it the ELR and LastKnownElr are emptied. The ISR may then become
  empty, and a member of the ELR may be elected cleanly when it is: it becomes the ISR. When
  the ISR and ELR are both empty, the last leader (kept in LastKnownElr when the partition
  lost its leader) may be elected, counted as unclean;
* a record is written only when something changes; its ``Leader`` field is set only when the
  leader changes (replaying it bumps the leader epoch), or to force an epoch bump: a
  reassignment that removes replicas, and an ISR shrink while a ZooKeeper migration runs
  (ZooKeeper-mode brokers need the bump) or below metadata.version 3.6-IV0 (KAFKA-15021;
  Kafka's ``triggerLeaderEpochBumpForIsrShrinkIfNeeded``);
* the partition record version follows metadata.version (v2 from 4.0-IV1, v1 from 3.7-IV2).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Final

from pykraft.controller.migration import MIGRATION, PRE_MIGRATION
from pykraft.metadata.image import (
    BROKER_RESOURCE,
    NO_LEADER,
    NO_LEADER_CHANGE,
    TOPIC_RESOURCE,
    BrokerState,
    Image,
    PartitionState,
)
from pykraft.metadata.records import PartitionChangeRecord
from pykraft.metadata.tagged import with_final_target
from pykraft.metadata.versions import ELR_VERSION, IBP_3_6_IV0, IBP_3_7_IV2, IBP_4_0_IV1

__all__ = [
    "ELECTION_DEFAULT",
    "ELECTION_PREFERRED",
    "ELECTION_UNCLEAN",
    "MIN_INSYNC",
    "acceptor",
    "active",
    "change_record",
    "choose_leader",
    "dir_online",
    "directory_of",
    "effective_min_isr",
    "elr_enabled",
    "partition_version",
]

MIN_INSYNC: Final = "min.insync.replicas"
ELECTION_DEFAULT: Final = "default"
ELECTION_PREFERRED: Final = "preferred"
ELECTION_UNCLEAN: Final = "unclean"
RECOVERING: Final = 1
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


def _in_online_dir(image: Image, p: PartitionState, acceptable: Acceptable) -> Acceptable:
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


def choose_leader(
    acceptable: Acceptable,
    replicas: tuple[int, ...],
    isr: tuple[int, ...],
    current: int,
    election: str = ELECTION_DEFAULT,
    *,
    elr: tuple[int, ...] = (),
    last_known: tuple[int, ...] | None = None,
) -> tuple[int, bool]:
    """(leader, unclean) for a partition with these replicas, ISR and ELR (Kafka's
    ``electLeader``). A replica is valid if acceptable and in the ISR, or in the ELR while
    the ISR is empty. ``last_known`` (LastKnownElr, with eligible leader replicas on): its
    one member may lead when ISR and ELR are empty, counted as unclean."""

    def valid(replica: int) -> bool:
        return (replica in isr or (not isr and replica in elr)) and acceptable(replica)

    if election == ELECTION_PREFERRED and replicas and valid(replicas[0]):
        return replicas[0], False
    if current in replicas and valid(current):
        return current, False
    for replica in replicas:
        if valid(replica):
            return replica, False
    if (
        last_known is not None
        and not isr
        and not elr
        and len(last_known) == 1
        and acceptable(last_known[0])
    ):
        return last_known[0], True
    if election == ELECTION_UNCLEAN:
        for replica in replicas:
            if acceptable(replica):
                return replica, True
    return NO_LEADER, False


def _bump_on_isr_shrink(image: Image) -> bool:
    mv = image.metadata_version
    migrating = image.migration_state in (MIGRATION, PRE_MIGRATION)
    return migrating or (mv is not None and mv < IBP_3_6_IV0)


def _complete_reassignment(
    replicas: tuple[int, ...],
    isr: tuple[int, ...],
    adding: tuple[int, ...],
    removing: tuple[int, ...],
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(replicas, isr, adding, removing) after Kafka's ``completeReassignmentIfNeeded``: a
    reassignment whose ISR, less the removing replicas, holds every target replica ends here
    (replicas become the target, the ISR loses the removing ones, adding/removing empty)."""
    if adding or removing:
        isr_left = tuple(b for b in isr if b not in removing)
        target = tuple(r for r in replicas if r not in removing)
        if isr_left and target and set(target) <= set(isr_left):
            return target, isr_left, (), ()
    return replicas, isr, adding, removing


def _changes_nothing(record: PartitionChangeRecord) -> bool:
    return (
        record.isr is None
        and record.leader == NO_LEADER_CHANGE
        and record.replicas is None
        and record.adding_replicas is None
        and record.removing_replicas is None
        and record.leader_recovery_state == -1
        and record.eligible_leader_replicas is None
        and record.last_known_elr is None
    )


def _target_elr(
    p: PartitionState, new_isr: tuple[int, ...], min_isr: int, unclean_shutdown: int
) -> tuple[int, ...]:
    """Kafka's ``maybePopulateTargetElr``: empty at or above min ISR; below it, the current
    ELR and ISR less the new ISR and a broker that restarted uncleanly (ascending, as
    Kafka's hash set of small integers iterates)."""
    if len(new_isr) >= min_isr:
        return ()
    candidates = set(p.elr or ()) | set(p.isr)
    return tuple(sorted(b for b in candidates if b not in new_isr and b != unclean_shutdown))


def _last_known_elr(p: PartitionState, leader_field: int, elr_on: bool) -> tuple[int, ...] | None:
    """Kafka 4.4.0's ``maybeUpdateLastKnownLeader``: a record that takes the leader away
    remembers it (once); one that sets a leader forgets it."""
    if not elr_on:
        return None
    current = p.last_known_elr or ()
    if leader_field == NO_LEADER and not current:
        return (p.leader,)
    if leader_field >= 0 and current:
        return ()
    return None


def change_record(
    image: Image,
    p: PartitionState,
    *,
    isr: tuple[int, ...] | None = None,
    replicas: tuple[int, ...] | None = None,
    adding: tuple[int, ...] | None = None,
    removing: tuple[int, ...] | None = None,
    election: str = ELECTION_DEFAULT,
    bump_leader_epoch: bool = False,
    acceptable: Acceptable | None = None,
    version: int = 2,
    final_target: tuple[int, ...] | None = None,
    unclean_shutdown: int = NO_LEADER,
    min_isr: int | None = None,
) -> PartitionChangeRecord | None:
    """The record moving ``p`` to the new replicas/ISR/adding/removing (None fields:
    unchanged) and the leader the rules pick; None when nothing would change.

    A reassignment in progress completes in this record when the new ISR, less the removing
    replicas, holds every target replica (Kafka's ``completeReassignmentIfNeeded``): replicas
    become the target, the ISR loses the removing replicas, adding/removing empty. Whenever
    replicas are removed the leader epoch is bumped, also when the leader stays.

    KIP-435: ``final_target`` (``()`` to end it) is written into the record (tag 435, see
    ``metadata/tagged.py``), which is then never None. Without it, a record that changes the
    replicas of a partition with a final target carries that target on, or ``()`` when the
    replicas reach it: every replica change states the plan.

    ``unclean_shutdown``: a broker that registered again after an unclean shutdown; it
    leaves the ISR and the ELR and may not lead (Kafka's ``setUncleanShutdownReplicas``).
    ``min_isr``: the topic's ``effective_min_isr`` when the caller has it (one lookup per
    topic for a request that changes many of its partitions)."""
    new_replicas, target_isr, new_adding, new_removing = _complete_reassignment(
        p.replicas if replicas is None else replicas,
        p.isr if isr is None else isr,
        p.adding if adding is None else adding,
        p.removing if removing is None else removing,
    )
    new_isr = tuple(b for b in target_isr if b in new_replicas and b != unclean_shutdown)
    elr_on = version >= 2 and elr_enabled(image)
    target_elr: tuple[int, ...] = ()
    if elr_on:
        if min_isr is None:
            min_isr = effective_min_isr(image, p)
        target_elr = _target_elr(p, new_isr, min_isr, unclean_shutdown)
    elif not new_isr:
        new_isr = p.isr  # KIP-841: the ISR never empties; the partition goes offline
    leader, unclean = choose_leader(
        _in_online_dir(image, p, acceptable or acceptor(image, unclean_shutdown=unclean_shutdown)),
        new_replicas,
        new_isr,
        p.leader,
        election,
        elr=target_elr,
        last_known=(p.last_known_elr or ()) if elr_on else None,
    )
    if leader != p.leader and leader in target_elr:
        # Elected from the ELR: a clean election, the ELR member becomes the ISR.
        new_isr = (leader,)
        target_elr = tuple(b for b in target_elr if b != leader)
    if unclean:
        new_isr = (leader,)
        target_elr = ()
    removed_replica = not set(p.replicas) <= set(new_replicas)
    shrink_bump = not set(p.isr) <= set(new_isr) and _bump_on_isr_shrink(image)
    leader_field = NO_LEADER_CHANGE
    if leader != p.leader or bump_leader_epoch or removed_replica or shrink_bump:
        leader_field = leader
    record = PartitionChangeRecord(
        partition_id=p.partition_id,
        topic_id=p.topic_id,
        isr=new_isr if new_isr != p.isr else None,
        leader=leader_field,
        replicas=new_replicas if new_replicas != p.replicas else None,
        adding_replicas=new_adding if new_adding != p.adding else None,
        removing_replicas=new_removing if new_removing != p.removing else None,
        leader_recovery_state=RECOVERING
        if unclean and p.leader_recovery_state != RECOVERING
        else -1,
        directories=_directories(image, p, new_replicas)
        if new_replicas != p.replicas and version >= 1
        else None,
        eligible_leader_replicas=target_elr
        if version >= 2 and target_elr != (p.elr or ())
        else None,
        last_known_elr=_last_known_elr(p, leader_field, elr_on),
    )
    if final_target is None and _changes_nothing(record):
        return None
    if final_target is None and p.final_target is not None and record.replicas is not None:
        # The plan ends once the replicas are the final target *and* its preferred leader
        # leads; until then the target stays, so the scheduler elects it (the seed's "elect
        # the new preferred leader"), also after a move that fitted in one step.
        done = (
            record.replicas == p.final_target
            and not new_adding
            and not new_removing
            and leader == p.final_target[0]
        )
        final_target = () if done else p.final_target
    if final_target is not None:
        record = with_final_target(record, final_target)
    return record


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


def _directories(
    image: Image, p: PartitionState, replicas: tuple[int, ...]
) -> tuple[uuid.UUID, ...]:
    """Directory of each replica: kept for replicas that stay, ``directory_of`` for new
    ones."""
    old = dict(zip(p.replicas, p.directories, strict=False))
    return tuple(old.get(b) or directory_of(image, b) for b in replicas)
