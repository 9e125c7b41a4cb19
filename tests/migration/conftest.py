"""Fixtures of the KIP-866 tests: a real ZooKeeper and real Kafka 3.9 brokers in ZooKeeper
mode (jars through ``scripts/kafka.sh``), shared by a module's tests; every process is
killed when the module ends, also when it fails."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kafka import KafkaAdminClient

from pykraft.interop.kafka import KafkaDist, KafkaProcess
from pykraft.interop.zookeeper import ZkKafkaCluster, ZooKeeperServer


@dataclass
class OldCluster:
    dist: KafkaDist
    zookeeper: ZooKeeperServer
    kafka: ZkKafkaCluster


@pytest.fixture(scope="module")
def old_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OldCluster]:
    """ZooKeeper plus three Kafka 3.9 brokers in ZooKeeper mode (ids 0-2), started."""
    dist = KafkaDist.get("3.9")
    base: Path = tmp_path_factory.mktemp("zk-cluster")
    zookeeper = ZooKeeperServer(dist, base)
    zookeeper.start()
    kafka = ZkKafkaCluster(dist, base, zookeeper, brokers=3)
    try:
        kafka.start()
        _wait_all_brokers_known(kafka)
        yield OldCluster(dist, zookeeper, kafka)
    finally:
        kafka.kill()
        zookeeper.kill()


@pytest.fixture(scope="session", autouse=True)
def _no_process_left_behind() -> Iterator[None]:
    yield
    KafkaProcess.kill_all()


def _wait_all_brokers_known(kafka: ZkKafkaCluster, timeout_s: float = 60) -> None:
    """Until every broker's metadata lists every broker: a broker logs "started" before the
    ZooKeeper-mode controller has seen the others register, and a CreateTopics with RF 3 in
    that window fails with INVALID_REPLICATION_FACTOR (a CI failure). A broker learns the
    brokers only from the controller's UpdateMetadata, so all of them listing all means the
    controller has them all."""
    want = len(kafka.brokers)
    deadline = time.monotonic() + timeout_s
    for broker in kafka.brokers:
        while True:
            admin = KafkaAdminClient(bootstrap_servers=broker.address, request_timeout_ms=10_000)
            try:
                seen = len(admin.describe_cluster()["brokers"])
            finally:
                admin.close()
            if seen == want:
                break
            assert time.monotonic() < deadline, f"broker {broker.node_id} sees {seen} of {want}"
            time.sleep(0.2)
