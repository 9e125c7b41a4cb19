"""The nemesis: injects the faults of a ``FaultProfile`` and heals each after a while.

Every ``nemesis_interval_ms`` (on average) it picks a fault kind by weight and a target with
its own random sub-stream. A fault that cannot be injected right now (its bound is reached,
no eligible target) is skipped and counted as ``skipped_<kind>``.

Bounds (kept so that a run tests safety under faults the protocol must tolerate):

* Stopped nodes: crash, shutdown and wipe stop a node; at most ``profile.max_down`` voters,
  or by default a minority ((voters - 1) // 2), are unavailable (down, or wiped) at once,
  in *every* voter set a live node holds (during a voter change two sets are in play).
  Observers are never limited (they count toward no majority).
* **The disk-wipe rule.** A wiped node comes back as a *new replica* with a new directory id
  (KIP-853, SPEC D1): the voter set names every voter by replica key *with* its directory
  id, so the new replica is not a voter: it cannot vote (INVALID_VOTER_KEY, D7) and its empty
  log is never counted toward a high watermark. Raft tolerates the permanent loss of a
  minority of voters, so a voter is wiped only while fewer than a minority of the voters
  (of every voter set a live node holds) are unavailable, whatever ``max_down`` says. Under kraft.version 0
  a wiped voter stays unavailable for good; under kraft.version 1 a ``reassign`` replaces
  it. Observers may be wiped any number of times. A profile that upgrades kraft.version
  wipes no voter before the upgrade commits (the lost voter could never report its
  supported range, so the upgrade could never happen). Wiping a voter in place as the *same*
  replica (kraft.version 0 without directory ids) is not injected: its lost vote and log
  could legitimately elect two leaders in one epoch or lose committed data.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from pykraft.raft.voters import VoterSet
from pykraft.sim.operations import OperationsSite, known_voter_sets, upgrade_done
from pykraft.sim.profiles import FaultProfile

if TYPE_CHECKING:
    from pykraft.sim.majority_loss import MajorityLoss
    from pykraft.sim.network import Network
    from pykraft.sim.node import SimNode
    from pykraft.sim.operations import Operations


class NemesisSite(OperationsSite, Protocol):
    """What the nemesis uses of the simulation (``Simulation``): what the operations use,
    and the network, the operations, node crashes and the heal schedule."""

    network: Network
    operations: Operations
    majority_loss: MajorityLoss

    def schedule_heal(self, at_ms: int, fault_id: int) -> None: ...

    def count_fault(self, kind: str) -> None: ...

    def crash_node(self, node: SimNode) -> None: ...


@dataclass(slots=True)
class ActiveFault:
    """A fault in force until ``undo`` runs (at its heal time or the heal phase)."""

    fault_id: int
    kind: str
    targets: list[object]
    undo: Callable[[], None] = field(repr=False)


class Nemesis:
    """Invariant: ``active`` holds exactly the faults injected and not yet healed."""

    __slots__ = ("_kinds", "_rng", "_sim", "_total_weight", "active", "next_fault_id", "profile")

    def __init__(self, sim: NemesisSite, profile: FaultProfile, rng: random.Random) -> None:
        self._sim = sim
        self.profile = profile
        self._rng = rng
        self._kinds = profile.nemesis_weights()
        self._total_weight = sum(w for _k, w in self._kinds)
        self.active: dict[int, ActiveFault] = {}
        self.next_fault_id = 1

    @property
    def enabled(self) -> bool:
        return self.profile.nemesis_interval_ms > 0 and bool(self._kinds)

    def next_interval_ms(self) -> int:
        return int(self.profile.nemesis_interval_ms * (0.5 + self._rng.random()))

    def _pick_kind(self) -> str:
        x = self._rng.random() * self._total_weight
        for kind, weight in self._kinds:
            x -= weight
            if x < 0:
                return kind
        return self._kinds[-1][0]

    def _duration_ms(self) -> int:
        p = self.profile
        return p.fault_min_ms + int(self._rng.random() * (p.fault_max_ms - p.fault_min_ms))

    # -- injection ---------------------------------------------------------------------------

    def strike(self) -> None:
        """Inject one fault (or skip it when not allowed now)."""
        kind = self._pick_kind()
        inject = {
            "link_loss": self._link_loss,
            "partition": self._partition,
            "one_way": self._one_way,
            "crash": self._stop,
            "shutdown": self._stop,
            "wipe": self._stop,
            "lose_majority": self._lose_majority,
        }.get(kind, self._operation)
        fault = inject(kind)
        sim = self._sim
        if fault is None:
            sim.count_fault(f"skipped_{kind}")
            return
        duration_ms = self._duration_ms()
        self.active[fault.fault_id] = fault
        sim.count_fault(kind)
        sim.schedule_heal(sim.now_ms + duration_ms, fault.fault_id)
        sim.trace_event(None, "fault", fault=kind, targets=fault.targets, duration_ms=duration_ms)

    def heal(self, fault_id: int) -> None:
        fault = self.active.pop(fault_id, None)
        if fault is None:
            return  # already healed by the heal phase
        fault.undo()
        self._sim.trace_event(None, "heal", fault=fault.kind, targets=fault.targets)

    def heal_all(self) -> None:
        for fault_id in sorted(self.active):
            self.heal(fault_id)

    def _new(self, kind: str, targets: list[object], undo: Callable[[], None]) -> ActiveFault:
        fault = ActiveFault(self.next_fault_id, kind, targets, undo)
        self.next_fault_id += 1
        return fault

    def _link_loss(self, kind: str) -> ActiveFault | None:
        sim = self._sim
        ids = list(sim.network.node_ids)
        src, dst = self._rng.sample(ids, 2)
        net = sim.network
        if net.link_drop[src][dst]:
            return None
        net.link_drop[src][dst] = self.profile.link_loss_rate

        def undo() -> None:
            net.link_drop[src][dst] = 0.0

        return self._new(kind, [[src, dst]], undo)

    def _partition(self, kind: str) -> ActiveFault | None:
        net = self._sim.network
        ids = list(net.node_ids)
        size = 1 + int(self._rng.random() * (len(ids) - 1))
        side = sorted(self._rng.sample(ids, size))
        links = net.partition_links(side)
        net.block(links)
        return self._new(kind, list(side), lambda: net.unblock(links))

    def _one_way(self, kind: str) -> ActiveFault | None:
        net = self._sim.network
        ids = list(net.node_ids)
        node = ids[int(self._rng.random() * len(ids))]
        outbound = self._rng.random() < 0.5
        links = [(node, o) if outbound else (o, node) for o in ids if o != node]
        net.block(links)
        label = f"{node}->*" if outbound else f"*->{node}"
        return self._new(kind, [label], lambda: net.unblock(links))

    def _stop(self, kind: str) -> ActiveFault | None:
        sim = self._sim
        by_id = {n.id: n for n in sim.nodes}
        # Per known voter set: (its voters, how many are unavailable now (down, or wiped:
        # their replica key is gone until a voter change replaces it), its minority).
        budgets: list[tuple[VoterSet, int, int]] = []
        for voters in known_voter_sets(sim):
            unavailable = sum(
                1
                for key in voters.keys
                if key.id not in by_id or not by_id[key.id].up or by_id[key.id].key != key
            )
            budgets.append((voters, unavailable, (len(voters) - 1) // 2))
        candidates: list[SimNode] = []
        for n in sim.nodes:
            if n.up and all(
                self._can_spare(voters, unavailable, minority, n, kind)
                for voters, unavailable, minority in budgets
            ):
                candidates.append(n)
        if not candidates:
            return None
        node = candidates[int(self._rng.random() * len(candidates))]
        if kind == "shutdown":
            sim.shutdown_node(node)
        else:
            sim.crash_node(node)
        if kind == "wipe":
            node.wipe()

        def undo() -> None:
            if not node.up:
                sim.restart_node(node)

        return self._new(kind, [node.id], undo)

    def _can_spare(
        self, voters: VoterSet, unavailable: int, minority: int, node: SimNode, kind: str
    ) -> bool:
        if not voters.is_voter(node.key):
            return True  # observers count toward no majority
        limit = minority if self.profile.max_down is None else self.profile.max_down
        if unavailable >= limit:
            return False
        if kind == "wipe" and not upgrade_done(self._sim):
            # A lost voter never reports its kraft.version range: no upgrade (D10).
            return False
        # Never lose the disks of a majority, whatever max_down says.
        return kind != "wipe" or unavailable < minority

    def _lose_majority(self, kind: str) -> ActiveFault | None:
        """A majority lost for good; its heal is the recovery (``pykraft.sim.majority_loss``)."""
        struck = self._sim.majority_loss.strike(self._rng)
        return None if struck is None else self._new(kind, *struck)

    def _operation(self, kind: str) -> ActiveFault | None:
        """A membership operation (``pykraft.sim.operations``); nothing to undo."""
        targets = self._sim.operations.run(kind, self._rng)
        return None if targets is None else self._new(kind, targets, lambda: None)
