"""The heal phase of a simulation: after the fault phase every fault is healed and every
stopped node started again; the run must then recover within the liveness bound
(``SimConfig.liveness_bound_ms``): a record appended after the heal commits and every node
applies it, then (with voter changes) the final reassignment completes and (controller
profile) every partition reassignment reaches its target. What does not happen in time is
the ``liveness`` or ``reassignments-converge`` violation."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, NoReturn

from pykraft.sim.history import InvariantViolation

if TYPE_CHECKING:
    from pykraft.sim.simulator import Simulation

__all__ = ["MOVES_BOUND_MS", "heal", "liveness_failure", "recovered"]

# Controller profile: after the heal, partition reassignments must finish within this (each
# step needs a scheduler tick, a commit and the leader's AlterPartition: about one broker
# tick; a few dozen steps under the tightest limits).
MOVES_BOUND_MS: Final = 120_000


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
        return True
    recovered_at = sim.heal_started_ms + (sim.result.recovery_ms or 0)
    if sim.now_ms > recovered_at + MOVES_BOUND_MS:
        raise InvariantViolation(
            "reassignments-converge",
            f"{len(pending)} partitions still moving {MOVES_BOUND_MS} ms after the quorum "
            f"recovered: {pending[:5]}",
        )
    return False


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
