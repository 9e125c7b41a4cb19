"""Configs of GROUP and CLIENT_METRICS resources on the controller (issue 28 part 4), with
Kafka 4.3.1's validation: names, types, the controller's group-coordinator bounds, session
over heartbeat, client-metrics intervals and match patterns; the errors and texts Kafka
gives; DescribeConfigs from the image."""

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

    refused = [
        (
            ("consumer.session.timeout.ms", "10000", SET),
            "consumer.session.timeout.ms must be greater than or equal to "
            "group.consumer.min.session.timeout.ms",
        ),
        (
            ("share.delivery.count.limit", "50", SET),
            "share.delivery.count.limit must be less than or equal to "
            "group.share.max.delivery.count.limit",
        ),
        (("consumer.fancy.ms", "1", SET), "Unknown group config name: consumer.fancy.ms"),
        (
            ("consumer.heartbeat.interval.ms", "ten", SET),
            "Invalid value ten for configuration consumer.heartbeat.interval.ms: "
            "Not a number of type INT",
        ),
        (("share.isolation.level", "dirty", SET), "Unknown Share isolation level: dirty"),
        (("share.auto.offset.reset", "sometime", SET), "share.auto.offset.reset"),
        (("consumer.assignor.offload.enable", "yes", SET), "either true or false"),
        (("consumer.session.timeout.ms", "1000", APPEND), "because its type is not LIST"),
    ]
    before = len(h.written)
    for config, text in refused:
        code, message = alter(h, GROUP_RESOURCE, "orders-app", config)
        assert code == ErrorCode.invalid_config, (config, message)
        assert message is not None and text in message, (config, message)
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
