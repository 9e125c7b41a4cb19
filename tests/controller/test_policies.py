"""create.topic.policy.class.name and alter.config.policy.class.name as Python plug-ins
(controller/policies.py): Kafka's CreateTopicPolicy / AlterConfigPolicy shapes, answered as
Kafka answers a PolicyViolationException."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from pykraft.controller.policies import (
    AlterConfigRequestMetadata,
    CreateTopicRequestMetadata,
    PolicyViolation,
)
from pykraft.metadata.image import TOPIC_RESOURCE
from pykraft.protocol import ApiKey

from .harness import Harness


class AtMostFourPartitions:
    def __init__(self) -> None:
        self.seen: list[CreateTopicRequestMetadata] = []

    def validate(self, request: CreateTopicRequestMetadata) -> None:
        self.seen.append(request)
        count = request.num_partitions
        if count is None and request.replicas_assignments is not None:
            count = len(request.replicas_assignments)
        if count is not None and count > 4:
            raise PolicyViolation(f"Topic {request.topic} may have at most 4 partitions")


class RetentionAtLeastOneHour:
    def __init__(self) -> None:
        self.seen: list[AlterConfigRequestMetadata] = []

    def validate(self, request: AlterConfigRequestMetadata) -> None:
        self.seen.append(request)
        value = request.configs.get("retention.ms")
        if value is not None and int(value) < 3_600_000:
            raise PolicyViolation("retention.ms must be at least 3600000")


class Broken:
    def validate(self, request: object) -> None:
        raise KeyError("oops")


def _create(h: Harness, *topics: dict[str, object], validate_only: bool = False) -> list[dict]:
    response = h.call(
        ApiKey.CREATE_TOPICS,
        7,
        topics=[
            {"assignments": [], "configs": [], "num_partitions": 1, "replication_factor": 1, **t}
            for t in topics
        ],
        timeout=30_000,
        validate_only=validate_only,
    )
    return [dict(t) for t in response["topics"]]


def test_a_create_topic_policy_refuses_a_topic_with_its_message() -> None:
    policy = AtMostFourPartitions()
    h = Harness(create_topic_policy=policy)
    h.live_broker(1)
    big, small = _create(
        h, {"name": "big", "num_partitions": 8}, {"name": "small", "num_partitions": -1}
    )
    assert big["error_code"] == ErrorCode.policy_violation
    assert big["error_message"] == "Topic big may have at most 4 partitions"
    assert small["error_code"] == 0
    assert "big" not in h.image.topics_by_name and "small" in h.image.topics_by_name
    # What the policy saw: the defaults applied (num.partitions 1, RF 1), configs given.
    assert [(m.topic, m.num_partitions, m.replication_factor) for m in policy.seen] == [
        ("big", 8, 1),
        ("small", 1, 1),
    ]
    # ValidateOnly is refused the same way; a manual assignment is seen as such.
    (checked,) = _create(h, {"name": "big2", "num_partitions": 5}, validate_only=True)
    assert checked["error_code"] == ErrorCode.policy_violation
    manual = [{"partition_index": i, "broker_ids": [1]} for i in range(5)]
    (assigned,) = _create(
        h, {"name": "manual", "num_partitions": -1, "replication_factor": -1, "assignments": manual}
    )
    assert assigned["error_code"] == ErrorCode.policy_violation
    assert policy.seen[-1].num_partitions is None
    assert policy.seen[-1].replicas_assignments == {i: [1] for i in range(5)}


def test_an_alter_config_policy_sees_the_changes_and_who_asks() -> None:
    policy = RetentionAtLeastOneHour()
    h = Harness(alter_config_policy=policy)
    h.live_broker(1)
    assert _create(h, {"name": "t"})[0]["error_code"] == 0

    def alter(value: str) -> dict:
        response = h.call(
            ApiKey.INCREMENTAL_ALTER_CONFIGS,
            1,
            validate_only=False,
            resources=[
                {
                    "resource_type": TOPIC_RESOURCE,
                    "resource_name": "t",
                    "configs": [{"name": "retention.ms", "config_operation": 0, "value": value}],
                }
            ],
        )
        return dict(response["responses"][0])

    refused = alter("1000")
    assert refused["error_code"] == ErrorCode.policy_violation
    assert refused["error_message"] == "retention.ms must be at least 3600000"
    assert "retention.ms" not in h.image.configs.get((TOPIC_RESOURCE, "t"), {})
    assert alter("7200000")["error_code"] == 0
    assert h.image.configs[(TOPIC_RESOURCE, "t")]["retention.ms"] == "7200000"
    seen = policy.seen[-1]
    assert (seen.resource_type, seen.resource_name, seen.configs) == (
        TOPIC_RESOURCE,
        "t",
        {"retention.ms": "7200000"},
    )


def test_a_policy_that_fails_on_its_own_refuses_the_request_not_the_controller() -> None:
    h = Harness(create_topic_policy=Broken())
    h.live_broker(1)
    (topic,) = _create(h, {"name": "t"})
    assert topic["error_code"] == ErrorCode.unknown_server_error
    assert "KeyError in the policy" in topic["error_message"]
    assert "t" not in h.image.topics_by_name
