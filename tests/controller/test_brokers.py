"""Broker lifecycle on the controller: activation, registration rules, heartbeats, sessions,
fencing and controlled shutdown (Kafka's ClusterControlManager / BrokerHeartbeatManager;
SPEC F1)."""

from __future__ import annotations

import uuid

from kio.schema.errors import ErrorCode

from pykraft.controller.brokers import UncleanTopics
from pykraft.metadata import records as r
from pykraft.metadata.image import NO_LEADER
from pykraft.protocol import ApiKey

from .harness import BROKER_FEATURES, Harness


def test_activation_on_an_empty_log_writes_the_bootstrap_features_in_a_transaction() -> None:
    h = Harness(bootstrap={"metadata.version": 25, "group.version": 1})
    kinds = [type(rec).__name__ for rec, _, _ in h.written]
    assert kinds == [
        "BeginTransactionRecord",
        "FeatureLevelRecord",
        "FeatureLevelRecord",
        "EndTransactionRecord",
    ]
    assert h.written[1][0].name == "metadata.version"  # metadata.version first
    assert h.image.features == {"metadata.version": 25, "group.version": 1}
    # A second activation (a new leader) on a log with metadata.version writes nothing.
    assert h.controller.activate(h.now, None) == []


def test_activation_aborts_a_transaction_left_open() -> None:
    h = Harness()
    h.write(
        [
            (r.BeginTransactionRecord(name="half"), 0),
            (r.TopicRecord(name="t", topic_id=uuid.uuid4()), 0),
        ]
    )
    h.controller.deactivate()
    records = h.controller.activate(h.now, None)
    assert [type(rec).__name__ for rec, _ in records] == ["AbortTransactionRecord"]
    h.write(records)
    assert "t" not in h.image.topics_by_name


def test_registration_writes_a_fenced_broker_whose_epoch_is_its_record_offset() -> None:
    h = Harness()
    at = h.offset
    response = h.register(1, rack="r1")
    assert response == {"error_code": 0, "broker_epoch": at}
    broker = h.image.brokers[1]
    assert broker.fenced and broker.epoch == at and broker.register_offset == at
    assert broker.rack == "r1" and len(broker.log_dirs) == 1
    record, version, offset = h.written[-1]
    assert isinstance(record, r.RegisterBrokerRecord) and version == 3 and offset == at
    assert h.images_equal()


def test_registration_errors_in_kafka_order() -> None:
    h = Harness()
    assert h.register(1, cluster_id="other")["error_code"] == ErrorCode.inconsistent_cluster_id
    assert h.register(1, dirs=0)["error_code"] == ErrorCode.invalid_registration
    # A feature level the broker cannot run: metadata.version 25 outside 7..20.
    old = [dict(f) for f in BROKER_FEATURES]
    old[0]["max_supported_version"] = 20
    assert h.register(1, features=old)["error_code"] == ErrorCode.unsupported_version
    # kraft.version comes from the quorum (KAFKA-17305): a broker without it fails at 1.
    h.kraft_version = 1
    no_kraft = [f for f in BROKER_FEATURES if f["name"] != "kraft.version"]
    assert h.register(1, features=no_kraft)["error_code"] == ErrorCode.unsupported_version
    # No metadata.version at all: INVALID_REGISTRATION (Kafka 4.4.0), after the listed ranges.
    no_mv = [f for f in BROKER_FEATURES if f["name"] != "metadata.version"]
    assert h.register(1, features=no_mv)["error_code"] == ErrorCode.invalid_registration
    assert h.register(1)["error_code"] == ErrorCode.none
    # Another incarnation while the session is live: DUPLICATE_BROKER_REGISTRATION.
    h.heartbeat(1)
    other = h.register(1, incarnation=uuid.uuid4())
    assert other["error_code"] == ErrorCode.duplicate_broker_registration
    # A directory another broker registered, a reserved id, a duplicate.
    taken = list(h.image.brokers[1].log_dirs)
    nothing_written = h.offset
    assert h.register(2, log_dirs=taken)["error_code"] == ErrorCode.invalid_registration
    assert (
        h.register(2, log_dirs=[uuid.UUID(int=5)])["error_code"] == ErrorCode.invalid_registration
    )
    twice = [uuid.UUID(int=(7 << 64) + 1)] * 2
    assert h.register(2, log_dirs=twice)["error_code"] == ErrorCode.invalid_registration
    assert h.offset == nothing_written  # refusals write nothing
    assert h.register(2)["error_code"] == 0


