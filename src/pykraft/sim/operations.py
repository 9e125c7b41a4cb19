"""Membership operations: what an operator does to the voter set (KIP-853, KIP-642), and the
end-of-run check that a reassignment whose target voters are up completes.

Theory of operation. The nemesis picks an operation by weight like a fault (see
``pykraft.sim.profiles``) and calls ``Operations.run``; each operation is started on the live
leader of the highest epoch through the core's admin API (``add_voter``, ``remove_voter``,
``set_target_voters``, ``update_kraft_version``), or by restarting a node with another
configuration (``update_voter``: other endpoints, so its UpdateRaftVoter makes the leader
write them; ``auto_join``: ``controller.quorum.auto.join.enable`` toggled). An operation
that has nothing to act on (no leader, no candidate node) is skipped. Outcomes the core
reports in ``Ready.completed`` are counted in ``SimResult.operations`` (e.g.
``add_voter:none``, ``remove_voter:request_timed_out``); the core may legitimately refuse
(UNSUPPORTED_VERSION before the upgrade, DUPLICATE_VOTER, another change in progress, ...).

What an operator would not do, the simulator does not do either, so that a run cannot be
made unavailable *for good* by an operation (which would be a liveness failure of the test,
not of the protocol): a voter is removed only if, in the resulting voter set, the replica
keys lost with a wiped disk stay a minority; targets are drawn among live nodes by their
current replica keys. Everything else is allowed: removing the leader itself, removing down
to one voter, adding a voter that is partitioned away, cancelling a reassignment with a
voter set whose members are down.

The final check (``FinalReassignment``). After the heal phase's probe record is applied by
every node, the simulator (kraft.version 0 profiles: after upgrading, which must succeed
too) submits one more target of ``config.voters`` nodes (plus every node with auto-join on:
it would add itself back) and requires, within ``reassignment_bound_ms``, that the committed
voter set equals the target, the target is cleared and committed, and every voter's recorded
endpoints are its current ones (D6). The bound, from the timeouts:

* a voter change an operator started during the fault phase may hold the one voter-change
  slot until its deadline:                                  voter_change_timeout_ms [30000]
* leader elections (the leader removes itself last and resigns), as in the heal phase's
  liveness bound:                                           liveness_bound_ms       [41000]
* per single step (at most one add or remove per node, plus the upgrade): the new voter
  catches up and the record commits, two fetch timeouts, plus the ApiVersions probe, one
  request timeout:                                          2 x 2000 + 2000         [6000]

With 4 nodes and Kafka's defaults: 30000 + 41000 + 9 x 6000 = 125000 ms.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from pykraft.raft.config import NotLeaderError, RaftConfig
from pykraft.raft.interfaces import OperationResult
from pykraft.raft.roles import Leader
from pykraft.raft.types import Endpoint, ReplicaKey
from pykraft.raft.voters import VoterInfo, VoterSet
from pykraft.sim.bootstrap import endpoint_of
from pykraft.sim.history import InvariantViolation

if TYPE_CHECKING:
    from pykraft.raft.core import RaftCore
    from pykraft.sim.config import SimConfig
    from pykraft.sim.invariants import InvariantChecker
    from pykraft.sim.node import SimNode


class OperationsSite(Protocol):
    """What the membership operations use of the simulation (``Simulation``): the clock, the
    nodes and the voter sets, the checker's committed voter sets, the leader, node restarts
    and the trace."""

    nodes: list[SimNode]
    voter_set: VoterSet
    kraft_version: int
    config: SimConfig
    checker: InvariantChecker
    now_ms: int

    def leader(self) -> SimNode | None: ...

    def after(self, node: SimNode) -> None: ...

    def trace_event(self, node: int | None, kind: str, **details: object) -> None: ...

    def shutdown_node(self, node: SimNode) -> None: ...

    def restart_node(self, node: SimNode) -> None: ...


def reassignment_bound_ms(config: SimConfig, nodes: int) -> int:
    """The final reassignment's bound (see the module docstring)."""
    step_ms = 2 * config.fetch_timeout_ms + config.request_timeout_ms
    steps = 2 * nodes + 1
    return RaftConfig().voter_change_timeout_ms + config.liveness_bound_ms + steps * step_ms


def node_endpoint(node: SimNode) -> Endpoint:
    return endpoint_of(node.id, node.endpoint_generation)


def voter_info(node: SimNode) -> VoterInfo:
    """``node`` as a voter: its current key and endpoint, kraft.version 0..1."""
    return VoterInfo(node.key, (node_endpoint(node),), 0, 1)


def lost_keys(sim: OperationsSite, voters: VoterSet) -> int:
    """Voters whose replica key no node holds any more (lost with a wiped disk)."""
    return sum(1 for k in voters.keys if sim.nodes[k.id - 1].key != k)


