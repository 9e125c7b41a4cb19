"""KIP-866 in the controller, without I/O: the migration state written at activation, the
pre-migration gate, who may register, and the migration driver's transitions (Kafka 3.9's
ActivationRecordsGenerator, ClusterControlManager and KRaftMigrationDriver rules)."""

from __future__ import annotations

import random
import uuid

import pytest
from kio.schema.errors import ErrorCode

from pykraft.controller import migration as m
from pykraft.controller.config import ControllerConfig
from pykraft.controller.quorum_controller import QuorumController
from pykraft.metadata import records as r
from pykraft.metadata.image import Image
from pykraft.protocol import ApiKey

from .harness import CLUSTER_ID, Harness

MV_3_9 = 21
ZK_FEATURES = [
    {"name": "metadata.version", "min_supported_version": 21, "max_supported_version": 21}
]


def migrating(**config: object) -> Harness:
    return Harness(bootstrap={"metadata.version": MV_3_9}, zk_migration_enabled=True, **config)


def register_zk(h: Harness, broker_id: int, listener: str = "PLAINTEXT") -> dict[str, object]:
    return h.call(
        ApiKey.BROKER_REGISTRATION,
        4,
        broker_id=broker_id,
        cluster_id=CLUSTER_ID,
        incarnation_id=uuid.UUID(int=broker_id + 77),
        listeners=[{"name": listener, "host": "127.0.0.1", "port": 9000, "security_protocol": 0}],
        features=ZK_FEATURES,
        rack=None,
        is_migrating_zk_broker=True,
        log_dirs=[uuid.UUID(int=((broker_id + 1) << 64) + 5)],
    )


def test_empty_log_enters_pre_migration_inside_the_bootstrap_transaction() -> None:
    h = migrating()
    kinds = [type(rec).__name__ for rec, _, _ in h.written]
    assert kinds[0] == "BeginTransactionRecord" and kinds[-1] == "EndTransactionRecord"
    assert kinds[-2] == "ZkMigrationStateRecord"
    assert h.image.migration_state == m.PRE_MIGRATION
    plain = Harness(bootstrap={"metadata.version": MV_3_9})
    assert not any(isinstance(rec, r.ZkMigrationStateRecord) for rec, _, _ in plain.written)


def test_old_metadata_version_refuses_to_migrate() -> None:
    with pytest.raises(m.MigrationRefused, match="does not support ZK migrations"):
        Harness(bootstrap={"metadata.version": 12}, zk_migration_enabled=True)


def test_cluster_born_in_kraft_refuses_the_migration_flag() -> None:
    h = Harness(bootstrap={"metadata.version": MV_3_9})
    again = QuorumController(
        ControllerConfig(zk_migration_enabled=True),
        node_id=1,
        cluster_id=CLUSTER_ID,
        rng=random.Random(1),
    )
    for rec, version, offset in h.written:
        again.replay(rec, version, offset)
    with pytest.raises(m.MigrationRefused, match="created in KRaft mode"):
        again.activate(5_000, None)


def test_finalize_writes_post_migration_when_the_flag_is_removed() -> None:
    image = Image()
    image.replay(r.ZkMigrationStateRecord(zk_migration_state=m.MIGRATION), 0, 0)
    records = m.activation_records(image, enabled=False, empty_log=False, metadata_version=MV_3_9)
    assert records == [(r.ZkMigrationStateRecord(zk_migration_state=m.POST_MIGRATION), 0)]
    assert m.activation_records(image, enabled=True, empty_log=False, metadata_version=MV_3_9) == []


def test_finalize_is_refused_while_a_broker_is_still_in_zookeeper_mode() -> None:
    """G6: finalizing strands ZooKeeper-mode brokers (Kafka 3.9 lets it happen); pykraft
    refuses with one line naming them."""
    h = migrating()
    assert register_zk(h, 0)["error_code"] == 0
    image = h.image
    image.replay(r.ZkMigrationStateRecord(zk_migration_state=m.MIGRATION), 0, h.offset)
    with pytest.raises(m.MigrationRefused, match=r"brokers \[0\] are still registered"):
        m.activation_records(image, enabled=False, empty_log=False, metadata_version=MV_3_9)


