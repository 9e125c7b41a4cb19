"""A majority of the voters lost for good, and the quorum brought back from a survivor the way
an operator does it with ``pykraft metadata-recovery`` (issue 48): profile ``majority-loss``.

Theory of operation. The nemesis's ``lose_majority`` fault picks a majority of the voter set
in force (every voter up, with its replica key; at least three voters) and loses them: each
is stopped and its disk wiped, so what it alone held is gone. Nothing can commit until the
fault "heals" (its duration, or the heal phase), which is the operator's recovery, through the
tool's own code (``pykraft.storage.survey`` and ``pykraft.storage.recovery``):

1. every surviving node is stopped, and each is surveyed (``survey_replica``: the same report
   as ``metadata-recovery survey``, read from the in-memory storage);
2. the seed is what ``recommend`` names among the survivors that can seed (a voter of the
   voter set its own log holds, ``seed_entry``): the highest last epoch, then the longest log;
3. ``force_standalone_replica`` appends the VotersRecord naming the seed alone at an epoch
   above every one a survivor knew, and moves its quorum state there;
4. the seed starts, then the other survivors, then the lost nodes (new replicas, formatted
   with ``--no-initial-controllers``); reassignments grow the quorum back (the profile's
   ``reassign`` faults, and the heal phase's final reassignment).

The recovery point and what is checked. Committed batches the seed lacks were lost with the
majority: that is what losing a majority means. The recovery point is where the seed's log
stops matching the committed history; the history is rewound to it (``CommittedHistory.rewind``)
and from there the usual invariants hold again: nothing committed before the point is ever
lost or changed, on any node. Checked at the recovery (Raft's argument: the most up-to-date
log holds every committed batch any log of lower rank holds, so the seed's choice loses
nothing a survivor still had):

* ``recovery-seed-holds-committed``: no survivor that could seed holds more of the committed
  history than the seed (a seed chosen by log end offset alone fails it);
* ``recovery-epoch-above-survivors``: no surviving node reached (let alone led) an epoch at or
  above the new one: the seed leading in it would write other batches under an (offset,
  epoch) a survivor may hold.

A survivor whose newest snapshot lies beyond the point (an observer that had applied more
than the seed holds) cannot follow the recovered log, which diverges below that snapshot: it
is formatted anew before it starts, as the runbook says. The voter set's jump to the seed
alone is declared to the voter invariants (``VoterInvariants.recovered``).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Final, Protocol

from pykraft.records import BATCH_FIELDS
from pykraft.sim.history import InvariantViolation
from pykraft.sim.operations import OperationsSite, current_voters
from pykraft.storage.recovery import RecoveryError, force_standalone_replica, seed_entry
from pykraft.storage.survey import DirectorySurvey, recommend, survey_replica

if TYPE_CHECKING:
    from pykraft.sim.config import SimResult
    from pykraft.sim.history import CommittedHistory
    from pykraft.sim.node import SimNode
    from pykraft.sim.spec_trace import SpecChecker

__all__ = ["CLUSTER_ID", "MajorityLoss"]

CLUSTER_ID: Final = "SimulatedKRaftCluster0"


class MajorityLossSite(OperationsSite, Protocol):
    """What the majority loss uses of the simulation (``Simulation``), beyond what the
    operations use: the committed history, node stops and the fault counts."""

    history: CommittedHistory
    result: SimResult
    spec: SpecChecker

    def crash_node(self, node: SimNode) -> None: ...

    def count_fault(self, kind: str) -> None: ...


class MajorityLoss:
    """Invariant: ``lost`` holds the nodes of the loss in force (down, wiped), empty when
    none is; one loss at a time."""

    __slots__ = ("_sim", "lost", "lost_offsets")

    def __init__(self, sim: MajorityLossSite) -> None:
        self._sim = sim
        self.lost: list[SimNode] = []
        self.lost_offsets = 0  # committed offsets lost with majorities, over the run

    def strike(self, rng: random.Random) -> tuple[list[object], Callable[[], None]] | None:
        """Lose a majority of the voter set in force; returns the lost ids and the recovery
        (the fault's undo), or None when no loss can be injected now."""
        if self.lost:
            return None
        voters = current_voters(self._sim)
        by_id = {n.id: n for n in self._sim.nodes}
        members = [
            by_id[key.id]
            for key in voters.keys
            if key.id in by_id and by_id[key.id].key == key and by_id[key.id].up
        ]
        if len(voters) < 3 or len(members) < len(voters):
            return None
        lost = sorted(rng.sample(members, len(voters) // 2 + 1), key=lambda n: n.id)
        for node in lost:
            self._sim.crash_node(node)
            node.wipe()
        self.lost = lost
        return [n.id for n in lost], self.recover

    def recover(self) -> None:
        """The operator's recovery (module docstring, steps 1-4)."""
        sim = self._sim
        lost_ids = {n.id for n in self.lost}
        survivors = [n for n in sim.nodes if n.id not in lost_ids]
        for node in survivors:
            if node.up:
                sim.crash_node(node)
        surveys = {n.id: _survey(n) for n in survivors}
        seedable = [s for s in surveys.values() if _can_seed(s)]
        seed = recommend(seedable).seed
        if seed is None:
            raise InvariantViolation(
                "recovery-has-seed",
                f"no survivor of {sorted(surveys)} can seed the quorum (none is a voter of the "
                "voter set its own log holds)",
            )
        by_id = {n.id: n for n in survivors}
        seed_node = by_id[seed.node_id or 0]
        point = _committed_prefix(sim.history, seed_node)
        for other in seedable:
            held = _committed_prefix(sim.history, by_id[other.node_id or 0])
            if held > point:
                raise InvariantViolation(
                    "recovery-seed-holds-committed",
                    f"the seed, node {seed.node_id} (last epoch {seed.last_epoch}, log end "
                    f"{seed.log_end_offset}), holds the committed history to {point} but "
                    f"survivor {other.node_id} (last epoch {other.last_epoch}, log end "
                    f"{other.log_end_offset}) holds it to {held}",
                    seed.node_id,
                )
        storage = (seed_node.log, seed_node.quorum_state)
        note = force_standalone_replica(seed, storage, sim.now_ms, list(surveys.values()))
        for node in survivors:
            if node.max_epoch >= note.epoch:
                raise InvariantViolation(
                    "recovery-epoch-above-survivors",
                    f"the recovery made epoch {note.epoch} the seed's (node {seed_node.id}), but "
                    f"survivor {node.id} reached epoch {node.max_epoch}",
                    node.id,
                )
        lost = sim.checker.recovered(point, note.epoch, note.offset, lost_ids)
        sim.spec.recovered(note.epoch, point)
        self.lost_offsets += lost
        # Reported with the faults: recoveries, and the committed offsets lost with majorities.
        faults = sim.result.faults
        faults["recovered"] = faults.get("recovered", 0) + 1
        faults["recovered_lost_offsets"] = faults.get("recovered_lost_offsets", 0) + lost
        sim.trace_event(
            seed_node.id,
            "recovered",
            seed=seed_node.id,
            epoch=note.epoch,
            point=point,
            lost_offsets=lost,
            survivors=sorted(surveys),
        )
        self._restart(seed_node, survivors, point)

    def _restart(self, seed: SimNode, survivors: list[SimNode], point: int) -> None:
        sim = self._sim
        sim.restart_node(seed)
        for node in survivors:
            if node is seed:
                continue
            latest = node.snapshots.latest()
            if latest is not None and latest.offset > point:
                node.wipe()  # it applied what the recovered log no longer holds
                sim.count_fault("recovery_wiped_survivor")
            sim.restart_node(node)
        for node in self.lost:
            if not node.up:  # (a crash's heal may have started it, empty, already)
                sim.restart_node(node)
        self.lost = []


def _survey(node: SimNode) -> DirectorySurvey:
    storage = (node.log, node.snapshots, node.quorum_state)
    assert node.key.directory_id is not None  # kraft.version 1: replicas have directory ids
    label = Path(f"node-{node.id}")
    return survey_replica(label, CLUSTER_ID, node.key.directory_id, node.id, storage)


def _can_seed(survey: DirectorySurvey) -> bool:
    try:
        seed_entry(survey)
    except RecoveryError:
        return False
    return True


def _committed_prefix(history: CommittedHistory, node: SimNode) -> int:
    """Where ``node``'s log stops matching the committed history."""
    batches = [
        (base, nxt, epoch, BATCH_FIELDS.unpack_from(raw)[4])
        for base, nxt, epoch, raw in node.log.batches()
    ]
    return history.matching_prefix(node.log.start_offset, batches)
