"""A Kafka cluster whose controllers are pykraft: pykraft controller processes (static
voters) and Apache Kafka brokers (``process.roles=broker``, formatted with Kafka's own
``kafka-storage``), all on 127.0.0.1."""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass
from pathlib import Path

from pykraft.interop.kafka import KafkaDist, KafkaProcess, write_properties

from ..node.procs import CLUSTER_ID, Proc, describe_quorum, fmt, free_ports, make_config

__all__ = ["Broker", "KafkaCluster"]

RUNNING = "Transitioning from RECOVERY to RUNNING"
STARTED = "Kafka Server started"
BROKER_START_S = 120  # a JVM on a loaded 2-core machine


@dataclass
class Broker:
    node_id: int
    port: int
    config: Path
    data: Path
    log: Path
    dist: KafkaDist
    process: KafkaProcess | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.running

    def start(self, wait: bool = True) -> None:
        self.process = self.dist.start("server", str(self.config), log=self.log)
        if wait:
            self.wait_running()

    def wait_running(self) -> None:
        assert self.process is not None
        self.process.wait_for_line(STARTED, BROKER_START_S)

    def text(self) -> str:
        return self.process.text() if self.process is not None else ""

    def stop(self) -> int:
        """SIGTERM: Kafka's controlled shutdown."""
        assert self.process is not None
        return self.process.stop(timeout_s=60)

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()

    def count(self, pattern: str) -> int:
        return len(re.findall(pattern, self.text()))


class KafkaCluster:
    """``controllers`` pykraft controllers and ``brokers`` Kafka brokers (ids 100, 101...)."""

    def __init__(
        self,
        kafka: KafkaDist,
        tmp: Path,
        *,
        controllers: int = 3,
        brokers: int = 1,
        controller_extra: str = "",
        broker_overrides: dict[str, object] | None = None,
    ) -> None:
        ports = free_ports(2 * controllers + brokers)
        self.voters = ",".join(f"{i + 1}@127.0.0.1:{ports[i]}" for i in range(controllers))
        self.controllers: list[Proc] = [
            make_config(
                tmp,
                i + 1,
                ports[i],
                voters=self.voters,
                extra=controller_extra,
                metrics_port=ports[controllers + brokers + i],
            )
            for i in range(controllers)
        ]
        self.brokers: list[Broker] = []
        for i in range(brokers):
            node_id = 100 + i
            port = ports[controllers + i]
            data = tmp / f"broker{node_id}"
            config = write_properties(
                tmp / f"broker{node_id}.properties",
                {
                    "process.roles": "broker",
                    "node.id": node_id,
                    "controller.listener.names": "CONTROLLER",
                    "listeners": f"PLAINTEXT://127.0.0.1:{port}",
                    "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
                    "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                    "inter.broker.listener.name": "PLAINTEXT",
                    "log.dirs": data,
                    "controller.quorum.voters": self.voters,
                    "offsets.topic.replication.factor": min(brokers, 3),
                    "offsets.topic.num.partitions": 5,
                    "transaction.state.log.replication.factor": min(brokers, 3),
                    "transaction.state.log.min.isr": 1,
                    "group.initial.rebalance.delay.ms": 0,
                    **(broker_overrides or {}),
                },
            )
            self.brokers.append(
                Broker(node_id, port, config, data, tmp / f"broker{node_id}.log", kafka)
            )
        for p in self.controllers:
            fmt(p)
        for b in self.brokers:
            kafka.format_storage(b.config, CLUSTER_ID)

    @property
    def bootstrap(self) -> str:
        return ",".join(b.address for b in self.brokers)

    @property
    def bootstrap_controllers(self) -> str:
        return ",".join(p.address for p in self.controllers)

    def start(self) -> None:
        for p in self.controllers:
            p.start()
        for b in self.brokers:
            b.start(wait=False)
        for b in self.brokers:
            b.wait_running()

    def leader(self) -> Proc:
        info = describe_quorum(self.bootstrap_controllers, timeout_ms=10_000)
        return next(p for p in self.controllers if p.node_id == info.leader_id)

    def stop(self) -> None:
        for b in self.brokers:
            if b.running:
                b.kill()
        for p in self.controllers:
            if p.process is not None and p.process.poll() is None:
                p.stop(signal.SIGTERM)

    def kill(self) -> None:
        for b in self.brokers:
            b.kill()
        for p in self.controllers:
            p.kill()