def current_voters(sim: OperationsSite) -> VoterSet:
    """The voter set as the live leader of the highest epoch sees it (the latest one,
    committed or not); without a live leader, the latest a live node of the highest epoch
    knows of (an empty, unknown set never counts)."""
    best: tuple[int, int, VoterSet] | None = None
    for node in sim.nodes:
        core = node.core
        if core is None or not len(core.voters.voters):
            continue
        rank = (core.epoch, 1 if node.obs_role == "leader" else 0)
        if best is None or rank > best[:2]:
            best = (*rank, core.voters)
    return sim.voter_set if best is None else best[2]


def known_voter_sets(sim: OperationsSite) -> list[VoterSet]:
    """Every distinct voter set a live node holds (and the initial one under kraft.version
    0); the nemesis stops a voter only if every one of them can spare it."""
    sets: list[VoterSet] = [sim.voter_set] if sim.kraft_version == 0 else []
    for node in sim.nodes:
        core = node.core
        if core is not None and len(core.voters.voters) and core.voters not in sets:
            sets.append(core.voters)
    return sets or [sim.voter_set]


def upgrade_done(sim: OperationsSite) -> bool:
    """No kraft.version upgrade is still to come (the profile has none, or it committed)."""
    if sim.kraft_version == 1 or sim.config.profile.upgrade_weight == 0:
        return True
    return len(sim.checker.voters.committed_path) > 1


class Operations:
    """Invariant: ``origin`` is the voter set when the last reassignment started (what a
    cancel restores), None before any."""

    __slots__ = ("_sim", "counts", "origin")

    def __init__(self, sim: OperationsSite) -> None:
        self._sim = sim
        self.origin: tuple[ReplicaKey, ...] | None = None
        self.counts: Counter[str] = Counter()

    def run(self, kind: str, rng: random.Random) -> list[object] | None:
        """Start one operation; its targets (for the trace), or None when skipped."""
        sim = self._sim
        if kind in ("update_voter", "auto_join"):
            return self._restart_with_new_config(kind, rng)
        leader = sim.leader()
        if leader is None or leader.core is None:
            return None
        core = leader.core
        try:
            targets = {
                "reassign": self._reassign,
                "add_voter": self._add_voter,
                "remove_voter": self._remove_voter,
                "cancel": self._cancel,
                "upgrade": self._upgrade,
            }[kind](core, rng)
        except NotLeaderError:
            return None
        if targets is not None:
            sim.after(leader)
        return targets

    def completed(self, node: SimNode, results: Sequence[OperationResult]) -> None:
        for r in results:
            self.counts[f"{r.operation}:{r.error.name}"] += 1
            self._sim.trace_event(
                node.id, "operation", operation=r.operation, error=r.error.name, op_id=r.op_id
            )

    # -- operations on the leader ------------------------------------------------------

    def _reassign(self, core: RaftCore, rng: random.Random) -> list[object] | None:
        """KIP-642: a new target voter set of ``voters`` live nodes (current keys)."""
        sim = self._sim
        live = [n for n in sim.nodes if n.up]
        size = min(len(live), sim.config.voters)
        chosen = sorted(rng.sample(live, size), key=lambda n: n.id)
        if core.target_voters is None:
            self.origin = core.voters.keys
        core.set_target_voters([voter_info(n) for n in chosen], sim.now_ms)
        return [n.id for n in chosen]

    def _cancel(self, core: RaftCore, rng: random.Random) -> list[object] | None:
        """E3: submit the voter set the reassignment started from (or the current one).
        Reassignments are usually done within a few seconds, so when none runs one is
        started first and cancelled at once, before its target record commits."""
        if core.target_voters is None:
            self._reassign(core, rng)
        sim = self._sim
        keys = core.voters.keys
        origin = self.origin
        restorable = origin is not None and all(sim.nodes[k.id - 1].key == k for k in origin)
        if origin is not None and rng.random() < 0.5 and restorable:
            keys = origin
        infos = [
            voter_info(sim.nodes[k.id - 1])
            if sim.nodes[k.id - 1].key == k
            else VoterInfo(k, (endpoint_of(k.id),), 0, 1)
            for k in keys
        ]
        core.set_target_voters(infos, sim.now_ms)
        return [k.id for k in keys]

    def _add_voter(self, core: RaftCore, rng: random.Random) -> list[object] | None:
        sim = self._sim
        ids = core.voters.ids
        candidates = [n for n in sim.nodes if n.up and n.id not in ids]
        if not candidates:
            return None
        node = candidates[int(rng.random() * len(candidates))]
        core.add_voter(node.key, (node_endpoint(node),), sim.now_ms)
        return [node.id]

    def _remove_voter(self, core: RaftCore, rng: random.Random) -> list[object] | None:
        """Any voter, the leader included; not one whose removal would leave the replica
        keys lost with wiped disks a majority (the quorum could never recover)."""
        voters = core.voters
        keys = voters.keys
        if not keys:
            return None
        key = keys[int(rng.random() * len(keys))]
        rest = voters.without(key.id)
        if len(rest) and lost_keys(self._sim, rest) > (len(rest) - 1) // 2:
            return None
        core.remove_voter(key, self._sim.now_ms)
        return [key.id]

    def _upgrade(self, core: RaftCore, rng: random.Random) -> list[object] | None:
        if core.kraft_version >= 1:
            return None
        core.update_kraft_version(1, self._sim.now_ms)
        return [1]

    # -- operations by restart ---------------------------------------------------------

    def _restart_with_new_config(self, kind: str, rng: random.Random) -> list[object] | None:
        """``update_voter``: the node comes back with another endpoint (D6). ``auto_join``:
        with auto-join toggled (D9). A graceful restart: a leader resigns first."""
        sim = self._sim
        live = [n for n in sim.nodes if n.up]
        if not live:
            return None
        node = live[int(rng.random() * len(live))]
        if kind == "update_voter":
            node.endpoint_generation += 1
        else:
            node.auto_join = not node.auto_join
        sim.shutdown_node(node)
        sim.restart_node(node)
        return [node.id]


