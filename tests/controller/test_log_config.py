"""Kafka 4.4.0's cross-field topic config rules (``LogConfig.validate``) on CreateTopics and on
IncrementalAlterConfigs. Each expected text was printed by ``LogConfig.validate`` on Kafka
4.4.0's jars (jshell), with the broker's default log configs and
``remote.log.storage.system.enable`` as given."""

from __future__ import annotations

import pytest

from pykraft.controller.configs import TOPIC_DEFAULTS
from pykraft.controller.errors import ApiError
from pykraft.controller.log_config import DELETE_ONLY, TIERED_OFF, TURN_OFF, validate_log_config
from pykraft.protocol import ApiKey, ErrorCode

from .harness import Harness

# (the topic's configs, tiered storage on in the cluster, Kafka 4.4.0's text or None: valid)
CASES: list[tuple[dict[str, str], bool, str | None]] = [
    ({"remote.storage.enable": "true"}, False, TIERED_OFF),
    ({"remote.storage.enable": "true"}, True, None),
    (
        {"min.compaction.lag.ms": "100", "max.compaction.lag.ms": "50"},
        True,
        "conflict topic config setting min.compaction.lag.ms (100) > max.compaction.lag.ms (50)",
    ),
    ({"local.retention.ms": "1000", "retention.ms": "500"}, False, None),
    ({"cleanup.policy": "compact", "remote.storage.enable": "true"}, False, TIERED_OFF),
    ({"cleanup.policy": "compact", "remote.storage.enable": "true"}, True, DELETE_ONLY),
    ({"remote.storage.enable": "true", "cleanup.policy": ""}, True, None),
    (
        {"remote.storage.enable": "true", "local.retention.ms": "1000", "retention.ms": "500"},
        True,
        "Invalid value 1000 for configuration local.retention.ms: Value must not be more than "
        "retention.ms property value: 500",
    ),
    (
        {
            "remote.storage.enable": "true",
            "local.retention.bytes": "1000",
            "retention.bytes": "500",
        },
        True,
        "Invalid value 1000 for configuration local.retention.bytes: Value must not be more "
        "than retention.bytes property value: 500",
    ),
    (
        {"remote.storage.enable": "true", "local.retention.ms": "100", "retention.ms": "-1"},
        True,
        None,
    ),
    (
        {"remote.storage.enable": "true", "local.retention.ms": "-1", "retention.ms": "500"},
        True,
        "Invalid value -1 for configuration local.retention.ms: Value must not be -1 as "
        "retention.ms value is set as 500.",
    ),
    (
        {"remote.storage.enable": "true", "local.retention.bytes": "-1", "retention.bytes": "500"},
        True,
        "Invalid value -1 for configuration local.retention.bytes: Value must not be -1 as "
        "retention.bytes value is set as 500.",
    ),
    (
        {
            "remote.storage.enable": "true",
            "remote.log.copy.disable": "true",
            "local.retention.ms": "100",
            "retention.ms": "200",
        },
        True,
        "When `remote.log.copy.disable` is set to true, the `local.retention.ms` and "
        "`retention.ms` must be set to the identical value because there will be no more logs "
        "copied to the remote storage.",
    ),
    (
        {
            "remote.storage.enable": "true",
            "remote.log.copy.disable": "true",
            "local.retention.bytes": "100",
            "retention.bytes": "200",
        },
        True,
        "When `remote.log.copy.disable` is set to true, the `local.retention.bytes` and "
        "`retention.bytes` must be set to the identical value because there will be no more "
        "logs copied to the remote storage.",
    ),
    (
        {"remote.storage.enable": "true", "remote.copy.lag.ms": "1000", "retention.ms": "500"},
        True,
        "Invalid value 1000 for configuration remote.copy.lag.ms: Value must not exceed "
        "local.retention.ms (effective value: 500)",
    ),
    (
        {
            "remote.storage.enable": "true",
            "remote.copy.lag.bytes": "1000",
            "retention.bytes": "500",
        },
        True,
        "Invalid value 1000 for configuration remote.copy.lag.bytes: Value must not exceed "
        "local.retention.bytes (effective value: 500)",
    ),
    (
        {"remote.storage.enable": "true", "remote.copy.lag.ms": "-1", "retention.ms": "500"},
        True,
        None,
    ),
]


@pytest.mark.parametrize(("configs", "tiered", "text"), CASES)
def test_kafka_4_4s_rules(configs: dict[str, str], tiered: bool, text: str | None) -> None:
    if text is None:
        validate_log_config({}, configs, TOPIC_DEFAULTS, tiered)
        return
    with pytest.raises(ApiError) as info:
        validate_log_config({}, configs, TOPIC_DEFAULTS, tiered)
    assert (info.value.code, info.value.message) == (ErrorCode.invalid_config, text)


