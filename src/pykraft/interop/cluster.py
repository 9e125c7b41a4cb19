"""A local Kafka cluster on 127.0.0.1 for tests and benchmarks: controllers that are pykraft
processes or Apache Kafka controllers (``process.roles=controller``), and Apache Kafka brokers
(``process.roles=broker``, formatted with Kafka's ``kafka-storage``), static voters.

Each server is a :class:`Server` (start, stop with a signal, kill -9, its log, its address);
:class:`LocalCluster` writes the configs, formats every directory and starts them. Every
process is started in its own session and killed when the interpreter exits.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Final

from pykraft.interop.kafka import (
    KafkaDist,
    KafkaProcess,
    exporter_agent,
    server_jvm,
    write_properties,
)
from pykraft.storage.meta import random_uuid, uuid_to_kafka

if TYPE_CHECKING:
    from pykraft.net.security import ClientSecurity

__all__ = ["BROKER_STARTED", "RUNNING", "LocalCluster", "Server"]

RUNNING: Final = "Transitioning from RECOVERY to RUNNING"
BROKER_STARTED: Final = "Kafka Server started"
CONTROLLER_PORT_OFFSET: Final = 0
DEFAULT_CLUSTER_ID: Final = "X5SvYNT7TJu0jYq2_o3_vg"
START_TIMEOUT_S: Final = 120


# ``lo-hi``: free_ports picks from these ports instead of asking the kernel. Processes that
# start clusters side by side (the test suite's workers) each get a range of their own below
# the kernel's ephemeral range, so a port one of them picked, released and is about to
# listen on cannot be picked by another, nor taken by a client's connect() meanwhile.
PORT_RANGE_ENV: Final = "PYKRAFT_PORT_RANGE"
_PROBES_PER_PORT: Final = 50


def free_ports(count: int) -> list[int]:
    """Ports free on 127.0.0.1 now (all held open together, then released): handed out by
    the kernel, or picked at random in ``PYKRAFT_PORT_RANGE`` when it is set."""
    import random
    import socket

    spec = os.environ.get(PORT_RANGE_ENV, "")
    candidates = [0] * count  # the kernel's pick
    if spec:
        lo, _, hi = spec.partition("-")
        span = range(int(lo), int(hi) + 1)
        candidates = random.Random().sample(span, k=min(len(span), count * _PROBES_PER_PORT))
    sockets: list[socket.socket] = []
    try:
        for port in candidates:
            if len(sockets) == count:
                break
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                s.close()
                continue
            sockets.append(s)
        if len(sockets) < count:
            raise OSError(f"{count} free ports wanted, {len(sockets)} found in {spec}")
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def read_metrics(host: str, port: int, *, timeout_s: float) -> dict[str, float]:
    """A Prometheus endpoint as {name{label=value,...}: value} (raises what urllib raises)."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=timeout_s) as response:
        body = response.read().decode()
    values: dict[str, float] = {}
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
            values[f"{sample.name}{{{labels}}}" if labels else sample.name] = sample.value
    return values


@dataclass
class Server:
    """One process: ``kind`` is "pykraft" (a pykraft controller), "kafka-controller" or
    "broker"."""

    node_id: int
    kind: str
    port: int
    config: Path
    data: Path
    log: Path
    dist: KafkaDist | None = None
    metrics_port: int | None = None
    jvm_extra: tuple[str, ...] = ()  # a Kafka server's JVM options beyond server_jvm()
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _kafka: KafkaProcess | None = field(default=None, repr=False)

    _all: ClassVar[weakref.WeakSet[Server]] = weakref.WeakSet()

    def __post_init__(self) -> None:
        Server._all.add(self)

    def __hash__(self) -> int:
        return id(self)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> None:
        if self.kind == "pykraft":
            self.log.parent.mkdir(parents=True, exist_ok=True)
            with self.log.open("ab") as out:
                self.process = subprocess.Popen(
                    [sys.executable, "-m", "pykraft.cli.main", "server", "start", str(self.config)],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            return
        assert self.dist is not None
        jvm = (*server_jvm(), *self.jvm_extra) if self.jvm_extra else None
        self._kafka = self.dist.start("server", str(self.config), log=self.log, jvm=jvm)
        self.process = self._kafka.popen

    def text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def wait_for(self, needle: str, timeout_s: float = START_TIMEOUT_S, *, after: int = 0) -> None:
        deadline = time.monotonic() + timeout_s
        while needle not in self.text()[after:]:
            if not self.running:
                raise RuntimeError(f"{self.kind} {self.node_id} exited:\n{self.text()[-3000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.kind} {self.node_id}: no {needle!r} in {timeout_s} s")
            time.sleep(0.05)

    def send(self, signum: int) -> None:
        if self.running:
            assert self.process is not None
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signum)

    def stop(self, signum: int = signal.SIGTERM, timeout_s: float = 60) -> int:
        """A clean stop (SIGTERM: a broker's controlled shutdown); kill -9 after the timeout."""
        assert self.process is not None
        self.send(signum)
        try:
            return self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            return -9

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.send(signal.SIGKILL)
            self.process.wait(timeout=30)

    def scrape(self) -> dict[str, float]:
        """A pykraft controller's metrics endpoint, or a Kafka controller's exporter agent,
        as {name{labels}: value}."""
        assert self.metrics_port is not None
        return read_metrics("127.0.0.1", self.metrics_port, timeout_s=5)

    @classmethod
    def kill_all(cls) -> None:
        for server in list(cls._all):
            with contextlib.suppress(Exception):
                server.kill()


