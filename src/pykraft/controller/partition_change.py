"""Building one PartitionChangeRecord (Kafka's ``PartitionChangeBuilder``): a caller states
its targets -- ISR, replicas, adding and removing replicas, the election kind, the KIP-435
final target, a broker back from an unclean shutdown -- then ``build()`` completes a
reassignment that can complete, derives the ISR and the ELR, elects, decides whether the
leader epoch must be bumped, and returns the record, or None when nothing would change.

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

from dataclasses import dataclass

from pykraft.controller.migration import MIGRATION, PRE_MIGRATION
from pykraft.controller.partitions import (
    ELECTION_DEFAULT,
    ELECTION_PREFERRED,
    ELECTION_UNCLEAN,
    RECOVERING,
    Acceptable,
    acceptor,
    directories_for,
    effective_min_isr,
    elr_enabled,
    in_online_dir,
)
from pykraft.metadata.image import NO_LEADER, NO_LEADER_CHANGE, Image, PartitionState
from pykraft.metadata.records import PartitionChangeRecord
from pykraft.metadata.tagged import with_final_target
from pykraft.metadata.versions import IBP_3_6_IV0

__all__ = ["PartitionChangeBuilder", "choose_leader"]

Replicas = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class _Target:
    """What the record moves the partition to, before the leader field is decided."""

    replicas: Replicas
    isr: Replicas
    adding: Replicas
    removing: Replicas
    elr: Replicas
    leader: int
    unclean: bool


class PartitionChangeBuilder:
    """One partition's change. Every ``set_*`` returns the builder; a target left unset keeps
    the partition's value. ``version``: the PartitionChangeRecord version (ELR from 2,
    directories from 1)."""

    def __init__(self, image: Image, partition: PartitionState, version: int = 2) -> None:
        self._image = image
        self._p = partition
        self._version = version
        self._isr: Replicas | None = None
        self._replicas: Replicas | None = None
        self._adding: Replicas | None = None
        self._removing: Replicas | None = None
        self._election = ELECTION_DEFAULT
        self._acceptable: Acceptable | None = None
        self._final_target: Replicas | None = None
        self._unclean_shutdown = NO_LEADER
        self._min_isr: int | None = None
        # Eligible leader replicas kept (record v2+ and the feature on): read once a build.
        self._elr = version >= 2 and elr_enabled(image)

    def set_target_isr(self, isr: Replicas) -> PartitionChangeBuilder:
        self._isr = isr
        return self

    def set_target_replicas(self, replicas: Replicas) -> PartitionChangeBuilder:
        self._replicas = replicas
        return self

    def set_target_adding(self, adding: Replicas) -> PartitionChangeBuilder:
        self._adding = adding
        return self

    def set_target_removing(self, removing: Replicas) -> PartitionChangeBuilder:
        self._removing = removing
        return self

    def set_election(self, election: str) -> PartitionChangeBuilder:
        """``default``, ``preferred`` or ``unclean`` (``partitions.ELECTION_*``)."""
        self._election = election
        return self

    def set_acceptable(self, acceptable: Acceptable) -> PartitionChangeBuilder:
        """Who may lead or stay in the ISR (default: ``partitions.acceptor``)."""
        self._acceptable = acceptable
        return self

    def set_final_target(self, final_target: Replicas | None) -> PartitionChangeBuilder:
        """KIP-435: the final target written into the record (tag 435, ``metadata/tagged.py``),
        ``()`` to end it; the record is then never None. None: no plan stated. Unset, a record that changes the
        replicas of a partition with a final target carries it on, or ``()`` when the
        replicas reach it and its preferred leader leads: every replica change states the
        plan."""
        self._final_target = final_target
        return self

    def set_unclean_shutdown_replica(self, broker_id: int) -> PartitionChangeBuilder:
        """A broker that registered again after an unclean shutdown: it leaves the ISR and
        the ELR and may not lead (Kafka's ``setUncleanShutdownReplicas``)."""
        self._unclean_shutdown = broker_id
        return self

    def set_min_isr(self, min_isr: int) -> PartitionChangeBuilder:
        """The topic's ``effective_min_isr`` when the caller has it (one lookup per topic for
        a request that changes many of its partitions)."""
        self._min_isr = min_isr
        return self

    def build(self) -> PartitionChangeRecord | None:
        """The record, or None when it would change nothing."""
        target = self._target()
        record = self._record(target, self._leader_field(target))
        final_target = self._final_target
        if final_target is None and _changes_nothing(record):
            return None
        if (
            final_target is None
            and self._p.final_target is not None
            and record.replicas is not None
        ):
            final_target = self._carried_plan(target, record)
        return record if final_target is None else with_final_target(record, final_target)

    # -- the steps of build ---------------------------------------------------------------

    def _target(self) -> _Target:
        """Reassignment completed if it can be, ISR and ELR derived, the leader elected."""
        p, image = self._p, self._image
        replicas, target_isr, adding, removing = _complete_reassignment(
            p.replicas if self._replicas is None else self._replicas,
            p.isr if self._isr is None else self._isr,
            p.adding if self._adding is None else self._adding,
            p.removing if self._removing is None else self._removing,
        )
        unclean_shutdown = self._unclean_shutdown
        isr = tuple(b for b in target_isr if b in replicas and b != unclean_shutdown)
        elr: Replicas = ()
        elr_on = self._elr
        if elr_on:
            min_isr = self._min_isr
            if min_isr is None:
                min_isr = effective_min_isr(image, p)
            elr = _target_elr(p, isr, min_isr, unclean_shutdown)
        elif not isr:
            isr = p.isr  # KIP-841: the ISR never empties; the partition goes offline
        acceptable = self._acceptable or acceptor(image, unclean_shutdown=unclean_shutdown)
        leader, unclean = choose_leader(
            in_online_dir(image, p, acceptable),
            replicas,
            isr,
            p.leader,
            self._election,
            elr=elr,
            last_known=(p.last_known_elr or ()) if elr_on else None,
        )
        if leader != p.leader and leader in elr:
            # Elected from the ELR: a clean election, the ELR member becomes the ISR.
            isr = (leader,)
            elr = tuple(b for b in elr if b != leader)
        if unclean:
            isr, elr = (leader,), ()
        return _Target(replicas, isr, adding, removing, elr, leader, unclean)

    def _leader_field(self, target: _Target) -> int:
        """The new leader when it changes, or to bump the leader epoch (Kafka's
        ``triggerLeaderEpochBumpIfNeeded``): a replica removed, or an ISR shrink where that
        is needed; else NO_LEADER_CHANGE."""
        p = self._p
        removed_replica = not set(p.replicas) <= set(target.replicas)
        shrink_bump = not set(p.isr) <= set(target.isr) and _bump_on_isr_shrink(self._image)
        if target.leader != p.leader or removed_replica or shrink_bump:
            return target.leader
        return NO_LEADER_CHANGE

    def _record(self, target: _Target, leader_field: int) -> PartitionChangeRecord:
        p, version = self._p, self._version
        recovering = target.unclean and p.leader_recovery_state != RECOVERING
        directories = None
        if target.replicas != p.replicas and version >= 1:
            directories = directories_for(self._image, p, target.replicas)
        elr = None
        if version >= 2 and target.elr != (p.elr or ()):
            elr = target.elr
        return PartitionChangeRecord(
            partition_id=p.partition_id,
            topic_id=p.topic_id,
            isr=target.isr if target.isr != p.isr else None,
            leader=leader_field,
            replicas=target.replicas if target.replicas != p.replicas else None,
            adding_replicas=target.adding if target.adding != p.adding else None,
            removing_replicas=target.removing if target.removing != p.removing else None,
            leader_recovery_state=RECOVERING if recovering else -1,
            directories=directories,
            eligible_leader_replicas=elr,
            last_known_elr=_last_known_elr(p, leader_field, self._elr),
        )

    def _carried_plan(self, target: _Target, record: PartitionChangeRecord) -> Replicas:
        """The final target a replica change carries on: ``()`` once the replicas are the
        final target *and* its preferred leader leads; until then the target stays, so the
        scheduler elects it (the seed's "elect the new preferred leader"), also after a move
        that fitted in one step."""
        final = self._p.final_target
        assert final is not None
        done = (
            record.replicas == final
            and not target.adding
            and not target.removing
            and target.leader == final[0]
        )
        return () if done else final


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
