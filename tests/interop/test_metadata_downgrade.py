"""Issue 48 item 5's proof: metadata.version taken down from 4.4-IV2 to 4.0-IV3 and a Kafka
4.0.2 broker running on the result. A Kafka 4.4.0 broker on a pykraft controller at 4.4-IV2
writes a topic; the controller's directory is backed up; the controller is destroyed and a new
one restored from the backup with ``--release-version 4.0-IV3``: the dry run lists what 4.0-IV3
cannot hold (here the features 4.0 does not have), the restore refuses without
``--allow-loss`` and goes on with it. The broker's binary is then Kafka 4.0.2, on the same
data (its own copy of the metadata log removed first: 4.0 cannot read the records 4.4 wrote
there): it registers with the restored controller, serves the topic with every record and
takes new ones."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import NewTopic

from pykraft.interop.cluster import BROKER_STARTED
from pykraft.interop.kafka import KafkaDist

from ..node.procs import cli
from .cluster import KafkaCluster
from .records import consume_values

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

RECORDS = 100


def _produce(bootstrap: str, values: range) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        for i in values:
            producer.send("kept", str(i).encode())
        producer.flush(timeout=60)
    finally:
        producer.close()


def test_a_44_cluster_is_restored_at_40_and_a_40_broker_runs_on_it(
    kafka: KafkaDist, tmp_path: Path
) -> None:
    kafka40 = KafkaDist.get("4.0")
    cluster = KafkaCluster(kafka, tmp_path, controllers=1, brokers=1, release_version="4.4-IV2")
    controller, broker = cluster.controllers[0], cluster.brokers[0]
    older = dataclasses.replace(broker, dist=kafka40, process=None)
    try:
        cluster.start()
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30_000)
        admin.create_topics([NewTopic("kept", 2, 1)])
        admin.close()
        _produce(cluster.bootstrap, range(RECORDS))
        backup = tmp_path / "backup"
        taken = cli("metadata", "backup", str(controller.data), "--to", str(backup))
        assert taken.returncode == 0, taken.stderr

        broker.stop()
        controller.kill()
        shutil.rmtree(controller.data)
        restore = ["metadata", "restore", str(backup), "--release-version", "4.0-IV3"]
        dry = cli(*restore, "--dry-run", "--json")
        assert dry.returncode == 0, dry.stderr
        plan = json.loads(dry.stdout)
        assert (plan["source_metadata_version"], plan["metadata_version"]) == (33, 25)
        lowered = sorted(loss.split()[1] for loss in plan["losses"])
        # What 4.4-IV2 finalizes beyond 4.0-IV3's features; no record loses a field.
        assert lowered == ["eligible.leader.replicas.version", "share.version", "streams.version"]
        refused = cli(*restore, "-c", str(controller.config))
        assert refused.returncode == 1 and "--allow-loss" in refused.stdout
        done = cli(*restore, "-c", str(controller.config), "--allow-loss")
        assert done.returncode == 0, done.stderr

        # The 4.4 broker's own copy of the metadata log holds records at versions 4.0 cannot
        # read (Kafka 4.0.2 stops at "Can't read version 4 of BrokerEndpoint"): it is only a
        # cache of the controller's log, so it goes, and the broker fetches the snapshot.
        shutil.rmtree(broker.data / "__cluster_metadata-0")
        controller.start()
        before = len(older.text())
        older.start()
        older.wait_for(BROKER_STARTED, after=before)
        assert older.process is not None and "kafka_2.13-4.0.2.jar" in str(older.process.args)
        assert "with metadata.version Optional[4.0-IV3]" in older.text()[before:]
        seen = consume_values(cluster.bootstrap, "kept", lambda s: len(s) == RECORDS)
        assert seen == set(range(RECORDS))
        _produce(cluster.bootstrap, range(RECORDS, RECORDS + 10))
        seen = consume_values(cluster.bootstrap, "kept", lambda s: len(s) == RECORDS + 10)
        assert seen == set(range(RECORDS + 10))
        features = cli("features", "--bootstrap-controller", controller.address, "describe")
        assert "metadata.version" in features.stdout and "4.0-IV3" in features.stdout
    finally:
        older.kill()
        cluster.kill()