def test_re_registration_of_the_same_incarnation_keeps_epoch_and_state() -> None:
    h = Harness()
    epoch = h.live_broker(1)
    again = h.register(1)
    assert again == {"error_code": 0, "broker_epoch": epoch}
    assert not h.image.brokers[1].fenced  # KAFKA-16757: the state is kept


def test_heartbeat_unfences_only_once_caught_up_to_its_registration() -> None:
    h = Harness()
    epoch = h.register(1)["broker_epoch"]
    behind = h.heartbeat(1, offset=epoch - 1)
    assert behind == {
        "error_code": 0,
        "is_caught_up": False,
        "is_fenced": True,
        "should_shut_down": False,
    }
    wants_fence = h.heartbeat(1, offset=epoch, want_fence=True)
    assert wants_fence["is_caught_up"] is True and wants_fence["is_fenced"] is True
    before = h.offset
    unfenced = h.heartbeat(1, offset=epoch)
    assert unfenced["is_fenced"] is False
    record = h.written[-1][0]
    assert isinstance(record, r.BrokerRegistrationChangeRecord) and record.fenced == -1
    assert h.offset == before + 1
    stale = h.heartbeat(1, epoch=epoch + 100)
    assert stale["error_code"] == ErrorCode.stale_broker_epoch


def test_session_expiry_fences_and_moves_leadership() -> None:
    h = Harness(broker_session_timeout_ms=9_000)
    h.live_broker(1)
    h.live_broker(2)
    topic = h.create_topic("t", partitions=4, rf=2)
    assert topic["error_code"] == 0
    led_by_1 = [p for p in h.image.all_partitions() if p.leader == 1]
    assert led_by_1
    h.now += 5_000
    h.heartbeat(2)  # only broker 2 keeps heartbeating
    assert h.tick(4_001)  # broker 1's session ran out 9 s after its last heartbeat
    assert h.image.brokers[1].fenced
    for p in h.image.all_partitions():
        assert p.leader == 2 and p.isr == (2,), p
    assert h.images_equal()
    # It comes back: unfenced again; partitions keep leader 2, their ISR waits for
    # AlterPartition from the leader (the broker must catch up first).
    h.heartbeat(1)
    assert not h.image.brokers[1].fenced
    assert all(p.leader == 2 for p in h.image.all_partitions())


def test_last_isr_member_fenced_leaves_the_partition_offline_with_its_isr() -> None:
    h = Harness()
    h.live_broker(1)
    h.create_topic("solo", partitions=1, rf=1)
    h.tick(10_000)
    (p,) = h.image.all_partitions()
    assert p.leader == NO_LEADER and p.isr == (1,)  # KIP-841: the ISR never empties
    h.heartbeat(1)  # back: elected again, it is in the ISR
    assert p.leader == 1


