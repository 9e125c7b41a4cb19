"""KIP-866's initial load, read side: what a real Kafka 3.9 cluster keeps in a real ZooKeeper
becomes the metadata records Kafka's ``ZkMigrationClient.readAllMetadata`` would write --
checked against what the brokers themselves report (kafka-python) and the znodes' versions
(SPEC G1); and the rollback (G6)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import (
    ConfigResource,
    ConfigResourceType,
    NewTopic,
)

from pykraft.interop.cluster import BROKER_STARTED, Server
from pykraft.interop.zookeeper import ZK_BROKER_STARTED
from pykraft.metadata import records as r
from pykraft.metadata.serde import decode_record, encode_record
from pykraft.migration import zk_client, zk_data
from pykraft.pipeline.migration_dry_run import run_dry_run

from .conftest import OldCluster

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
from .helpers import MIGRATION_MODE, controller, format_controller, kraft_mode, roll

DURING = "during-dual-write"
KRAFT_ERA = "made-with-kraft-brokers"
ACL = {
    "version": 1,
    "acls": [
        {"principal": "User:alice", "permissionType": "Allow", "operation": "Read", "host": "*"}
    ],
}
TOKEN = "/delegation_token/tokens/token-1"
TOKEN_JSON = (
    b'{"version":3,"owner":"User%3Aalice","tokenRequester":"User%3Aalice",'
    b'"renewers":["User%3Abob"],"issueTimestamp":1700000000000,'
    b'"maxTimestamp":1700604800000,"expiryTimestamp":1700086400000,"tokenId":"token-1"}'
)
TOPICS = {"orders": (3, {"retention.ms": "86400000", "cleanup.policy": "delete"}), "audit": (2, {})}


def _until(predicate: Any, what: str, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def loaded(old_cluster: OldCluster) -> tuple[zk_data.ZkSnapshot, zk_data.MigrationLoad]:
    """The old cluster with topics, topic/broker configs, a SCRAM user, a client quota and a
    producer id block, all made through the brokers; then read from ZooKeeper."""
    bootstrap = old_cluster.kafka.bootstrap
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
    try:
        admin.create_topics(
            [
                NewTopic(name, partitions, 3, topic_configs=configs)
                for name, (partitions, configs) in TOPICS.items()
            ]
        )
        admin.alter_configs(
            [
                ConfigResource(ConfigResourceType.BROKER, "1", {"log.cleaner.threads": "2"}),
            ]
        )
    finally:
        admin.close()
    configs = ("configs", "--bootstrap-server", bootstrap, "--alter", "--entity-type")
    old_cluster.dist.run(
        *configs, "brokers", "--entity-default", "--add-config", "log.retention.bytes=1073741824"
    )
    old_cluster.dist.run(
        *configs,
        "users",
        "--entity-name",
        "alice",
        "--add-config",
        "SCRAM-SHA-256=[iterations=8192,password=alice-secret]",
    )
    old_cluster.dist.run(
        *configs,
        "users",
        "--entity-name",
        "bob@example",
        "--add-config",
        "producer_byte_rate=1048576,consumer_byte_rate=2097152",
    )
    producer = KafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True, acks="all")
    producer.send("orders", b"first").get(timeout=30)
    producer.close()
    with zk_client.session(old_cluster.zookeeper.connect) as zk:
        _until(lambda: zk.exists("/config/users/bob%40example") is not None, "the quota znode")
        _until(
            lambda: (
                b"SCRAM-SHA-256"
                in (zk.get("/config/users/alice")[0] if zk.exists("/config/users/alice") else b"")
            ),
            "alice's credential",
        )
        snapshot = zk_client.read_snapshot(zk)
    return snapshot, zk_data.read_all_metadata(snapshot)


def by_type(load: zk_data.MigrationLoad, cls: type) -> list[Any]:
    return [rec for rec, _ in load.records() if isinstance(rec, cls)]


def test_topics_partitions_and_their_configs(
    old_cluster: OldCluster, loaded: tuple[zk_data.ZkSnapshot, zk_data.MigrationLoad]
) -> None:
    snapshot, load = loaded
    admin = KafkaAdminClient(bootstrap_servers=old_cluster.kafka.bootstrap)
    try:
        described = {t["name"]: t for t in admin.describe_topics(list(TOPICS))}
    finally:
        admin.close()
    topics = {t.name: t.topic_id for t in by_type(load, r.TopicRecord)}
    assert set(TOPICS) <= set(topics)
    partitions = {(p.topic_id, p.partition_id): p for p in by_type(load, r.PartitionRecord)}
    for name, (count, configs) in TOPICS.items():
        topic_id = topics[name]
        assert str(topic_id) == str(described[name]["topic_id"])
        for part in described[name]["partitions"]:
            index = part["partition_index"]
            rec = partitions[(topic_id, index)]
            assert list(rec.replicas) == part["replica_nodes"]
            assert list(rec.isr) == part["isr_nodes"]
            assert rec.leader == part["leader_id"]
            state = snapshot.get(f"/brokers/topics/{name}/partitions/{index}/state")
            assert state is not None and rec.partition_epoch == state.version
        assert len(described[name]["partitions"]) == count
        got = {
            (c.name, c.value)
            for c in by_type(load, r.ConfigRecord)
            if c.resource_type == zk_data.TOPIC and c.resource_name == name
        }
        assert got == set(configs.items())
    # Kafka's batching: one batch per topic, its TopicRecord first, configs, then partitions.
    first = load.batches[0]
    assert isinstance(first[0][0], r.TopicRecord)
    assert load.broker_ids >= {0, 1, 2}


def test_broker_configs_default_entity_is_the_empty_name(
    loaded: tuple[zk_data.ZkSnapshot, zk_data.MigrationLoad],
) -> None:
    _, load = loaded
    got = {
        (c.resource_name, c.name, c.value)
        for c in by_type(load, r.ConfigRecord)
        if c.resource_type == zk_data.BROKER
    }
    assert ("1", "log.cleaner.threads", "2") in got
    assert ("", "log.retention.bytes", "1073741824") in got


def test_scram_credential_verifies_the_password(
    loaded: tuple[zk_data.ZkSnapshot, zk_data.MigrationLoad],
) -> None:
    """The migrated credential is the broker's: RFC 5802's keys from the password."""
    _, load = loaded
    (cred,) = [c for c in by_type(load, r.UserScramCredentialRecord) if c.name == "alice"]
    assert cred.mechanism == 1 and cred.iterations == 8192
    salted = hashlib.pbkdf2_hmac("sha256", b"alice-secret", cred.salt, cred.iterations)
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    assert hashlib.sha256(client_key).digest() == cred.stored_key
    assert hmac.new(salted, b"Server Key", hashlib.sha256).digest() == cred.server_key


def test_client_quota_names_desanitized(
    loaded: tuple[zk_data.ZkSnapshot, zk_data.MigrationLoad],
) -> None:
    _, load = loaded
    quotas = {
        (tuple((e.entity_type, e.entity_name) for e in q.entity), q.key): q.value
        for q in by_type(load, r.ClientQuotaRecord)
    }
    assert quotas[((("user", "bob@example"),), "producer_byte_rate")] == 1048576.0
    assert quotas[((("user", "bob@example"),), "consumer_byte_rate")] == 2097152.0


def test_producer_id_block_migrates_the_next_block(
    loaded: tuple[zk_data.ZkSnapshot, zk_data.MigrationLoad],
) -> None:
    snapshot, load = loaded
    block = snapshot.json("/latest_producer_id_block")
    assert block is not None
    (rec,) = by_type(load, r.ProducerIdsRecord)
    assert rec.next_producer_id == int(block["block_end"]) + 1 and rec.broker_epoch == -1


def test_every_record_round_trips_through_the_metadata_serde(
    loaded: tuple[zk_data.ZkSnapshot, zk_data.MigrationLoad],
) -> None:
    _, load = loaded
    assert not load.refused, load.refused
    for rec, version in load.records():
        assert decode_record(encode_record(rec, version)) == (rec, version)


def test_scram_text_format() -> None:
    """ScramCredentialUtils' text, mechanism ids and refusal of garbage."""
    salt, stored, server = b"s" * 16, b"k" * 32, b"v" * 32
    b64 = base64.b64encode
    text = f"salt={b64(salt).decode()},stored_key={b64(stored).decode()},server_key={b64(server).decode()},iterations=4096"
    node = zk_data.Znode(f'{{"version":1,"config":{{"SCRAM-SHA-512":"{text}"}}}}'.encode(), 0)
    snapshot = zk_data.ZkSnapshot(
        {"/config/users": zk_data.Znode(None, 0, ("carol",)), "/config/users/carol": node}
    )
    (rec,) = by_type(zk_data.read_all_metadata(snapshot), r.UserScramCredentialRecord)
    assert (rec.mechanism, rec.salt, rec.stored_key, rec.iterations) == (2, salt, stored, 4096)
    bad = zk_data.Znode(b'{"version":1,"config":{"SCRAM-SHA-256":"salt=x"}}', 0)
    with pytest.raises(zk_data.ZkDataError):
        zk_data.read_all_metadata(
            zk_data.ZkSnapshot(
                {"/config/users": zk_data.Znode(None, 0, ("d",)), "/config/users/d": bad}
            )
        )


