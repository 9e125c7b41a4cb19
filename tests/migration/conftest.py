"""Fixtures of the KIP-866 tests: a real ZooKeeper and real Kafka 3.9 brokers in ZooKeeper
mode (jars through ``scripts/kafka.sh``), shared by a module's tests; every process is
killed when the module ends, also when it fails."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

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
        yield OldCluster(dist, zookeeper, kafka)
    finally:
        kafka.kill()
        zookeeper.kill()


@pytest.fixture(scope="session", autouse=True)
def _no_process_left_behind() -> Iterator[None]:
    yield
    KafkaProcess.kill_all()
