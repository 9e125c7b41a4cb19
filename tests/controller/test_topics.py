"""Topics, partitions, configs, features and elections on the controller: Kafka's errors and
check order, rack-aware placement, AlterPartition's contract."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from pykraft.controller.configs import validate_topic_config
from pykraft.controller.errors import ApiError
from pykraft.metadata import records as r
from pykraft.metadata.versions import broker_registration_features
from pykraft.protocol import ApiKey

from .harness import Harness


@pytest.fixture
def h() -> Harness:
    h = Harness()
    for b, rack in ((1, "a"), (2, "a"), (3, "b"), (4, "b"), (5, "c"), (6, "c")):
        h.live_broker(b, rack=rack)
    return h


def test_create_topic_records_and_response(h: Harness) -> None:
    before = h.offset
    topic = h.create_topic("orders", partitions=6, rf=3, configs={"retention.ms": "1000"})
    assert (
        topic["error_code"] == 0
        and topic["num_partitions"] == 6
        and topic["replication_factor"] == 3
    )
    written = [rec for rec, _, off in h.written if off >= before]
    assert isinstance(written[0], r.TopicRecord) and written[0].topic_id == topic["topic_id"]
    assert isinstance(written[1], r.ConfigRecord) and written[1].name == "retention.ms"
    parts = written[2:]
    assert [p.partition_id for p in parts] == list(range(6))
    for p in parts:
        assert len(set(p.replicas)) == 3
        # Rack-aware: the three replicas sit on three racks.
        assert len({h.image.brokers[b].rack for b in p.replicas}) == 3
        assert p.leader == p.replicas[0] and p.isr == p.replicas
        assert p.directories == tuple(h.image.brokers[b].log_dirs[0] for b in p.replicas)
    # Leaders spread over the brokers.
    assert len({p.leader for p in parts}) == 6
    assert h.images_equal()


def test_create_topic_errors(h: Harness) -> None:
    h.create_topic("taken")
    cases = [
        (("taken",), {}, ErrorCode.topic_already_exists),
        (("bad name",), {}, ErrorCode.invalid_topic_exception),
        (("",), {}, ErrorCode.invalid_topic_exception),
        (("a" * 250,), {}, ErrorCode.invalid_topic_exception),
        (("..",), {}, ErrorCode.invalid_topic_exception),
        (("zero", 0), {}, ErrorCode.invalid_partitions),
        (("rf0", 1, 0), {}, ErrorCode.invalid_replication_factor),
        (("rf7", 1, 7), {}, ErrorCode.invalid_replication_factor),
        (("cfg",), {"configs": {"no.such.config": "1"}}, ErrorCode.invalid_config),
        (("cfg2",), {"configs": {"retention.ms": "soon"}}, ErrorCode.invalid_config),
        (("cfg3",), {"configs": {"min.insync.replicas": "0"}}, ErrorCode.invalid_config),
    ]
    before = h.offset
    for args, extra, code in cases:
        topic = h.create_topic(*args, **extra)
        assert topic["error_code"] == code, (args, topic)
        assert topic["error_message"], args
    assert h.offset == before
    # "a.b" and "a_b" collide (metric names); a name with neither '.' nor '_' collides with
    # nothing. Deleted, a name frees its twin; reverted before it committed, too (the index
    # of such names is kept in the timeline: ``Harness.write`` checks it after each record).
    h.create_topic("a.b")
    clash = h.create_topic("a_b")
    assert clash["error_code"] == ErrorCode.invalid_topic_exception
    assert clash["error_message"] == "Topic 'a_b' collides with existing topic: a.b"
    assert h.create_topic("a.b")["error_code"] == ErrorCode.topic_already_exists
    assert h.create_topic("ab")["error_code"] == 0
    deleted = h.call(ApiKey.DELETE_TOPICS, 5, topic_names=["a.b"], timeout=1000)
    assert deleted["responses"][0]["error_code"] == 0
    assert h.create_topic("a_b")["error_code"] == 0
    h.image.record_uncommitted(True)
    committed = h.offset - 1
    h.image.committed(committed)
    assert h.create_topic("x_y.z")["error_code"] == 0
    assert h.create_topic("x.y_z")["error_code"] == ErrorCode.invalid_topic_exception
    h.revert(committed)
    h.image.check()
    assert h.create_topic("x.y_z")["error_code"] == 0
    assert h.create_topic("a.b")["error_code"] == ErrorCode.invalid_topic_exception


def test_defaults_validate_only_and_manual_assignment(h: Harness) -> None:
    h2 = Harness(num_partitions=3, default_replication_factor=1)
    h2.live_broker(1)
    assert h2.create_topic("d", partitions=-1, rf=-1)["num_partitions"] == 3
    before = h.offset
    dry = h.create_topic("dry", partitions=2, rf=2, validate_only=True)
    assert dry["error_code"] == 0 and h.offset == before and "dry" not in h.image.topics_by_name
    manual = h.create_topic(
        "manual",
        partitions=-1,
        rf=-1,
        assignments=[
            {"partition_index": 0, "broker_ids": [3, 1]},
            {"partition_index": 1, "broker_ids": [1, 3]},
        ],
    )
    assert manual["error_code"] == 0
    tid = h.image.topics_by_name["manual"]
    assert h.image.topics[tid].partitions[0].replicas == (3, 1)
    bad = h.create_topic(
        "bad", partitions=-1, rf=-1, assignments=[{"partition_index": 0, "broker_ids": [1, 1]}]
    )
    assert bad["error_code"] == ErrorCode.invalid_replica_assignment
    gone = h.create_topic(
        "gone", partitions=-1, rf=-1, assignments=[{"partition_index": 0, "broker_ids": [42]}]
    )
    assert gone["error_code"] == ErrorCode.invalid_replica_assignment


def test_duplicate_names_in_one_request(h: Harness) -> None:
    response = h.call(
        ApiKey.CREATE_TOPICS,
        7,
        topics=[
            {"name": "x", "num_partitions": 1, "replication_factor": 1},
            {"name": "x", "num_partitions": 1, "replication_factor": 1},
            {"name": "y", "num_partitions": 1, "replication_factor": 1},
        ],
        timeout=1000,
    )
    codes = [t["error_code"] for t in response["topics"]]
    assert codes == [ErrorCode.invalid_request, ErrorCode.invalid_request, 0]


def test_delete_topics_by_name_and_id(h: Harness) -> None:
    a = h.create_topic("a")
    h.create_topic("b")
    h.call(
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        1,
        resources=[
            {
                "resource_type": 2,
                "resource_name": "b",
                "configs": [{"name": "retention.ms", "config_operation": 0, "value": "5"}],
            }
        ],
        validate_only=False,
    )
    by_name = h.call(ApiKey.DELETE_TOPICS, 5, topic_names=["b", "nope"], timeout=1000)
    assert [x["error_code"] for x in by_name["responses"]] == [
        0,
        ErrorCode.unknown_topic_or_partition,
    ]
    assert "b" not in h.image.topics_by_name and (2, "b") not in h.image.configs
    by_id = h.call(
        ApiKey.DELETE_TOPICS,
        6,
        topics=[
            {"name": None, "topic_id": a["topic_id"]},
            {"name": None, "topic_id": uuid.uuid4()},
        ],
        timeout=1000,
    )
    assert [x["error_code"] for x in by_id["responses"]] == [0, ErrorCode.unknown_topic_id]
    assert by_id["responses"][0]["name"] == "a" and not h.image.topics
    # A topic created again gets a new id.
    again = h.create_topic("a")
    assert again["topic_id"] != a["topic_id"]


def test_create_partitions(h: Harness) -> None:
    h.create_topic("t", partitions=2, rf=2)

    def grow(
        count: int, assignments: list[dict[str, list[int]]] | None = None
    ) -> dict[str, object]:
        response = h.call(
            ApiKey.CREATE_PARTITIONS,
            3,
            topics=[{"name": "t", "count": count, "assignments": assignments}],
            timeout=1000,
            validate_only=False,
        )
        return dict(response["results"][0])

    assert grow(1)["error_code"] == ErrorCode.invalid_partitions
    assert grow(2)["error_code"] == ErrorCode.invalid_partitions
    assert grow(4)["error_code"] == 0
    tid = h.image.topics_by_name["t"]
    assert sorted(h.image.topics[tid].partitions) == [0, 1, 2, 3]
    assert all(len(p.replicas) == 2 for p in h.image.topics[tid].partitions.values())
    assert grow(6, [{"broker_ids": [1, 2]}])["error_code"] == ErrorCode.invalid_replica_assignment
    assert grow(5, [{"broker_ids": [5, 6]}])["error_code"] == 0
    assert h.image.topics[tid].partitions[4].replicas == (5, 6)


def described(h: Harness, resource_type: int, name: str) -> dict[str, dict[str, Any]]:
    """DescribeConfigs v4 of one resource: its entries by config name."""
    answer = h.call(
        ApiKey.DESCRIBE_CONFIGS,
        4,
        resources=[
            {"resource_type": resource_type, "resource_name": name, "configuration_keys": None}
        ],
        include_synonyms=False,
        include_documentation=False,
    )
    return {c["name"]: c for c in answer["results"][0]["configs"]}


def _alter(
    h: Harness, broker: int, epoch: int, tid: uuid.UUID, **part: object
) -> dict[str, object]:
    response = h.call(
        ApiKey.ALTER_PARTITION,
        3,
        broker_id=broker,
        broker_epoch=epoch,
        topics=[
            {
                "topic_id": tid,
                "partitions": [{"partition_index": 0, "leader_recovery_state": 0, **part}],
            }
        ],
    )
    if response["error_code"]:
        return {"error_code": response["error_code"]}
    return dict(response["topics"][0]["partitions"][0])


def test_alter_partition_contract_in_order(h: Harness) -> None:
    h.create_topic("t", partitions=1, rf=3, assignments=[])
    tid = h.image.topics_by_name["t"]
    p = h.image.topics[tid].partitions[0]
    leader = p.leader
    epoch = h.image.brokers[leader].epoch
    follower = p.replicas[1]
    others = [b for b in p.replicas if b != leader]

    def isr(*ids: int) -> list[dict[str, int]]:
        return [{"broker_id": b, "broker_epoch": h.image.brokers[b].epoch} for b in ids]

    shrink = isr(leader, others[0])
    assert _alter(
        h, leader, epoch + 1, tid, leader_epoch=0, partition_epoch=0, new_isr_with_epochs=shrink
    ) == {"error_code": ErrorCode.stale_broker_epoch}
    assert (
        _alter(
            h,
            leader,
            epoch,
            uuid.uuid4(),
            leader_epoch=0,
            partition_epoch=0,
            new_isr_with_epochs=shrink,
        )["error_code"]
        == ErrorCode.unknown_topic_id
    )
    assert (
        _alter(
            h, leader, epoch, tid, leader_epoch=1, partition_epoch=0, new_isr_with_epochs=shrink
        )["error_code"]
        == ErrorCode.not_controller
    )
    assert (
        _alter(
            h,
            follower,
            h.image.brokers[follower].epoch,
            tid,
            leader_epoch=0,
            partition_epoch=0,
            new_isr_with_epochs=shrink,
        )["error_code"]
        == ErrorCode.invalid_request
    )
    assert (
        _alter(
            h,
            leader,
            epoch,
            tid,
            leader_epoch=0,
            partition_epoch=0,
            new_isr_with_epochs=isr(others[0]),
        )["error_code"]
        == ErrorCode.invalid_request
    )
    ok = _alter(
        h, leader, epoch, tid, leader_epoch=0, partition_epoch=0, new_isr_with_epochs=shrink
    )
    assert ok == {
        "partition_index": 0,
        "error_code": 0,
        "leader_id": leader,
        "leader_epoch": 0,
        "isr": tuple(shrink_b["broker_id"] for shrink_b in shrink),
        "leader_recovery_state": 0,
        "partition_epoch": 1,
    }
    # The old partition epoch is now stale; a stale leader epoch is fenced.
    assert (
        _alter(
            h, leader, epoch, tid, leader_epoch=0, partition_epoch=0, new_isr_with_epochs=shrink
        )["error_code"]
        == ErrorCode.invalid_update_version
    )
    # An ISR member with a wrong broker epoch, or fenced, is ineligible.
    wrong = [
        {"broker_id": leader, "broker_epoch": epoch},
        {"broker_id": others[1], "broker_epoch": 999},
    ]
    assert (
        _alter(h, leader, epoch, tid, leader_epoch=0, partition_epoch=1, new_isr_with_epochs=wrong)[
            "error_code"
        ]
        == ErrorCode.ineligible_replica
    )
    grown = _alter(
        h,
        leader,
        epoch,
        tid,
        leader_epoch=0,
        partition_epoch=1,
        new_isr_with_epochs=isr(leader, *others),
    )
    assert (
        grown["error_code"] == 0
        and grown["partition_epoch"] == 2
        and set(grown["isr"]) == set(p.replicas)
    )  # type: ignore[arg-type]
    assert h.images_equal()


def test_configs_incremental_and_legacy(h: Harness) -> None:
    h.create_topic("t")

    def incremental(*ops: tuple[str, int, str | None], rtype: int = 2, name: str = "t") -> int:
        response = h.call(
            ApiKey.INCREMENTAL_ALTER_CONFIGS,
            1,
            resources=[
                {
                    "resource_type": rtype,
                    "resource_name": name,
                    "configs": [
                        {"name": k, "config_operation": op, "value": v} for k, op, v in ops
                    ],
                }
            ],
            validate_only=False,
        )
        return int(response["responses"][0]["error_code"])

    assert incremental(("cleanup.policy", 0, "delete")) == 0
    assert incremental(("cleanup.policy", 2, "compact")) == 0  # APPEND
    assert h.image.configs[(2, "t")]["cleanup.policy"] == "delete,compact"
    assert incremental(("cleanup.policy", 3, "delete")) == 0  # SUBTRACT
    assert h.image.configs[(2, "t")]["cleanup.policy"] == "compact"
    assert incremental(("retention.ms", 2, "5")) == ErrorCode.invalid_config  # not a LIST
    assert incremental(("cleanup.policy", 1, None)) == 0  # DELETE
    assert (2, "t") not in h.image.configs
    assert (
        incremental(("retention.ms", 0, "1"), name="missing")
        == ErrorCode.unknown_topic_or_partition
    )
    assert incremental(("log.retention.ms", 0, "1"), rtype=4, name="1") == 0
    assert incremental(("log.retention.ms", 0, "1"), rtype=4, name="x") == ErrorCode.invalid_request
    legacy = h.call(
        ApiKey.ALTER_CONFIGS,
        2,
        resources=[
            {
                "resource_type": 2,
                "resource_name": "t",
                "configs": [{"name": "segment.ms", "value": "100"}],
            }
        ],
        validate_only=False,
    )
    assert legacy["responses"][0]["error_code"] == 0
    assert h.image.configs[(2, "t")] == {"segment.ms": "100"}
    entries = described(h, 2, "t")
    assert entries["segment.ms"]["value"] == "100" and entries["segment.ms"]["config_source"] == 1
    default = entries["retention.ms"]
    assert default["value"] == "604800000" and default["config_source"] == 5  # DEFAULT_CONFIG


def test_topic_config_validation_follows_kafka_logconfig() -> None:
    validate_topic_config("compression.gzip.level", "-1")
    validate_topic_config("min.cleanable.dirty.ratio", "0.25")
    # Kafka 4.4.0's new topic configs (issue 46: refused as unknown before).
    validate_topic_config("max.decompressed.message.bytes", "1048576")
    validate_topic_config("remote.copy.lag.ms", "-1")
    validate_topic_config("remote.copy.lag.bytes", "1000000")
    validate_topic_config("errors.deadletterqueue.group.enable", "true")
    for name, value in [
        ("segment.bytes", "1000"),
        ("compression.type", "brotli"),
        ("min.cleanable.dirty.ratio", "2"),
        ("preallocate", "yes"),
        ("segment.index.bytes", str(2**31)),
        ("max.decompressed.message.bytes", "0"),
        ("remote.copy.lag.ms", "-2"),
        ("remote.copy.lag.bytes", "-2"),
        ("errors.deadletterqueue.group.enable", "maybe"),
    ]:
        with pytest.raises(ApiError) as caught:
            validate_topic_config(name, value)
        assert caught.value.code == ErrorCode.invalid_config and name in (
            caught.value.message or ""
        )


def test_update_features_checks_every_broker(h: Harness) -> None:
    def update(name: str, level: int, upgrade_type: int = 1) -> dict[str, object]:
        return h.call(
            ApiKey.UPDATE_FEATURES,
            2,
            timeout=1000,
            feature_updates=[
                {"feature": name, "max_version_level": level, "upgrade_type": upgrade_type}
            ],
            validate_only=False,
        )

    assert update("group.version", 1)["error_code"] == 0
    assert h.image.features["group.version"] == 1
    assert update("transaction.version", 3)["error_code"] == ErrorCode.invalid_update_version
    assert update("no.such.feature", 1)["error_code"] == ErrorCode.invalid_update_version
    assert update("metadata.version", 34)["error_code"] == ErrorCode.invalid_update_version
    assert update("metadata.version", 20, 2)["error_code"] == ErrorCode.invalid_update_version
    assert update("group.version", 0)["error_code"] == ErrorCode.invalid_update_version
    assert update("group.version", 0, 2)["error_code"] == 0
    assert "group.version" not in h.image.features
    # A broker that cannot run share.version 1 (a Kafka 4.0 broker's features) blocks it.
    h.live_broker(7, features=broker_registration_features(25))
    refused = update("share.version", 1)
    assert refused["error_code"] == ErrorCode.invalid_update_version
    assert re.search(r"Broker \d+ only supports versions 0-0$", str(refused["error_message"]))


def test_elections_preferred_and_unclean(h: Harness) -> None:
    h.create_topic(
        "t", partitions=-1, rf=-1, assignments=[{"partition_index": 0, "broker_ids": [1, 2]}]
    )
    tid = h.image.topics_by_name["t"]
    p = h.image.topics[tid].partitions[0]

    def elect(kind: int) -> int:
        response = h.call(
            ApiKey.ELECT_LEADERS,
            2,
            election_type=kind,
            topic_partitions=[{"topic": "t", "partitions": [0]}],
            timeout=1000,
        )
        return int(response["replica_election_results"][0]["partition_result"][0]["error_code"])

    def set_isr(leader: int, *members: int) -> None:
        response = h.call(
            ApiKey.ALTER_PARTITION,
            3,
            broker_id=leader,
            broker_epoch=h.image.brokers[leader].epoch,
            topics=[
                {
                    "topic_id": tid,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "leader_epoch": p.leader_epoch,
                            "partition_epoch": p.partition_epoch,
                            "leader_recovery_state": 0,
                            "new_isr_with_epochs": [
                                {"broker_id": b, "broker_epoch": h.image.brokers[b].epoch}
                                for b in members
                            ],
                        }
                    ],
                }
            ],
        )
        assert response["topics"][0]["partitions"][0]["error_code"] == 0, response

    assert elect(0) == ErrorCode.election_not_needed
    # Broker 1 shuts down (controlled): 2 leads. It restarts, rejoins the ISR, and a
    # preferred election moves leadership back to it.
    h.heartbeat(1, want_shut_down=True)
    assert p.leader == 2
    for other in (2, 3, 4, 5, 6):  # every active broker replays past the change
        h.heartbeat(other)
    assert h.heartbeat(1, want_shut_down=True)["should_shut_down"] is True
    h.now += 9_001  # its session expires (Kafka 4.x keeps it past the clean stop)
    for other in (2, 3, 4, 5, 6):
        h.heartbeat(other)
    assert h.register(1, incarnation=uuid.uuid4())["error_code"] == 0
    h.heartbeat(1)
    set_isr(2, 2, 1)
    assert elect(0) == 0 and p.leader == 1
    # The ISR shrinks to {1} and broker 1's session runs out: no leader (the ISR keeps
    # its last member). Unclean election picks live broker 2, RECOVERING.
    set_isr(1, 1)
    h.now += 10_000
    for other in (2, 3, 4, 5, 6):
        h.heartbeat(other)
    h.tick()
    assert p.leader == -1 and p.isr == (1,)
    assert elect(1) == 0
    assert p.leader == 2 and p.isr == (2,) and p.leader_recovery_state == 1
    assert elect(1) == ErrorCode.election_not_needed
    assert h.images_equal()


def test_describe_configs_masks_stored_secrets_of_brokers() -> None:
    """Issue 46: a broker config of PASSWORD type (a listener override included) or of no
    known type is answered with a null value and is_sensitive (Kafka 4.4.0's ConfigHelper);
    the others as stored."""
    h = Harness()
    secrets = {
        "listener.name.internal.ssl.keystore.password": "keystore-secret",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": "org.example.Login required;",
        "ssl.key.password": "key-secret",
        "some.plugin.setting": "unknown-type",
    }
    plain = {"log.retention.ms": "3600000", "listener.name.internal.ssl.keystore.location": "/k"}
    altered = h.call(
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        1,
        resources=[
            {
                "resource_type": 4,
                "resource_name": "",
                "configs": [
                    {"name": k, "config_operation": 0, "value": v}
                    for k, v in {**secrets, **plain}.items()
                ],
            }
        ],
        validate_only=False,
    )
    assert altered["responses"][0]["error_code"] == 0
    entries = described(h, 4, "")
    for name in secrets:
        assert entries[name]["value"] is None and entries[name]["is_sensitive"], name
    for name, value in plain.items():
        assert entries[name]["value"] == value and not entries[name]["is_sensitive"], name


def test_delete_topics_is_refused_whole_when_deletion_is_disabled() -> None:
    """delete.topic.enable=false (Kafka 4.4.0's ControllerApis.deleteTopics): INVALID_REQUEST
    before v3, TOPIC_DELETION_DISABLED from v3, nothing written, the topic kept."""
    h = Harness(delete_topic_enable=False)
    h.live_broker(0)
    h.call(
        ApiKey.CREATE_TOPICS,
        7,
        topics=[
            {
                "name": "kept",
                "num_partitions": 1,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
        ],
        timeout=1000,
        validate_only=False,
    )
    written = h.offset
    for version, code in ((2, ErrorCode.invalid_request), (6, ErrorCode.topic_deletion_disabled)):
        fields = (
            {"topics": [{"name": "kept", "topic_id": None}]}
            if version >= 6
            else {"topic_names": ["kept"]}
        )
        with pytest.raises(ApiError) as refused:
            h.call(ApiKey.DELETE_TOPICS, version, timeout=1000, **fields)
        assert refused.value.code == code
    assert h.offset == written and "kept" in h.image.topics_by_name
