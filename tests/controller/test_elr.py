"""Eligible leader replicas (KIP-966) and the metadata.version levels of Kafka 4.1 to 4.4 on
the controller: the scenarios of Kafka's ``ReplicationControlManagerTest`` /
``EligibleLeaderReplicasIntegrationTest`` (ISR below min ISR, an ELR member elected, an
unclean restart leaving the ELR, the last known leader), ClearElrRecord on config changes,
and UpdateFeatures' dependency and downgrade rules."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from pykraft.metadata import records as r
from pykraft.metadata.image import BROKER_RESOURCE, NO_LEADER, TOPIC_RESOURCE, PartitionState
from pykraft.metadata.versions import (
    ELR_VERSION,
    METADATA_VERSION,
    default_level,
    metadata_changed_between,
    parse_release_version,
    release_features,
)
from pykraft.protocol import ApiKey
from tests.controller.harness import BROKER_FEATURES, Harness

FEATURES_41 = [
    *BROKER_FEATURES,
    {"name": ELR_VERSION, "min_supported_version": 0, "max_supported_version": 1},
]


SESSION_OVER = 9_001  # past broker.session.timeout.ms since the last heartbeat


def elr_harness(**config: Any) -> Harness:
    """A controller bootstrapped at 4.1 (eligible leader replicas on), brokers 1-4 live, and
    topic ``t``: one partition on 1,2,3,4 with min.insync.replicas 3."""
    h = Harness(bootstrap=release_features(parse_release_version("4.1").level), **config)
    for b in (1, 2, 3, 4):
        h.live_broker(b, features=FEATURES_41)
    created = h.create_topic(
        "t",
        -1,
        -1,
        assignments=[{"partition_index": 0, "broker_ids": [1, 2, 3, 4]}],
        configs={"min.insync.replicas": "3"},
    )
    assert created["error_code"] == 0, created
    return h


def part(h: Harness) -> PartitionState:
    topic = h.image.topics[h.image.topics_by_name["t"]]
    return topic.partitions[0]


def fence(h: Harness, broker_id: int) -> None:
    assert h.heartbeat(broker_id, want_fence=True)["is_fenced"] is True
    assert h.image.brokers[broker_id].fenced


def alter(
    h: Harness,
    resource_type: int,
    name: str,
    value: str | None,
    *,
    key: str = "min.insync.replicas",
    op: int = 0,
) -> dict[str, Any]:
    """One IncrementalAlterConfigs of one key (op 0 SET, 1 DELETE); the resource's result."""
    response = h.call(
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        1,
        validate_only=False,
        resources=[
            {
                "resource_type": resource_type,
                "resource_name": name,
                "configs": [{"name": key, "config_operation": op, "value": value}],
            }
        ],
    )
    (result,) = response["responses"]
    return dict(result)


def test_bootstrap_at_4_1_turns_elr_on_with_a_cluster_min_isr() -> None:
    h = Harness(
        bootstrap=release_features(parse_release_version("4.1").level), min_insync_replicas=2
    )
    assert h.image.features[ELR_VERSION] == 1
    assert h.image.features[METADATA_VERSION] == 27
    assert h.image.configs[(BROKER_RESOURCE, "")]["min.insync.replicas"] == "2"


def test_isr_below_min_isr_moves_members_to_the_elr_and_back() -> None:
    h = elr_harness()
    assert part(h).isr == (1, 2, 3, 4) and not part(h).elr
    fence(h, 1)
    assert part(h).isr == (2, 3, 4) and not part(h).elr  # still at min ISR
    fence(h, 2)
    assert part(h).isr == (3, 4) and part(h).elr == (2,)
    assert part(h).leader == 3
    # The leader takes 2 back into the ISR: at min ISR again, the ELR empties.
    h.heartbeat(2)
    p = part(h)
    response = h.call(
        ApiKey.ALTER_PARTITION,
        3,
        broker_id=3,
        broker_epoch=h.image.brokers[3].epoch,
        topics=[
            {
                "topic_id": p.topic_id,
                "partitions": [
                    {
                        "partition_index": 0,
                        "leader_epoch": p.leader_epoch,
                        "new_isr_with_epochs": [
                            {"broker_id": b, "broker_epoch": h.image.brokers[b].epoch}
                            for b in (2, 3, 4)
                        ],
                        "leader_recovery_state": 0,
                        "partition_epoch": p.partition_epoch,
                    }
                ],
            }
        ],
    )
    assert response["error_code"] == 0
    assert part(h).isr == (2, 3, 4) and part(h).elr == ()
    assert h.images_equal()


