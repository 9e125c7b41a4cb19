"""A fault run: real processes, a seeded fault schedule, a workload, a monitor and a checker.

``run(RunConfig(...))`` (and ``pykraft dev faults run``):

1. ``voters`` + ``observers`` ``pykraft server`` processes (``cluster.py``), each in its own
   network namespace when ``netns`` (``net.py``), each with its log on a small tmpfs;
2. the workload (``workload.py``) registering simulated brokers through the active controller
   and recording every acknowledged write with its offset;
3. the monitor (``monitor.py``): every 200 ms each node's raft metrics (state, leader, epoch, high watermark):
   time without an agreed leader (a majority of voters naming one leader in one epoch), two
   leaders in one epoch, a high watermark that went down within a process's life;
4. the schedule: from ``seed``, one fault at a time, held 2-6 s, then healed, 2-6 s apart,
   every kind in turn (shuffled) so that a short run sees each: kill -9 (restart at the heal),
   SIGSTOP (SIGCONT), a graceful restart, a full disk (space freed at the heal; a node that
   stopped on it is started again), and with namespaces: one node isolated, a split of the
   voters into a minority and a majority, one-way loss between two nodes;
5. after the last heal: every node must agree on a leader and reach the leader's high
   watermark within ``converge_s``; then all stop gracefully and ``check.py`` reads the logs.

With ``brokers`` real Apache Kafka brokers run beside the controllers, with real clients
(``broker_side.py``: its fault kinds, checks and report lines): the schedule then mixes the
broker kinds in, aimed at the leader of the busiest partition (``BUSY``) or a random broker;
``plant`` puts a directory first on pykraft's controllers' ``PYTHONPATH``: its
``sitecustomize`` plants a bug (``tests/plants/``), to prove the checker fails on it; the
server itself has no switch for one.

The report: faults by kind, acknowledged writes, lost (must be 0), divergences (must be 0),
two leaders in an epoch (0), high watermark decreases (0), time without a leader
p50/p99/max, the slowest leader recovery after a heal against ``recovery_bound_s``. A failed
run prints the seed, the schedule and the tail of every node's log.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import random
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pykraft.faults.broker_side import (
    BROKER_NETWORK_KINDS,
    BROKER_PROCESS_KINDS,
    BUSY,
    MIN_HOLD_S,
    BrokerSide,
    pct,
)
from pykraft.faults.check import SpecWalk, Verdict, check, read_replica, walk_spec_traces
from pykraft.faults.cluster import BROKER_BASE, FaultCluster
from pykraft.faults.monitor import Monitor
from pykraft.faults.net import Network
from pykraft.faults.workload import Workload
from pykraft.interop.kafka import KafkaDist

__all__ = ["Fault", "Report", "RunConfig", "run", "schedule"]

PROCESS_KINDS = ("kill", "pause", "restart", "disk")
LEADER = 0  # a fault's target: whichever node leads when the fault is applied
NETWORK_KINDS = ("isolate", "split", "oneway")
FULL_DISK_RATE = 20.0  # registrations/s while a controller's disk is full (see full_disk_rate)


@dataclass(frozen=True)
class Fault:
    at_s: float  # from the start of the fault phase
    kind: str
    targets: tuple[int, ...]  # split: the minority side; oneway: (from, to)
    hold_s: float

    def __str__(self) -> str:
        return f"{self.at_s:7.1f}s {self.kind:8s} {self.targets} for {self.hold_s:.1f}s"


@dataclass
class RunConfig:
    seed: int
    seconds: float = 60.0
    voters: int = 3
    observers: int = 1
    netns: bool = True
    disks: bool = True  # full-disk faults (each node's log on a tmpfs of its own: root)
    # The registration workload's rate (simulated brokers through the controllers' RPCs);
    # None: 20/s, or 2/s beside real brokers (simulated brokers never heartbeat, and Kafka's
    # controller fences stale brokers one at a time: a flood of them would delay the
    # fencing of the real ones). While a controller's disk is full it is FULL_DISK_RATE.
    rate: float | None = None
    converge_s: float = 60.0
    recovery_bound_s: float = 20.0  # a leader back after each heal within this
    work: Path | None = None  # kept when given; else a temporary directory, removed after
    log: Callable[[str], None] = print
    brokers: int = 0  # real Kafka brokers (ids 101..), with the Kafka clients' workload
    kafka: str = "4"  # the interop/kafka-<name> project the brokers run from
    broker_rate: float = 100.0  # records per second per idempotent producer
    plant: Path | None = None  # a planted bug's directory (tests/plants/): the run must fail
    # How long the Kafka clients' loops get to stop after the faults; one still blocked is
    # abandoned and counted (``KafkaWorkload.stop``).
    client_stop_s: float = 30.0
    controllers: str = "pykraft"  # or "kafka": Apache Kafka's own, for the side by side

    @property
    def full_disk_rate(self) -> float:
        """The registration rate while a controller's disk is full: enough records that the
        node must allocate a new page within the fault's hold (at 2/s, a 2-s hold wrote
        ~1 KiB, which a tmpfs page the segment already had could take: the fault then tested
        nothing)."""
        return max(self.registration_rate, FULL_DISK_RATE)

    @property
    def registration_rate(self) -> float:
        if self.rate is not None:
            return self.rate
        return 2.0 if self.brokers else 20.0


@dataclass
class Report:
    config: RunConfig
    faults: list[Fault]
    verdict: Verdict | None = None
    acked: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    leaderless_ms: list[float] = field(default_factory=list)
    recoveries_ms: list[float] = field(default_factory=list)
    two_leaders: list[str] = field(default_factory=list)
    hwm_decreases: list[str] = field(default_factory=list)
    disk_stops: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # anything else that failed the run
    tails: dict[int, str] = field(default_factory=dict)
    brokers: BrokerSide | None = None
    spec: SpecWalk | None = None  # the controllers' specification traces (None: not traced)

    @property
    def ok(self) -> bool:
        slow = [r for r in self.recoveries_ms if r > self.config.recovery_bound_s * 1000]
        return (
            self.verdict is not None
            and self.verdict.ok
            and not self.two_leaders
            and not self.hwm_decreases
            and not self.problems
            and not slow
            and (self.brokers is None or self.brokers.ok)
            and (self.spec is None or self.spec.violation is None)
        )

    def format(self) -> str:
        c = self.config
        kinds = collections.Counter(f.kind for f in self.faults)
        lines = [
            f"pykraft dev faults run --seed {c.seed} --seconds {c.seconds:g} --voters {c.voters} "
            f"--observers {c.observers}{'' if c.netns else ' --no-netns'}"
            + (f" --brokers {c.brokers}" if c.brokers else "")
            + (f" --plant {c.plant}" if c.plant else "")
            + (" --controllers kafka" if c.controllers == "kafka" else ""),
            "faults: " + " ".join(f"{k}={v}" for k, v in sorted(kinds.items())),
            f"acknowledged writes: {self.acked}  (client outcomes: "
            + ", ".join(f"{k} {v}" for k, v in sorted(self.outcomes.items()))
            + ")",
        ]
        v = self.verdict
        if v is not None:
            lines += [
                f"committed offset: {v.committed}; acknowledged writes found on every replica "
                f"holding them: {v.checked}",
                f"lost: {len(v.lost)}",
                f"divergences: {len(v.divergences)}",
                f"two leaders in an epoch (logs): {len(v.two_leaders)}",
            ]
        lines.append(f"two leaders in an epoch (metrics): {len(self.two_leaders)}")
        lines.append(f"high watermark went down: {len(self.hwm_decreases)}")
        windows = sorted(self.leaderless_ms)
        lines.append(
            f"time without a leader: {len(windows)} windows, p50 {pct(windows, 0.5)} "
            f"p99 {pct(windows, 0.99)} max {pct(windows, 1.0)} ms"
        )
        rec = sorted(self.recoveries_ms)
        lines.append(
            f"leader back after a heal: p50 {pct(rec, 0.5)} max {pct(rec, 1.0)} ms "
            f"(bound {c.recovery_bound_s * 1000:.0f} ms, {len(rec)} heals)"
        )
        lines += [f"disk: {d}" for d in self.disk_stops]
        lines.append(self.spec.line() if self.spec else "specification trace: none written")
        if self.brokers is not None:
            lines += self.brokers.lines()
        for name, items in (
            ("LOST", v.lost if v else []),
            ("DIVERGED", v.divergences if v else []),
            ("TWO LEADERS", (v.two_leaders if v else []) + self.two_leaders),
            ("HWM DOWN", self.hwm_decreases),
            ("PROBLEM", self.problems),
        ):
            lines += [f"{name}: {item}" for item in items[:20]]
        lines.append(f"result: {'OK' if self.ok else 'FAILED'}")
        if not self.ok:
            lines.append(f"reproduce: {lines[0]}")
            lines.append("schedule:")
            lines += [f"  {f}" for f in self.faults]
            for node_id, tail in sorted(self.tails.items()):
                lines.append(f"--- node {node_id} (last lines)")
                lines.append(tail)
        return "\n".join(lines)


def schedule(config: RunConfig) -> list[Fault]:
    """The faults of a run: the same for the same seed, voters, observers and kinds."""
    rng = random.Random(config.seed)
    kinds = tuple(k for k in PROCESS_KINDS if config.disks or k != "disk")
    kinds += NETWORK_KINDS if config.netns else ()
    if config.brokers:
        kinds += tuple(k for k in BROKER_PROCESS_KINDS if config.disks or k != "broker-disk")
        kinds += BROKER_NETWORK_KINDS if config.netns else ()
    brokers = [BROKER_BASE + 1 + i for i in range(config.brokers)]
    nodes = list(range(1, config.voters + config.observers + 1))
    voters = nodes[: config.voters]
    faults: list[Fault] = []
    order: list[str] = []
    t = 3.0
    while t < config.seconds:
        if not order:
            order = sorted(kinds)
            rng.shuffle(order)
        kind = order.pop()
        hold = round(rng.uniform(2.0, 6.0), 1)
        # Half the faults aim at the leader of the moment: 0 stands for it until applied
        # (BUSY for the leader of the busiest partition, for a broker fault).
        targets: tuple[int, ...]
        if kind in BROKER_PROCESS_KINDS or kind in BROKER_NETWORK_KINDS:
            targets = (BUSY if rng.random() < 0.5 else rng.choice(brokers),)
            hold = round(MIN_HOLD_S.get(kind, 0.0) + hold, 1)
        elif kind == "split":
            minority = rng.sample(voters, rng.randint(1, (len(voters) - 1) // 2))
            if rng.random() < 0.5:
                minority[0] = LEADER
            targets = tuple(sorted(minority))
        elif kind == "oneway":
            pair = rng.sample(nodes, 2)
            if rng.random() < 0.5:
                pair[rng.randrange(2)] = LEADER
            targets = tuple(pair)
        else:
            targets = (LEADER if rng.random() < 0.5 else rng.choice(nodes),)
        faults.append(Fault(round(t, 1), kind, targets, hold))
        t += hold + rng.uniform(2.0, 6.0)
    return faults


class _WorkloadThread:
    def __init__(self, workload: Workload) -> None:
        self.workload = workload
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, name="workload", daemon=True)

    def _main(self) -> None:
        async def go() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            self._ready.set()
            await self.workload.run(self._stop)

        asyncio.run(go())

    def start(self) -> None:
        self._thread.start()
        self._ready.wait(10)

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        if self._loop is not None and self._stop is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=30)


@dataclass
class _Parts:
    """What a run has started, for its phases and its clean-up."""

    cluster: FaultCluster | None = None
    monitor: Monitor | None = None
    load: _WorkloadThread | None = None
    side: BrokerSide | None = None


def run(config: RunConfig) -> Report:
    faults = schedule(config)
    report = Report(config, faults)
    work = config.work or Path(tempfile.mkdtemp(prefix="pykraft-faults-"))
    work.mkdir(parents=True, exist_ok=True)
    ids = list(range(1, config.voters + config.observers + 1))
    broker_ids = [BROKER_BASE + 1 + i for i in range(config.brokers)]
    network = Network(ids + broker_ids) if config.netns else None
    parts = _Parts()
    try:
        with contextlib.ExitStack() as stack:
            if network is not None:
                network.setup()
                stack.callback(network.teardown)
            if not _start(config, work, network, ids, stack, parts, report):
                return report
            assert parts.cluster and parts.monitor and parts.load
            config.log(
                f"cluster up (leader {parts.monitor.leader}); {len(faults)} faults over "
                f"{config.seconds:g} s"
            )
            t0 = time.monotonic()
            _inject(
                config,
                parts.cluster,
                network,
                parts.monitor,
                faults,
                report,
                t0,
                parts.side,
                parts.load,
            )
            _sleep_until(t0 + config.seconds)
            _finish(config, ids, parts, report)
    finally:
        if parts.load is not None:
            parts.load.stop()
        if parts.cluster is not None and not report.tails:
            report.tails = {n.node_id: n.tail() for n in parts.cluster.every_node}
        if config.work is None and report.ok:
            shutil.rmtree(work, ignore_errors=True)
        elif config.work is None:
            config.log(f"work directory kept: {work}")
    return report


def _start(
    config: RunConfig,
    work: Path,
    network: Network | None,
    ids: list[int],
    stack: contextlib.ExitStack,
    parts: _Parts,
    report: Report,
) -> bool:
    """The controllers, the monitor, the brokers and the workload, each stopped by ``stack``;
    False (with the problem in the report) when no leader came."""
    cluster = parts.cluster = FaultCluster(
        work,
        voters=config.voters,
        observers=config.observers,
        network=network,
        brokers=config.brokers,
        kafka=KafkaDist.get(config.kafka)
        if config.brokers or config.controllers == "kafka"
        else None,
        controllers=config.controllers,
        controller_env=None if config.plant is None else {"PYTHONPATH": str(config.plant)},
    )
    stack.callback(cluster.teardown)
    cluster.setup()
    for node_id in ids:
        cluster.start(node_id)
    monitor = parts.monitor = Monitor(cluster)
    monitor.start()
    stack.callback(monitor.stop)
    if not monitor.wait(lambda: monitor.leader is not None, 60):
        report.problems.append("no leader within 60 s of the start")
        return False
    if config.brokers:
        side = parts.side = report.brokers = BrokerSide(
            cluster, network, config.broker_rate, seed=config.seed
        )
        stack.callback(side.watch.stop)
        side.start()
        stack.callback(side.workload.stop)
    voters = [n.address for n in cluster.voters]
    parts.load = _WorkloadThread(
        Workload(cluster.cluster_id, voters, rate=config.registration_rate)
    )
    parts.load.start()
    return True


def _finish(config: RunConfig, ids: list[int], parts: _Parts, report: Report) -> None:
    """After the schedule: the workload stopped, the cluster converged, the counts read, every
    node stopped gracefully and the logs checked against what was acknowledged."""
    cluster, monitor, load, side = parts.cluster, parts.monitor, parts.load, parts.side
    assert cluster is not None and monitor is not None and load is not None
    load.stop()
    if side is not None:
        side.stop_workload(config.client_stop_s)
    committed = _converge(config, monitor, report, load)
    views_offset: int | None = None
    if side is not None:
        side.finish(config.converge_s)
        read_ns = time.monotonic_ns()
        with monitor.lock:
            views_offset = monitor.leader_high_watermark()
        side.views_read_ns = (read_ns, time.monotonic_ns())
        side.stop()
    monitor.stop()
    report.leaderless_ms = monitor.leaderless_ms
    report.two_leaders = monitor.two_leaders
    report.hwm_decreases = monitor.hwm_decreases
    report.problems += monitor.errors[:5]
    report.acked = len(load.workload.acked)
    report.outcomes = dict(load.workload.outcomes)
    for node_id in ids:
        code = cluster.stop(node_id)
        kafka_sigterm = cluster.nodes[node_id].kafka_controller and code == 143
        if code not in (0, None) and not kafka_sigterm:
            report.problems.append(f"node {node_id} exited with {code} on SIGTERM")
    report.tails = {n.node_id: n.tail() for n in cluster.every_node}
    report.spec = walk_spec_traces(n.spec_trace for n in cluster.nodes.values())
    if side is not None:
        side.check_log({n.node_id: n.data for n in cluster.nodes.values()}, views_offset)
    if committed is not None:
        replicas = [read_replica(n.node_id, n.data, committed) for n in cluster.nodes.values()]
        report.verdict = check(replicas, load.workload.acked, committed)


def _inject(
    config: RunConfig,
    cluster: FaultCluster,
    network: Network | None,
    monitor: Monitor,
    faults: list[Fault],
    report: Report,
    t0: float,
    side: BrokerSide | None = None,
    load: _WorkloadThread | None = None,
) -> None:
    """The fault phase: each fault at its time (aimed at the leader of the moment where it
    says LEADER, the busiest partition's leader where BUSY), held, healed; after each heal
    a leader within three recovery bounds."""
    monitor.start_windows()
    for i, planned in enumerate(faults):
        _sleep_until(t0 + planned.at_s)
        with monitor.lock:
            leader = monitor.leader[0] if monitor.leader else None
        fault = faults[i] = _resolve(planned, leader, [n.node_id for n in cluster.voters])
        if side is not None and fault.targets == (BUSY,):
            fault = faults[i] = dataclasses.replace(fault, targets=(side.busy(),))
        config.log(f"fault {fault}")
        broker_fault = fault.targets[0] > BROKER_BASE
        applied = time.monotonic()
        if broker_fault:
            assert side is not None
            side.apply(fault.kind, fault.targets[0])
        else:
            if load is not None and fault.kind == "disk":
                load.workload.rate = config.full_disk_rate
            _apply(cluster, network, fault)
        # Held for its whole hold, also when applied late (a slow heal before it): a fence
        # must outlast the session timeout, an isr fault the replica lag time.
        _sleep_until(max(t0 + fault.at_s, applied) + fault.hold_s)
        if broker_fault:
            assert side is not None
            side.before_heal(fault.kind, fault.targets[0])
            side.heal(fault.kind, fault.targets[0])
        else:
            _heal(cluster, network, fault, report)
            if load is not None:
                load.workload.rate = config.registration_rate
        healed = time.monotonic()
        if monitor.wait(lambda: monitor.leader is not None, config.recovery_bound_s * 3):
            report.recoveries_ms.append((time.monotonic() - healed) * 1000)
        else:
            report.recoveries_ms.append((time.monotonic() - healed) * 1000)
            report.problems.append(
                f"no leader within {config.recovery_bound_s * 3:.0f} s after healing {fault}"
            )


def _converge(
    config: RunConfig, monitor: Monitor, report: Report, load: _WorkloadThread
) -> int | None:
    """The offset every node must hold at the end: the leader's high watermark once sampled
    after the workload stopped (at least every acknowledged offset), once every node reached
    it; None (and a problem reported) when they did not converge in time."""
    # Everything acknowledged is below the leader's high watermark now; every node
    # must reach it (the controller keeps writing, so the watermark moves on).
    committed: list[int] = []
    stopped_at = time.monotonic()
    acked_end = max((a.offset + 1 for a in load.workload.acked), default=0)

    def target() -> bool:
        assert monitor is not None
        hwm = monitor.leader_high_watermark()
        if hwm is None or monitor.sampled_at <= stopped_at:
            return False
        committed.append(max(hwm, acked_end))
        return True

    if not (
        monitor.wait(target, config.converge_s)
        and monitor.wait(lambda: monitor.converged(committed[-1]), config.converge_s)
    ):
        with monitor.lock:
            state = {
                k: (v.get("high_watermark"), v.get("current_epoch"))
                for k, v in monitor.samples.items()
            }
        report.problems.append(
            f"not converged within {config.converge_s:.0f} s: leader {monitor.leader}, "
            f"(hwm, epoch) by node {state}"
        )
    return committed[-1] if committed else None


def _resolve(fault: Fault, leader: int | None, voters: list[int]) -> Fault:
    """``fault`` with LEADER replaced by the leader now (a voter when there is none)."""
    if LEADER not in fault.targets:
        return fault
    chosen = leader if leader is not None else voters[0]
    targets = list(fault.targets)
    if chosen in targets:  # already aimed at it: another voter takes the leader's place
        chosen = next(v for v in voters if v not in targets)
    targets[targets.index(LEADER)] = chosen
    return dataclasses.replace(fault, targets=tuple(targets))


def _sleep_until(at: float) -> None:
    delay = at - time.monotonic()
    if delay > 0:
        time.sleep(delay)


def _apply(cluster: FaultCluster, network: Network | None, fault: Fault) -> None:
    kind, targets = fault.kind, fault.targets
    if kind == "kill":
        cluster.kill(targets[0])
    elif kind == "pause":
        cluster.pause(targets[0])
    elif kind == "restart":
        cluster.stop(targets[0])
        cluster.start(targets[0])
    elif kind == "disk":
        cluster.fill_disk(targets[0])
    elif network is not None and kind == "isolate":
        network.isolate(targets[0])
    elif network is not None and kind == "split":
        network.cut(targets, [n for n in cluster.nodes if n not in targets])
    elif network is not None and kind == "oneway":
        network.drop(targets[0], targets[1])


def _heal(cluster: FaultCluster, network: Network | None, fault: Fault, report: Report) -> None:
    kind, target = fault.kind, fault.targets[0]
    if kind == "kill":
        cluster.start(target)
    elif kind == "pause":
        cluster.resume(target)
    elif kind == "disk":
        cluster.free_disk(target)
        node = cluster.nodes[target]
        # A write in flight when the space came back may still fail: the node stops a
        # moment after the heal.
        cluster.wait_exit(target, node.stop_line, 3.0)
        if not node.running:
            line = next(
                (x for x in node.current_output().splitlines() if node.stop_line in x),
                "(no log line)",
            )
            report.disk_stops.append(f"node {target} stopped: {line.strip()}")
            if node.stop_line not in line:
                report.problems.append(f"node {target} stopped on a full disk without saying why")
            cluster.start(target)
        else:
            report.disk_stops.append(f"node {target} wrote nothing while its disk was full")
    elif network is not None and kind in NETWORK_KINDS:
        network.heal()
