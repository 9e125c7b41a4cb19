"""The deterministic simulator: N voters and M observers, each running the real ``RaftCore``
over in-memory storage, driven by one virtual clock and one event queue.

Theory of operation.

* **Determinism.** Time is a virtual clock in ms. Events sit in one heap keyed by
  ``(time_ms, sequence)``; the sequence number breaks ties in insertion order. All randomness
  comes from ``random.Random(config.seed)``: at setup it draws, in a fixed order, the seeds of
  the sub-streams (network, nemesis, workload, then one per node; each core incarnation gets
  its own stream drawn from its node's). Nothing reads the wall clock, global randomness or
  iterates an unordered collection. The same config therefore gives the same event sequence
  (``SimResult.fingerprint``) and byte-identical traces.
* **Events.** A request or response arriving, a node's timer (``poll`` at the deadline its
  last ``Ready`` asked for), a connection refused (``RequestFailed``), a workload append on
  the leader, a nemesis strike, a fault healing. After each event on a node the driver
  performs the node's ``Ready`` (``SimNode.drive``) and the invariants are checked
  (``InvariantChecker.observe``) before anything else happens.
* **Transport.** Each request gets a fresh transport id (like a TCP correlation id), so a
  response reaches exactly the incarnation that sent the request and at most once; a response
  is dropped when its request is older than ``request_timeout_ms`` (the connection would have
  been cut), and anything addressed to a previous incarnation of a node is dropped. The core
  times its own requests out; the transport only adds a fast ``RequestFailed`` for a
  destination that is down (connection refused).
* **Voters.** Voters are named by replica key with a directory id, so a wiped disk is a new
  replica (KIP-853). Profiles with ``kraft_version == 1`` format every node with a bootstrap
  checkpoint (kraft.version 1 + the initial voters, D3), start the cores without a static
  voter set, list every node as a bootstrap server (D8), and may change the voter set
  (``reassign``: KIP-642 through AddRaftVoter / RemoveRaftVoter steps, and the operator's
  membership operations of ``pykraft.sim.operations``). The ``upgrade`` profile starts at
  kraft.version 0 with static voters and upgrades mid-run.
* **Phases.** The fault phase processes ``config.events`` events with the nemesis active.
  Then the heal phase: every fault heals, every stopped node restarts, the network stops
  losing messages, and within ``config.liveness_bound_ms`` a leader must be elected, a
  record appended after the heal must commit and every node must apply it. Finally every
  node's log is audited against the committed history. In profiles that change the voter
  set, the heal phase goes on with one more reassignment whose target voters are all up,
  which must complete within its own bound (``operations.FinalReassignment``). In the
  controller profile every partition reassignment must then reach its target and every
  partition be led by its first replica again (``Recovery.bound_ms`` adds both bounds;
  what did not happen when the phase ends is its violation, ``Recovery.unrecovered``).
"""

from __future__ import annotations

import heapq
import random
import traceback
from collections import deque
from heapq import heappush
from typing import Any

from pykraft.controller.config import ControllerConfig
from pykraft.metadata.tagged import tagged_noop
from pykraft.raft.config import NotLeaderError, RaftConfig
from pykraft.raft.core import RaftCore
from pykraft.raft.messages import REQUEST_TYPES, FetchResponse, Inbound, Outbound, RequestFailed
from pykraft.sim import recovery
from pykraft.sim.bootstrap import PORT_BASE, format_bootstrap, initial_voters
from pykraft.sim.brokers import SimBrokers
from pykraft.sim.config import SimConfig, SimResult, Violation
from pykraft.sim.controller import ControllerChecker, SimController
from pykraft.sim.events import (
    EV_APPEND,
    EV_BROKER,
    EV_HEAL,
    EV_NEMESIS,
    EV_POLL,
    EV_REFUSED,
    EV_REQUEST,
    EV_RESPONSE,
    Event,
    format_recent,
)
from pykraft.sim.history import CommittedHistory, InvariantViolation
from pykraft.sim.invariants import InvariantChecker, check_stated_hwm
from pykraft.sim.majority_loss import MajorityLoss
from pykraft.sim.nemesis import Nemesis
from pykraft.sim.network import Network
from pykraft.sim.node import LEADER, SimNode
from pykraft.sim.operations import (
    FinalReassignment,
    Operations,
    core_config,
    current_voters,
    node_endpoint,
)
from pykraft.sim.recovery import Recovery
from pykraft.sim.spec_trace import SpecChecker
from pykraft.sim.stats import RunStats
from pykraft.sim.trace import TraceWriter, describe_message

