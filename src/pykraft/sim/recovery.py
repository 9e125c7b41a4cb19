"""The heal phase of a simulation: after the fault phase every fault is healed and every
stopped node started again; the run must then recover within the liveness bound
(``SimConfig.liveness_bound_ms``): a record appended after the heal commits and every node
applies it, then (with voter changes) the final reassignment completes and (controller
profile) every partition reassignment reaches its target and then every partition is led by
its preferred replica again through the periodic preferred election alone (Kafka's
``electPreferred``; the simulated controllers check every ``SIM_IMBALANCE_CHECK_MS``). What
does not happen in time is the ``liveness``, ``reassignments-converge`` or
``healed-cluster-balanced`` violation; a node still prospective or candidate once it all
happened is ``not-stuck-in-prospective``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, NoReturn, Protocol

from pykraft.sim.history import InvariantViolation

if TYPE_CHECKING:
    from pykraft.sim.brokers import SimBrokers
    from pykraft.sim.config import SimConfig, SimResult
    from pykraft.sim.nemesis import Nemesis
    from pykraft.sim.network import Network
    from pykraft.sim.node import SimNode
    from pykraft.sim.operations import FinalReassignment
    from pykraft.sim.stats import RunStats

__all__ = [
    "BALANCE_BOUND_MS",
    "MOVES_BOUND_MS",
    "SIM_IMBALANCE_CHECK_MS",
    "Recovery",
    "RecoverySite",
]

# Controller profile: after the heal, partition reassignments must finish within this (each
# step needs a scheduler tick, a commit and the leader's AlterPartition: about one broker
# tick; a few dozen steps under the tightest limits).
MOVES_BOUND_MS: Final = 120_000

# Controller profile: the simulated controllers' leader.imbalance.check.interval (Kafka's
# default, 300 s, is longer than a run). Once the moves settled (every broker back, every
# ISR full), the next two runs of electPreferred must leave no partition led by another
# replica than its first: one may start before the last ISR joined, the next sees it.
SIM_IMBALANCE_CHECK_MS: Final = 10_000
BALANCE_BOUND_MS: Final = 2 * SIM_IMBALANCE_CHECK_MS + 5_000


class RecoverySite(Protocol):
    """What the heal phase uses of the simulation (``Simulation``): the clock, the nodes, the
    faults to heal, the probe record, the final reassignment and the brokers to wait for."""

    nodes: list[SimNode]
    config: SimConfig
    now_ms: int
    nemesis: Nemesis
    network: Network
    result: SimResult
    stats: RunStats
    final_reassignment: FinalReassignment | None
    brokers: SimBrokers | None

    def leader(self) -> SimNode | None: ...

    def trace_event(self, node: int | None, kind: str, **details: object) -> None: ...

    def restart_node(self, node: SimNode) -> None: ...


class Recovery:
    """The heal phase. Invariant: ``healing`` from :meth:`heal` on; ``started_ms`` is when it
    began; ``moves_settled_ms`` is when the controller profile's moves settled with
    partitions still led by another replica than their first (None otherwise)."""

    __slots__ = ("_sim", "healing", "moves_settled_ms", "started_ms")

    def __init__(self, sim: RecoverySite) -> None:
        self._sim = sim
        self.healing = False
        self.started_ms = 0  # simulated time the heal phase began
        self.moves_settled_ms: int | None = None

    def heal(self) -> None:
        """End the fault phase: every fault healed, every stopped node started again."""
        sim = self._sim
        self.healing = True
        sim.trace_event(None, "phase", phase="heal")
        self.started_ms = sim.now_ms
        sim.nemesis.heal_all()
        sim.network.heal_all()
        for node in sim.nodes:
            if node.core is None:
                sim.restart_node(node)

    def bound_ms(self) -> int:
        """How long the heal phase may last: the liveness bound, then the final reassignment's
        bound, then (controller profile) the moves' and the balance's."""
        sim = self._sim
        bound = sim.config.liveness_bound_ms
        if sim.final_reassignment is not None:
            bound += sim.final_reassignment.bound_ms
        if sim.brokers is not None:
            bound += MOVES_BOUND_MS + BALANCE_BOUND_MS
        return bound

    def unrecovered(self) -> None:
        """The heal phase ended by its bound: raise the violation of the first thing that did
        not happen (nothing when everything did, at the last event)."""
        sim = self._sim
        if sim.result.recovery_ms is None:
            liveness_failure(sim)
        final = sim.final_reassignment
        if final is not None and not final.step(sim.now_ms):
            final.fail(sim.now_ms)
        _not_stuck_canvassing(sim)
        if sim.brokers is None:
            return
        pending = sim.brokers.pending_moves()
        if pending:
            _moves_failure(pending)
        if not self._balanced():
            _balance_failure(sim)

    def recovered(self) -> bool:
        """A record appended after the heal committed and every node applied it (then, with
        voter changes, the final reassignment completed)."""
        sim = self._sim
        final = sim.final_reassignment
        if sim.result.recovery_ms is not None:
            return (final is None or final.step(sim.now_ms)) and self._moves_settled()
        target = sim.stats.probe_next_offset
        if target is None:
            if sim.now_ms > self.started_ms + sim.config.liveness_bound_ms:
                liveness_failure(sim)
            return False
        for node in sim.nodes:
            if node.core is None or node.app.applied_end < target:
                if sim.now_ms > self.started_ms + sim.config.liveness_bound_ms:
                    liveness_failure(sim)
                return False
        sim.result.recovery_ms = sim.now_ms - self.started_ms
        if final is None:
            return self._moves_settled()
        final.start(sim.now_ms)
        return final.step(sim.now_ms) and self._moves_settled()

    def _moves_settled(self) -> bool:
        """Controller profile: once the quorum recovered, every partition reassignment (KIP-455
        or KIP-435 steps) reaches its target within ``MOVES_BOUND_MS`` (the brokers are all
        back and report new replicas in sync at once while healing); else the invariant
        ``reassignments-converge`` fails."""
        sim = self._sim
        if sim.brokers is None:
            return True
        pending = sim.brokers.pending_moves()
        if not pending:
            return self._balanced()
        self.moves_settled_ms = None
        recovered_at = self.started_ms + (sim.result.recovery_ms or 0)
        if sim.now_ms > recovered_at + MOVES_BOUND_MS:
            _moves_failure(pending)
        return False

    def _balanced(self) -> bool:
        """Controller profile, once the moves settled: within ``BALANCE_BOUND_MS`` every
        partition is led by its first replica, by the periodic preferred election (no one asks
        for one while healing); else the invariant ``healed-cluster-balanced`` fails."""
        sim = self._sim
        node = sim.leader()
        if node is None or node.controller is None:
            return False
        imbalanced = node.controller.image.topics_image.imbalanced
        if not imbalanced:
            return True
        if self.moves_settled_ms is None:
            self.moves_settled_ms = sim.now_ms
        if sim.now_ms > self.moves_settled_ms + BALANCE_BOUND_MS:
            _balance_failure(sim)
        return False


def _moves_failure(pending: list[str]) -> NoReturn:
    raise InvariantViolation(
        "reassignments-converge",
        f"{len(pending)} partitions still moving {MOVES_BOUND_MS} ms after the quorum "
        f"recovered: {pending[:5]}",
    )


def _balance_failure(sim: RecoverySite) -> NoReturn:
    node = sim.leader()
    if node is None or node.controller is None:
        raise InvariantViolation("healed-cluster-balanced", "no active controller to balance")
    image = node.controller.image
    names = sorted(f"{image.topics[t].name}-{i}" for t, i in image.topics_image.imbalanced)
    raise InvariantViolation(
        "healed-cluster-balanced",
        f"{len(names)} partitions still led by another replica than their first "
        f"{BALANCE_BOUND_MS} ms after the moves settled: {names[:5]}",
    )


def _not_stuck_canvassing(sim: RecoverySite) -> None:
    """``not-stuck-in-prospective`` (KIP-996): once the healed cluster has a leader whose
    record every node applied, no node is still canvassing for votes."""
    stuck = [
        (n.id, n.core.role)
        for n in sim.nodes
        if n.core is not None and n.core.role in ("prospective", "candidate")
    ]
    if stuck:
        raise InvariantViolation(
            "not-stuck-in-prospective",
            f"nodes {stuck} still canvass after the healed cluster elected a leader and every "
            "node applied its record",
        )


def liveness_failure(sim: RecoverySite) -> NoReturn:
    """Raise ``liveness``: what did not happen within the bound, and every node's state."""
    target = sim.stats.probe_next_offset
    states = ", ".join(
        f"{n.id}:{n.obs_role}@{n.obs_epoch} hwm {n.obs_hwm} applied {n.app.applied_end} "
        f"leo {n.log.end_offset}"
        for n in sim.nodes
    )
    what = (
        "no record appended after the heal committed"
        if target is None
        else f"the probe record committed (end {target}) but not every node applied it"
    )
    raise InvariantViolation(
        "liveness",
        f"{what} within {sim.config.liveness_bound_ms} ms of the heal; nodes: {states}",
    )