def test_empty_isr_keeps_the_last_leader_and_an_elr_member_is_elected_cleanly() -> None:
    h = elr_harness()
    for b in (1, 2, 3):
        fence(h, b)
    assert part(h).isr == (4,) and part(h).elr == (2, 3) and part(h).leader == 4
    fence(h, 4)
    p = part(h)
    # With ELR the ISR may empty (no KIP-841 "last member stays"); the last leader is kept.
    assert p.isr == () and p.elr == (2, 3, 4) and p.leader == NO_LEADER
    assert p.last_known_elr == (4,)
    # Broker 3 comes back: an ELR member, elected cleanly; it alone is the ISR.
    assert h.heartbeat(3)["is_fenced"] is False
    p = part(h)
    assert p.leader == 3 and p.isr == (3,) and p.elr == (2, 4)
    assert p.last_known_elr == () and p.leader_recovery_state == 0
    # ControllerStats' meters (Kafka's TopicDelta.updateElectionStats): one from the ELR.
    topics = h.image.topics_image
    assert (topics.elr_elections, topics.unclean_elections) == (1, 0)
    assert h.standby.topics_image.elr_elections == 1  # replayed the same
    assert h.images_equal()


def test_a_broker_that_was_never_in_the_elr_is_not_elected() -> None:
    h = elr_harness()
    for b in (1, 2, 3, 4):
        fence(h, b)
    # Broker 1 left the ISR while it was still at min ISR: its log may lack records.
    assert 1 not in (part(h).elr or ())
    h.heartbeat(1)
    assert part(h).leader == NO_LEADER


def test_unclean_restart_leaves_the_elr_and_a_clean_one_stays() -> None:
    h = elr_harness()
    for b in (1, 2, 3, 4):
        fence(h, b)
    assert part(h).elr == (2, 3, 4)
    h.now += SESSION_OVER  # a new incarnation waits for the old session to expire
    # Broker 3 restarts without its clean-shutdown file (PreviousBrokerEpoch -1).
    again = h.register(3, incarnation=uuid.UUID(int=333), features=FEATURES_41)
    assert again["error_code"] == 0
    assert part(h).elr == (2, 4) and part(h).last_known_elr == (4,)
    # Broker 2 restarts cleanly: it read back the epoch of its registration.
    again = h.register(
        2,
        incarnation=uuid.UUID(int=222),
        features=FEATURES_41,
        previous_broker_epoch=h.image.brokers[2].epoch,
    )
    assert again["error_code"] == 0
    assert part(h).elr == (2, 4)
    assert h.images_equal()


def test_the_last_known_leader_is_elected_when_isr_and_elr_are_empty() -> None:
    h = elr_harness()
    for b in (1, 2, 3, 4):
        fence(h, b)
    h.now += SESSION_OVER
    for b in (2, 3, 4):  # every ELR member restarts uncleanly
        h.register(b, incarnation=uuid.UUID(int=1000 + b), features=FEATURES_41)
    p = part(h)
    assert p.isr == () and p.elr == () and p.last_known_elr == (4,)
    h.heartbeat(2)
    assert part(h).leader == NO_LEADER  # not the last leader
    h.heartbeat(4)
    p = part(h)
    # Kafka counts it as unclean: the ISR is the leader alone, RECOVERING until it says so.
    assert p.leader == 4 and p.isr == (4,) and p.leader_recovery_state == 1
    assert p.last_known_elr == () and p.elr == ()
    topics = h.image.topics_image
    assert (topics.elr_elections, topics.unclean_elections) == (0, 1)


