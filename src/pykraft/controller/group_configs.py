"""Configs of GROUP (32) and CLIENT_METRICS (16) resources on the controller, validated as
Kafka 4.4.0's controller validates them (``ControllerConfigurationValidator`` calling
``GroupConfig.validate`` with the controller's own group-coordinator settings, and
``ClientMetricsConfigs.validate``; names, types, defaults, bounds and texts read from the
4.4.0 jars).

* A resource name must not be empty (no default group or subscription): INVALID_REQUEST.
* GROUP, in Kafka's order: every name known (27); ``streams.rack.aware.assignment.tags``
  without duplicates; each value of its type and at least its ConfigDef minimum; INT values
  within the bounds the controller's ``group.*`` settings give (:class:`GroupSettings`, from
  the node's properties, Kafka's defaults otherwise); ``streams.assignor.name`` one of
  ``group.streams.assignors``; each session timeout greater than its heartbeat interval when
  either is set (the other from the settings); a DLQ topic name not starting with ``__``.
  Any failure is INVALID_CONFIG with Kafka's text.
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
    "DEFAULT_GROUP_SETTINGS",
    "GROUP_CONFIGS",
    "GROUP_RESOURCE",
    "GROUP_SETTING_DEFAULTS",
    "GroupSettings",
    "validate_client_metrics",
    "validate_group",
]

GROUP_RESOURCE: Final = 32
CLIENT_METRICS_RESOURCE: Final = 16
STREAMS_RACK_TAGS: Final = "streams.rack.aware.assignment.tags"


@dataclass(frozen=True, slots=True)
class GroupConfigDef:
    """One group config (Kafka 4.4.0's ``GroupConfig.CONFIG_DEF``): its type, default, the
    ConfigDef minimum, and the bounds ``validateValues`` takes from the controller's own
    ``group.*`` settings (``low_key``/``high_key``: the setting names; empty: unbounded)."""

    type: str
    default: str | None
    at_least: int | None = None
    low_key: str = ""
    high_key: str = ""


def _ranged(kind: str, what: str, default: int, at_least: int) -> GroupConfigDef:
    """``<kind>.<what>`` within ``group.<kind>.min.<what>`` .. ``group.<kind>.max.<what>``."""
    return GroupConfigDef(
        "INT", str(default), at_least, f"group.{kind}.min.{what}", f"group.{kind}.max.{what}"
    )


# Kafka 4.4.0's GroupConfig.CONFIG_DEF, in its order (read from the jar with jshell).
GROUP_CONFIGS: Final[Mapping[str, GroupConfigDef]] = {
    "consumer.session.timeout.ms": _ranged("consumer", "session.timeout.ms", 45_000, 1),
    "consumer.heartbeat.interval.ms": _ranged("consumer", "heartbeat.interval.ms", 5_000, 1),
    "consumer.assignment.interval.ms": _ranged("consumer", "assignment.interval.ms", 1_000, 0),
    "consumer.assignor.offload.enable": GroupConfigDef("BOOLEAN", "true"),
    "share.session.timeout.ms": _ranged("share", "session.timeout.ms", 45_000, 1),
    "share.heartbeat.interval.ms": _ranged("share", "heartbeat.interval.ms", 5_000, 1),
    "share.record.lock.duration.ms": _ranged("share", "record.lock.duration.ms", 30_000, 1_000),
    "share.delivery.count.limit": _ranged("share", "delivery.count.limit", 5, 2),
    "share.partition.max.record.locks": _ranged("share", "partition.max.record.locks", 2_000, 100),
    "share.auto.offset.reset": GroupConfigDef("STRING", "latest"),
    "share.isolation.level": GroupConfigDef("STRING", "read_uncommitted"),
    "share.renew.acknowledge.enable": GroupConfigDef("BOOLEAN", "true"),
    "share.assignment.interval.ms": _ranged("share", "assignment.interval.ms", 1_000, 0),
    "share.assignor.offload.enable": GroupConfigDef("BOOLEAN", "true"),
    "streams.session.timeout.ms": _ranged("streams", "session.timeout.ms", 45_000, 1),
    "streams.heartbeat.interval.ms": _ranged("streams", "heartbeat.interval.ms", 5_000, 1),
    "streams.num.standby.replicas": GroupConfigDef(
        "INT", "0", 0, high_key="group.streams.max.standby.replicas"
    ),
    "streams.initial.rebalance.delay.ms": GroupConfigDef("INT", "3000", 0),
    "streams.assignment.interval.ms": _ranged("streams", "assignment.interval.ms", 1_000, 0),
    "streams.assignor.offload.enable": GroupConfigDef("BOOLEAN", "true"),
    "streams.task.offset.interval.ms": GroupConfigDef(
        "INT", "60000", 1, low_key="group.streams.min.task.offset.interval.ms"
    ),
    "streams.num.warmup.replicas": GroupConfigDef(
        "INT", "2", 0, high_key="group.streams.max.warmup.replicas"
    ),
    "streams.rack.aware.assignment.tags": GroupConfigDef("LIST", ""),
    "streams.acceptable.recovery.lag": GroupConfigDef("LONG", "10000", 0),
    "streams.assignor.name": GroupConfigDef("STRING", None),
    "errors.deadletterqueue.topic.name": GroupConfigDef("STRING", ""),
    "errors.deadletterqueue.copy.record.enable": GroupConfigDef("BOOLEAN", "false"),
}

# The controller's own group-coordinator settings GroupConfig.validate reads (Kafka 4.4.0's
# GroupCoordinatorConfig and ShareGroupConfig defaults); a node's ``group.*`` properties
# override them (``GroupSettings.from_properties``).
GROUP_SETTING_DEFAULTS: Final[Mapping[str, str]] = {
    **{
        f"group.{kind}.{bound}{what}": str(value)
        for kind in ("consumer", "share", "streams")
        for bound, what, value in (
            ("", "session.timeout.ms", 45_000),
            ("min.", "session.timeout.ms", 45_000),
            ("max.", "session.timeout.ms", 60_000),
            ("", "heartbeat.interval.ms", 5_000),
            ("min.", "heartbeat.interval.ms", 5_000),
            ("max.", "heartbeat.interval.ms", 15_000),
            ("min.", "assignment.interval.ms", 0),
            ("max.", "assignment.interval.ms", 15_000),
        )
    },
    "group.share.min.record.lock.duration.ms": "15000",
    "group.share.max.record.lock.duration.ms": "60000",
    "group.share.min.delivery.count.limit": "2",
    "group.share.max.delivery.count.limit": "10",
    "group.share.min.partition.max.record.locks": "100",
    "group.share.max.partition.max.record.locks": "4000",
    "group.streams.max.standby.replicas": "2",
    "group.streams.min.task.offset.interval.ms": "15000",
    "group.streams.max.warmup.replicas": "20",
    "group.streams.assignors": "sticky",
}


@dataclass(frozen=True, slots=True)
class GroupSettings:
    """The controller's ``group.*`` settings (ints, and the streams assignors)."""

    ints: Mapping[str, int]
    assignors: tuple[str, ...]

    @staticmethod
    def from_properties(props: Mapping[str, str]) -> GroupSettings:
        """From a node's properties (defaults for what they do not set); ValueError names a
        setting that is not a number."""
        ints: dict[str, int] = {}
        for key, default in GROUP_SETTING_DEFAULTS.items():
            if key == "group.streams.assignors":
                continue
            value = props.get(key, default)
            try:
                ints[key] = int(value.strip())
            except ValueError:
                raise ValueError(f"{key}: {value!r} is not a number") from None
        names = props.get(
            "group.streams.assignors", GROUP_SETTING_DEFAULTS["group.streams.assignors"]
        )
        return GroupSettings(ints, tuple(n.strip() for n in names.split(",") if n.strip()))


DEFAULT_GROUP_SETTINGS: Final = GroupSettings.from_properties({})
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


def _number(key: str, value: str, kind: str) -> int:
    try:
        return int(value.strip())
    except ValueError:
        raise _invalid(
            ErrorCode.invalid_config,
            f"Invalid value {value} for configuration {key}: Not a number of type {kind}",
        ) from None


def _parse(key: str, value: str, spec: GroupConfigDef) -> int | None:
    """ConfigDef.parse of one value: its type and its minimum (INVALID_CONFIG with Kafka's
    ConfigException text); the number for INT and LONG."""
    if spec.type == "BOOLEAN":
        if value.strip().lower() not in ("true", "false"):
            raise _invalid(
                ErrorCode.invalid_config,
                f"Invalid value {value} for configuration {key}: Expected value to be either "
                "true or false",
            )
    elif spec.type in ("INT", "LONG"):
        number = _number(key, value, spec.type)
        if spec.at_least is not None and number < spec.at_least:
            raise _invalid(
                ErrorCode.invalid_config,
                f"Invalid value {value} for configuration {key}: Value must be at least "
                f"{spec.at_least}",
            )
        return number
    elif key == "share.isolation.level" and value not in _ISOLATION:
        raise _invalid(
            ErrorCode.invalid_config,
            f"Invalid value {value} for configuration {key}: String must be one of: "
            + ", ".join(_ISOLATION),
        )
    elif key == "share.auto.offset.reset":
        _auto_offset_reset(value)
    return None


def validate_group(
    name: str, configs: Mapping[str, str], settings: GroupSettings = DEFAULT_GROUP_SETTINGS
) -> None:
    """ApiError when ``configs`` (the group's whole resulting map) is not valid, as Kafka
    4.4.0's ``GroupConfig.validate`` with the controller's ``group.*`` settings."""
    if not name:
        raise _invalid(ErrorCode.invalid_request, "Default group resources are not allowed.")
    for key in configs:
        if key not in GROUP_CONFIGS:
            raise _invalid(ErrorCode.invalid_config, f"Unknown group config name: {key}")
    tags = [t for t in re.split(r"\s*,\s*", configs.get(STREAMS_RACK_TAGS, "").strip()) if t]
    if len(tags) != len(set(tags)):
        raise _invalid(
            ErrorCode.invalid_config, f"{STREAMS_RACK_TAGS} must not contain duplicate tag keys."
        )
    numbers = {}
    for key, value in configs.items():
        number = _parse(key, value, GROUP_CONFIGS[key])
        if number is not None:
            numbers[key] = number
    _check_bounds(numbers, settings)
    _check_values(configs, numbers, settings)


def _check_bounds(numbers: Mapping[str, int], settings: GroupSettings) -> None:
    for key, number in numbers.items():
        spec = GROUP_CONFIGS[key]
        low = settings.ints.get(spec.low_key) if spec.low_key else None
        high = settings.ints.get(spec.high_key) if spec.high_key else None
        if low is not None and high is not None and not low <= number <= high:
            message = f"{key} must be in the range {low} to {high} inclusive."
        elif low is None and high is not None and number > high:
            message = f"{key} must be less than or equal to {high}"
        elif high is None and low is not None and number < low:
            message = f"{key} must be greater than or equal to {low}"
        else:
            continue
        raise _invalid(ErrorCode.invalid_config, message)


def _check_values(
    configs: Mapping[str, str], numbers: Mapping[str, int], settings: GroupSettings
) -> None:
    assignor = configs.get("streams.assignor.name")
    if assignor is not None and assignor not in settings.assignors:
        raise _invalid(
            ErrorCode.invalid_config,
            f"streams.assignor.name '{assignor}' is not a registered task assignor. "
            f"Registered assignors are: [{', '.join(settings.assignors)}].",
        )
    for kind in _SESSION_OVER_HEARTBEAT:
        session_key, heartbeat_key = f"{kind}.session.timeout.ms", f"{kind}.heartbeat.interval.ms"
        if session_key not in numbers and heartbeat_key not in numbers:
            continue
        session = numbers.get(session_key, settings.ints[f"group.{session_key}"])
        heartbeat = numbers.get(heartbeat_key, settings.ints[f"group.{heartbeat_key}"])
        if session <= heartbeat:
            raise _invalid(
                ErrorCode.invalid_config, f"{session_key} must be greater than {heartbeat_key}"
            )
    dlq = configs.get("errors.deadletterqueue.topic.name", "")
    if dlq and dlq.startswith("__"):
        raise _invalid(
            ErrorCode.invalid_config,
            "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'",
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
        f"`{value}` for configuration share.auto.offset.reset. The value must be either "
        "'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.",
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