def test_controlled_shutdown_moves_leaders_then_lets_the_broker_go() -> None:
    h = Harness()
    h.live_broker(1)
    h.live_broker(2)
    h.create_topic("t", partitions=2, rf=2)
    assert any(p.leader == 1 for p in h.image.all_partitions())
    first = h.heartbeat(1, want_shut_down=True)
    # It led partitions: CONTROLLED_SHUTDOWN (not fenced, not yet allowed to stop)...
    assert first["is_fenced"] is False and first["should_shut_down"] is False
    assert h.image.brokers[1].in_controlled_shutdown
    assert all(p.leader == 2 and 1 not in p.isr for p in h.image.all_partitions())
    # ...until every active broker has replayed past that change.
    h.heartbeat(2, offset=h.offset - 2)
    assert h.heartbeat(1, want_shut_down=True)["should_shut_down"] is False
    h.heartbeat(2)
    done = h.heartbeat(1, want_shut_down=True)
    assert done["should_shut_down"] is True and h.image.brokers[1].fenced
    assert h.images_equal()


def test_broker_without_leaderships_shuts_down_at_once() -> None:
    h = Harness()
    h.live_broker(1)
    response = h.heartbeat(1, want_shut_down=True)
    assert response["should_shut_down"] is True and h.image.brokers[1].fenced


def test_new_incarnation_after_expiry_fences_the_old_one_first() -> None:
    h = Harness()
    h.live_broker(1)
    h.live_broker(2)
    h.create_topic("t", partitions=2, rf=2)
    h.now += 20_000  # both sessions expired, nobody fenced them yet
    h.heartbeat(2)
    new = h.register(1, incarnation=uuid.uuid4())
    assert new["error_code"] == 0
    broker = h.image.brokers[1]
    assert broker.fenced and broker.epoch == new["broker_epoch"]
    assert all(p.leader != 1 and 1 not in p.isr for p in h.image.all_partitions())


def test_a_cleanly_stopped_broker_keeps_its_session_until_it_expires() -> None:
    """Kafka 4.x's ``BrokerHeartbeatTracker``: the session belongs to (id, epoch) and lives
    past the last heartbeat, fenced or not; a new incarnation waits for it to expire."""
    h = Harness(broker_session_timeout_ms=9_000)
    h.live_broker(1)
    assert h.heartbeat(1, want_shut_down=True)["should_shut_down"] is True
    assert h.image.brokers[1].fenced
    h.now += 8_000
    refused = h.register(1, incarnation=uuid.uuid4())
    assert refused["error_code"] == ErrorCode.duplicate_broker_registration
    h.now += 1_001  # 9,001 ms after its last heartbeat
    again = h.register(1, incarnation=uuid.uuid4())
    assert again["error_code"] == 0
    # The new registration has no session until it heartbeats: a third incarnation (the
    # second one died before its first heartbeat) is let in.
    third = h.register(1, incarnation=uuid.uuid4())
    assert third["error_code"] == 0 and third["broker_epoch"] > again["broker_epoch"]


def test_a_new_active_controller_gives_sessions_only_to_unfenced_brokers() -> None:
    h = Harness(broker_session_timeout_ms=9_000)
    h.live_broker(1)
    h.live_broker(2)
    assert h.heartbeat(1, want_shut_down=True)["should_shut_down"] is True
    h.controller.deactivate()
    h.write(h.controller.activate(h.now, None))
    # Broker 1 (fenced) has no session on the new active controller; broker 2 has one.
    assert h.register(1, incarnation=uuid.uuid4())["error_code"] == 0
    refused = h.register(2, incarnation=uuid.uuid4())
    assert refused["error_code"] == ErrorCode.duplicate_broker_registration


def test_unregister_broker_removes_it_everywhere() -> None:
    h = Harness()
    h.live_broker(1)
    h.live_broker(2)
    h.create_topic("t", partitions=2, rf=2)
    response = h.call(ApiKey.UNREGISTER_BROKER, 0, broker_id=1)
    assert response["error_code"] == 0
    assert 1 not in h.image.brokers
    assert all(1 not in p.isr for p in h.image.all_partitions())
    missing = h.call(ApiKey.UNREGISTER_BROKER, 0, broker_id=9)
    assert missing["error_code"] == ErrorCode.broker_id_not_registered