def test_pre_migration_allows_only_registration_and_heartbeats() -> None:
    h = migrating()
    with pytest.raises(Exception, match="pre-migration mode") as refused:
        h.call(
            ApiKey.CREATE_TOPICS,
            7,
            topics=[{"name": "t", "num_partitions": 1, "replication_factor": 1}],
            timeout=1000,
        )
    assert getattr(refused.value, "code", None) == ErrorCode.not_controller
    assert register_zk(h, 0)["error_code"] == 0
    assert h.image.brokers[0].is_migrating_zk_broker
    assert h.heartbeat(0)["error_code"] == 0


def test_who_may_register_while_migrating() -> None:
    h = migrating()
    kraft = h.register(5, features=ZK_FEATURES)
    assert kraft["error_code"] == ErrorCode.broker_id_not_registered  # KRaft brokers wait
    wrong = register_zk(h, 1, listener="EXTERNAL")
    assert wrong["error_code"] == ErrorCode.invalid_registration  # KAFKA-16468
    plain = Harness(bootstrap={"metadata.version": MV_3_9})
    assert register_zk(plain, 0)["error_code"] == ErrorCode.broker_id_not_registered


def test_migration_records_coalesce_and_close_the_transaction() -> None:
    batches = [[(r.NoOpRecord(), 0)] * 150, [(r.NoOpRecord(), 0)] * 100, [(r.NoOpRecord(), 0)] * 10]
    out = m.migration_records(batches, min_size=200)
    assert out[0] == [(r.BeginTransactionRecord(name="ZK Migration"), 0)]
    assert [len(b) for b in out[1:-1]] == [250, 10]
    assert out[-1] == [
        (r.ZkMigrationStateRecord(zk_migration_state=m.MIGRATION), 0),
        (r.EndTransactionRecord(), 0),
    ]


# -- the driver ---------------------------------------------------------------------------------


def driver_to_brokers(h: Harness) -> m.MigrationDriver:
    d = m.MigrationDriver(3000)
    action = d.next_action(h.image, 0)
    assert action is not None and action.kind == "recover"
    d.on_recovered(m.ZkLeadership(migration_zk_version=0))
    assert d.state == m.DriverState.INACTIVE
    d.leadership_changed(4)
    assert d.state == m.DriverState.WAIT_FOR_CONTROLLER_QUORUM
    again = d.next_action(h.image, 0)  # elected: /migration read again
    assert again is not None and again.kind == "recover"
    d.on_recovered(m.ZkLeadership(migration_zk_version=0))
    assert d.next_action(h.image, 0) is None  # the quorum check moves it on
    assert d.state == m.DriverState.WAIT_FOR_BROKERS
    return d


def test_driver_waits_for_every_zk_broker_then_claims_loads_and_records() -> None:
    h = migrating()
    d = driver_to_brokers(h)
    assert d.next_action(h.image, 0) == m.Action("read_brokers", d.leadership)
    d.on_brokers(h.image, {0, 1}, {0, 1, 2}, 0)
    assert d.state == m.DriverState.WAIT_FOR_BROKERS and "No brokers are known" in d.waiting_reason
    assert d.next_action(h.image, 50) is None  # backoff
    for broker in (0, 1):
        register_zk(h, broker)
    d.next_action(h.image, 100)
    d.on_brokers(h.image, {0, 1}, {0, 1, 2}, 100)
    assert "[0, 1, 2] found in metadata" in d.waiting_reason  # broker 2 holds replicas
    register_zk(h, 2)
    d.next_action(h.image, 1000)
    d.on_brokers(h.image, {0, 1, 2}, {0, 1, 2}, 1000)
    assert d.state == m.DriverState.BECOME_CONTROLLER
    claim = d.next_action(h.image, 1000)
    assert claim is not None and claim.kind == "claim" and claim.leadership.controller_epoch == 4
    d.on_claimed(None, 1000)  # lost a race: retried later
    assert d.state == m.DriverState.BECOME_CONTROLLER
    d.next_action(h.image, 2000)
    d.on_claimed(m.ZkLeadership(3000, 4, -1, -1, 7, 12, 3), 2000)
    assert d.state == m.DriverState.ZK_MIGRATION
    assert d.next_action(h.image, 2000) == m.Action("load", d.leadership)
    d.on_loaded(last_offset=99, epoch=4)
    assert d.next_action(h.image, 2000) is None  # waits for the commit; never loads twice
    d.on_committed()
    write = d.next_action(h.image, 2000)
    assert write is not None and write.kind == "write_state"
    assert (write.leadership.metadata_offset, write.leadership.metadata_epoch) == (99, 4)
    d.on_error("connection loss", 2000)  # the write alone is retried
    again = d.next_action(h.image, 2000 + m.POLL_BACKOFF_MS)
    assert again == write
    d.on_state_written(m.ZkLeadership(3000, 4, 99, 4, 8, 12, 3))
    assert d.state == m.DriverState.SYNC_KRAFT_TO_ZK and d.leadership.initial_load_done