@pytest.mark.parametrize(
    ("changes", "text"),
    [
        ({"remote.storage.enable": "false"}, TURN_OFF),
        ({"remote.storage.enable": "false", "remote.log.copy.disable": "true"}, TURN_OFF),
        ({"remote.storage.enable": "false", "remote.log.delete.on.disable": "true"}, None),
    ],
)
def test_turning_remote_storage_off_needs_deleting_its_data(
    changes: dict[str, str], text: str | None
) -> None:
    existing = {"remote.storage.enable": "true"}
    if text is None:
        validate_log_config(existing, changes, TOPIC_DEFAULTS, True)
        return
    with pytest.raises(ApiError, match="disable remote storage without deleting"):
        validate_log_config(existing, changes, TOPIC_DEFAULTS, True)


def _create(h: Harness, name: str, configs: dict[str, str]) -> tuple[int, str | None]:
    response = h.call(
        ApiKey.CREATE_TOPICS,
        7,
        topics=[
            {
                "name": name,
                "num_partitions": 1,
                "replication_factor": 1,
                "assignments": [],
                "configs": [{"name": k, "value": v} for k, v in configs.items()],
            }
        ],
        timeout=1000,
        validate_only=False,
    )
    topic = response["topics"][0]
    return int(topic["error_code"]), topic["error_message"]


def _alter(
    h: Harness, name: str, configs: dict[str, str], resource_type: int = 2
) -> tuple[int, str | None]:
    """IncrementalAlterConfigs SET of ``configs`` on a topic (or ``resource_type``)."""
    response = h.call(
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        1,
        validate_only=False,
        resources=[
            {
                "resource_type": resource_type,
                "resource_name": name,
                "configs": [
                    {"name": k, "value": v, "config_operation": 0} for k, v in configs.items()
                ],
            }
        ],
    )
    result = response["responses"][0]
    return int(result["error_code"]), result["error_message"]


def test_create_topics_and_alter_configs_apply_the_rules_with_the_clusters_setting() -> None:
    h = Harness()
    h.live_broker(1)
    assert _create(h, "tiered", {"remote.storage.enable": "true"}) == (
        ErrorCode.invalid_config,
        TIERED_OFF,
    )
    assert _create(h, "plain", {"max.compaction.lag.ms": "500"})[0] == ErrorCode.none
    assert _alter(h, "plain", {"min.compaction.lag.ms": "1000"}) == (
        ErrorCode.invalid_config,
        "conflict topic config setting min.compaction.lag.ms (1000) > max.compaction.lag.ms (500)",
    )
    on = Harness(remote_log_storage_system_enable=True)
    on.live_broker(1)
    assert _create(on, "tiered", {"remote.storage.enable": "true"})[0] == ErrorCode.none
    assert _alter(on, "tiered", {"local.retention.ms": "700000000"}) == (
        ErrorCode.invalid_config,
        "Invalid value 700000000 for configuration local.retention.ms: Value must not be more "
        "than retention.ms property value: 604800000",
    )
    assert _alter(on, "tiered", {"remote.storage.enable": "false"}) == (
        ErrorCode.invalid_config,
        TURN_OFF,
    )


def _described(h: Harness, topic: str) -> dict[str, tuple[str | None, int]]:
    response = h.call(
        ApiKey.DESCRIBE_CONFIGS,
        4,
        resources=[{"resource_type": 2, "resource_name": topic, "configuration_keys": None}],
        include_synonyms=False,
        include_documentation=False,
    )
    return {c["name"]: (c["value"], c["config_source"]) for c in response["results"][0]["configs"]}


def test_describe_shows_the_broker_configs_a_topic_falls_back_to() -> None:
    """As Kafka's controller: an unset topic config shows this controller's broker config it
    falls back to (the properties file: STATIC_BROKER_CONFIG 4, hours made milliseconds), the
    cluster default set with kafka-configs over it (DYNAMIC_DEFAULT_BROKER_CONFIG 3), the
    topic's own over both (TOPIC_CONFIG 1); with none, Kafka's default (DEFAULT_CONFIG 5)."""
    h = Harness(node_id=1, static_broker_configs={"log.retention.hours": "24"})
    h.live_broker(1)
    assert _create(h, "t", {})[0] == ErrorCode.none
    seen = _described(h, "t")
    assert seen["retention.ms"] == ("86400000", 4)
    assert seen["segment.bytes"] == ("1073741824", 5)
    cluster_default = {"log.retention.ms": "5000", "log.segment.bytes": "2097152"}
    assert _alter(h, "", cluster_default, resource_type=4) == (0, None)
    seen = _described(h, "t")
    assert seen["retention.ms"] == ("5000", 3)
    assert seen["segment.bytes"] == ("2097152", 3)
    assert _alter(h, "t", {"retention.ms": "7000"}) == (0, None)
    assert _described(h, "t")["retention.ms"] == ("7000", 1)
