"""Issue 48 item 4's proof with real processes: a Kafka 4.4.0 broker on three pykraft
controllers, and on three of Kafka 4.4.0's own; ``pykraft metadata backup --follow`` copying
controller 1's directory while they run. A topic is created and written, then (after the restore point) another. The cluster's
controllers are destroyed -- killed, every directory wiped -- and a new controller is restored
from the backup at the point with ``pykraft metadata restore`` (and started by the same
kind of controller: Kafka's starts from the directory pykraft wrote). The broker, started again on
it, serves the restored topic with every record it held and takes new ones; the topic created
after the point is gone from the metadata and its log kept aside as Kafka's stray partition
detection does (``*-stray``)."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import NewTopic

from pykraft.backup.restore import RestorePoint, plan_restore
from pykraft.interop.cluster import BROKER_STARTED
from pykraft.interop.kafka import KafkaDist

from ..node.procs import cli, wait_for
from .cluster import KafkaCluster
from .records import consume_values

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

RECORDS = 200


def _produce(bootstrap: str, topic: str, values: range) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    try:
        for i in values:
            producer.send(topic, str(i).encode())
        producer.flush(timeout=60)
    finally:
        producer.close()


def _topics(bootstrap: str) -> set[str]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
    try:
        return {t for t in admin.list_topics() if not t.startswith("__")}
    finally:
        admin.close()


def _create(bootstrap: str, topic: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
    try:
        admin.create_topics([NewTopic(topic, 2, 1, topic_configs={"retention.ms": "7200000"})])
    finally:
        admin.close()


def _holds(backup: Path, topics: int) -> bool:
    try:
        return plan_restore(backup, RestorePoint())[0].topics >= topics
    except Exception:  # the first round has not run yet
        return False


@pytest.mark.parametrize("kind", ["pykraft", "kafka"])
def test_a_destroyed_cluster_is_restored_from_its_backup(
    kafka: KafkaDist, tmp_path: Path, kind: str
) -> None:
    """``kind``: whose controllers the cluster runs on, backed up and restored: pykraft's, or
    Kafka 4.4.0's own (their directory backed up while they run, and the restored directory
    started by Kafka's controller)."""
    cluster = KafkaCluster(kafka, tmp_path, controllers=3, brokers=1, controller_kind=kind)
    backup = tmp_path / "backup"
    first = cluster.controllers[0]
    follower = subprocess.Popen(
        [
            *(sys.executable, "-m", "pykraft.cli.main", "metadata", "backup"),
            *("-c", str(first.config), "--to", str(backup), "--follow", "--interval-ms", "200"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        cluster.start()
        _create(cluster.bootstrap, "kept")
        _produce(cluster.bootstrap, "kept", range(RECORDS))
        wait_for(lambda: _holds(backup, 1), "the backup holding topic kept")
        time.sleep(0.5)
        point = int(time.time() * 1000)
        time.sleep(0.5)
        _create(cluster.bootstrap, "later")
        _produce(cluster.bootstrap, "later", range(10))
        wait_for(lambda: _holds(backup, 2), "the backup holding topic later")
        follower.send_signal(signal.SIGTERM)
        out, _ = follower.communicate(timeout=30)
        assert follower.returncode == 0, out
        assert "backed up" in out

        broker = cluster.brokers[0]
        broker.stop()  # the broker is stopped first (cleanly), then the quorum is lost
        for controller in cluster.controllers:
            controller.kill()
            shutil.rmtree(controller.data)

        voters = f"1@127.0.0.1:{first.port}"  # the new quorum: node 1 alone, on its old port
        text = first.config.read_text().replace(cluster.voters, voters)
        first.config.write_text(text)
        restored = cli(
            "metadata", "restore", str(backup), "-c", str(first.config), "--to-time", str(point)
        )
        assert restored.returncode == 0, restored.stderr
        assert "1 topics" in restored.stdout, restored.stdout

        first.start()
        seen_before = len(broker.text())
        broker.start()
        broker.wait_for(BROKER_STARTED, after=seen_before)
        wait_for(lambda: _topics(cluster.bootstrap) == {"kept"}, "the broker serving the restore")
        assert consume_values(cluster.bootstrap, "kept", lambda s: len(s) == RECORDS) == set(
            range(RECORDS)
        )
        _produce(cluster.bootstrap, "kept", range(RECORDS, RECORDS + 20))
        assert consume_values(cluster.bootstrap, "kept", lambda s: len(s) == RECORDS + 20) == set(
            range(RECORDS + 20)
        )
        strays = sorted(p.name.split(".")[0] for p in broker.data.glob("later-*-stray"))
        assert strays == ["later-0", "later-1"], sorted(p.name for p in broker.data.iterdir())
    finally:
        if follower.poll() is None:
            follower.kill()
        cluster.kill()