# The core's own list (requests vs responses), as a set for a fast ``type(body) in``.
_REQUEST_TYPES = frozenset(REQUEST_TYPES)
_FP_MASK = (1 << 64) - 1
# The heal phase ends by the liveness bound in simulated time; this bounds its events too,
# in case a bug makes time stand still.
HEAL_PHASE_EVENTS_MAX = 5_000_000


class Simulation:
    """One run. Invariant: ``now_ms`` never decreases; ``queue`` is a heap of ``Event``."""

    def __init__(self, config: SimConfig, trace: TraceWriter | None = None) -> None:
        self.config = config
        self.trace = trace
        master = random.Random(config.seed)
        net_rng = random.Random(master.getrandbits(64))
        nemesis_rng = random.Random(master.getrandbits(64))
        self._workload_rng = random.Random(master.getrandbits(64))
        n_nodes = config.voters + config.observers
        self.history = CommittedHistory()
        self.nodes: list[SimNode] = _make_nodes(config, master, self.history)
        # Drawn after the nodes' streams, so that adding it changed no other stream.
        final_rng = random.Random(master.getrandbits(64))
        self.operations = Operations(self)
        self.majority_loss = MajorityLoss(self)
        self.spec = SpecChecker(None if trace is None else self.trace_event)
        for node in self.nodes:
            node.self_check = config.core_self_check
            node.on_completed = self.operations.completed
        self.by_id: list[SimNode | None] = [None, *self.nodes]
        self.kraft_version = config.profile.kraft_version
        self.voter_set, self._bootstrap_servers = initial_voters(self.nodes, self.kraft_version)
        self.raft_config = config.raft_config()
        self._raft_configs: dict[bool, RaftConfig] = {}  # by auto-join setting
        self.network = Network(range(1, n_nodes + 1), config.profile, net_rng)
        self.nemesis = Nemesis(self, config.profile, nemesis_rng)
        self.queue: list[Event] = []
        self._seq = 0
        self.now_ms = 0
        self.event_index = 0
        self.recovery = Recovery(self)  # the heal phase (recovery.py)
        # Transport: transport id -> (requester id, requester incarnation, core request id,
        # destination id); expiry order in ``_expiry`` (FIFO: constant timeout).
        self._outstanding: dict[int, tuple[int, int, int, int]] = {}
        self._expiry: deque[tuple[int, int]] = deque()
        self._next_tid = 1
        self._fingerprint = 0
        self._recent: deque[tuple[int, int, int, int, Any]] = deque(maxlen=config.last_events)
        self.result = SimResult(
            seed=config.seed,
            profile=config.profile.name,
            voters=config.voters,
            observers=config.observers,
            pre_vote=config.pre_vote,
            fault_phase_events=config.events,
        )
        self.stats = RunStats(
            self.result, self.history, self.nodes, None if trace is None else self.trace_event
        )
        self.checker = InvariantChecker(self.nodes, self.history, self.stats, self.voter_set)
        self.final_reassignment = (
            FinalReassignment(self, final_rng) if config.profile.membership_ops else None
        )
        self.brokers: SimBrokers | None = None
        self.controller_checker: ControllerChecker | None = None
        if config.profile.controller_brokers:
            self._add_controllers(config)

    def _add_controllers(self, config: SimConfig) -> None:
        """The metadata controller on every node and its brokers (profile ``controller``):
        streams derived from the seed alone, so that no other stream changed."""
        checker = ControllerChecker()
        self.controller_checker = checker
        # Kafka 4.1's features (eligible leader replicas on), so that the checker sees ELR
        # elections as well as ISR ones.
        controller_config = ControllerConfig(
            broker_session_timeout_ms=9_000,
            bootstrap_metadata_version=27,
            leader_imbalance_check_interval_ms=recovery.SIM_IMBALANCE_CHECK_MS,
        )
        for node in self.nodes:
            node.app.tagged = True
            node.controller = SimController(
                node.id, controller_config, config.seed * 1_000_003 + node.id, checker
            )
            node.controller.slice_records = config.sync_slice_records
        self.brokers = SimBrokers(
            self,
            random.Random(config.seed * 7_919 + 104_729),
            config.profile.controller_brokers,
        )

    # -- scheduling --------------------------------------------------------------------------

    def _push(self, at_ms: int, kind: int, node_id: int, payload: Any) -> None:
        self._seq += 1
        heapq.heappush(self.queue, (at_ms, self._seq, kind, node_id, payload))

    def push_broker_event(self, delay_ms: int, payload: tuple[Any, ...]) -> None:
        self._push(self.now_ms + delay_ms, EV_BROKER, 0, payload)

    def schedule_heal(self, at_ms: int, fault_id: int) -> None:
        self._push(at_ms, EV_HEAL, 0, fault_id)

    def count_fault(self, kind: str) -> None:
        faults = self.result.faults
        faults[kind] = faults.get(kind, 0) + 1

    def trace_event(self, node: int | None, kind: str, **details: object) -> None:
        if self.trace is not None:
            self.trace.emit(self.now_ms, self.event_index, node, kind, **details)

    # -- node lifecycle ------------------------------------------------------------------------

    def leader(self) -> SimNode | None:
        """The live leader of the highest epoch, if any."""
        leaders = [n for n in self.nodes if n.core is not None and n.obs_role == LEADER]
        return max(leaders, key=lambda n: n.obs_epoch) if leaders else None

    def _make_core(self, node: SimNode) -> RaftCore:
        core = RaftCore(
            config=core_config(self.raft_config, node, self._raft_configs),
            local_key=node.key,
            voters=self.voter_set if self.kraft_version == 0 else None,
            endpoints=(node_endpoint(node),),
            # Every node is a controller: the bootstrap servers list them all, so a replica
            # removed from the voter set can still find the leader (D8).
            bootstrap_servers=self._bootstrap_servers,
            log=node.log,
            quorum_state=node.quorum_state,
            snapshots=node.snapshots,
            rng=random.Random(node.rng.getrandbits(64)),
            now_ms=self.now_ms,
        )
        self.spec.attach(node.id, node.key, core)  # every transition walked (spec_trace.py)
        return core

    def start_node(self, node: SimNode) -> None:
        self.checker.invalidate()
        node.start(self._make_core)
        self.checker.started(node, self.now_ms)
        core = node.core
        assert core is not None
        self.trace_event(
            node.id,
            "start",
            incarnation=node.incarnation,
            role=core.role,
            epoch=core.epoch,
            voter=node.is_voter,
            directory_id=str(node.key.directory_id),
            endpoint=node_endpoint(node).host,
            auto_join=node.auto_join,
        )
        self._after(node)

    def restart_node(self, node: SimNode) -> None:
        if self.kraft_version == 1 and node.snapshots.latest() is None:
            format_bootstrap(node, None)  # its disk was replaced: format it again
        self.start_node(node)

    def crash_node(self, node: SimNode) -> None:
        was_leader = node.obs_role == LEADER
        node.crash()
        self.checker.invalidate()
        if was_leader:
            self.stats.update_leaderless(self.now_ms)

    def shutdown_node(self, node: SimNode) -> None:
        """Graceful: the core resigns (a leader sends EndQuorumEpoch), its Ready is
        performed (flush, send), then the process stops."""
        core = node.core
        assert core is not None
        core.shutdown(self.now_ms)
        self._after(node)
        self.crash_node(node)

    # -- the driver ----------------------------------------------------------------------------

    def after(self, node: SimNode) -> None:
        """Perform the node's Ready, check invariants, and make sure its timer is set."""
        if node.core is None:
            return
        node.drive(self.now_ms, self._send, self.checker.observe)
        self._arm(node)

    _after = after

    def _arm(self, node: SimNode) -> None:
        """Make sure a poll event is pending no later than the node's deadline."""
        deadline = node.deadline_ms
        if node.poll_at_ms < 0 or deadline < node.poll_at_ms:
            node.poll_at_ms = deadline
            self._push(deadline, EV_POLL, node.id, node.incarnation)

    def _send(self, node: SimNode, out: Outbound, now_ms: int) -> None:
        result = self.result
        result.messages_sent += 1
        body = out.body
        dst = out.dst
        if type(body) in _REQUEST_TYPES:
            tid = self._next_tid
            self._next_tid = tid + 1
            if self._expiry and self._expiry[0][0] <= now_ms:
                self._expire_outstanding(now_ms)
            self._outstanding[tid] = (node.id, node.incarnation, out.request_id, dst)
            if dst < 0 and out.endpoint is not None:
                dst = out.endpoint.port - PORT_BASE  # a bootstrap server (D8)
            self._expiry.append((now_ms + self.config.request_timeout_ms, tid))
            target = self.by_id[dst] if 0 < dst < len(self.by_id) else None
            if target is None or target.core is None:
                result.messages_dropped += 1
                self._push(now_ms + 2 * self.network.latency_ms(), EV_REFUSED, node.id, tid)
                if self.trace is not None:
                    self._trace_drop(node.id, dst, body, "refused")
                return
            times = self.network.route(node.id, dst, now_ms)
            if times:
                # ``_push`` inlined (once per message).
                payload: Any = (target.incarnation, Inbound(node.id, tid, body))
                for at_ms in times:
                    self._seq += 1
                    heappush(self.queue, (at_ms, self._seq, EV_REQUEST, dst, payload))
                if len(times) > 1:
                    result.messages_duplicated += 1
                return
        else:
            entry = self._outstanding.get(out.request_id)
            if entry is None or entry[0] != dst:
                result.messages_dropped += 1
                if self.trace is not None:
                    self._trace_drop(node.id, dst, body, "stale")
                return
            times = self.network.route(node.id, dst, now_ms)
            if times:
                payload = (out.request_id, node.id, body)
                for at_ms in times:
                    self._seq += 1
                    heappush(self.queue, (at_ms, self._seq, EV_RESPONSE, dst, payload))
                if len(times) > 1:
                    result.messages_duplicated += 1
                return
        result.messages_dropped += 1
        if self.trace is not None:
            self._trace_drop(node.id, dst, body, self.network.drop_reason)

    def _expire_outstanding(self, now_ms: int) -> None:
        expiry = self._expiry
        outstanding = self._outstanding
        while expiry and expiry[0][0] <= now_ms:
            _at, tid = expiry.popleft()
            outstanding.pop(tid, None)

    def _trace_deliver(self, node_id: int, src: int, request_id: int, body: object) -> None:
        self.trace_event(
            node_id, "deliver", src=src, request_id=request_id, **describe_message(body)
        )

    def _trace_drop(self, src: int, dst: int, body: object, reason: str) -> None:
        self.trace_event(None, "drop", src=src, dst=dst, msg=type(body).__name__, reason=reason)

    # -- the event loop ------------------------------------------------------------------------

    def run(self) -> SimResult:
        """Run both phases; never raises for an invariant violation (it is in the result)."""
        config = self.config
        result = self.result
        try:
            self.trace_event(None, "phase", phase="faults")
            for node in self.nodes:
                self.start_node(node)
            self._push(self._next_append_ms(), EV_APPEND, 0, None)
            if self.nemesis.enabled:
                self._push(self.nemesis.next_interval_ms(), EV_NEMESIS, 0, None)
            if self.brokers is not None:
                self.brokers.start()
            self._loop(config.events, until_ms=None)
            self.recovery.heal()
            self._loop(HEAL_PHASE_EVENTS_MAX, until_ms=self.now_ms + self.recovery.bound_ms())
            self.recovery.unrecovered()
            self.checker.audit(final=True)
            self.trace_event(None, "phase", phase="end")
        except InvariantViolation as v:
            result.violation = Violation(
                invariant=v.invariant,
                message=v.message,
                time_ms=self.now_ms,
                event_index=self.event_index,
                node=v.node,
                last_events=tuple(format_recent(self._recent)),
            )
            self.trace_event(v.node, "violation", invariant=v.invariant, message=v.message)
        except Exception as e:  # a crash of the core (or of ours) is a finding too
            frames = traceback.extract_tb(e.__traceback__)[-3:]
            where = " <- ".join(
                f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno}" for f in reversed(frames)
            )
            message = f"{type(e).__name__}: {e} at {where}"
            result.violation = Violation(
                invariant="exception",
                message=message,
                time_ms=self.now_ms,
                event_index=self.event_index,
                node=None,
                last_events=tuple(format_recent(self._recent)),
            )
            self.trace_event(None, "violation", invariant="exception", message=message)
        self._finish()
        return result

    def _loop(self, max_events: int, until_ms: int | None) -> None:
        """Process up to ``max_events`` events (in the heal phase: until recovery or
        ``until_ms``)."""
        queue = self.queue
        pop = heapq.heappop
        by_id = self.by_id
        recent = self._recent
        hook = self.config.hook
        audit_every = self.config.audit_every_events
        send = self._send
        observe = self.checker.observe
        fingerprint = self._fingerprint
        processed = 0
        try:
            while processed < max_events and queue:
                at_ms, _seq, kind, node_id, payload = pop(queue)
                if until_ms is not None and at_ms > until_ms:
                    heapq.heappush(queue, (at_ms, _seq, kind, node_id, payload))
                    self.now_ms = until_ms
                    return
                self.now_ms = at_ms
                if kind <= EV_REFUSED:
                    node = by_id[node_id]
                    assert node is not None
                    core = node.core
                    if core is None:
                        continue
                    if kind == EV_REQUEST:
                        incarnation, inbound = payload
                        if incarnation != node.incarnation:
                            continue
                        self.event_index += 1
                        if self.trace is not None:
                            self._trace_deliver(
                                node_id, inbound.src, inbound.request_id, inbound.body
                            )
                        core.step(inbound, at_ms)
                    elif kind == EV_RESPONSE:
                        tid, responder, body = payload
                        entry = self._outstanding.pop(tid, None)
                        if entry is None or entry[1] != node.incarnation:
                            continue
                        self.event_index += 1
                        if self.trace is not None:
                            self._trace_deliver(node_id, responder, entry[2], body)
                        if type(body) is FetchResponse:
                            check_stated_hwm(node_id, core, body)
                        core.step(Inbound(responder, entry[2], body), at_ms)
                    elif kind == EV_POLL:
                        if payload != node.incarnation:
                            continue
                        if node.poll_at_ms == at_ms:
                            node.poll_at_ms = -1
                        if node.deadline_ms > at_ms:
                            self._arm(node)
                            continue
                        self.event_index += 1
                        if self.trace is not None:
                            self.trace_event(node_id, "poll")
                        core.poll(at_ms)
                    else:  # EV_REFUSED
                        entry = self._outstanding.pop(payload, None)
                        if entry is None or entry[1] != node.incarnation:
                            continue
                        self.event_index += 1
                        self.result.requests_failed += 1
                        if self.trace is not None:
                            self.trace_event(
                                node_id, "request_failed", dst=entry[3], request_id=entry[2]
                            )
                        core.step(RequestFailed(entry[3], entry[2]), at_ms)
                    # ``after`` inlined: the node's Ready, the invariants, its timer.
                    node.drive(at_ms, send, observe)
                    if node.poll_at_ms < 0 or node.deadline_ms < node.poll_at_ms:
                        self._arm(node)
                else:
                    self.event_index += 1
                    self._global_event(kind, payload)
                    if kind != EV_APPEND:  # (an append changes the leader only, observed)
                        self.checker.invalidate()  # a strike or heal may change any node
                processed += 1
                fingerprint = ((fingerprint * 1_000_003) ^ (at_ms * 16 + kind) ^ node_id) & _FP_MASK
                recent.append((at_ms, self.event_index, kind, node_id, payload))
                if hook is not None:
                    hook(self, self.event_index)
                    self.checker.invalidate()  # a test's hook may change anything
                if audit_every and self.event_index % audit_every == 0:
                    self.checker.audit()
                if self.recovery.healing and self.recovery.recovered():
                    return
        finally:
            self._fingerprint = fingerprint
            self.result.events += processed

    def _global_event(self, kind: int, payload: object) -> None:
        if kind == EV_APPEND:
            self._append()
            self._push(self.now_ms + self._next_append_ms(), EV_APPEND, 0, None)
        elif kind == EV_NEMESIS:
            if not self.recovery.healing:
                self.nemesis.strike()
                self._push(self.now_ms + self.nemesis.next_interval_ms(), EV_NEMESIS, 0, None)
        elif kind == EV_BROKER:
            assert self.brokers is not None and isinstance(payload, tuple)
            if payload[0] == "tick":
                self._controller_ticks()
            self.brokers.on_event(payload)
        else:  # EV_HEAL
            assert isinstance(payload, int)
            self.nemesis.heal(payload)

    def _controller_ticks(self) -> None:
        """The active controllers' timers (session expiry, idle NoOpRecords)."""
        for node in self.nodes:
            controller = node.controller
            if node.core is not None and controller is not None and controller.active:
                controller.tick(node.core, self.now_ms)
                self._after(node)

    # -- workload ------------------------------------------------------------------------------

    def _next_append_ms(self) -> int:
        return max(1, int(self.config.append_interval_ms * (0.5 + self._workload_rng.random())))

    def _append(self) -> None:
        """The application appends 1..append_records_max records on a leader (a client may
        reach a stale leader in a minority partition: its records are then lost, legally)."""
        rng = self._workload_rng
        leaders = [n for n in self.nodes if n.core is not None and n.obs_role == LEADER]
        if not leaders:
            return
        node = leaders[int(rng.random() * len(leaders))]
        core = node.core
        assert core is not None
        count = 1 + int(rng.random() * self.config.append_records_max)
        base = self.result.appends
        values = [b"n%d-a%d-r%d" % (node.id, base, i) for i in range(count)]
        if node.controller is not None:
            values = [tagged_noop(v) for v in values]
        # Half the calls take Kafka's scheduleAppend path: the records wait in the core until
        # a later append, a control record or a leadership change (which drops them).
        scheduled = self.config.schedule_appends and rng.random() < 0.5
        try:
            if scheduled:
                last_offset = core.schedule_append(values)
                self.checker.promises[last_offset] = (core.epoch, values[-1])
            else:
                last_offset = core.append(values, self.now_ms)
        except NotLeaderError:
            return
        self.result.appends += 1
        self.checker.client_appends.append((self.now_ms, core.epoch, last_offset))
        if self.recovery.healing:
            self.stats.post_heal_appends[last_offset] = core.epoch
        self.trace_event(
            node.id, "append", epoch=core.epoch, last_offset=last_offset, records=count
        )
        self._after(node)

    def _finish(self) -> None:
        self.stats.finish(self.now_ms, self.checker.checks)
        result = self.result
        counts = dict(self.operations.counts)
        if self.brokers is not None:
            counts.update(self.brokers.counts)
            writes = sum(n.controller.writes for n in self.nodes if n.controller is not None)
            counts["controller_writes"] = writes
            if self.controller_checker is not None:
                counts["controller_checks"] = self.controller_checker.checks
                counts["reassignment_steps_seen"] = len(self.controller_checker.steps_seen)
        result.operations = dict(sorted(counts.items()))
        voters = current_voters(self)
        result.final_voters = ",".join(str(i) for i in sorted(voters.ids))
        leader = self.leader()
        if leader is not None and leader.core is not None and leader.core.kraft_version == 1:
            # Bootstrap entry (offset -1) excluded.
            entries = leader.core.voter_history.entries
            result.voter_changes = sum(1 for offset, _v in entries if offset >= 0)
        fp = (self._fingerprint ^ (self.history.end_offset << 20) ^ result.max_epoch) & _FP_MASK
        result.fingerprint = f"{fp:016x}"


def _make_nodes(
    config: SimConfig, master: random.Random, history: CommittedHistory
) -> list[SimNode]:
    """The nodes, each with its own random stream drawn from ``master`` in id order, and its
    snapshot interval drawn from that stream."""
    nodes = []
    for node_id in range(1, config.voters + config.observers + 1):
        rng = random.Random(master.getrandbits(64))
        every = int(config.snapshot_interval_records * (0.5 + rng.random()))
        nodes.append(SimNode(node_id, node_id <= config.voters, rng, history, max(2, every)))
    return nodes


def run(config: SimConfig, trace: TraceWriter | None = None) -> SimResult:
    """Run one simulation; see ``SimResult`` for what it reports."""
    return Simulation(config, trace).run()