def test_driver_after_failover_skips_the_brokers_and_the_load() -> None:
    """A standby read an empty /migration when it started; the leader then migrated. Elected,
    it reads /migration again and goes on from the recorded load (not INACTIVE on the stale
    read: found with three real controllers, one killed in dual write)."""
    image = Image()
    image.replay(r.FeatureLevelRecord(name="metadata.version", feature_level=MV_3_9), 0, 0)
    image.replay(r.ZkMigrationStateRecord(zk_migration_state=m.MIGRATION), 0, 1)
    d = m.MigrationDriver(3001)
    d.next_action(image, 0)
    d.on_recovered(m.ZkLeadership(migration_zk_version=0))
    assert d.state == m.DriverState.INACTIVE
    d.leadership_changed(5)
    recover = d.next_action(image, 0)
    assert recover is not None and recover.kind == "recover"
    d.on_recovered(m.ZkLeadership(3000, 4, 99, 4, 8))
    assert d.leadership.controller_id == 3001 and d.leadership.metadata_offset == 99
    d.next_action(image, 0)
    assert d.state == m.DriverState.BECOME_CONTROLLER
    claim = d.next_action(image, 0)
    assert claim is not None and claim.leadership.controller_epoch == 5
    d.on_claimed(m.ZkLeadership(3001, 5, 99, 4, 9, 13, 4), 0)
    assert d.state == m.DriverState.SYNC_KRAFT_TO_ZK


def test_driver_goes_inactive_when_leadership_moves_and_forgets_the_pending_load() -> None:
    h = migrating()
    d = driver_to_brokers(h)
    d.leadership_changed(-1)
    assert d.state == m.DriverState.INACTIVE and d.pending_state is None
    assert d.next_action(h.image, 0) is None


@pytest.mark.parametrize(
    ("mv", "state", "bumped"),
    [
        (MV_3_9, m.MIGRATION, True),  # ZooKeeper-mode brokers need it
        (MV_3_9, m.PRE_MIGRATION, True),
        (MV_3_9, m.POST_MIGRATION, False),
        (MV_3_9, m.NONE, False),
        (11, m.NONE, True),  # 3.5-IV2: KAFKA-15021
    ],
)
def test_isr_shrink_bumps_the_leader_epoch_while_migrating(
    mv: int, state: int, bumped: bool
) -> None:
    """Kafka's triggerLeaderEpochBumpForIsrShrinkIfNeeded (found by the side-by-side run
    against Kafka 3.9's controller: it wrote leader_epoch 1 where pykraft kept 0)."""
    from pykraft.controller.partition_change import PartitionChangeBuilder
    from pykraft.metadata.image import NO_LEADER_CHANGE

    image = Image()
    image.replay(r.FeatureLevelRecord(name="metadata.version", feature_level=mv), 0, 0)
    image.replay(r.ZkMigrationStateRecord(zk_migration_state=state), 0, 1)
    topic_id = uuid.UUID(int=42)
    image.replay(r.TopicRecord(name="t", topic_id=topic_id), 0, 2)
    image.replay(
        r.PartitionRecord(
            partition_id=0, topic_id=topic_id, replicas=(0, 1, 2), isr=(0, 1, 2), leader=0
        ),
        0,
        3,
    )
    p = image.partition(topic_id, 0)
    assert p is not None
    shrink = (
        PartitionChangeBuilder(image, p)
        .set_target_isr((0, 1))
        .set_acceptable(lambda b: True)
        .build()
    )
    assert shrink is not None and shrink.isr == (0, 1)
    assert shrink.leader == (0 if bumped else NO_LEADER_CHANGE)
    grow = (
        PartitionChangeBuilder(image, p)
        .set_target_isr((0, 1, 2))
        .set_acceptable(lambda b: True)
        .build()
    )
    assert grow is None  # nothing changes: no record, no bump