def test_min_isr_changes_clear_the_elr() -> None:
    h = elr_harness()
    fence(h, 1)
    fence(h, 2)
    assert part(h).elr == (2,)
    epoch, leader_epoch = part(h).partition_epoch, part(h).leader_epoch

    assert alter(h, TOPIC_RESOURCE, "t", "2")["error_code"] == 0
    assert any(
        isinstance(rec, r.ClearElrRecord) and rec.topic_name == "t" for rec, _, _ in h.written
    )
    p = part(h)
    assert p.elr == () and p.partition_epoch == epoch + 1 and p.leader_epoch == leader_epoch
    # A broker's own min.insync.replicas and deleting the cluster's are refused with ELR on.
    refused = alter(h, BROKER_RESOURCE, "1", "2")
    assert refused["error_code"] == ErrorCode.invalid_config
    assert "Broker-level" in refused["error_message"]
    refused = alter(h, BROKER_RESOURCE, "", None, op=1)
    assert refused["error_code"] == ErrorCode.invalid_config
    # The cluster's value, even unchanged, is written again and clears every topic's ELR.
    before = len(h.written)
    assert (
        alter(
            h, BROKER_RESOURCE, "", h.image.configs[(BROKER_RESOURCE, "")]["min.insync.replicas"]
        )["error_code"]
        == 0
    )
    written = [rec for rec, _, _ in h.written[before:]]
    assert any(isinstance(rec, r.ClearElrRecord) and rec.topic_name == "" for rec in written)
    assert h.images_equal()


def update(h: Harness, *updates: tuple[str, int, int], validate_only: bool = False) -> Any:
    return h.call(
        ApiKey.UPDATE_FEATURES,
        2,
        timeout=1000,
        feature_updates=[
            {"feature": name, "max_version_level": level, "upgrade_type": kind}
            for name, level, kind in updates
        ],
        validate_only=validate_only,
    )


def test_elr_needs_metadata_version_4_0_iv1_and_brings_its_safety_records() -> None:
    h = Harness(bootstrap={METADATA_VERSION: 22}, min_insync_replicas=2)
    h.live_broker(1, features=FEATURES_41)
    assert alter(h, BROKER_RESOURCE, "1", "2")["error_code"] == 0
    refused = update(h, (ELR_VERSION, 1, 1))
    assert refused["error_code"] == ErrorCode.invalid_update_version
    assert "metadata.version level 23" in refused["error_message"]
    # Both in one request: the dependency is checked against the proposed levels.
    assert update(h, (METADATA_VERSION, 23, 1), (ELR_VERSION, 1, 1))["error_code"] == 0
    assert h.image.features[ELR_VERSION] == 1
    assert h.image.configs[(BROKER_RESOURCE, "")]["min.insync.replicas"] == "2"
    assert "min.insync.replicas" not in h.image.configs.get((BROKER_RESOURCE, "1"), {})
    # Turning it off is a safe downgrade.
    assert update(h, (ELR_VERSION, 0, 2))["error_code"] == 0
    assert ELR_VERSION not in h.image.features


def test_metadata_version_downgrades_follow_kafkas_metadata_changed_rule() -> None:
    h = Harness(bootstrap={METADATA_VERSION: 27})
    h.live_broker(1, features=FEATURES_41)
    # 26 and 27 changed no metadata: 27 -> 25 is safe; 25 -> 22 crosses 4.0-IV1 (23).
    refused = update(h, (METADATA_VERSION, 25, 3))
    assert refused["error_code"] == ErrorCode.invalid_update_version
    assert "Unsafe metadata downgrade" in refused["error_message"]
    assert update(h, (METADATA_VERSION, 25, 2))["error_code"] == 0
    assert h.image.features[METADATA_VERSION] == 25
    refused = update(h, (METADATA_VERSION, 22, 2))
    assert "might delete metadata" in refused["error_message"]
    assert update(h, (METADATA_VERSION, 27, 2))["error_code"] == ErrorCode.invalid_update_version


@pytest.mark.parametrize(
    ("release", "expected"),
    [
        ("3.9", {METADATA_VERSION: 21}),
        ("4.0", {METADATA_VERSION: 25, "group.version": 1, "transaction.version": 2}),
        (
            "4.1",
            {METADATA_VERSION: 27, ELR_VERSION: 1, "group.version": 1, "transaction.version": 2},
        ),
        (
            "4.3",
            {
                METADATA_VERSION: 30,
                ELR_VERSION: 1,
                "group.version": 1,
                "share.version": 1,
                "streams.version": 1,
                "transaction.version": 2,
            },
        ),
        (
            "4.4",
            {
                METADATA_VERSION: 33,
                ELR_VERSION: 1,
                "group.version": 1,
                "share.version": 2,
                "streams.version": 1,
                "transaction.version": 2,
            },
        ),
    ],
)
def test_release_features_are_kafka_4_4s_defaults(release: str, expected: dict[str, int]) -> None:
    assert release_features(parse_release_version(release).level) == expected


