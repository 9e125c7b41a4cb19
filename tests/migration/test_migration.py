"""KIP-866 with real processes: a real ZooKeeper, three real Kafka 3.9 brokers in ZooKeeper
mode holding data, and a pykraft controller with ``zookeeper.metadata.migration.enable``.
The brokers are rolled into migration mode as Kafka's operator procedure says; they register
with pykraft as migrating ZooKeeper brokers, pykraft claims ZooKeeper's controllership and
copies ZooKeeper's metadata into its log in one metadata transaction (SPEC G2, G3, G4, G5,
G6: finalize)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ConfigResource,
    ConfigResourceType,
    NewTopic,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from kafka.errors import NoError, TopicAuthorizationFailedError
from kazoo.client import KazooClient

from pykraft.interop.cluster import BROKER_STARTED, Server, read_metrics
from pykraft.interop.zookeeper import ZK_BROKER_STARTED
from pykraft.metadata import records as r
from pykraft.migration import zk_client, zk_data, zk_tokens, zk_writes

from .conftest import OldCluster
from .helpers import (
    AUTHORIZER,
    MIGRATION_MODE,
    active_controller,
    controller,
    format_controller,
    kraft_mode,
    log_records,
    quorum,
    roll,
    until,
)
from .traffic import Traffic

MESSAGES = 300
TRAFFIC_TOPICS = ["orders", "live"]
FINISHED = "Finished initial migration of ZK metadata to KRaft"
DUAL_WRITE = "-> DUAL_WRITE"


LITERAL_ACL = ("--allow-principal", "User:alice", "--operation", "Read", "--topic", "acl-lit")
PREFIXED_DENY = (
    "--deny-principal",
    "User:ANONYMOUS",
    "--operation",
    "Write",
    "--topic",
    "blocked-",
    "--resource-pattern-type",
    "prefixed",
)


TOKEN_ID = "mig-token"
# Long enough to be migrated whole, short enough that the expiry test does not wait for the
# wall clock (a token that ended before the migration is migrated too, then expired).
TOKEN_LIFETIME_MS = 60_000


def token_znode() -> bytes:
    now = int(time.time() * 1000)
    token = ("User:alice", "User:alice", ("User:bob",), now, now + 600_000, now + TOKEN_LIFETIME_MS)
    return zk_tokens.token_json(token, TOKEN_ID)


def zk_acl_command(old: OldCluster, *args: str) -> str:
    """Kafka 3.9's kafka-acls against ZooKeeper itself (its AclAuthorizer's own store)."""
    return old.dist.run(
        "kafka.admin.AclCommand",
        "--authorizer-properties",
        f"zookeeper.connect={old.zookeeper.connect}",
        *args,
    ).stdout


@dataclass
class Migrated:
    old: OldCluster
    controllers: list[Server]
    epoch_before: int
    topic_id: str
    sent: list[bytes]
    traffic: Traffic

    @property
    def controller(self) -> Server:
        """The active controller (ActiveControllerCount 1), waiting for one if needed."""
        return active_controller(self.controllers)


@pytest.fixture(scope="module")
def migrated(
    old_cluster: OldCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Migrated]:
    kafka = old_cluster.kafka
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap, request_timeout_ms=30_000)
    admin.create_topics(
        [
            NewTopic("orders", 3, 3, topic_configs={"retention.ms": "86400000"}),
            NewTopic("live", 3, 3, topic_configs={"min.insync.replicas": "2"}),
        ]
    )
    admin.close()
    old_cluster.dist.run(
        "configs",
        "--bootstrap-server",
        kafka.bootstrap,
        "--alter",
        "--entity-type",
        "users",
        "--entity-name",
        "alice",
        "--add-config",
        "SCRAM-SHA-256=[iterations=8192,password=alice-secret]",
    )
    # ACLs as a ZooKeeper cluster's AclAuthorizer keeps them (Kafka 3.9's own kafka-acls,
    # writing ZooKeeper directly): a literal ALLOW and a prefixed DENY.
    zk_acl_command(old_cluster, "--add", *LITERAL_ACL)
    zk_acl_command(old_cluster, "--add", *PREFIXED_DENY)
    # A delegation token as DelegationTokenManagerZk keeps it, ending a minute from now.
    with zk_client.session(old_cluster.zookeeper.connect) as zk:
        zk.create(f"/delegation_token/tokens/{TOKEN_ID}", token_znode(), makepath=True)
    producer = KafkaProducer(bootstrap_servers=kafka.bootstrap, acks="all", retries=5)
    sent = [f"order-{i}".encode() for i in range(MESSAGES)]
    for value in sent:
        producer.send("orders", value)
    producer.flush(timeout=60)
    producer.close()
    with zk_client.session(old_cluster.zookeeper.connect) as zk:
        snapshot = zk_client.read_snapshot(zk)
    cluster_id = zk_data.cluster_id(snapshot)
    assert cluster_id is not None
    topic = snapshot.json("/brokers/topics/orders")
    assert topic is not None
    epoch_before = int((snapshot.get("/controller_epoch") or zk_data.Znode(b"0", 0)).data or b"0")

    base = tmp_path_factory.mktemp("kraft")
    controllers = quorum(base, old_cluster.zookeeper.connect, cluster_id)
    for server in controllers:
        server.start()
    voters = ",".join(f"{c.node_id}@{c.address}" for c in controllers)
    traffic = Traffic(kafka.bootstrap, "live", 3).start()
    try:
        migrated = Migrated(
            old_cluster, controllers, epoch_before, str(topic["topic_id"]), sent, traffic
        )
        active = migrated.controller
        # Kafka's phase 1: each ZooKeeper broker restarted with the migration configs.
        roll(
            old_cluster,
            lambda _broker: {**MIGRATION_MODE, "controller.quorum.voters": voters},
            started=ZK_BROKER_STARTED,
            topics=TRAFFIC_TOPICS,
        )
        active.wait_for(FINISHED, 60)
        active.wait_for(DUAL_WRITE, 60)
        yield migrated
    finally:
        traffic.finish(timeout_s=0)
        for server in controllers:
            server.kill()


def test_zookeeper_names_the_kraft_controller(migrated: Migrated) -> None:
    with zk_client.session(migrated.old.zookeeper.connect) as zk:
        controller = zk_data.ZkSnapshot({"/c": zk_data.Znode(zk.get("/controller")[0], 0)}).json(
            "/c"
        )
        epoch = int(zk.get("/controller_epoch")[0])
        state = zk_writes.parse_migration(zk.get("/migration")[0])
        ephemeral = zk.exists("/controller").ephemeralOwner
    assert controller is not None and controller["brokerid"] == migrated.controller.node_id
    assert controller["kraftControllerEpoch"] >= 1
    assert ephemeral == 0  # persistent: ZooKeeper brokers cannot elect one of their own
    assert epoch > migrated.epoch_before
    records = log_records(migrated.controller)
    ends = [o for o, rec in records if isinstance(rec, r.EndTransactionRecord)]
    # /migration holds the offset of the initial load's end, or of a later dual write.
    assert state[0] == migrated.controller.node_id and ends[-1] <= state[2] <= records[-1][0]


def test_initial_load_is_one_transaction_of_zookeepers_metadata(migrated: Migrated) -> None:
    records = log_records(migrated.controller)
    begins = [i for i, (_, rec) in enumerate(records) if isinstance(rec, r.BeginTransactionRecord)]
    load = [i for i in begins if records[i][1].name == "ZK Migration"]
    assert len(load) == 1
    body = []
    for _, rec in records[load[0] + 1 :]:
        if isinstance(rec, r.EndTransactionRecord):
            break
        body.append(rec)
    assert isinstance(body[-1], r.ZkMigrationStateRecord) and body[-1].zk_migration_state == 1
    topics = {t.name: t.topic_id for t in body if isinstance(t, r.TopicRecord)}
    from pykraft.storage.meta import uuid_to_kafka

    assert uuid_to_kafka(topics["orders"]) == migrated.topic_id
    parts = [p for p in body if isinstance(p, r.PartitionRecord) and p.topic_id == topics["orders"]]
    assert sorted(p.partition_id for p in parts) == [0, 1, 2]
    assert all(len(p.replicas) == 3 and p.leader in p.isr for p in parts)
    assert any(
        isinstance(c, r.ConfigRecord) and c.resource_name == "orders" and c.name == "retention.ms"
        for c in body
    )


def test_kafkas_own_decoder_reads_the_migrated_log(migrated: Migrated) -> None:
    """Kafka 3.9's DumpLogSegments decodes every record pykraft wrote (as the migrating
    brokers, which observe this log, must)."""
    segments = sorted((migrated.controller.data / "__cluster_metadata-0").glob("*.log"))
    out = migrated.old.dist.run(
        "kafka.tools.DumpLogSegments",  # its 3.9 home
        "--cluster-metadata-decoder",
        "--files",
        ",".join(map(str, segments)),
    ).stdout
    assert '"type":"ZK_MIGRATION_STATE_RECORD"' in out.replace(" ", "")
    assert '"name":"orders"' in out.replace(" ", "")
    assert "Error" not in out and "Exception" not in out


def test_metrics_report_the_migration(migrated: Migrated) -> None:
    port = migrated.controller.metrics_port
    assert port is not None
    values = read_metrics("127.0.0.1", port, timeout_s=5)
    assert values["kafka_controller_kafkacontroller_zkmigrationstate"] == 1.0
    assert values["kafka_controller_kafkacontroller_migratingzkbrokercount"] == 3.0


def test_every_acknowledged_record_is_still_served(migrated: Migrated) -> None:
    consumer = KafkaConsumer(
        bootstrap_servers=migrated.old.kafka.bootstrap,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=20_000,
    )
    partitions = [TopicPartition("orders", p) for p in range(3)]
    consumer.assign(partitions)
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(got) < len(migrated.sent) and time.monotonic() < deadline:
        for batch in consumer.poll(timeout_ms=1000).values():
            got.extend(m.value for m in batch)
    consumer.close()
    assert sorted(got) == sorted(migrated.sent)


def test_a_cluster_born_in_kraft_refuses_the_migration(
    old_cluster: OldCluster, tmp_path: Path
) -> None:
    """Kafka's rule: a log created without the migration flag never migrates; the controller
    stops with one CRITICAL line."""
    server = controller(tmp_path, old_cluster, "X5SvYNT7TJu0jYq2_o3_vg")
    server.config.write_text(
        server.config.read_text().replace("zookeeper.metadata.migration.enable=true", "")
    )
    format_controller(server, "X5SvYNT7TJu0jYq2_o3_vg", "--release-version", "3.9")
    server.start()
    server.wait_for("active controller", 60)
    server.stop()
    text = server.config.read_text() + "zookeeper.metadata.migration.enable=true\n"
    server.config.write_text(text)
    after = len(server.text())
    server.start()
    assert server.process is not None
    assert server.process.wait(timeout=60) == 1
    assert "created in KRaft mode" in server.text()[after:]


def _znode(zk: Any, path: str) -> dict[str, Any]:
    value = zk_data.ZkSnapshot({"/n": zk_data.Znode(zk.get(path)[0], 0)}).json("/n")
    assert value is not None, path
    return value


def test_dual_write_mirrors_topic_changes_made_through_the_brokers(migrated: Migrated) -> None:
    """A topic created, reconfigured and deleted through the ZooKeeper-mode brokers (which now
    forward to pykraft) appears in ZooKeeper as the ZooKeeper-era controller wrote topics: the
    same JSON shapes as ``orders``, written before the migration by Kafka itself."""
    bootstrap = migrated.old.kafka.bootstrap
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
    try:
        admin.create_topics([NewTopic("dual", 2, 3, topic_configs={"cleanup.policy": "compact"})])
        with zk_client.session(migrated.old.zookeeper.connect) as zk:
            until(lambda: zk.exists("/brokers/topics/dual/partitions/1/state") is not None, "dual")
            # The topic's znodes and its config znode are separate writes (as Kafka's
            # migration client makes them): the config may follow the partitions.
            until(
                lambda: (
                    zk.exists("/config/topics/dual") is not None
                    and _znode(zk, "/config/topics/dual")["config"] == {"cleanup.policy": "compact"}
                ),
                "dual's config",
            )
            old, new = _znode(zk, "/brokers/topics/orders"), _znode(zk, "/brokers/topics/dual")
            assert set(new) == set(old) and new["version"] == 3
            assert sorted(new["partitions"]) == ["0", "1"]
            assert all(len(v) == 3 for v in new["partitions"].values())
            old_state = _znode(zk, "/brokers/topics/orders/partitions/0/state")
            state = _znode(zk, "/brokers/topics/dual/partitions/0/state")
            assert set(state) == set(old_state) and state["version"] == 1
            assert state["leader"] in state["isr"] and state["controller_epoch"] >= 1
            # The change notification is written after the fenced writes (as Kafka writes it),
            # so it may follow the config znode too.
            until(
                lambda: any(
                    _znode(zk, f"/config/changes/{c}")["entity_path"] == "topics/dual"
                    for c in zk.get_children("/config/changes")
                ),
                "dual's config change notification",
            )
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", retries=5)
        for i in range(20):
            producer.send("dual", key=b"k%d" % i, value=b"v%d" % i)
        producer.flush(timeout=60)
        producer.close()
        admin.delete_topics(["dual"])
        with zk_client.session(migrated.old.zookeeper.connect) as zk:
            until(lambda: zk.exists("/brokers/topics/dual") is None, "dual deleted in ZooKeeper")
            assert zk.exists("/config/topics/dual") is None
        # StopReplica with DeletePartition: every broker drops its replicas' logs (Kafka
        # renames them "dual-N.<id>-delete" first, then removes them).
        for broker in migrated.old.kafka.brokers:
            until(
                lambda b=broker: not {"dual-0", "dual-1"} & {d.name for d in b.data.iterdir()},
                f"broker {broker.node_id} dropping dual's logs",
            )
            assert "Found stray partitions" not in broker.text()
    finally:
        admin.close()
    port = migrated.controller.metrics_port
    assert port is not None
    until(
        lambda: (
            read_metrics("127.0.0.1", port, timeout_s=5)[
                "kafka_controller_kafkacontroller_zkwritebehindlag"
            ]
            == 0.0
        ),
        "ZooKeeper caught up",
    )
    values = read_metrics("127.0.0.1", port, timeout_s=5)
    assert values["kafka_controller_kafkacontroller_zkwritesnapshottimems"] > 0
    assert values["kafka_controller_kafkacontroller_zkwritedeltatimems"] > 0


def test_migration_describe_reports_the_state(migrated: Migrated) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pykraft.cli.main",
            "migration",
            "describe",
            "--zookeeper",
            migrated.old.zookeeper.connect,
            "--metrics",
            f"127.0.0.1:{migrated.controller.metrics_port}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    fields = dict(line.split(": ", 1) for line in result.stdout.splitlines())
    assert fields["KRaftControllerId"] == str(migrated.controller.node_id)
    assert fields["InitialLoadDone"] == "true"
    assert fields["ZkMigrationState"] == "MIGRATION"
    assert fields["MigratingZkBrokerCount"] == "3"
    assert fields["ZkBrokers"] == "0,1,2"


def _lag(migrated: Migrated) -> float:
    port = migrated.controller.metrics_port
    assert port is not None
    return read_metrics("127.0.0.1", port, timeout_s=5)[
        "kafka_controller_kafkacontroller_zkwritebehindlag"
    ]


def test_a_fenced_controller_writes_nothing_and_the_next_leader_resyncs(
    migrated: Migrated,
) -> None:
    """/migration written by someone else (as a newer KRaft controller would) fences the
    active controller: its dual writes are refused by ZooKeeper and it says so. Killed
    (kill -9) in dual write, the next leader re-claims ZooKeeper with a higher epoch, re-syncs
    it with everything committed meanwhile, and becomes the ZooKeeper brokers' controller."""
    old = migrated.old
    stale = migrated.controller
    after = len(stale.text())
    with zk_client.session(old.zookeeper.connect) as zk:
        before = _znode(zk, "/controller")
        data, _ = zk.get("/migration")
        zk.set("/migration", data)  # a newer writer: the version moves on
    admin = KafkaAdminClient(bootstrap_servers=old.kafka.bootstrap, request_timeout_ms=30_000)
    try:
        admin.create_topics([NewTopic("fenced", 1, 3)])
    finally:
        admin.close()
    stale.wait_for("/migration changed under this controller", 60, after=after)
    with zk_client.session(old.zookeeper.connect) as zk:
        assert zk.exists("/brokers/topics/fenced") is None
    stale.kill()
    leader = migrated.controller
    assert leader is not stale
    leader.wait_for(DUAL_WRITE, 60)
    with zk_client.session(old.zookeeper.connect) as zk:
        until(
            lambda: zk.exists("/brokers/topics/fenced/partitions/0/state") is not None,
            "fenced written by the new leader",
        )
        now = _znode(zk, "/controller")
    assert now["brokerid"] == leader.node_id
    assert now["kraftControllerEpoch"] > before["kraftControllerEpoch"]
    until(lambda: _lag(migrated) == 0.0, "ZooKeeper caught up")
    # The ZooKeeper brokers follow the new controller: a new topic is led and written to.
    admin = KafkaAdminClient(bootstrap_servers=old.kafka.bootstrap, request_timeout_ms=30_000)
    try:
        admin.create_topics([NewTopic("after-failover", 1, 3)])
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=old.kafka.bootstrap, acks="all", retries=10)
    producer.send("after-failover", b"x").get(timeout=60)
    producer.close()
    stale.start()
    stale.wait_for("metadata controller started", 60)


