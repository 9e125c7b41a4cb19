"""The cluster under test: ``pykraft server`` processes, each with its metadata log on a small
filesystem of its own (tmpfs) so that a full disk is a fault like any other.

Real Apache Kafka brokers (``brokers``, ids from 101) run beside them, each in a namespace
of its own with its ``log.dirs`` on a small tmpfs too, formatted with Kafka's own
``kafka-storage format``; the controllers fence a broker after ``broker.session.timeout.ms``
(4 s here: a fault held longer than that fences it).

Both kinds of controller are formatted at ``FAULT_RUN_RELEASE`` (4.0-IV3, the level every
Kafka 4.x broker runs and the one the reported runs used). With ``controllers="kafka"`` the
controllers are Apache Kafka's own (``kafka.Kafka`` with ``process.roles=controller``,
formatted by its ``kafka-storage format``), for the same schedule side by side; the monitor
reads them through ``kafka_quorum.py``.

Voters are formatted with ``--initial-controllers`` (kraft.version 1) and find each other
through ``controller.quorum.bootstrap.servers``; observers are formatted with
``--no-initial-controllers`` and find the leader the same way (D8). With a ``Network`` each node
runs in its own namespace on its own address (same ports everywhere); without one, all listen
on 127.0.0.1 on ports of their own.
"""

from __future__ import annotations

import contextlib
import errno
import http.client
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from pykraft.faults.kafka_quorum import QuorumBoard, scrape_kafka_controller
from pykraft.faults.net import Network
from pykraft.interop.cluster import free_ports, read_metrics
from pykraft.interop.kafka import KafkaDist, write_properties
from pykraft.storage.meta import random_uuid, uuid_to_kafka

__all__ = ["FAULT_RUN_RELEASE", "FaultCluster", "Node"]

FAULT_RUN_RELEASE = "4.0"  # both tools' --release-version

CONTROLLER_PORT = 9093
BROKER_PORT = 9092
BROKER_BASE = 100  # broker ids are 101, 102, ...
BROKER_SESSION_TIMEOUT_MS = 4000
BROKER_HEARTBEAT_INTERVAL_MS = 1000
REPLICA_LAG_TIME_MAX_MS = 5000  # a follower leaves the ISR 5 s after it fell behind
# Kafka's StandardAuthorizer on every node, open where no ACL is found: the metadata clients'
# CreateAcls and DeleteAcls need an authorizer (metadata_clients.py); their ACLs name topics
# no workload uses, so every other request is allowed as without one.
AUTHORIZER: Final = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
}
BROKER_STARTED = "Kafka Server started"
_CONTROLLER_JVM = ("-Xms128m", "-Xmx384m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20")
_BROKER_JVM = ("-Xms128m", "-Xmx512m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20")
METRICS_PORT = 9101
_FILLER = "filler"
_RAFT = "kafka_server_raftmetrics_"
_STATE = _RAFT + "current_state{current_state="


@dataclass
class Node:
    node_id: int
    voter: bool
    host: str
    port: int
    metrics_port: int
    root: Path  # the node's own directory; its disk (a tmpfs) is mounted at root / "disk"
    directory_id: str = field(default_factory=lambda: uuid_to_kafka(random_uuid()))
    process: subprocess.Popen[bytes] | None = None
    incarnation: int = 0
    paused: bool = False
    broker: bool = False  # a real Kafka broker (else a controller)
    kafka_controller: bool = False  # Apache Kafka's controller (else pykraft's)
    board: QuorumBoard | None = None  # shared by Kafka's controllers (kafka_quorum.py)

    @property
    def stop_line(self) -> str:
        """What the node logs when it stops on a failed write (a full disk)."""
        if self.broker or self.kafka_controller:
            return "fatal fault"  # Kafka's ProcessTerminatingFaultHandler, before it halts
        return "failed, stopping the node"

    @property
    def disk(self) -> Path:
        return self.root / "disk"

    @property
    def data(self) -> Path:
        """The metadata log directory (a broker's: its one ``log.dirs``)."""
        return self.disk / ("logs" if self.broker else "metadata")

    @property
    def config(self) -> Path:
        return self.root / "server.properties"

    @property
    def output(self) -> Path:
        return self.root / "server.out"

    @property
    def spec_trace(self) -> Path:
        """A pykraft controller's ``pykraft.spec.trace.file`` (beside its disk, not on it: a
        full disk must not cut the trace)."""
        return self.root / "spec-trace.jsonl"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def current_output(self) -> str:
        """What the current (or last) process wrote, from the harness's start marker on."""
        with contextlib.suppress(OSError):
            text = self.output.read_text(errors="replace")
            return text[text.rfind("--- harness: start") :]
        return ""

    def tail(self, lines: int = 30) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.output.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def scrape(self, timeout_s: float = 0.5) -> dict[str, float] | None:
        """The node's raft metrics (None when it does not answer)."""
        if self.kafka_controller:
            assert self.board is not None
            return scrape_kafka_controller(self.node_id, self.address, self.data, self.board)
        try:
            raw = read_metrics(self.host, self.metrics_port, timeout_s=timeout_s)
        except (OSError, ValueError, http.client.HTTPException):
            return None  # down, paused, cut off, or stopped half way through the answer
        values: dict[str, float] = {}
        for name, value in raw.items():
            if name.startswith(_STATE):  # current_state{current_state=...}: the state, 1
                if value == 1:
                    values["state=" + name[len(_STATE) : -1]] = 1
            elif name.startswith(_RAFT) and "{" not in name:
                values[name[len(_RAFT) :]] = value
        return values


