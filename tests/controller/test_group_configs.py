"""Configs of GROUP and CLIENT_METRICS resources on the controller (issue 28 part 4, issue 46
item 4), with Kafka 4.4.0's validation: names, types, the controller's own group-coordinator
bounds (``group.*`` settings), session over heartbeat, the streams assignor, the share-group
DLQ topic, client-metrics intervals and match patterns; the errors and texts Kafka 4.4.0's
``GroupConfig.validate`` gives (each text below was printed by it, run with jshell on the
4.4.0 jars); DescribeConfigs from the image."""

from __future__ import annotations

from typing import Any

import pytest

from pykraft.controller.group_configs import CLIENT_METRICS_RESOURCE, GROUP_RESOURCE
from pykraft.metadata import records as r
from pykraft.protocol import ApiKey, ErrorCode

from .harness import Harness


def alter(
    h: Harness, rtype: int, name: str, *configs: tuple[str, str | None, int]
) -> tuple[int, str | None]:
    response = h.call(
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        1,
        validate_only=False,
        resources=[
            {
                "resource_type": rtype,
                "resource_name": name,
                "configs": [
                    {"name": k, "value": v, "config_operation": op} for k, v, op in configs
                ],
            }
        ],
    )
    result = response["responses"][0]
    return int(result["error_code"]), result["error_message"]


def describe(h: Harness, rtype: int, name: str, keys: list[str] | None = None) -> Any:
    response = h.call(
        ApiKey.DESCRIBE_CONFIGS,
        4,
        resources=[{"resource_type": rtype, "resource_name": name, "configuration_keys": keys}],
        include_synonyms=False,
        include_documentation=False,
    )
    return response["results"][0]


SET, DELETE, APPEND = 0, 1, 2

# (the change, the message Kafka 4.4.0's GroupConfig.validate gives for it with the default
# group.* settings), printed by GroupConfig.validate on the 4.4.0 jars (jshell).
KAFKA_44_REFUSALS: list[tuple[tuple[str, str, int], str]] = [
    (
        ("consumer.session.timeout.ms", "10000", SET),
        "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive.",
    ),
    (
        ("consumer.session.timeout.ms", "0", SET),
        "Invalid value 0 for configuration consumer.session.timeout.ms: Value must be at least 1",
    ),
    (
        ("share.delivery.count.limit", "50", SET),
        "share.delivery.count.limit must be in the range 2 to 10 inclusive.",
    ),
    (
        ("share.isolation.level", "dirty", SET),
        "Invalid value dirty for configuration share.isolation.level: String must be one of: "
        "read_committed, read_uncommitted",
    ),
    (
        ("share.auto.offset.reset", "sometime", SET),
        "Invalid value sometime for configuration share.auto.offset.reset: Invalid value "
        "`sometime` for configuration share.auto.offset.reset. The value must be either "
        "'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.",
    ),
    (
        ("consumer.assignor.offload.enable", "yes", SET),
        "Invalid value yes for configuration consumer.assignor.offload.enable: Expected value "
        "to be either true or false",
    ),
    (
        ("consumer.heartbeat.interval.ms", "ten", SET),
        "Invalid value ten for configuration consumer.heartbeat.interval.ms: Not a number of "
        "type INT",
    ),
    (
        ("streams.num.standby.replicas", "5", SET),
        "streams.num.standby.replicas must be less than or equal to 2",
    ),
    (
        ("streams.task.offset.interval.ms", "100", SET),
        "streams.task.offset.interval.ms must be greater than or equal to 15000",
    ),
    (
        ("streams.num.warmup.replicas", "30", SET),
        "streams.num.warmup.replicas must be less than or equal to 20",
    ),
    (
        ("streams.assignor.name", "greedy", SET),
        "streams.assignor.name 'greedy' is not a registered task assignor. Registered "
        "assignors are: [sticky].",
    ),
    (
        ("errors.deadletterqueue.topic.name", "__dlq", SET),
        "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'",
    ),
    (
        ("streams.rack.aware.assignment.tags", "a, b,a", SET),
        "streams.rack.aware.assignment.tags must not contain duplicate tag keys.",
    ),
    (
        ("streams.acceptable.recovery.lag", "x", SET),
        "Invalid value x for configuration streams.acceptable.recovery.lag: Not a number of "
        "type LONG",
    ),
    (
        ("streams.acceptable.recovery.lag", "-1", SET),
        "Invalid value -1 for configuration streams.acceptable.recovery.lag: Value must be at "
        "least 0",
    ),
    (
        ("streams.initial.rebalance.delay.ms", "-1", SET),
        "Invalid value -1 for configuration streams.initial.rebalance.delay.ms: Value must be "
        "at least 0",
    ),
    (("consumer.fancy.ms", "1", SET), "Unknown group config name: consumer.fancy.ms"),
]