# -- phase 2 and finalize: these run last, on brokers restarted in KRaft mode -----------------


def test_brokers_restarted_in_kraft_mode_observe_the_migrated_log(migrated: Migrated) -> None:
    """Kafka's phase 2: each broker restarted as a KRaft broker (node.id, process.roles, no
    ZooKeeper configs, no IBP) while traffic runs; it registers as a KRaft broker and serves
    the migrated topics; changes made now are still written to ZooKeeper (rollback stays
    possible)."""
    old = migrated.old
    roll(
        old,
        lambda broker: {**kraft_mode(broker), **AUTHORIZER},
        started=BROKER_STARTED,
        topics=TRAFFIC_TOPICS,
    )
    port = migrated.controller.metrics_port
    assert port is not None
    metrics = read_metrics("127.0.0.1", port, timeout_s=5)
    assert metrics["kafka_controller_kafkacontroller_migratingzkbrokercount"] == 0.0
    assert metrics["kafka_controller_kafkacontroller_zkmigrationstate"] == 1.0
    admin = KafkaAdminClient(bootstrap_servers=old.kafka.bootstrap, request_timeout_ms=30_000)
    try:
        admin.create_topics([NewTopic("kraft-era", 2, 3)])
    finally:
        admin.close()
    with zk_client.session(old.zookeeper.connect) as zk:
        until(
            lambda: zk.exists("/brokers/topics/kraft-era/partitions/1/state") is not None,
            "kraft-era in ZooKeeper",
        )
        assert sorted(_znode(zk, "/brokers/topics/kraft-era")["partitions"]) == ["0", "1"]
    until(lambda: _lag(migrated) == 0.0, "ZooKeeper caught up")