class FaultCluster:
    """``voters`` voters (ids 1..voters) and ``observers`` observers after them, and
    ``brokers`` Kafka brokers (ids 101.., run from ``kafka``)."""

    def __init__(
        self,
        work: Path,
        *,
        voters: int,
        observers: int,
        network: Network | None,
        brokers: int = 0,
        kafka: KafkaDist | None = None,
        disk_mib: int = 256,
        timeouts: tuple[int, int] = (1000, 2000),  # election, fetch (Kafka's defaults)
        controller_extra: dict[str, str] | None = None,
        controllers: str = "pykraft",
        controller_env: dict[str, str] | None = None,
    ) -> None:
        if (brokers or controllers == "kafka") and kafka is None:
            raise ValueError("Kafka's brokers and controllers need a Kafka distribution")
        if controllers not in ("pykraft", "kafka"):
            raise ValueError(f"controllers are pykraft's or kafka's, not {controllers!r}")
        self.work = work
        self.kafka = kafka
        self.controller_extra = controller_extra or {}
        # pykraft controllers' extra environment (a planted bug's PYTHONPATH, faults/run.py)
        self.controller_env = controller_env or {}
        self.network = network
        self.disk_mib = disk_mib
        self.timeouts = timeouts
        self.cluster_id = uuid_to_kafka(random_uuid())
        self.board = QuorumBoard()
        count = voters + observers
        ports = free_ports(2 * count) if network is None else []
        self.nodes: dict[int, Node] = {}
        for i in range(1, count + 1):
            host = "127.0.0.1" if network is None else network.address(i)
            port = ports[2 * i - 2] if network is None else CONTROLLER_PORT
            metrics = ports[2 * i - 1] if network is None else METRICS_PORT
            self.nodes[i] = Node(i, i <= voters, host, port, metrics, work / f"node-{i}")
            if controllers == "kafka":
                self.nodes[i].kafka_controller = True
                self.nodes[i].board = self.board
        self.brokers: dict[int, Node] = {}
        broker_ports = free_ports(brokers) if network is None else []
        for k in range(brokers):
            i = BROKER_BASE + 1 + k
            host = "127.0.0.1" if network is None else network.address(i)
            port = broker_ports[k] if network is None else BROKER_PORT
            self.brokers[i] = Node(i, False, host, port, 0, work / f"broker-{i}", broker=True)
        self._mounted: list[Path] = []

    def node(self, node_id: int) -> Node:
        """A controller or a broker."""
        return self.nodes[node_id] if node_id in self.nodes else self.brokers[node_id]

    @property
    def every_node(self) -> list[Node]:
        return [*self.nodes.values(), *self.brokers.values()]

    def bootstrap_brokers(self) -> str:
        return ",".join(n.address for n in self.brokers.values())

    @property
    def voters(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.voter]

    def bootstrap_servers(self) -> str:
        return ",".join(n.address for n in self.voters)

    def setup(self) -> None:
        """Disks mounted, configs written, directories formatted."""
        initial = ",".join(f"{n.node_id}@{n.address}:{n.directory_id}" for n in self.voters)
        election, fetch = self.timeouts
        for node in self.every_node:
            node.disk.mkdir(parents=True, exist_ok=True)
            if os.geteuid() == 0:
                subprocess.run(
                    [
                        "mount",
                        "-t",
                        "tmpfs",
                        "-o",
                        f"size={self.disk_mib}m",
                        "tmpfs",
                        str(node.disk),
                    ],
                    check=True,
                )
                self._mounted.append(node.disk)
            if node.broker:
                self._setup_broker(node)
                continue
            if node.kafka_controller:
                self._setup_kafka_controller(node, initial)
                continue
            node.config.write_text(
                f"node.id={node.node_id}\n"
                "process.roles=controller\n"
                f"listeners=CONTROLLER://{node.address}\n"
                "controller.listener.names=CONTROLLER\n"
                f"metadata.log.dir={node.data}\n"
                f"controller.quorum.bootstrap.servers={self.bootstrap_servers()}\n"
                f"controller.quorum.election.timeout.ms={election}\n"
                f"controller.quorum.fetch.timeout.ms={fetch}\n"
                f"metrics.port={node.metrics_port}\n"
                f"pykraft.spec.trace.file={node.spec_trace}\n"
                f"broker.session.timeout.ms={BROKER_SESSION_TIMEOUT_MS}\n"
                f"broker.heartbeat.interval.ms={BROKER_HEARTBEAT_INTERVAL_MS}\n"
                + "".join(f"{k}={v}\n" for k, v in {**AUTHORIZER, **self.controller_extra}.items())
            )
            mode = (
                ["--initial-controllers", initial] if node.voter else ["--no-initial-controllers"]
            )
            argv = [sys.executable, "-m", "pykraft.cli.main", "storage", "format"]
            argv += ["--config", str(node.config), "--cluster-id", self.cluster_id, *mode]
            argv += ["--release-version", FAULT_RUN_RELEASE]
            result = subprocess.run(argv, capture_output=True, text=True, check=False)
            if result.returncode != 0:
                raise RuntimeError(f"format of node {node.node_id}: {result.stderr.strip()}")

    def _setup_broker(self, node: Node) -> None:
        """A Kafka broker's config, formatted with Kafka's own storage tool."""
        assert self.kafka is not None
        replication = min(3, len(self.brokers))
        write_properties(
            node.config,
            {
                "process.roles": "broker",
                "node.id": node.node_id,
                "listeners": f"PLAINTEXT://{node.address}",
                "advertised.listeners": f"PLAINTEXT://{node.address}",
                "controller.listener.names": "CONTROLLER",
                "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                "controller.quorum.bootstrap.servers": self.bootstrap_servers(),
                "log.dirs": node.data,
                "broker.heartbeat.interval.ms": BROKER_HEARTBEAT_INTERVAL_MS,
                "offsets.topic.replication.factor": replication,
                "offsets.topic.num.partitions": 3,
                "transaction.state.log.replication.factor": replication,
                "transaction.state.log.min.isr": min(2, replication),
                "transaction.state.log.num.partitions": 3,
                "group.initial.rebalance.delay.ms": 0,
                "log.segment.bytes": 8 * 1024 * 1024,
                # A follower is out of the ISR 5 s after it stopped fetching (Kafka's 30 s).
                "replica.lag.time.max.ms": REPLICA_LAG_TIME_MAX_MS,
                "replica.socket.timeout.ms": 3000,
                "controller.quorum.request.timeout.ms": 2000,
                **AUTHORIZER,
            },
        )
        self.kafka.format_storage(node.config, self.cluster_id)

    def _setup_kafka_controller(self, node: Node, initial: str) -> None:
        """Apache Kafka's controller: the same listener, quorum and timeouts."""
        assert self.kafka is not None
        election, fetch = self.timeouts
        write_properties(
            node.config,
            {
                "process.roles": "controller",
                "node.id": node.node_id,
                "listeners": f"CONTROLLER://{node.address}",
                "controller.listener.names": "CONTROLLER",
                "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
                "log.dirs": node.data,
                "controller.quorum.bootstrap.servers": self.bootstrap_servers(),
                "controller.quorum.election.timeout.ms": election,
                "controller.quorum.fetch.timeout.ms": fetch,
                "broker.session.timeout.ms": BROKER_SESSION_TIMEOUT_MS,
                "broker.heartbeat.interval.ms": BROKER_HEARTBEAT_INTERVAL_MS,
                **AUTHORIZER,
                **self.controller_extra,
            },
        )
        mode = ["--initial-controllers", initial] if node.voter else ["--no-initial-controllers"]
        self.kafka.format_storage(
            node.config, self.cluster_id, "--release-version", FAULT_RUN_RELEASE, *mode
        )

    def teardown(self) -> None:
        """Every process killed; each disk's metadata log kept in its node's directory
        (``metadata-kept/``, for reading after the run: a tmpfs goes with its mount), then
        the disks unmounted."""
        for node in self.every_node:
            self.kill(node.node_id)
        for disk in self._mounted:
            for found in disk.rglob("__cluster_metadata-0"):
                kept = disk.parent / "metadata-kept"
                shutil.copytree(found, kept / found.relative_to(disk), dirs_exist_ok=True)
            subprocess.run(["umount", "-l", str(disk)], check=False, capture_output=True)
        self._mounted.clear()

    # -- processes ------------------------------------------------------------------------

    def start(self, node_id: int) -> None:
        node = self.node(node_id)
        assert not node.running
        argv = [sys.executable, "-m", "pykraft.cli.main", "server", "start", str(node.config)]
        if node.broker or node.kafka_controller:
            assert self.kafka is not None
            jvm = _BROKER_JVM if node.broker else _CONTROLLER_JVM
            argv = self.kafka.command("server", [str(node.config)], jvm=jvm, server=True)
        if self.network is not None:
            argv = self.network.wrap(node_id, argv)
        node.incarnation += 1
        with node.output.open("ab") as out:
            out.write(f"--- harness: start, incarnation {node.incarnation}\n".encode())
            env = None
            if self.controller_env and not (node.broker or node.kafka_controller):
                env = {**os.environ, **self.controller_env}
            node.process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
        node.paused = False

    def kill(self, node_id: int) -> None:
        """kill -9."""
        node = self.node(node_id)
        if node.running:
            assert node.process is not None
            node.process.send_signal(signal.SIGKILL)
            node.process.wait()
        node.paused = False

    def stop(self, node_id: int, timeout_s: float = 30) -> int | None:
        """SIGTERM (a graceful stop); kill -9 after ``timeout_s``. The exit code."""
        return self.stop_all([node_id], timeout_s)[node_id]

    def stop_all(self, node_ids: list[int], timeout_s: float = 30) -> dict[int, int | None]:
        """``stop`` of several nodes at once (SIGTERM to all, then each waited for)."""
        for node_id in node_ids:
            node = self.node(node_id)
            if node.paused:
                self.resume(node_id)
            if node.running:
                assert node.process is not None
                node.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        codes: dict[int, int | None] = {}
        for node_id in node_ids:
            node = self.node(node_id)
            if node.process is None:
                codes[node_id] = None
                continue
            try:
                node.process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.kill(node_id)
            codes[node_id] = node.process.returncode
        return codes

    def wait_exit(self, node_id: int, line: str, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for a node to exit, and as long again once its output
        has ``line`` (it said it is stopping); whether it exited."""
        node = self.node(node_id)
        deadline = time.monotonic() + timeout_s
        extended = False
        while node.running:
            if not extended and line in node.current_output():
                deadline, extended = time.monotonic() + timeout_s, True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
        return True

    def pause(self, node_id: int) -> None:
        node = self.node(node_id)
        if node.running and node.process is not None:
            node.process.send_signal(signal.SIGSTOP)
            node.paused = True

    def resume(self, node_id: int) -> None:
        node = self.node(node_id)
        if node.process is not None and node.paused:
            with contextlib.suppress(ProcessLookupError):
                node.process.send_signal(signal.SIGCONT)
        node.paused = False

    # -- disks ----------------------------------------------------------------------------

    @property
    def own_disks(self) -> bool:
        """Each node's log is on a tmpfs of its own (needs root): disks may be filled."""
        return len(self._mounted) == len(self.every_node)

    def fill_disk(self, node_id: int) -> int:
        """Fill the node's own small filesystem to the last byte; the bytes written."""
        if self.node(node_id).disk not in self._mounted:
            raise RuntimeError("refusing to fill a filesystem the harness did not mount")
        path = self.node(node_id).disk / _FILLER
        written = 0
        chunk = b"\0" * (1 << 20)
        with open(path, "ab", buffering=0) as f:
            while True:
                try:
                    n = f.write(chunk)
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise
                    chunk = chunk[: len(chunk) // 2]
                    if not chunk:
                        return written
                    continue
                written += n or 0

    def free_disk(self, node_id: int) -> None:
        (self.node(node_id).disk / _FILLER).unlink(missing_ok=True)
