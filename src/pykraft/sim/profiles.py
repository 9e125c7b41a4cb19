"""Fault profiles: named sets of fault rates for the simulator.

A profile has two halves:

* **Per-message network faults** applied to every message on every link: ``drop_rate``,
  ``duplicate_rate`` and ``reorder_rate`` (a reordered message skips the link's FIFO order),
  plus the latency range every message pays.
* **A nemesis**: every ``nemesis_interval_ms`` on average (uniform in [0.5, 1.5) of it) it
  injects one fault chosen by weight. Each fault heals by itself after a duration drawn
  uniformly from [``fault_min_ms``, ``fault_max_ms``), so the cluster keeps coming back; the
  final heal phase of a run (see ``pykraft.sim.simulator``) heals whatever is left.

Faults a nemesis can inject (weights are relative):

* ``link_loss``: one directed link drops ``link_loss_rate`` of its messages.
* ``partition``: a random non-empty proper subset of nodes is cut from the rest, both ways.
* ``one_way``: one node can send but not receive, or receive but not send.
* ``crash``: a node stops at once; what it had not flushed is lost; restarts later as a new
  ``RaftCore`` over the surviving storage.
* ``shutdown``: graceful stop (``RaftCore.shutdown``: a leader resigns with EndQuorumEpoch),
  then as ``crash``.
* ``wipe``: crash, the disk is replaced (all storage lost), the node restarts with a new
  directory id. See ``pykraft.sim.nemesis`` for the rule that keeps this within what the
  protocol tolerates.
* ``lose_majority`` (kraft.version 1): a majority of the voters lost for good (stopped, disks
  wiped); its "heal" is the operator's recovery with ``metadata-recovery``'s own code: the
  survivors surveyed, the seed made standalone, the others started. See
  ``pykraft.sim.majority_loss``. One loss at a time.
* ``reassign`` (kraft.version 1): the leader is given a new target voter set (KIP-642) of
  ``voters`` nodes drawn among the live ones, by their current replica keys; the core gets
  there through single AddRaftVoter / RemoveRaftVoter steps. This is also how a voter whose
  disk was wiped gets replaced (SPEC D12).

Membership operations (an operator's, not faults; see ``pykraft.sim.operations``, which
also says how each is kept from making the quorum unavailable for good):

* ``add_voter`` / ``remove_voter``: ``RaftCore.add_voter`` of a live non-voter, or
  ``remove_voter`` of any voter, the leader itself included (D4, D5).
* ``update_voter``: a node restarts with other endpoints; its UpdateRaftVoter makes the
  leader write them (D6).
* ``auto_join``: a node restarts with ``controller.quorum.auto.join.enable`` toggled (D9).
* ``cancel``: while a reassignment runs, the original (or the current) voter set is
  submitted as the target (E3).
* ``upgrade``: ``update_kraft_version(1)`` on a kraft.version 0 cluster (D10).

Membership operations need kraft.version 1, or a profile that starts at 0 and upgrades:
before the upgrade they are refused (UNSUPPORTED_VERSION), which is tested too.

``controller_brokers`` runs the metadata controller on every node, driven by simulated
brokers (see ``pykraft.sim.controller`` and ``pykraft.sim.brokers``): profile ``controller``.

``max_down`` bounds how many nodes may be stopped (crashed, shut down, wiped) at once. The
profiles ``crashes`` and ``disk`` keep a majority of voters up; ``chaos`` does not.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

# Nemesis kinds that change (or try to change) the voter set or kraft.version.
MEMBERSHIP_OPS = frozenset(
    {
        "reassign",
        "add_voter",
        "remove_voter",
        "update_voter",
        "auto_join",
        "cancel",
        "upgrade",
        "lose_majority",
    }
)


@dataclass(frozen=True, slots=True)
class FaultProfile:
    name: str
    # -- per message -------------------------------------------------------------------
    drop_rate: float = 0.0
    duplicate_rate: float = 0.0
    reorder_rate: float = 0.0
    latency_min_ms: int = 1
    latency_max_ms: int = 5
    # -- nemesis -------------------------------------------------------------------------
    nemesis_interval_ms: int = 0  # 0: no nemesis
    fault_min_ms: int = 1_000
    fault_max_ms: int = 6_000
    link_loss_weight: float = 0.0
    link_loss_rate: float = 0.5
    partition_weight: float = 0.0
    one_way_weight: float = 0.0
    crash_weight: float = 0.0
    shutdown_weight: float = 0.0
    wipe_weight: float = 0.0
    lose_majority_weight: float = 0.0  # kraft.version 1 only (pykraft.sim.majority_loss)
    reassign_weight: float = 0.0  # kraft.version 1 only: a new target voter set (KIP-642)
    # Membership operations (see the module docstring): kraft.version 1, or upgrade_weight.
    add_voter_weight: float = 0.0
    remove_voter_weight: float = 0.0
    update_voter_weight: float = 0.0
    auto_join_weight: float = 0.0
    cancel_weight: float = 0.0
    upgrade_weight: float = 0.0  # kraft.version 0 only: update_kraft_version(1)
    # 0: static voters (controller.quorum.voters); 1: voters from the log, bootstrapped by a
    # checkpoint written at format time (KIP-853), and voter changes possible.
    kraft_version: int = 0
    # None: a minority of the voters (the quorum stays available); else an absolute bound.
    max_down: int | None = None
    # The metadata controller on every node, driven by this many simulated Kafka brokers
    # (pykraft.sim.brokers); 0: the plain application only.
    controller_brokers: int = 0

    def __post_init__(self) -> None:
        for name in ("drop_rate", "duplicate_rate", "reorder_rate", "link_loss_rate"):
            value = getattr(self, name)
            assert 0.0 <= value <= 1.0, (name, value)
        assert 0 <= self.latency_min_ms <= self.latency_max_ms, self
        assert 0 < self.fault_min_ms <= self.fault_max_ms, self
        assert self.nemesis_interval_ms >= 0, self
        assert self.kraft_version in (0, 1), self
        assert self.upgrade_weight == 0 or self.kraft_version == 0, self
        assert self.lose_majority_weight == 0 or self.kraft_version == 1, self
        changes_voters = self.kraft_version == 1 or self.upgrade_weight > 0
        assert changes_voters or not self.membership_ops, self

    @property
    def membership_ops(self) -> bool:
        """The voter set may change: the run ends by checking a reassignment completes."""
        return any(w > 0 for k, w in self.nemesis_weights() if k in MEMBERSHIP_OPS)

    def nemesis_weights(self) -> tuple[tuple[str, float], ...]:
        """(fault kind, weight) for every fault with a positive weight, in a fixed order."""
        pairs = (
            ("link_loss", self.link_loss_weight),
            ("partition", self.partition_weight),
            ("one_way", self.one_way_weight),
            ("crash", self.crash_weight),
            ("shutdown", self.shutdown_weight),
            ("wipe", self.wipe_weight),
            ("lose_majority", self.lose_majority_weight),
            ("reassign", self.reassign_weight),
            ("add_voter", self.add_voter_weight),
            ("remove_voter", self.remove_voter_weight),
            ("update_voter", self.update_voter_weight),
            ("auto_join", self.auto_join_weight),
            ("cancel", self.cancel_weight),
            ("upgrade", self.upgrade_weight),
        )
        return tuple((kind, w) for kind, w in pairs if w > 0)

    def describe(self) -> str:
        default = FaultProfile(name=self.name)
        changed = [
            f"{f.name}={getattr(self, f.name)}"
            for f in fields(self)
            if f.name != "name" and getattr(self, f.name) != getattr(default, f.name)
        ]
        return f"{self.name}({', '.join(changed)})"


PROFILES: dict[str, FaultProfile] = {
    p.name: p
    for p in (
        FaultProfile(name="none"),
        FaultProfile(
            name="lossy",
            drop_rate=0.05,
            duplicate_rate=0.02,
            reorder_rate=0.05,
            latency_max_ms=20,
            nemesis_interval_ms=3_000,
            link_loss_weight=1.0,
        ),
        FaultProfile(
            name="partitions",
            latency_max_ms=10,
            nemesis_interval_ms=2_500,
            partition_weight=2.0,
            one_way_weight=1.0,
        ),
        FaultProfile(
            name="crashes",
            latency_max_ms=10,
            nemesis_interval_ms=2_500,
            crash_weight=2.0,
            shutdown_weight=1.0,
        ),
        FaultProfile(
            name="disk",
            latency_max_ms=10,
            nemesis_interval_ms=2_500,
            crash_weight=1.0,
            wipe_weight=1.0,
        ),
        FaultProfile(
            name="reconfig",
            latency_max_ms=10,
            nemesis_interval_ms=2_500,
            reassign_weight=3.0,
            partition_weight=1.0,
            crash_weight=1.0,
            wipe_weight=0.5,
            kraft_version=1,
        ),
        # kraft.version 1 churn: every membership operation, plus crashes, partitions, wipes.
        FaultProfile(
            name="membership",
            latency_max_ms=10,
            nemesis_interval_ms=2_000,
            add_voter_weight=2.0,
            remove_voter_weight=2.0,
            update_voter_weight=1.0,
            auto_join_weight=1.0,
            reassign_weight=1.0,
            cancel_weight=1.0,
            partition_weight=1.0,
            crash_weight=1.0,
            wipe_weight=0.5,
            kraft_version=1,
        ),
        # A majority of the voters lost for good, and recovered from a survivor the way
        # metadata-recovery does it (issue 48); reassignments grow the quorum back.
        FaultProfile(
            name="majority-loss",
            latency_max_ms=10,
            nemesis_interval_ms=2_500,
            fault_min_ms=2_000,
            fault_max_ms=8_000,
            lose_majority_weight=1.0,
            reassign_weight=2.0,
            partition_weight=1.0,
            crash_weight=1.0,
            kraft_version=1,
        ),
        # Static voters at kraft.version 0, upgraded to 1 mid-run, then churn (operations
        # before the upgrade are refused).
        FaultProfile(
            name="upgrade",
            latency_max_ms=10,
            nemesis_interval_ms=2_000,
            upgrade_weight=1.5,
            add_voter_weight=2.0,
            remove_voter_weight=2.0,
            update_voter_weight=1.0,
            auto_join_weight=0.5,
            reassign_weight=1.0,
            cancel_weight=0.5,
            partition_weight=1.0,
            crash_weight=1.0,
            wipe_weight=0.5,
        ),
        # The metadata controller (issue 15): simulated brokers register, heartbeat, change
        # ISRs, crash, shut down and return; an admin creates and deletes topics; the
        # controller invariants (pykraft.sim.controller) after every event.
        FaultProfile(
            name="controller",
            drop_rate=0.01,
            latency_max_ms=10,
            nemesis_interval_ms=2_500,
            crash_weight=2.0,
            shutdown_weight=1.0,
            partition_weight=1.0,
            controller_brokers=3,
        ),
        FaultProfile(
            name="chaos",
            drop_rate=0.03,
            duplicate_rate=0.02,
            reorder_rate=0.05,
            latency_max_ms=30,
            nemesis_interval_ms=1_500,
            link_loss_weight=1.0,
            partition_weight=1.0,
            one_way_weight=1.0,
            crash_weight=1.0,
            shutdown_weight=0.5,
            wipe_weight=0.5,
            max_down=99,
        ),
    )
}


def get_profile(name: str) -> FaultProfile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown fault profile {name!r}; known: {', '.join(PROFILES)}") from None