def test_feature_levels_and_metadata_changes() -> None:
    assert default_level("share.version", 30) == 1 and default_level("share.version", 31) == 2
    assert not metadata_changed_between(25, 29)
    assert metadata_changed_between(29, 30) and metadata_changed_between(22, 23)


def test_cordoned_log_dirs_keep_new_replicas_off_a_broker() -> None:
    """KIP-1066 at 4.3-IV0: heartbeat v2's CordonedLogDirs become a
    BrokerRegistrationChangeRecord v3; a broker whose every directory is cordoned gets no new
    replicas; the config is refused below 4.3-IV0."""
    h = Harness(bootstrap=release_features(parse_release_version("4.3").level))
    features = [
        {"name": "metadata.version", "min_supported_version": 7, "max_supported_version": 30},
        *FEATURES_41[1:],
        {"name": "share.version", "min_supported_version": 0, "max_supported_version": 1},
        {"name": "streams.version", "min_supported_version": 0, "max_supported_version": 1},
    ]
    for b in (1, 2, 3):
        h.live_broker(b, features=features)
    dirs = h.image.brokers[3].log_dirs
    beat = h.call(
        ApiKey.BROKER_HEARTBEAT,
        2,
        broker_id=3,
        broker_epoch=h.image.brokers[3].epoch,
        current_metadata_offset=h.offset - 1,
        want_fence=False,
        want_shut_down=False,
        cordoned_log_dirs=list(dirs),
    )
    assert beat["error_code"] == 0
    record, version, _ = h.written[-1]
    assert isinstance(record, r.BrokerRegistrationChangeRecord) and version == 3
    assert h.image.brokers[3].cordoned_log_dirs == tuple(sorted(dirs))
    created = h.create_topic("c", 6, 2)
    assert created["error_code"] == 0
    topic = h.image.topics[h.image.topics_by_name["c"]]
    assert all(3 not in p.replicas for p in topic.partitions.values())
    assert h.create_topic("d", 1, 3)["error_code"] == ErrorCode.invalid_replication_factor
    assert h.images_equal()

    old = Harness()
    result = alter(old, BROKER_RESOURCE, "1", "/d", key="cordoned.log.dirs")
    assert result["error_code"] == ErrorCode.invalid_config
    assert "requires metadata.version >= 4.3-IV0" in result["error_message"]


def test_cordoned_log_dirs_straight_to_a_controller_only_shrink() -> None:
    """Sent straight to a controller (not forwarded by a broker, which checks the paths),
    ``cordoned.log.dirs`` may only become a subset of its current value (Kafka 4.4.0)."""
    import dataclasses

    from pykraft.controller.authorization import Caller
    from pykraft.protocol.apis import request_schema
    from pykraft.protocol.build import make

    h = Harness(bootstrap=release_features(parse_release_version("4.3").level))
    assert alter(h, BROKER_RESOURCE, "", "/a,/b", key="cordoned.log.dirs")["error_code"] == 0

    def direct(value: str) -> int:
        request = make(
            request_schema(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1),
            {
                "validate_only": False,
                "resources": [
                    {
                        "resource_type": BROKER_RESOURCE,
                        "resource_name": "",
                        "configs": [
                            {"name": "cordoned.log.dirs", "config_operation": 0, "value": value}
                        ],
                    }
                ],
            },
        )
        ctx = dataclasses.replace(h.context(), caller=Caller("User:admin", "127.0.0.1"))
        result = h.controller.handle(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, request, ctx)
        h.write(result.records)
        return int(result.response["responses"][0]["error_code"])

    assert direct("/a,/c") == ErrorCode.invalid_config
    assert direct("/b") == 0
    assert h.image.configs[(BROKER_RESOURCE, "")]["cordoned.log.dirs"] == "/b"
