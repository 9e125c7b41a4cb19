"""Configs of GROUP (32) and CLIENT_METRICS (16) resources on the controller (issue 28 part
4), validated as Kafka 4.3.1's controller validates them (``ControllerConfigurationValidator``
calling ``GroupConfig.validate`` and ``ClientMetricsConfigs.validate``; names, defaults and
bounds read from the 4.3.1 jars, ``docs/kafka/KAFKA-4.4-CONTRACT.md`` section 5).

* A resource name must not be empty (no default group or subscription): INVALID_REQUEST.
* GROUP: the group-config names; INT values within the bounds the controller's own group
  coordinator settings give (their defaults here: ``group.consumer.min.session.timeout.ms``
  and the like), BOOLEANs, ``share.auto.offset.reset`` and ``share.isolation.level`` from
  their sets; each session timeout greater than its heartbeat interval, with the defaults
  filled in. Any failure is INVALID_CONFIG with Kafka's text.
* CLIENT_METRICS: ``metrics`` (a list), ``interval.ms`` (100 .. 3,600,000, else
  INVALID_REQUEST), ``match`` (``key=regex`` entries over Kafka's six client keys, else
  INVALID_CONFIG); an unknown name is INVALID_REQUEST.

The check runs on the resource's whole resulting config map, as Kafka's does. Neither kind
needs its group or subscription to exist.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from kio.schema.errors import ErrorCode

from pykraft.controller.errors import ApiError

__all__ = [
    "CLIENT_METRICS_RESOURCE",
    "GROUP_CONFIGS",
    "GROUP_RESOURCE",
    "validate_client_metrics",
    "validate_group",
]

GROUP_RESOURCE: Final = 32
CLIENT_METRICS_RESOURCE: Final = 16


@dataclass(frozen=True, slots=True)
class GroupConfigDef:
    """One group config: type, default, and the bound keys (the broker configs bounding it)."""

    type: str
    default: str
    low: int | None = None
    high: int | None = None
    low_key: str = ""
    high_key: str = ""


def _bounded(kind: str, what: str, default: int, low: int, high: int) -> GroupConfigDef:
    """A ``<kind>.<what>`` bounded by ``group.<kind>.min/max.<what>``."""
    return GroupConfigDef(
        "INT",
        str(default),
        low,
        high,
        f"group.{kind}.min.{what}",
        f"group.{kind}.max.{what}",
    )


# GroupConfig's CONFIG_DEF in Kafka 4.3.1 (defaults = GroupCoordinatorConfig/ShareGroupConfig
# defaults, bounds = their min/max settings).
GROUP_CONFIGS: Final[Mapping[str, GroupConfigDef]] = {
    "consumer.session.timeout.ms": _bounded(
        "consumer", "session.timeout.ms", 45_000, 45_000, 60_000
    ),
    "consumer.heartbeat.interval.ms": _bounded(
        "consumer", "heartbeat.interval.ms", 5_000, 5_000, 15_000
    ),
    "consumer.assignment.interval.ms": _bounded(
        "consumer", "assignment.interval.ms", 1_000, 0, 15_000
    ),
    "consumer.assignor.offload.enable": GroupConfigDef("BOOLEAN", "true"),
    "share.session.timeout.ms": _bounded("share", "session.timeout.ms", 45_000, 45_000, 60_000),
    "share.heartbeat.interval.ms": _bounded("share", "heartbeat.interval.ms", 5_000, 5_000, 15_000),
    "share.record.lock.duration.ms": _bounded(
        "share", "record.lock.duration.ms", 30_000, 15_000, 60_000
    ),
    "share.delivery.count.limit": _bounded("share", "delivery.count.limit", 5, 2, 10),
    "share.partition.max.record.locks": _bounded(
        "share", "partition.max.record.locks", 2_000, 100, 4_000
    ),
    "share.auto.offset.reset": GroupConfigDef("STRING", "latest"),
    "share.isolation.level": GroupConfigDef("STRING", "read_uncommitted"),
    "share.renew.acknowledge.enable": GroupConfigDef("BOOLEAN", "true"),
    "share.assignment.interval.ms": _bounded("share", "assignment.interval.ms", 1_000, 0, 15_000),
    "share.assignor.offload.enable": GroupConfigDef("BOOLEAN", "true"),
    "streams.session.timeout.ms": _bounded("streams", "session.timeout.ms", 45_000, 45_000, 60_000),
    "streams.heartbeat.interval.ms": _bounded(
        "streams", "heartbeat.interval.ms", 5_000, 5_000, 15_000
    ),
    "streams.num.standby.replicas": GroupConfigDef(
        "INT", "0", 0, 2, "", "group.streams.max.standby.replicas"
    ),
    "streams.initial.rebalance.delay.ms": GroupConfigDef("INT", "3000", 0),
    "streams.assignment.interval.ms": _bounded(
        "streams", "assignment.interval.ms", 1_000, 0, 15_000
    ),
    "streams.assignor.offload.enable": GroupConfigDef("BOOLEAN", "true"),
}
_SESSION_OVER_HEARTBEAT: Final = ("consumer", "share", "streams")
_ISOLATION: Final = ("read_committed", "read_uncommitted")
_ISO_DURATION: Final = re.compile(
    r"P(?:\d+D)?(?:T(?:\d+H)?(?:\d+M)?(?:\d+(?:\.\d+)?S)?)?", re.IGNORECASE
)

CLIENT_METRICS_CONFIGS: Final = ("metrics", "interval.ms", "match")
_MATCH_KEYS: Final = (
    "client_instance_id",
    "client_id",
    "client_software_name",
    "client_software_version",
    "client_source_address",
    "client_source_port",
)
INTERVAL_MIN_MS: Final = 100
INTERVAL_MAX_MS: Final = 3_600_000


def _invalid(code: ErrorCode, message: str) -> ApiError:
    return ApiError(code, message)


def _parse_int(name: str, value: str) -> int:
    try:
        return int(value.strip())
    except ValueError:
        raise _invalid(
            ErrorCode.invalid_config,
            f"Invalid value {value} for configuration {name}: Not a number of type INT",
        ) from None


def validate_group(name: str, configs: Mapping[str, str]) -> None:
    """ApiError when ``configs`` (the group's whole resulting map) is not valid."""
    if not name:
        raise _invalid(ErrorCode.invalid_request, "Default group resources are not allowed.")
    values: dict[str, int] = {}
    for key, value in configs.items():
        spec = GROUP_CONFIGS.get(key)
        if spec is None:
            raise _invalid(ErrorCode.invalid_config, f"Unknown group config name: {key}")
        if spec.type == "BOOLEAN":
            if value.strip().lower() not in ("true", "false"):
                raise _invalid(
                    ErrorCode.invalid_config,
                    f"Invalid value {value} for configuration {key}: Expected value to be "
                    "either true or false",
                )
        elif spec.type == "INT":
            values[key] = _parse_int(key, value)
        elif key == "share.isolation.level" and value not in _ISOLATION:
            raise _invalid(ErrorCode.invalid_config, f"Unknown Share isolation level: {value}")
        elif key == "share.auto.offset.reset":
            _auto_offset_reset(value)
    for key, number in values.items():
        spec = GROUP_CONFIGS[key]
        if spec.low is not None and number < spec.low:
            bound = f" {spec.low_key}" if spec.low_key else f" {spec.low}"
            raise _invalid(
                ErrorCode.invalid_config, f"{key} must be greater than or equal to{bound}"
            )
        if spec.high is not None and number > spec.high:
            raise _invalid(
                ErrorCode.invalid_config,
                f"{key} must be less than or equal to {spec.high_key or spec.high}",
            )
    for kind in _SESSION_OVER_HEARTBEAT:
        session_key, heartbeat_key = f"{kind}.session.timeout.ms", f"{kind}.heartbeat.interval.ms"
        session = values.get(session_key, int(GROUP_CONFIGS[session_key].default))
        heartbeat = values.get(heartbeat_key, int(GROUP_CONFIGS[heartbeat_key].default))
        if session <= heartbeat:
            raise _invalid(
                ErrorCode.invalid_config, f"{session_key} must be greater than {heartbeat_key}"
            )


def _auto_offset_reset(value: str) -> None:
    text = value.strip().lower()
    if text in ("earliest", "latest"):
        return
    if text.startswith("by_duration:"):
        duration = value.strip()[len("by_duration:") :]
        if duration and not duration.startswith("-") and _ISO_DURATION.fullmatch(duration):
            return
    raise _invalid(
        ErrorCode.invalid_config,
        f"Invalid value {value} for configuration share.auto.offset.reset: Invalid value "
        "for share.auto.offset.reset: earliest, latest or by_duration:<ISO8601 duration>",
    )


def validate_client_metrics(name: str, configs: Mapping[str, str]) -> None:
    """ApiError when ``configs`` (the subscription's whole resulting map) is not valid."""
    if not name:
        raise _invalid(ErrorCode.invalid_request, "Subscription name can't be empty")
    for key in configs:
        if key not in CLIENT_METRICS_CONFIGS:
            raise _invalid(
                ErrorCode.invalid_request, f"Unknown client metrics configuration: {key}"
            )
    if "interval.ms" in configs:
        value = configs["interval.ms"]
        try:
            interval = int(value.strip())
        except ValueError:
            interval = -1
        if not INTERVAL_MIN_MS <= interval <= INTERVAL_MAX_MS:
            raise _invalid(
                ErrorCode.invalid_request,
                f"Invalid value {value} for interval.ms, interval must be between 100 and "
                "3600000 (1 hour)",
            )
    for entry in (e.strip() for e in configs.get("match", "").split(",")):
        if not entry:
            continue
        key, sep, pattern = entry.partition("=")
        if not sep or key.strip() not in _MATCH_KEYS or not _regex_ok(pattern):
            raise _invalid(ErrorCode.invalid_config, f"Illegal client matching pattern: {entry}")


def _regex_ok(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return bool(pattern)