def core_config(base: RaftConfig, node: SimNode, cache: dict[bool, RaftConfig]) -> RaftConfig:
    """The node's RaftConfig: ``base`` with its auto-join setting."""
    config = cache.get(node.auto_join)
    if config is None:
        config = cache[node.auto_join] = replace(base, auto_join=node.auto_join)
    return config


class FinalReassignment:
    """The end-of-run liveness check (module docstring). Invariant: ``target`` is set once
    the check started and never changes."""

    __slots__ = ("_rng", "_sim", "bound_ms", "next_submit_ms", "started_ms", "target")

    def __init__(self, sim: OperationsSite, rng: random.Random) -> None:
        self._sim = sim
        self._rng = rng
        self.target: dict[int, SimNode] | None = None
        self.started_ms = -1
        self.next_submit_ms = 0
        self.bound_ms = reassignment_bound_ms(sim.config, len(sim.nodes))

    def start(self, now_ms: int) -> None:
        sim = self._sim
        chosen = self._rng.sample(sim.nodes, min(len(sim.nodes), sim.config.voters))
        chosen += [n for n in sim.nodes if n.auto_join and n not in chosen]
        self.target = {n.id: n for n in sorted(chosen, key=lambda n: n.id)}
        self.started_ms = now_ms
        sim.trace_event(None, "final_reassignment", target=sorted(self.target))

    def step(self, now_ms: int) -> bool:
        """Move the check on; True once the target is reached (raises past the bound)."""
        sim = self._sim
        target = self.target
        assert target is not None
        if now_ms > self.started_ms + self.bound_ms:
            self.fail(now_ms)
        leader = sim.leader()
        core = None if leader is None else leader.core
        if leader is None or core is None:
            return False
        role = core.state
        if not isinstance(role, Leader) or core.high_watermark <= role.epoch_start_offset:
            return False
        if self._done(core):
            return True
        if now_ms < self.next_submit_ms:
            return False
        self.next_submit_ms = now_ms + sim.config.request_timeout_ms
        try:
            if core.kraft_version < 1:
                core.update_kraft_version(1, now_ms)
            else:
                in_force = core.target_voters
                if in_force is None or {k for k in in_force.keys} != self._keys():
                    core.set_target_voters([voter_info(n) for n in target.values()], now_ms)
        except NotLeaderError:
            return False
        sim.after(leader)
        return False

    def _keys(self) -> set[ReplicaKey]:
        assert self.target is not None
        return {n.key for n in self.target.values()}

    def _done(self, core: RaftCore) -> bool:
        target = self.target
        assert target is not None
        voters = core.voters
        if set(voters.keys) != self._keys() or core.uncommitted_voter_change:
            return False
        cleared = core.control.target_history.last_entry()
        if core.target_voters is not None or (
            cleared is not None and cleared[0] >= core.high_watermark
        ):
            return False
        return all(voters.voters[vid].endpoints == (node_endpoint(n),) for vid, n in target.items())

    def fail(self, now_ms: int) -> None:
        sim = self._sim
        target = self.target
        assert target is not None
        leader = sim.leader()
        core = None if leader is None else leader.core
        state = (
            "no leader"
            if leader is None or core is None
            else f"leader {leader.id} (epoch {core.epoch}, kraft.version {core.kraft_version}) "
            f"has voters {sorted(str(k) for k in core.voters.keys)}, target "
            f"{None if core.target_voters is None else sorted(map(str, core.target_voters.keys))}"
            f", pending change {core.voter_change}, progress {core.reassignment_progress()}"
            + "".join(
                f"; voter {vid} recorded at {info.endpoints[0].host if info.endpoints else None}"
                f" but listens at {node_endpoint(sim.nodes[vid - 1]).host}"
                for vid, info in core.voters.voters.items()
                if info.endpoints != (node_endpoint(sim.nodes[vid - 1]),)
            )
        )
        raise InvariantViolation(
            "reassignment-liveness",
            f"the reassignment to {sorted(str(n.key) for n in target.values())} (every "
            f"target voter up) did not complete within {self.bound_ms} ms of its start at "
            f"{self.started_ms} ms: {state}",
        )