def test_producer_id_blocks_of_1000() -> None:
    h = Harness()
    epoch = h.live_broker(1)
    first = h.call(ApiKey.ALLOCATE_PRODUCER_IDS, 0, broker_id=1, broker_epoch=epoch)
    second = h.call(ApiKey.ALLOCATE_PRODUCER_IDS, 0, broker_id=1, broker_epoch=epoch)
    assert (first["producer_id_start"], first["producer_id_len"]) == (0, 1000)
    assert second["producer_id_start"] == 1000
    assert h.image.next_producer_id == 2000
    stale = h.call(ApiKey.ALLOCATE_PRODUCER_IDS, 0, broker_id=1, broker_epoch=epoch + 1)
    assert stale["error_code"] == ErrorCode.stale_broker_epoch


def test_idle_noop_and_standby_refusal() -> None:
    h = Harness(metadata_max_idle_interval_ms=500)
    assert h.tick(100) == []
    records = h.tick(400)
    assert [type(rec).__name__ for rec, _ in records] == ["NoOpRecord"]
    h.controller.deactivate()
    try:
        h.register(1)
    except Exception as e:
        assert getattr(e, "code", None) == ErrorCode.not_controller
    else:
        raise AssertionError("a standby answered")


def test_each_broker_knows_the_topics_it_holds_replicas_of() -> None:
    """``TopicsImage.broker_topics`` (Kafka's BrokersToIsrs at the grain of topics): fencing or
    shutting down a broker walks only the topics it holds, not every partition."""
    h = Harness()
    for b in (1, 2, 3):
        h.live_broker(b)
    t, u = uuid.uuid4(), uuid.uuid4()
    h.write(
        [
            (r.TopicRecord(name="t", topic_id=t), 0),
            (
                r.PartitionRecord(
                    partition_id=0, topic_id=t, replicas=(1, 2), isr=(1, 2), leader=1
                ),
                0,
            ),
            (r.TopicRecord(name="u", topic_id=u), 0),
            (
                r.PartitionRecord(
                    partition_id=0, topic_id=u, replicas=(2, 3), isr=(2, 3), leader=3
                ),
                0,
            ),
        ]
    )
    assert h.image.topics_image.broker_topics == {1: {t}, 2: {t, u}, 3: {u}}
    assert {p.topic_id for p in h.image.partitions_near(3)} == {u}
    # A reassignment adds broker 3 to t; the topic is removed: no broker keeps it.
    h.write([(r.PartitionChangeRecord(partition_id=0, topic_id=t, replicas=(1, 3), isr=(1,)), 0)])
    assert t in h.image.topics_image.broker_topics[3]
    response = h.heartbeat(3, want_shut_down=True)  # leads u-0: controlled shutdown
    assert response["should_shut_down"] is False
    assert h.image.partition(u, 0).leader == 2
    h.write([(r.RemoveTopicRecord(topic_id=t), 0)])
    assert h.image.topics_image.broker_topics == {1: set(), 2: {u}, 3: {u}}
    assert list(h.image.partitions_near(1)) == []


def test_unclean_topics_read_each_topics_config_then_the_clusters_default() -> None:
    """What fencing and heartbeats elect with: a topic's unclean.leader.election.enable,
    else the cluster's, asked per topic (no set of every topic built per heartbeat)."""
    h = Harness()
    h.live_broker(1)
    h.create_topic("dirty", rf=1, configs={"unclean.leader.election.enable": "true"})
    h.create_topic("clean", rf=1, configs={"unclean.leader.election.enable": "false"})
    h.create_topic("plain", rf=1)
    ids = [h.image.topics_by_name[n] for n in ("dirty", "clean", "plain")]
    assert [t in UncleanTopics(h.image, False) for t in ids] == [True, False, False]
    assert [t in UncleanTopics(h.image, True) for t in ids] == [True, False, True]
    assert uuid.uuid4() not in UncleanTopics(h.image, True)  # no such topic
