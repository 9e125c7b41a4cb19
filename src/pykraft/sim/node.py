"""One simulated node: its storage, its current ``RaftCore`` incarnation and its application,
plus the driver that performs the core's ``Ready`` exactly as its docstring says.

Lifecycle: ``start`` builds a new ``RaftCore`` over the surviving storage (first start and
every restart); ``crash`` drops the core and what the storage had not made durable;
``wipe`` (after a crash) loses the whole disk and gives the node a new directory id, so it
comes back as a *different replica* with the same id (KIP-853), which the voter set (keyed by
replica key with directory ids) does not count as a voter.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Sequence

from pykraft.raft.core import RaftCore
from pykraft.raft.interfaces import OperationResult
from pykraft.raft.messages import AddRaftVoterRequest, Outbound
from pykraft.raft.roles import Leader
from pykraft.raft.types import ReplicaKey
from pykraft.sim.app import StateMachine
from pykraft.sim.controller import SimController
from pykraft.sim.history import CommittedHistory, InvariantViolation
from pykraft.sim.memory import (
    MemoryLog,
    MemoryQuorumStateStore,
    MemorySnapshotStore,
    make_durable_at_once,
)

# A Ready whose flush produced more output is followed by another Ready; each on_flushed can
# only move the core forward once, so a handful of rounds always suffices.
READY_ROUNDS_MAX = 16

# Observed roles, as ``RaftCore.role`` spells them.
LEADER = "leader"

Ghost = tuple[int, int, list[int], list[int]]
Sender = Callable[["SimNode", Outbound, int], None]
Observe = Callable[["SimNode", int], None]
Completed = Callable[["SimNode", Sequence[OperationResult]], None]


def new_directory_id(rng: random.Random) -> uuid.UUID:
    return uuid.UUID(int=rng.getrandbits(128), version=4)


class SimNode:
    """Invariants: ``core is None`` exactly when the node is down; ``incarnation`` grows by
    one per stop, so messages addressed to an older incarnation are dropped; ``max_epoch``
    is the largest epoch any incarnation over this disk reported (reset by ``wipe``)."""

    __slots__ = (
        "app",
        "auto_join",
        "controller",
        "core",
        "deadline_ms",
        "endpoint_generation",
        "ghosts",
        "history",
        "id",
        "incarnation",
        "is_voter_slot",
        "key",
        "log",
        "max_epoch",
        "obs_epoch",
        "obs_hwm",
        "obs_leader",
        "obs_leader_state",
        "obs_role",
        "obs_start_offset",
        "obs_voters_offset",
        "on_completed",
        "poll_at_ms",
        "quorum_state",
        "replaced",
        "rng",
        "self_check",
        "snapshots",
        "snapshots_created",
        "snapshots_installed",
        "wiped_epoch",
    )

    def __init__(
        self,
        node_id: int,
        is_voter_slot: bool,
        rng: random.Random,
        history: CommittedHistory,
        snapshot_every_records: int,
    ) -> None:
        self.id = node_id
        self.is_voter_slot = is_voter_slot  # configured as a voter (before any wipe)
        self.rng = rng
        self.key = ReplicaKey(node_id, new_directory_id(rng))
        self.replaced = False  # wiped at least once: a new replica key, no longer a voter
        self.history = history
        self.log = MemoryLog()
        self.quorum_state = MemoryQuorumStateStore()
        self.snapshots = MemorySnapshotStore()
        self.app = StateMachine(node_id, history, snapshot_every_records)
        self.core: RaftCore | None = None
        self.incarnation = 0
        self.deadline_ms = 0
        self.poll_at_ms = -1  # time of the earliest pending poll event, -1 when none
        self.snapshots_created = 0
        self.snapshots_installed = 0
        self.max_epoch = 0
        self.wiped_epoch = -1
        # What each former replica key of this node held durably when its disk was lost:
        # key -> (log start offset, log end offset, batch bases, batch epochs).
        # Acknowledgements sent before the loss may still arrive and count toward a high
        # watermark, so the majority check credits them (see invariants).
        self.ghosts: dict[ReplicaKey, Ghost] = {}
        self.self_check = True  # run the core's check_invariants after every event
        self.obs_role = "down"
        self.obs_epoch = 0
        self.obs_hwm = 0
        self.obs_leader = -1
        self.obs_start_offset = 0
        # Membership (see pykraft.sim.operations): the config of the next incarnation.
        self.auto_join = False  # controller.quorum.auto.join.enable (D9)
        self.endpoint_generation = 0  # bumped by each endpoint change (D6)
        # The Leader role object while (or last time) this node led: the invariants read
        # its progress after a leader that removed itself resigned in the same event.
        self.obs_leader_state: Leader | None = None
        # Offset of the newest VotersRecord observed in this incarnation's log (-2: none).
        self.obs_voters_offset = -2
        # Admin operations the core reported finished (``Ready.completed``).
        self.on_completed: Completed | None = None
        # The metadata controller (profile ``controller``), else None.
        self.controller: SimController | None = None

    @property
    def up(self) -> bool:
        return self.core is not None

    @property
    def is_voter(self) -> bool:
        """A voter of the initial voter set: configured as one and never wiped (for the
        current voter set under kraft.version 1 see ``operations.current_voters``)."""
        return self.is_voter_slot and not self.replaced

    # -- lifecycle -------------------------------------------------------------------------

    def start(self, core_factory: Callable[[SimNode], RaftCore]) -> None:
        assert self.core is None
        self.app.reset()
        if self.controller is not None:
            self.controller.reset()
        latest = self.snapshots.latest()
        if latest is not None:
            self.app.load_snapshot(self.snapshots, latest)
        core = core_factory(self)
        self.core = core
        if self.controller is not None:
            self.controller.load_snapshot(core)
        self.obs_role = core.role
        self.obs_epoch = core.epoch
        self.obs_hwm = core.high_watermark
        self.obs_leader = core.leader_id
        self.obs_start_offset = self.log.start_offset
        self.obs_leader_state = None
        entry = core.voter_history.last_entry()
        self.obs_voters_offset = -2 if entry is None else entry[0]

    def crash(self) -> None:
        assert self.core is not None
        self.core = None
        if self.controller is not None:
            self.controller.reset()
        self.incarnation += 1
        self.poll_at_ms = -1
        self.obs_role = "down"
        self.log.crash()
        self.quorum_state.crash()
        self.snapshots.crash()

    def wipe(self) -> None:
        """The disk was replaced (the node is down): a new, empty replica with a new
        directory id. Under kraft.version 1 the simulator then formats it again with
        ``format_blank`` (``--no-initial-controllers``)."""
        assert self.core is None
        # Down, so everything still in the log is durable.
        batches = self.log.batches()
        self.ghosts[self.key] = (
            self.log.start_offset,
            self.log.end_offset,
            [base for base, _n, _e, _r in batches],
            [epoch for _b, _n, epoch, _r in batches],
        )
        self.log.wipe()
        self.quorum_state.wipe()
        self.snapshots.wipe()
        self.key = ReplicaKey(self.id, new_directory_id(self.rng))
        self.replaced = True
        self.wiped_epoch = self.max_epoch
        self.max_epoch = 0
        self.obs_epoch = 0

    # -- the driver ------------------------------------------------------------------------

    def drive(self, now_ms: int, send: Sender, observe: Observe) -> None:
        """Perform the core's pending ``Ready`` in its documented order: send ``messages``
        -> flush -> ``on_flushed`` -> send ``messages_after_flush`` -> make a fetched
        snapshot durable -> ``on_snapshot_durable`` -> load snapshot -> apply committed ->
        remember the next deadline (the simulated application ignores ``leader_change``).
        A flush and a durable snapshot are inputs, so each is followed by another
        ``Ready``.

        ``observe`` (the invariant checker) runs before the application applies anything
        and at the end of the event (skipped when only the application ran since the first
        one), so a leader's newly committed batches are recorded in the global history
        before its own application or any follower (a later event) can apply them."""
        core = self.core
        assert core is not None
        for _ in range(READY_ROUNDS_MAX):
            ready = core.ready(now_ms)
            for out in ready.messages:
                if type(out.body) is AddRaftVoterRequest:
                    self._check_auto_join(out.body)
                send(self, out, now_ms)
            if ready.must_flush:
                self.log.flush()
                core.on_flushed(now_ms)
            for out in ready.messages_after_flush:
                send(self, out, now_ms)
            fetched = ready.snapshot_to_make_durable
            if fetched is not None:
                core.on_snapshot_durable(fetched, make_durable_at_once(fetched), now_ms)
            if ready.snapshot_loaded is not None:
                self.snapshots_installed += 1
                self.app.load_snapshot(self.snapshots, ready.snapshot_loaded)
                if self.controller is not None:
                    self.controller.snapshot_loaded()
            # Whether the state the final observation would see was observed already (only
            # the application ran since, which changes nothing the checker reads).
            observed = False
            if ready.high_watermark is not None:
                observe(self, now_ms)
                observed = True
                self.app.apply(self.log, ready.high_watermark)
            if self.controller is not None:
                self.controller.sync(core, now_ms)
            if (
                ready.high_watermark is not None
                and self.app.wants_snapshot()
                and self._snapshot(core, now_ms)
            ):
                observed = False  # the log start moved: observe again
            if ready.completed and self.on_completed is not None:
                self.on_completed(self, ready.completed)
                observed = False
            self.deadline_ms = ready.next_deadline_ms
            if not ready.must_flush and fetched is None:
                if self.self_check:
                    core.check_invariants()  # the core's own cheap asserts, once per event
                if not observed:
                    observe(self, now_ms)
                return
        raise AssertionError(f"node {self.id}: Ready still pending after {READY_ROUNDS_MAX}")

    def _check_auto_join(self, request: AddRaftVoterRequest) -> None:
        """``no-auto-join-after-removal`` (``sim/invariants.py``): a replica asks to add its
        own key only if that key was never in a committed voter set (its store says so)."""
        if request.voter_key == self.key and self.quorum_state.was_voter():
            raise InvariantViolation(
                "no-auto-join-after-removal",
                f"replica {request.voter_key} asked to be added back after it was a voter",
                self.id,
            )

    def _snapshot(self, core: RaftCore, now_ms: int) -> bool:
        """The application snapshots its state at its applied offset (<= the high
        watermark), followed by the metadata image's records under the controller (when the
        image is exactly the committed state there; else later); the core may then advance
        the log start and delete old batches."""
        end = self.app.applied_end
        if end <= self.log.start_offset:
            return False
        image: list[bytes] = []
        if self.controller is not None:
            values = self.controller.snapshot_values(end)
            if values is None:
                return False
            image = values
        writer = core.create_snapshot(end, now_ms)
        writer.append([self.app.snapshot_value(writer.snapshot_id), *image], now_ms)
        writer.freeze(now_ms)
        self.snapshots_created += 1
        return True