def _notes(zk: KazooClient, parent: str) -> list[bytes]:
    """The data of every change note under ``parent`` (none while it does not exist)."""
    if zk.exists(parent) is None:
        return []
    return [zk.get(f"{parent}/{c}")[0] for c in zk.get_children(parent)]


def test_acls_from_zookeeper_are_enforced_and_changes_dual_written(migrated: Migrated) -> None:
    """Issue 27 part 5: the ACLs ZooKeeper held were migrated (AccessControlEntryRecords) and
    the KRaft brokers' StandardAuthorizer enforces them; ACLs created and deleted through
    the brokers now are dual-written to ZooKeeper where Kafka 3.9's own kafka-acls reads
    them back (a rollback keeps them)."""
    old = migrated.old
    admin = KafkaAdminClient(bootstrap_servers=old.kafka.bootstrap, request_timeout_ms=30_000)
    try:
        acls, error = admin.describe_acls(
            ACLFilter(
                None,
                "*",
                ACLOperation.ANY,
                ACLPermissionType.ANY,
                ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY),
            )
        )
        assert error is NoError
        got = {
            (a.principal, a.operation, a.permission_type, a.resource_pattern.resource_name)
            for a in acls
        }
        assert ("User:alice", ACLOperation.READ, ACLPermissionType.ALLOW, "acl-lit") in got
        assert ("User:ANONYMOUS", ACLOperation.WRITE, ACLPermissionType.DENY, "blocked-") in got
        # The prefixed DENY holds on the KRaft brokers: the topic is made, writes are refused.
        admin.create_topics([NewTopic("blocked-x", 1, 3)])
        producer = KafkaProducer(bootstrap_servers=old.kafka.bootstrap, acks="all")
        try:
            with pytest.raises(TopicAuthorizationFailedError):
                producer.send("blocked-x", b"x").get(timeout=30)
        finally:
            producer.close(timeout=5)
        # A new ACL through the brokers reaches ZooKeeper in AclAuthorizer's format.
        literal = ResourcePattern(ResourceType.TOPIC, "dual-acl", ACLResourcePatternType.LITERAL)
        deny = ACL("User:ANONYMOUS", "*", ACLOperation.READ, ACLPermissionType.DENY, literal)
        assert admin.create_acls([deny])["failed"] == []
        # ... and a migrated one deleted through them is deleted there too.
        prefixed = ResourcePatternFilter(
            ResourceType.TOPIC, "blocked-", ACLResourcePatternType.PREFIXED
        )
        deleted = admin.delete_acls(
            [ACLFilter(None, "*", ACLOperation.ANY, ACLPermissionType.ANY, prefixed)]
        )
        assert deleted[0][2] is NoError and len(deleted[0][1]) == 1
    finally:
        admin.close()
    with zk_client.session(old.zookeeper.connect) as zk:
        until(lambda: zk.exists("/kafka-acl/Topic/dual-acl") is not None, "dual-acl in ZooKeeper")
        until(
            lambda: zk.exists("/kafka-acl-extended/prefixed/Topic/blocked-") is None,
            "blocked- gone from ZooKeeper",
        )
        # The change notes follow the fenced writes (as Kafka writes them): wait for them too.
        until(
            lambda: b"TOPIC:dual-acl" in _notes(zk, "/kafka-acl-changes"),
            "the dual-acl change note in ZooKeeper",
        )
    listed = zk_acl_command(old, "--list", "--topic", "dual-acl")
    assert "User:ANONYMOUS" in listed and "DENY" in listed and "READ" in listed
    listed = zk_acl_command(old, "--list")
    assert "name=acl-lit, patternType=LITERAL)`:" in listed
    # The delegation token was migrated; when it expires the controller removes it, and the
    # dual write deletes its znode and announces it to the ZooKeeper-mode brokers.
    tokens = [
        rec
        for _, rec in log_records(migrated.controller)
        if isinstance(rec, r.DelegationTokenRecord)
    ]
    assert [(t.token_id, t.owner, list(t.renewers)) for t in tokens][:1] == [
        (TOKEN_ID, "User:alice", ["User:bob"])
    ]
    with zk_client.session(old.zookeeper.connect) as zk:
        until(
            lambda: zk.exists(f"/delegation_token/tokens/{TOKEN_ID}") is None,
            "the expired token deleted from ZooKeeper",
            TOKEN_LIFETIME_MS / 1000 + 60,
        )
        until(
            lambda: TOKEN_ID.encode() in _notes(zk, "/delegation_token/token_changes"),
            "the token's change note in ZooKeeper",
        )
    assert "name=blocked-, patternType=PREFIXED)`:" not in listed
    # With the DENY gone, the brokers let the write through.
    producer = KafkaProducer(bootstrap_servers=old.kafka.bootstrap, acks="all")
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                producer.send("blocked-x", b"y").get(timeout=10)
                break
            except TopicAuthorizationFailedError:
                assert time.monotonic() < deadline
                time.sleep(0.5)
    finally:
        producer.close(timeout=5)