atexit.register(Server.kill_all)


def _kinds(controller_kind: str | Sequence[str], controllers: int) -> list[str]:
    if isinstance(controller_kind, str):
        return [controller_kind] * controllers
    return list(controller_kind)


def _quorum_settings(
    ports: Sequence[int], voters: str, dynamic: bool
) -> tuple[tuple[str, str], str | None]:
    """The controllers' and brokers' quorum setting (key, value), and the controllers'
    ``--initial-controllers`` (each a new directory id) when the quorum is dynamic."""
    if not dynamic:
        return ("controller.quorum.voters", voters), None
    servers = ",".join(f"127.0.0.1:{p}" for p in ports)
    initial = ",".join(
        f"{i + 1}@127.0.0.1:{p}:{uuid_to_kafka(random_uuid())}" for i, p in enumerate(ports)
    )
    return ("controller.quorum.bootstrap.servers", servers), initial


class LocalCluster:
    """``controllers`` controllers of ``controller_kind`` ("pykraft" or "kafka") and
    ``brokers`` Kafka brokers (ids 100, 101, ...), formatted, not started."""

    def __init__(
        self,
        dist: KafkaDist | None,
        base: Path,
        *,
        controllers: int = 3,
        brokers: int = 3,
        controller_kind: str | Sequence[str] = "pykraft",
        controller_config: Mapping[str, object] | None = None,
        broker_config: Mapping[str, object] | None = None,
        cluster_id: str = DEFAULT_CLUSTER_ID,
        metrics: bool = True,
        broker_listener: str = "PLAINTEXT",
        format_args: tuple[str, ...] = (),
        release_version: str = "4.0-IV3",
        exporter: bool = False,
        dynamic: bool = False,
    ) -> None:
        """``metrics``: pykraft controllers serve their metrics port; ``exporter``: Kafka
        controllers serve theirs through the Prometheus JMX exporter's agent;
        ``broker_listener``: the name of the brokers' client (and inter-broker) listener;
        ``release_version``: the metadata.version every controller is formatted at (both
        tools' ``--release-version``; pykraft's default, 4.0-IV3, unless given);
        ``format_args``: more ``storage format`` arguments for the controllers (e.g.
        ``--add-scram``); ``controller_kind``: one kind for every controller, or one per
        controller (a mixed quorum); ``dynamic``: a dynamic quorum (``_quorum_settings``)."""
        kinds = _kinds(controller_kind, controllers)
        assert len(kinds) == controllers and set(kinds) <= {"pykraft", "kafka"}
        assert brokers == 0 or dist is not None, "Kafka brokers need Kafka's jars"
        self.dist = dist
        self.base = base
        self.cluster_id = cluster_id
        self.broker_listener = broker_listener
        self.format_args = format_args
        self.release_version = release_version
        base.mkdir(parents=True, exist_ok=True)
        ports = free_ports(2 * controllers + brokers)
        self.voters = ",".join(f"{i + 1}@127.0.0.1:{ports[i]}" for i in range(controllers))
        self.quorum, self.initial_controllers = _quorum_settings(
            ports[:controllers], self.voters, dynamic
        )
        served = {"pykraft": metrics, "kafka": exporter}
        self.controllers = [
            self._controller(
                i + 1,
                ports[i],
                ports[controllers + brokers + i] if served[kind] else None,
                kind,
                controller_config or {},
            )
            for i, kind in enumerate(kinds)
        ]
        self.brokers = [
            self._broker(100 + i, ports[controllers + i], min(brokers, 3), broker_config or {})
            for i in range(brokers)
        ]
        self._format()

    def _controller(
        self,
        node_id: int,
        port: int,
        metrics_port: int | None,
        controller_kind: str,
        extra: Mapping[str, object],
    ) -> Server:
        data = self.base / f"controller{node_id}"
        settings: dict[str, object] = {
            "process.roles": "controller",
            "node.id": node_id,
            "listeners": f"CONTROLLER://127.0.0.1:{port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
            self.quorum[0]: self.quorum[1],
            "metadata.log.dir" if controller_kind == "pykraft" else "log.dirs": data,
            **extra,
        }
        agent: tuple[str, ...] = ()
        if metrics_port is not None and controller_kind == "pykraft":
            settings["metrics.port"] = metrics_port
        elif metrics_port is not None:
            agent = (exporter_agent(metrics_port),)
        config = write_properties(self.base / f"controller{node_id}.properties", settings)
        kind = "pykraft" if controller_kind == "pykraft" else "kafka-controller"
        log = self.base / f"controller{node_id}.log"
        return Server(node_id, kind, port, config, data, log, self.dist, metrics_port, agent)

    def _broker(
        self, node_id: int, port: int, replication: int, extra: Mapping[str, object]
    ) -> Server:
        """A Kafka broker; internal topics replicated ``replication`` times (at most 3)."""
        data = self.base / f"broker{node_id}"
        config = write_properties(
            self.base / f"broker{node_id}.properties",
            {
                "process.roles": "broker",
                "node.id": node_id,
                "controller.listener.names": "CONTROLLER",
                "listeners": f"{self.broker_listener}://127.0.0.1:{port}",
                "advertised.listeners": f"{self.broker_listener}://127.0.0.1:{port}",
                "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                "inter.broker.listener.name": self.broker_listener,
                "log.dirs": data,
                self.quorum[0]: self.quorum[1],
                "offsets.topic.replication.factor": replication,
                "offsets.topic.num.partitions": 5,
                "transaction.state.log.replication.factor": replication,
                "transaction.state.log.min.isr": 1,
                "group.initial.rebalance.delay.ms": 0,
                **extra,
            },
        )
        log = self.base / f"broker{node_id}.log"
        return Server(node_id, "broker", port, config, data, log, self.dist)

    def _format(self) -> None:
        for c in self.controllers:
            if c.kind == "pykraft":
                result = subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "pykraft.cli.main",
                        "storage",
                        "format",
                        "--config",
                        str(c.config),
                        "--cluster-id",
                        self.cluster_id,
                        "--release-version",
                        self.release_version,
                        *self._quorum_format_args(),
                        *self.format_args,
                    ],
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
                if result.returncode != 0:
                    raise RuntimeError(f"pykraft storage format: {result.stderr}")
            else:
                assert self.dist is not None
                # The same release on both sides: the same bootstrap features.
                self.dist.format_storage(
                    c.config,
                    self.cluster_id,
                    "--release-version",
                    self.release_version,
                    *self._quorum_format_args(),
                    *self.format_args,
                )
        for b in self.brokers:
            assert self.dist is not None
            self.dist.format_storage(b.config, self.cluster_id)

    def _quorum_format_args(self) -> tuple[str, ...]:
        if self.initial_controllers is None:
            return ()
        return ("--initial-controllers", self.initial_controllers)

    @property
    def bootstrap(self) -> str:
        return ",".join(b.address for b in self.brokers)

    @property
    def bootstrap_controllers(self) -> str:
        return ",".join(c.address for c in self.controllers)

    def start(self, wait: bool = True) -> None:
        for c in self.controllers:
            c.start()
        for b in self.brokers:
            b.start()
        if wait:
            for b in self.brokers:
                b.wait_for(BROKER_STARTED)

    def leader(self, security: ClientSecurity | None = None) -> Server:
        """The active controller (the quorum's leader), by DescribeQuorum (dialled with
        ``security`` on a secured controller listener)."""
        import asyncio

        from pykraft.admin import AdminClient

        async def go() -> int:
            async with AdminClient(
                self.bootstrap_controllers,
                timeout_ms=15_000,
                request_timeout_ms=2_000,
                security=security,
            ) as admin:
                return (await admin.describe_quorum()).leader_id

        leader_id = asyncio.run(go())
        return next(c for c in self.controllers if c.node_id == leader_id)

    def stop(self) -> None:
        for b in self.brokers:
            if b.running:
                b.kill()
        for c in self.controllers:
            if c.running:
                c.stop()

    def kill(self) -> None:
        for server in (*self.brokers, *self.controllers):
            server.kill()
