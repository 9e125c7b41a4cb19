"""The ZooKeeper-era Kafka cluster that KIP-866 migrates, as real processes on 127.0.0.1.

* :class:`ZooKeeperServer` -- Apache ZooKeeper's own server (``ZooKeeperServerMain``, from the
  ZooKeeper jar that Kafka 3.9 depends on, fetched through ``interop/kafka-3.9/pom.xml``),
  standalone, one data directory; ready once it answers the ``ruok`` four-letter word.
* :class:`ZkKafkaCluster` -- Kafka 3.9 brokers in ZooKeeper mode (``broker.id``,
  ``zookeeper.connect``; one of them is the ZooKeeper-era controller), each a
  :class:`~pykraft.interop.cluster.Server` of kind ``"zk-broker"``.

Both are killed when the interpreter exits, as every process of ``pykraft.interop``.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from pykraft.interop.cluster import Server, free_ports
from pykraft.interop.kafka import TOOL_JVM, KafkaDist, KafkaError, KafkaProcess, write_properties

__all__ = ["ZK_BROKER_STARTED", "ZkKafkaCluster", "ZooKeeperServer"]

ZK_BROKER_STARTED: Final = "started (kafka.server.KafkaServer)"
START_TIMEOUT_S: Final = 120


class ZooKeeperServer:
    """A standalone ZooKeeper on 127.0.0.1 (``port`` 0: a free one), data under ``base``."""

    def __init__(self, dist: KafkaDist, base: Path, *, port: int = 0) -> None:
        self.dist = dist
        self.base = base
        self.port = port or free_ports(1)[0]
        self.data = base / "zookeeper-data"
        base.mkdir(parents=True, exist_ok=True)
        self.log = base / "zookeeper.log"
        self.config = write_properties(
            base / "zookeeper.properties",
            {
                "dataDir": self.data,
                "clientPort": self.port,
                "clientPortAddress": "127.0.0.1",
                "tickTime": 500,
                "maxClientCnxns": 0,
                "admin.enableServer": "false",
                "4lw.commands.whitelist": "ruok,srvr,mntr",
            },
        )
        self.process: KafkaProcess | None = None

    @property
    def connect(self) -> str:
        """The ``zookeeper.connect`` string."""
        return f"127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.running

    def start(self, timeout_s: float = 60) -> None:
        self.process = self.dist.start("zookeeper", str(self.config), log=self.log, jvm=TOOL_JVM)
        deadline = time.monotonic() + timeout_s
        while not self.ok():
            if not self.process.running:
                raise KafkaError(f"ZooKeeper exited:\n{self.process.tail()}")
            if time.monotonic() > deadline:
                raise KafkaError(
                    f"ZooKeeper not serving within {timeout_s} s:\n{self.process.tail()}"
                )
            time.sleep(0.1)

    def ok(self) -> bool:
        """True when the server answers ``ruok`` with ``imok``."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"ruok")
                return s.recv(8) == b"imok"
        except OSError:
            return False

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop(timeout_s=10)

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()

    def wipe(self) -> None:
        """Remove the data directory (the server must be stopped)."""
        assert not self.running
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(self.data)


class ZkKafkaCluster:
    """``brokers`` Kafka brokers (``dist`` must be a 3.x distribution: ZooKeeper mode) with
    ids 0, 1, ... on ``zookeeper``; configs written, not started."""

    def __init__(
        self,
        dist: KafkaDist,
        base: Path,
        zookeeper: ZooKeeperServer,
        *,
        brokers: int = 3,
        broker_config: Mapping[str, object] | None = None,
    ) -> None:
        assert dist.major == 3, "ZooKeeper mode needs Kafka 3.x"
        self.dist = dist
        self.base = base
        self.zookeeper = zookeeper
        base.mkdir(parents=True, exist_ok=True)
        ports = free_ports(brokers)
        self.settings: list[dict[str, object]] = []
        self.brokers: list[Server] = []
        for i in range(brokers):
            port = ports[i]
            settings: dict[str, object] = {
                "broker.id": i,
                "zookeeper.connect": zookeeper.connect,
                "zookeeper.session.timeout.ms": 6000,
                "listeners": f"PLAINTEXT://127.0.0.1:{port}",
                "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT",
                "inter.broker.listener.name": "PLAINTEXT",
                "log.dirs": base / f"zk-broker{i}",
                "offsets.topic.replication.factor": min(brokers, 3),
                "offsets.topic.num.partitions": 5,
                "transaction.state.log.replication.factor": min(brokers, 3),
                "transaction.state.log.min.isr": 1,
                "group.initial.rebalance.delay.ms": 0,
                "controlled.shutdown.enable": "true",
                **(broker_config or {}),
            }
            self.settings.append(settings)
            config = write_properties(base / f"zk-broker{i}.properties", settings)
            self.brokers.append(
                Server(
                    i,
                    "zk-broker",
                    port,
                    config,
                    base / f"zk-broker{i}",
                    base / f"zk-broker{i}.log",
                    dist,
                )
            )

    @property
    def bootstrap(self) -> str:
        return ",".join(b.address for b in self.brokers)

    def reconfigure(self, broker: Server, changes: Mapping[str, object | None]) -> None:
        """Rewrite ``broker``'s config with ``changes`` (None removes a key); the broker picks
        them up at its next start (a rolling restart, as the operator procedure does)."""
        settings = self.settings[self.brokers.index(broker)]
        for key, value in changes.items():
            if value is None:
                settings.pop(key, None)
            else:
                settings[key] = value
        write_properties(broker.config, settings)

    def start(self, wait: bool = True) -> None:
        for b in self.brokers:
            b.start()
        if wait:
            for b in self.brokers:
                b.wait_for(ZK_BROKER_STARTED, START_TIMEOUT_S)

    def kill(self) -> None:
        for b in self.brokers:
            b.kill()
