"""KIP-866 with the active controller killed during the copy (SPEC G6): three pykraft controllers migrate
a real ZooKeeper holding 1,000 topics (9,000 partitions, about 21,000 znodes: a copy that reads
for about a second). The moment the active controller enters ZK_MIGRATION, ZooKeeper is
frozen (SIGSTOP) so that its read stops half way, the controller is killed (kill -9), and
ZooKeeper resumes. The next leader claims ZooKeeper with a higher epoch and does the whole copy
again: one migration transaction in the log, every topic in it, nothing from the dead one.

The ZooKeeper brokers are stand-ins (registrations and heartbeats: ``interop.migrating``), as
a migration reads nothing else from them; ``test_migration.py`` migrates real brokers."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pykraft.interop.kafka import KafkaDist
from pykraft.interop.migrating import MigratingBrokerStandIns, fill_zookeeper
from pykraft.interop.zookeeper import ZooKeeperServer
from pykraft.metadata import records as r
from pykraft.migration import zk_client, zk_data, zk_writes

from .helpers import active_controller, log_records, quorum

CLUSTER_ID = "CopyFailoverCluster0Aa"
TOPICS, PARTITIONS = 1000, 9


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer(KafkaDist.get("3.9"), tmp_path_factory.mktemp("zookeeper"))
    server.start()
    try:
        fill_zookeeper(server.connect, CLUSTER_ID, TOPICS, PARTITIONS)
        yield server
    finally:
        server.kill()


def _signal(zookeeper: ZooKeeperServer, signum: int) -> None:
    assert zookeeper.process is not None
    zookeeper.process.popen.send_signal(signum)


def test_killed_during_the_copy_the_next_leader_copies_everything(
    zookeeper: ZooKeeperServer, tmp_path: Path
) -> None:
    controllers = quorum(tmp_path, zookeeper.connect, CLUSTER_ID)
    for server in controllers:
        server.start()
    brokers = MigratingBrokerStandIns(
        zookeeper.connect, [("127.0.0.1", c.port) for c in controllers], CLUSTER_ID
    )
    frozen = False
    try:
        first = active_controller(controllers)
        brokers.start()
        deadline = time.monotonic() + 120
        while "-> ZK_MIGRATION" not in first.text():
            assert time.monotonic() < deadline, "the copy never started"
            assert brokers.error is None, brokers.error
            time.sleep(0.01)
        _signal(zookeeper, signal.SIGSTOP)
        frozen = True
        # Its read is still going on: nothing was appended yet.
        assert "Completed migration of metadata" not in first.text()
        first.kill()
        _signal(zookeeper, signal.SIGCONT)
        frozen = False
        second = active_controller(controllers)
        assert second is not first
        second.wait_for("-> DUAL_WRITE", 120)
    finally:
        if frozen:
            _signal(zookeeper, signal.SIGCONT)
        brokers.stop()
        for server in controllers:
            server.kill()
    assert "Completed migration of metadata" not in first.text()
    assert f"PartitionRecord={TOPICS * PARTITIONS}, TopicRecord={TOPICS}" in second.text()
    records: list[tuple[int, Any]] = log_records(second)
    begins = [o for o, rec in records if isinstance(rec, r.BeginTransactionRecord)]
    ends = [o for o, rec in records if isinstance(rec, r.EndTransactionRecord)]
    migration = [
        o for o, rec in records
        if isinstance(rec, r.BeginTransactionRecord) and rec.name == "ZK Migration"
    ]  # fmt: skip
    assert len(migration) == 1 and not any(
        isinstance(rec, r.AbortTransactionRecord) for _, rec in records
    )
    assert len(begins) == len(ends)
    topics = {rec.name for _, rec in records if isinstance(rec, r.TopicRecord)}
    assert len(topics) == TOPICS
    with zk_client.session(zookeeper.connect) as zk:
        claimed = zk_data.ZkSnapshot({"/c": zk_data.Znode(zk.get("/controller")[0], 0)}).json("/c")
        owner, _, offset, _ = zk_writes.parse_migration(zk.get("/migration")[0])
    assert claimed is not None and claimed["brokerid"] == second.node_id == owner
    assert offset >= ends[-1]