def test_group_configs_are_validated_written_and_described() -> None:
    h = Harness()
    ok = alter(
        h,
        GROUP_RESOURCE,
        "orders-app",
        ("consumer.session.timeout.ms", "50000", SET),
        ("share.isolation.level", "read_committed", SET),
        ("share.auto.offset.reset", "by_duration:PT1H", SET),
    )
    assert ok == (0, None)
    written = [rec for rec, *_ in h.written if isinstance(rec, r.ConfigRecord)]
    assert {(rec.resource_type, rec.resource_name, rec.name, rec.value) for rec in written} >= {
        (GROUP_RESOURCE, "orders-app", "consumer.session.timeout.ms", "50000")
    }
    result = describe(h, GROUP_RESOURCE, "orders-app", ["consumer.session.timeout.ms"])
    entry = result["configs"][0]
    assert (entry["value"], entry["config_source"]) == ("50000", 8)  # GROUP_CONFIG
    defaults = {c["name"]: c for c in describe(h, GROUP_RESOURCE, "other")["configs"]}
    assert defaults["consumer.heartbeat.interval.ms"]["value"] == "5000"
    assert defaults["consumer.heartbeat.interval.ms"]["config_source"] == 5  # DEFAULT

    refused = [(config, text) for config, text in KAFKA_44_REFUSALS]
    refused.append(
        (("consumer.session.timeout.ms", "1000", APPEND), "because its type is not LIST")
    )
    before = len(h.written)
    for config, text in refused:
        code, message = alter(h, GROUP_RESOURCE, "orders-app", config)
        assert code == ErrorCode.invalid_config, (config, message)
        assert message == text or text in (message or ""), (config, message)
    assert len(h.written) == before  # nothing written for a refused change
    # Session over heartbeat, on the whole resulting map (the heartbeat at its maximum,
    # the session at its minimum: still fine; equal: refused).
    assert alter(h, GROUP_RESOURCE, "g2", ("streams.heartbeat.interval.ms", "15000", SET)) == (
        0,
        None,
    )
    code, message = alter(
        h,
        GROUP_RESOURCE,
        "g3",
        ("share.heartbeat.interval.ms", "15000", SET),
        ("share.session.timeout.ms", "45000", SET),
    )
    assert code == 0
    # A default group resource is refused as a request error.
    code, message = alter(h, GROUP_RESOURCE, "", ("consumer.session.timeout.ms", "50000", SET))
    assert code == ErrorCode.invalid_request


@pytest.mark.parametrize(
    ("configs", "code", "text"),
    [
        ((("interval.ms", "50", SET),), ErrorCode.invalid_request, "between 100 and 3600000"),
        ((("color", "red", SET),), ErrorCode.invalid_request, "Unknown client metrics"),
        (
            (("match", "client_id=^app-,nobody=x", SET),),
            ErrorCode.invalid_config,
            "Illegal client matching pattern: nobody=x",
        ),
        (
            (("match", "client_id=([", SET),),
            ErrorCode.invalid_config,
            "Illegal client matching pattern: client_id=([",
        ),
        ((("match", "client_id", SET),), ErrorCode.invalid_config, "Illegal client matching"),
    ],
)
def test_client_metrics_subscriptions_refused(
    configs: tuple[tuple[str, str, int], ...], code: int, text: str
) -> None:
    h = Harness()
    got, message = alter(h, CLIENT_METRICS_RESOURCE, "sub-1", *configs)
    assert got == code and message is not None and text in message, message