def test_spark_dry_run_writes_the_records_a_migration_would(
    old_cluster: OldCluster,
    loaded: tuple[zk_data.ZkSnapshot, zk_data.MigrationLoad],
    spark: SparkSession,
    tmp_path: Path,
) -> None:
    """``pykraft migration export`` of the real ZooKeeper, then the Spark dry run: the records
    equal, byte for byte, what the controller's load of the same ZooKeeper writes, an ACL
    (as Kafka's AclAuthorizer stores one) and a delegation token (as its
    DelegationTokenManagerZk does) included, nothing refused."""
    acl = "/kafka-acl/Topic/orders"
    export = tmp_path / "zk-export.jsonl"
    with zk_client.session(old_cluster.zookeeper.connect) as zk:
        zk.create(acl, json.dumps(ACL).encode(), makepath=True)
        zk.create(TOKEN, TOKEN_JSON, makepath=True)
        try:
            result = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pykraft.cli.main",
                    "migration",
                    "export",
                    "--zookeeper",
                    old_cluster.zookeeper.connect,
                    "--out",
                    str(export),
                ],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert result.returncode == 0, result.stderr
            expected = zk_data.read_all_metadata(zk_client.read_snapshot(zk))
        finally:
            zk.delete("/kafka-acl", recursive=True)
            zk.delete("/delegation_token", recursive=True)
    out = tmp_path / "dry-run"
    report = run_dry_run(spark, str(export), str(out))
    rows = spark.read.parquet(str(out / "records")).collect()
    values = sorted(bytes(row.value) for row in rows if row.kind == "record")
    assert values == sorted(encode_record(rec, v) for rec, v in expected.records())
    # Within a topic the order is the load's: its TopicRecord first.
    first = {row.entity: row.record_type for row in rows if row.kind == "record" and row.seq == 0}
    assert all(kind == "TopicRecord" for entity, kind in first.items() if entity != "cluster")
    assert report.records == expected.counts()
    assert report.topics == expected.counts()["TopicRecord"] >= len(TOPICS)
    assert report.broker_ids == sorted(expected.broker_ids) == [0, 1, 2]
    assert report.refused == expected.refused
    assert expected.counts()["AccessControlEntryRecord"] == len(ACL["acls"])
    assert expected.counts()["DelegationTokenRecord"] == 1
    assert report.refused == expected.refused == []
    assert json.loads((out / "report.json").read_text())["partitions"] == report.partitions