def test_zookeeper_outage_during_dual_write_shows_as_lag_and_heals(migrated: Migrated) -> None:
    """ZooKeeper stopped during dual write: the controller keeps committing (the brokers
    are KRaft brokers now), ZkWriteBehindLag grows, and once ZooKeeper is back the writes
    resume and the lag returns to 0."""
    old = migrated.old
    old.zookeeper.stop()
    try:
        admin = KafkaAdminClient(bootstrap_servers=old.kafka.bootstrap, request_timeout_ms=30_000)
        try:
            admin.create_topics([NewTopic("while-zk-down", 1, 3)])
        finally:
            admin.close()
        until(lambda: _lag(migrated) > 0, "the write-behind lag reported")
    finally:
        old.zookeeper.start()
    until(lambda: _lag(migrated) == 0.0, "ZooKeeper caught up after the outage", 120)
    with zk_client.session(old.zookeeper.connect) as zk:
        assert zk.exists("/brokers/topics/while-zk-down/partitions/0/state") is not None


def test_finalize_ends_dual_write_and_loses_nothing(migrated: Migrated) -> None:
    """The controller restarted without the migration flag writes POST_MIGRATION and stops
    writing to ZooKeeper; every acknowledged record of the traffic that ran through the whole
    migration is served, and every migrated topic, config and SCRAM user is in KRaft."""
    old = migrated.old
    # Kafka's procedure: each controller restarted without the flag, standbys first.
    first = migrated.controller
    for server in sorted(migrated.controllers, key=lambda c: c is first):
        server.stop()
        server.config.write_text(
            server.config.read_text().replace("zookeeper.metadata.migration.enable=true", "")
        )
        after = len(server.text())
        server.start()
        server.wait_for("metadata controller started", 60, after=after)
        assert migrated.controller is not None
    controller = migrated.controller
    until(
        lambda: any(
            isinstance(rec, r.ZkMigrationStateRecord) and rec.zk_migration_state == 3
            for _, rec in log_records(controller)
        ),
        "POST_MIGRATION in the log",
    )
    port = controller.metrics_port
    assert port is not None
    until(
        lambda: (
            read_metrics("127.0.0.1", port, timeout_s=5)[
                "kafka_controller_kafkacontroller_zkmigrationstate"
            ]
            == 3.0
        ),
        "ZkMigrationState POST_MIGRATION",
    )
    bootstrap = old.kafka.bootstrap
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
    try:
        admin.create_topics([NewTopic("after-finalize", 1, 3)])
        until(lambda: "after-finalize" in admin.list_topics(), "after-finalize in KRaft")
        topics = set(admin.list_topics())
        assert {"orders", "live", "kraft-era", "while-zk-down"} <= topics
        assert "dual" not in topics
        described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "orders")])
        assert str(described["topic"]["orders"]["retention.ms"]["value"]) == "86400000"
    finally:
        admin.close()
    time.sleep(2)  # a dual write would have reached ZooKeeper by now
    with zk_client.session(old.zookeeper.connect) as zk:
        assert zk.exists("/brokers/topics/after-finalize") is None
    users = old.dist.run(
        "configs", "--bootstrap-server", bootstrap, "--describe", "--entity-type", "users"
    ).stdout
    assert "alice" in users and "SCRAM-SHA-256" in users
    missing = migrated.traffic.finish()
    assert len(migrated.traffic.acked) > 500
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {sorted(missing)[:5]}"