def test_client_metrics_subscription_written_appended_and_described() -> None:
    h = Harness()
    assert alter(
        h,
        CLIENT_METRICS_RESOURCE,
        "sub-1",
        ("metrics", "org.apache.kafka.producer.", SET),
        ("interval.ms", "60000", SET),
        ("match", "client_software_name=kafka-python", SET),
    ) == (0, None)
    assert alter(
        h, CLIENT_METRICS_RESOURCE, "sub-1", ("metrics", "org.apache.kafka.consumer.", APPEND)
    ) == (0, None)
    configs = {c["name"]: c for c in describe(h, CLIENT_METRICS_RESOURCE, "sub-1")["configs"]}
    assert configs["metrics"]["value"] == "org.apache.kafka.producer.,org.apache.kafka.consumer."
    assert configs["interval.ms"]["config_source"] == 7  # CLIENT_METRICS_CONFIG
    assert alter(h, CLIENT_METRICS_RESOURCE, "sub-1", ("interval.ms", None, DELETE)) == (0, None)
    configs = {c["name"] for c in describe(h, CLIENT_METRICS_RESOURCE, "sub-1")["configs"]}
    assert configs == {"metrics", "match"}


def test_kafka_4_4s_new_group_configs_are_accepted_and_described() -> None:
    """The seven names Kafka 4.4.0 added: the share-group DLQ that share.version=2 enables and
    the streams settings, each accepted where Kafka 4.4.0 accepts it."""
    h = Harness()
    accepted = {
        "errors.deadletterqueue.topic.name": "orders-dlq",
        "errors.deadletterqueue.copy.record.enable": "true",
        "streams.acceptable.recovery.lag": "5000",
        "streams.assignor.name": "sticky",
        "streams.num.warmup.replicas": "4",
        "streams.rack.aware.assignment.tags": "zone,rack",
        "streams.task.offset.interval.ms": "30000",
    }
    changes = [(k, v, SET) for k, v in accepted.items()]
    assert alter(h, GROUP_RESOURCE, "streams-app", *changes) == (0, None)
    described = {c["name"]: c for c in describe(h, GROUP_RESOURCE, "streams-app")["configs"]}
    for key, value in accepted.items():
        assert (described[key]["value"], described[key]["config_source"]) == (value, 8), key
    assert described["streams.assignor.name"]["config_source"] == 8
    assert len(described) == 27  # GroupConfig.configNames() in Kafka 4.4.0


def test_group_bounds_are_the_controllers_own_group_settings() -> None:
    """The bounds come from the controller's ``group.*`` settings, as Kafka's controller passes
    its GroupCoordinatorConfig to GroupConfig.validate: a wider range admits what the default
    refuses, and a named assignor becomes valid."""
    from pykraft.controller.group_configs import GroupSettings

    settings = GroupSettings.from_properties(
        {
            "group.consumer.min.session.timeout.ms": "6000",
            "group.streams.assignors": "sticky, greedy",
        }
    )
    h = Harness(group_settings=settings)
    assert alter(h, GROUP_RESOURCE, "g", ("consumer.session.timeout.ms", "10000", SET)) == (0, None)
    assert alter(h, GROUP_RESOURCE, "g", ("streams.assignor.name", "greedy", SET)) == (0, None)
    code, message = alter(h, GROUP_RESOURCE, "g", ("consumer.session.timeout.ms", "5000", SET))
    assert (code, message) == (
        ErrorCode.invalid_config,
        "consumer.session.timeout.ms must be in the range 6000 to 60000 inclusive.",
    )
    with pytest.raises(ValueError, match=r"group\.share\.max\.delivery\.count\.limit"):
        GroupSettings.from_properties({"group.share.max.delivery.count.limit": "ten"})
