"""The heal phase of a simulation: after the fault phase every fault is healed and every
stopped node started again; the run must then recover within the liveness bound
(``SimConfig.liveness_bound_ms``): a record appended after the heal commits and every node
applies it, then (with voter changes) the final reassignment completes and (controller
profile) every partition reassignment reaches its target and then every partition is led by
its preferred replica again through the periodic preferred election alone (Kafka's
``electPreferred``; the simulated controllers check every ``SIM_IMBALANCE_CHECK_MS``). What
does not happen in time is the ``liveness``, ``reassignments-converge`` or
``healed-cluster-balanced`` violation."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, NoReturn

from pykraft.sim.history import InvariantViolation

if TYPE_CHECKING:
    from pykraft.sim.simulator import Simulation

__all__ = [
    "BALANCE_BOUND_MS",
    "MOVES_BOUND_MS",
    "SIM_IMBALANCE_CHECK_MS",
    "heal",
    "heal_bound_ms",
    "liveness_failure",
    "recovered",
    "unrecovered",
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


def heal(sim: Simulation) -> None:
    """End the fault phase: every fault healed, every stopped node started again."""
    sim.healing = True
    sim.trace_event(None, "phase", phase="heal")
    sim.heal_started_ms = sim.now_ms
    sim.nemesis.heal_all()
    sim.network.heal_all()
    for node in sim.nodes:
        if node.core is None:
            sim.restart_node(node)


def heal_bound_ms(sim: Simulation) -> int:
    """How long the heal phase may last: the liveness bound, then the final reassignment's
    bound, then (controller profile) the moves' and the balance's."""
    bound = sim.config.liveness_bound_ms
    if sim.final_reassignment is not None:
        bound += sim.final_reassignment.bound_ms
    if sim.brokers is not None:
        bound += MOVES_BOUND_MS + BALANCE_BOUND_MS
    return bound


def unrecovered(sim: Simulation) -> None:
    """The heal phase ended by its bound: raise the violation of the first thing that did
    not happen (nothing when everything did, at the last event)."""
    if sim.result.recovery_ms is None:
        liveness_failure(sim)
    final = sim.final_reassignment
    if final is not None and not final.step(sim.now_ms):
        final.fail(sim.now_ms)
    if sim.brokers is None:
        return
    pending = sim.brokers.pending_moves()
    if pending:
        _moves_failure(pending)
    if not _balanced(sim):
        _balance_failure(sim)


def recovered(sim: Simulation) -> bool:
    """A record appended after the heal committed and every node applied it (then, with
    voter changes, the final reassignment completed)."""
    final = sim.final_reassignment
    if sim.result.recovery_ms is not None:
        return (final is None or final.step(sim.now_ms)) and _moves_settled(sim)
    target = sim.stats.probe_next_offset
    if target is None:
        if sim.now_ms > sim.heal_started_ms + sim.config.liveness_bound_ms:
            liveness_failure(sim)
        return False
    for node in sim.nodes:
        if node.core is None or node.app.applied_end < target:
            if sim.now_ms > sim.heal_started_ms + sim.config.liveness_bound_ms:
                liveness_failure(sim)
            return False
    sim.result.recovery_ms = sim.now_ms - sim.heal_started_ms
    if final is None:
        return _moves_settled(sim)
    final.start(sim.now_ms)
    return final.step(sim.now_ms) and _moves_settled(sim)


def _moves_settled(sim: Simulation) -> bool:
    """Controller profile: once the quorum recovered, every partition reassignment (KIP-455
    or KIP-435 steps) reaches its target within ``MOVES_BOUND_MS`` (the brokers are all
    back and report new replicas in sync at once while healing); else the invariant
    ``reassignments-converge`` fails."""
    if sim.brokers is None:
        return True
    pending = sim.brokers.pending_moves()
    if not pending:
        return _balanced(sim)
    sim.moves_settled_ms = None
    recovered_at = sim.heal_started_ms + (sim.result.recovery_ms or 0)
    if sim.now_ms > recovered_at + MOVES_BOUND_MS:
        _moves_failure(pending)
    return False


def _moves_failure(pending: list[str]) -> NoReturn:
    raise InvariantViolation(
        "reassignments-converge",
        f"{len(pending)} partitions still moving {MOVES_BOUND_MS} ms after the quorum "
        f"recovered: {pending[:5]}",
    )


def _balanced(sim: Simulation) -> bool:
    """Controller profile, once the moves settled: within ``BALANCE_BOUND_MS`` every
    partition is led by its first replica, by the periodic preferred election (no one asks
    for one while healing); else the invariant ``healed-cluster-balanced`` fails."""
    node = sim.leader()
    if node is None or node.controller is None:
        return False
    imbalanced = node.controller.image.topics_image.imbalanced
    if not imbalanced:
        return True
    if sim.moves_settled_ms is None:
        sim.moves_settled_ms = sim.now_ms
    if sim.now_ms > sim.moves_settled_ms + BALANCE_BOUND_MS:
        _balance_failure(sim)
    return False


def _balance_failure(sim: Simulation) -> NoReturn:
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


def liveness_failure(sim: Simulation) -> NoReturn:
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