def _producer_id(producer: KafkaProducer) -> int:
    """The producer id an idempotent kafka-python producer was given (InitProducerId)."""
    manager = producer._transaction_manager
    assert manager is not None
    return int(manager.producer_id_and_epoch.producer_id)


def test_rollback_to_zookeeper_mode_keeps_what_dual_write_changed(
    old_cluster: OldCluster,
    loaded: tuple[zk_data.ZkSnapshot, zk_data.MigrationLoad],
    tmp_path: Path,
) -> None:
    """Kafka's documented rollback (G6), from its latest point: the brokers already restarted
    as KRaft brokers (step 4). They are rolled back into migration mode, the KRaft controller
    is deprovisioned, ``/controller`` and ``/migration`` removed, the migration configs taken
    off the brokers in a rolling restart. A broker is ZooKeeper's controller again; the
    topics made during dual write (with the brokers in migration mode, then in KRaft mode)
    are there with their config and acknowledged records; and the producer ids the KRaft
    controller handed out are not handed out again (``/latest_producer_id_block`` was
    dual-written)."""
    snapshot, _ = loaded
    cluster_id = zk_data.cluster_id(snapshot)
    assert cluster_id is not None
    kafka, topics = old_cluster.kafka, list(TOPICS)
    server = controller(tmp_path, old_cluster, cluster_id)
    format_controller(server, cluster_id, "--release-version", "3.9")
    server.start()
    sent = [b"during-%d" % i for i in range(20)]
    migration_mode = {**MIGRATION_MODE, "controller.quorum.bootstrap.servers": server.address}
    try:
        roll(old_cluster, lambda _b: migration_mode, started=ZK_BROKER_STARTED, topics=topics)
        server.wait_for("-> DUAL_WRITE", 60)
        admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap, request_timeout_ms=30_000)
        try:
            admin.create_topics([NewTopic(DURING, 2, 3, topic_configs={"retention.ms": "7200000"})])
        finally:
            admin.close()
        producer = KafkaProducer(
            bootstrap_servers=kafka.bootstrap, acks="all", retries=10, enable_idempotence=True
        )
        for value in sent:
            producer.send(DURING, value).get(timeout=60)
        kraft_era_id = _producer_id(producer)  # from a block the KRaft controller allocated
        producer.close()
        with zk_client.session(old_cluster.zookeeper.connect) as zk:
            _until(
                lambda: zk.exists(f"/brokers/topics/{DURING}/partitions/1/state") is not None,
                "the topic written to ZooKeeper",
            )
        # Step 4: the brokers restarted as KRaft brokers; a topic made now is dual-written.
        roll(
            old_cluster,
            kraft_mode,
            started=BROKER_STARTED,
            topics=[*topics, DURING],
        )
        admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap, request_timeout_ms=30_000)
        try:
            admin.create_topics([NewTopic(KRAFT_ERA, 1, 3)])
        finally:
            admin.close()
        with zk_client.session(old_cluster.zookeeper.connect) as zk:
            _until(
                lambda: zk.exists(f"/brokers/topics/{KRAFT_ERA}/partitions/0/state") is not None,
                "the KRaft-era topic written to ZooKeeper",
            )
            block = json.loads(zk.get("/latest_producer_id_block")[0])
            assert int(block["block_end"]) + 1 > kraft_era_id, block
        # Rollback from step 4: first back into migration mode (Kafka's table: the brokers'
        # ZooKeeper configs restored), a rolling restart.
        roll(
            old_cluster,
            lambda broker: {
                **migration_mode,
                "zookeeper.connect": old_cluster.zookeeper.connect,
                "zookeeper.session.timeout.ms": 6000,
                "broker.id": broker.node_id,
                "node.id": None,
                "process.roles": None,
            },
            started=ZK_BROKER_STARTED,
            topics=[*topics, DURING, KRAFT_ERA],
        )
    finally:
        server.kill()
    with zk_client.session(old_cluster.zookeeper.connect) as zk:
        zk.delete("/controller")
        zk.delete("/migration", recursive=True)

    def kill(broker: Server) -> None:
        # A migration-mode broker's controlled shutdown waits up to 5 minutes for the
        # deprovisioned KRaft controller to approve it: the operator kills it, then waits for
        # its ZooKeeper session to expire before starting it again.
        broker.kill()
        with zk_client.session(old_cluster.zookeeper.connect) as zk:
            _until(lambda: zk.exists(f"/brokers/ids/{broker.node_id}") is None, "session expiry")

    roll(
        old_cluster,
        lambda _b: {
            "zookeeper.metadata.migration.enable": None,
            "controller.listener.names": None,
            "controller.quorum.bootstrap.servers": None,
        },
        started=ZK_BROKER_STARTED,
        topics=[*topics, DURING, KRAFT_ERA],
        kraft_registered=False,
        stop=kill,
    )
    with zk_client.session(old_cluster.zookeeper.connect) as zk:
        data, stat = zk.get("/controller")
        assert stat.ephemeralOwner != 0  # a ZooKeeper broker's election
        assert json.loads(data)["brokerid"] in (0, 1, 2)
        assert zk.exists("/migration") is None
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap, request_timeout_ms=30_000)
    try:
        described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, DURING)])
        assert str(described["topic"][DURING]["retention.ms"]["value"]) == "7200000"
    finally:
        admin.close()
    consumer = KafkaConsumer(
        bootstrap_servers=kafka.bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=20_000
    )
    consumer.assign([TopicPartition(DURING, p) for p in range(2)])
    got: set[bytes] = set()
    deadline = time.monotonic() + 60
    while not set(sent) <= got and time.monotonic() < deadline:
        got.update(m.value for b in consumer.poll(timeout_ms=1000).values() for m in b)
    consumer.close()
    assert set(sent) <= got
    # A ZooKeeper controller again hands out producer ids: after the KRaft controller's.
    producer = KafkaProducer(
        bootstrap_servers=kafka.bootstrap, acks="all", retries=10, enable_idempotence=True
    )
    try:
        producer.send(KRAFT_ERA, b"after-rollback").get(timeout=60)
        # Past the whole block (1,000 ids) the KRaft era's producer id came from.
        assert _producer_id(producer) > kraft_era_id + zk_data.PRODUCER_ID_BLOCK_SIZE - 1
    finally:
        producer.close()
