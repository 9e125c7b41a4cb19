"""What the KIP-866 test modules share: waiting, Kafka's rolling restart of the old
cluster's brokers, and pykraft controllers configured to migrate it."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kafka import KafkaAdminClient

from pykraft.interop.cluster import Server, free_ports, read_metrics
from pykraft.interop.kafka import write_properties
from pykraft.metadata.serde import decode_record
from pykraft.records import decode_records, iter_batches

from .conftest import OldCluster

CONTROLLER_ID = 3000


def kraft_mode(broker: Server) -> dict[str, object | None]:
    """A migration-mode broker's config changes to restart it as a KRaft broker (Kafka's
    phase 2: ``node.id``, ``process.roles``, no ZooKeeper configs, no IBP)."""
    return {
        "zookeeper.metadata.migration.enable": None,
        "zookeeper.connect": None,
        "zookeeper.session.timeout.ms": None,
        "inter.broker.protocol.version": None,
        "broker.id": None,
        "node.id": broker.node_id,
        "process.roles": "broker",
    }


MIGRATION_MODE: dict[str, object | None] = {
    "zookeeper.metadata.migration.enable": "true",
    "controller.listener.names": "CONTROLLER",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "inter.broker.protocol.version": "3.9",
    # Heartbeats every 500 ms (kept in KRaft mode), for BROKER_SESSIONS.
    "broker.heartbeat.interval.ms": 500,
}
# The controllers' broker sessions: a broker restarted after a clean stop is refused
# (DUPLICATE_BROKER_REGISTRATION) until its old session expires, as on Kafka 4.x's
# controllers; 4 s instead of the default 9 s keeps the tests' rolling restarts short.
BROKER_SESSIONS: dict[str, object | None] = {"broker.session.timeout.ms": 4000}


# Kafka's StandardAuthorizer on pykraft controllers and KRaft-mode brokers; the clients are
# ANONYMOUS (PLAINTEXT), so a resource with no ACLs stays open to them.
AUTHORIZER: dict[str, object | None] = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
}
# Delegation tokens on (the migrated ones are kept) and expired within a second of their end.
TOKENS: dict[str, object | None] = {
    "delegation.token.secret.key": "migration-test-secret",
    "delegation.token.expiry.check.interval.ms": 1000,
}


def until(predicate: Any, what: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def full_isr(bootstrap: str, topics: list[str]) -> bool:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    try:
        described = admin.describe_topics(topics)
    except Exception:  # a broker restarting: ask again
        return False
    finally:
        admin.close()
    return all(
        not t["error_code"]
        and all(len(p["isr_nodes"]) == len(p["replica_nodes"]) for p in t["partitions"])
        for t in described
    )


def roll(
    old: OldCluster,
    changes: Callable[[Server], dict[str, object | None]],
    *,
    started: str,
    topics: list[str],
    kraft_registered: bool = True,
    stop: Callable[[Server], None] | None = None,
) -> None:
    """Restart each broker with ``changes(broker)``, one at a time, each back in every ISR of
    ``topics`` before the next stops (Kafka's rolling restart). ``kraft_registered``: the
    brokers register with a KRaft controller (wait until it unfenced them). ``stop``: how a
    broker is stopped (default: SIGTERM, a controlled shutdown)."""
    kafka = old.kafka
    for broker in kafka.brokers:
        if stop is None:
            broker.stop()
        else:
            stop(broker)
        kafka.reconfigure(broker, changes(broker))
        after = len(broker.text())
        broker.start()
        broker.wait_for(started, 120, after=after)
        if kraft_registered:
            broker.wait_for("The broker has been unfenced", 60, after=after)
        # 240 s: a rollback's killed broker waits out its ZooKeeper session and the ISR
        # catches up after it; alone this takes well under a minute, but the CI replica of
        # 398eee8 (two workers of JVMs) ran past 120 s once while the test passed alone in 85 s.
        until(lambda: full_isr(kafka.bootstrap, topics), "every ISR full", 240)


def quorum(base: Path, zookeeper: str, cluster_id: str) -> list[Server]:
    """Three pykraft controllers (ids 3000-3002, static voters) with the migration flag,
    formatted at the brokers' release (3.9)."""
    ports = free_ports(6)
    voters = ",".join(f"{CONTROLLER_ID + i}@127.0.0.1:{ports[i]}" for i in range(3))
    servers = []
    for i in range(3):
        node_id, data = CONTROLLER_ID + i, base / f"controller{i}"
        config = write_properties(
            base / f"controller{i}.properties",
            {
                "process.roles": "controller",
                "node.id": node_id,
                "listeners": f"CONTROLLER://127.0.0.1:{ports[i]}",
                "controller.listener.names": "CONTROLLER",
                "controller.quorum.voters": voters,
                "metadata.log.dir": data,
                "metrics.port": ports[3 + i],
                "zookeeper.metadata.migration.enable": "true",
                "zookeeper.connect": zookeeper,
                "inter.broker.listener.name": "PLAINTEXT",
                # ACLs migrated from ZooKeeper are enforced (everything else stays open).
                **AUTHORIZER,
                **TOKENS,
                **BROKER_SESSIONS,
            },
        )
        log = base / f"controller{i}.log"
        servers.append(Server(node_id, "pykraft", ports[i], config, data, log, None, ports[3 + i]))
    for server in servers:
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "pykraft.cli.main",
                "storage",
                "format",
                "--config",
                str(server.config),
                "--cluster-id",
                cluster_id,
                "--release-version",
                "3.9",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr
    return servers


def controller(base: Path, old: OldCluster, cluster_id: str, **extra: object) -> Server:
    port, metrics = free_ports(2)
    data = base / "controller"
    config = write_properties(
        base / "controller.properties",
        {
            "process.roles": "controller",
            "node.id": CONTROLLER_ID,
            "listeners": f"CONTROLLER://127.0.0.1:{port}",
            "controller.listener.names": "CONTROLLER",
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{port}",
            "metadata.log.dir": data,
            "metrics.port": metrics,
            "zookeeper.metadata.migration.enable": "true",
            "zookeeper.connect": old.zookeeper.connect,
            "inter.broker.listener.name": "PLAINTEXT",
            **BROKER_SESSIONS,
            **extra,
        },
    )
    return Server(
        CONTROLLER_ID, "pykraft", port, config, data, base / "controller.log", None, metrics
    )


def format_controller(server: Server, cluster_id: str, *flags: str) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pykraft.cli.main",
            "storage",
            "format",
            "--config",
            str(server.config),
            "--cluster-id",
            cluster_id,
            "--standalone",
            *flags,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


def active_controller(controllers: list[Server], timeout_s: float = 60) -> Server:
    """The active one of ``controllers`` (ActiveControllerCount 1), waiting for one."""
    found: list[Server] = []

    def active() -> bool:
        for c in controllers:
            if c.running and c.metrics_port is not None:
                try:
                    values = read_metrics("127.0.0.1", c.metrics_port, timeout_s=2)
                except OSError:
                    continue
                if values.get("kafka_controller_kafkacontroller_activecontrollercount"):
                    found.append(c)
                    return True
        return False

    until(active, "an active controller", timeout_s)
    return found[0]


def log_records(controller: Server) -> list[tuple[int, Any]]:
    """(offset, record) of every data record in a controller's metadata log files."""
    out: list[tuple[int, Any]] = []
    for segment in sorted((controller.data / "__cluster_metadata-0").glob("*.log")):
        buf = segment.read_bytes()
        for header, pos in iter_batches(buf):
            if header.is_control:
                continue
            for record in decode_records(buf[pos : pos + header.size]):
                assert record.value is not None
                out.append((record.offset, decode_record(record.value)[0]))
    return out
