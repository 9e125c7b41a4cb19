"""Dynamic configs on the controller: IncrementalAlterConfigs and AlterConfigs for topics,
brokers, groups and client-metrics subscriptions (Kafka's ``ConfigurationControlManager``;
the last two validated in ``group_configs.py``), stored as ``ConfigRecord``s; DescribeConfigs
is ``describe_configs.py``.

Topic configs are checked against Kafka 4.3.1's ``LogConfig`` definition (names, types,
ranges, read from the jar): an unknown name or a value of the wrong type or out of range is
INVALID_CONFIG with Kafka's wording. Broker configs (resource name = a broker id, or "" for
the cluster default) are stored as given: their meaning is the brokers' (Kafka's controller
leaves most of that check to the broker that forwards the request). A ``ConfigRecord`` with a
null value deletes the key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Final, Protocol, TypeVar

from kio.schema.errors import ErrorCode

from pykraft.controller.broker_configs import sensitive_broker_config
from pykraft.controller.config import ControllerConfig
from pykraft.controller.errors import ApiError
from pykraft.controller.group_configs import (
    CLIENT_METRICS_RESOURCE,
    GROUP_RESOURCE,
    validate_client_metrics,
    validate_group,
)
from pykraft.controller.log_config import validate_log_config
from pykraft.controller.partitions import MIN_INSYNC, elr_enabled
from pykraft.controller.result import RecordList
from pykraft.controller.steps import LIMIT_CONFIGS
from pykraft.controller.throttles import THROTTLE_POLICY
from pykraft.metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE, Image
from pykraft.metadata.records import ClearElrRecord, ConfigRecord
from pykraft.metadata.versions import IBP_4_3_IV0
from pykraft.protocol import views

CORDONED_LOG_DIRS: Final = "cordoned.log.dirs"  # KIP-1066

__all__ = [
    "TOPIC_CONFIGS",
    "Resource",
    "alter_configs",
    "check_resource",
    "incremental_alter_configs",
    "sensitive_config",
    "validate_topic_config",
]

BROKER_LOGGER_RESOURCE: Final = 8
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
INT_MAX: Final = 2**31 - 1
LONG_MAX: Final = 2**63 - 1


@dataclass(frozen=True, slots=True)
class ConfigDef:
    """One topic config: its type, default (as Kafka prints it) and valid values."""

    type: str
    default: str | None
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] | None = None


def _d(
    type_: str,
    default: str | None,
    low: float | None = None,
    high: float | None = None,
    choices: tuple[str, ...] | None = None,
) -> ConfigDef:
    return ConfigDef(type_, default, low, high, choices)


# Kafka 4.4.0 LogConfig.configDefCopy(), in its order (DescribeConfigs answers in it): name,
# type, validator, default; its internal ``internal.segment.bytes`` (for Kafka's own tests)
# left out. New in 4.4.0, refused as unknown until 2026-12-02 (issue 46):
# max.decompressed.message.bytes, remote.copy.lag.ms/.bytes, errors.deadletterqueue.group.enable.
TOPIC_CONFIGS: Final[dict[str, ConfigDef]] = {
    "segment.bytes": _d("INT", "1073741824", 1048576),
    "segment.ms": _d("LONG", "604800000", 1),
    "segment.jitter.ms": _d("LONG", "0", 0),
    "segment.index.bytes": _d("INT", "10485760", 4),
    "flush.messages": _d("LONG", str(LONG_MAX), 1),
    "flush.ms": _d("LONG", str(LONG_MAX), 0),
    "retention.bytes": _d("LONG", "-1"),
    "retention.ms": _d("LONG", "604800000", -1),
    "max.message.bytes": _d("INT", "1048588", 0),
    "max.decompressed.message.bytes": _d("INT", "2147483639", 1, 2147483639),
    "index.interval.bytes": _d("INT", "4096", 0),
    "delete.retention.ms": _d("LONG", "86400000", 0),
    "min.compaction.lag.ms": _d("LONG", "0", 0),
    "max.compaction.lag.ms": _d("LONG", str(LONG_MAX), 1),
    "file.delete.delay.ms": _d("LONG", "60000", 0),
    "min.cleanable.dirty.ratio": _d("DOUBLE", "0.5", 0, 1),
    "cleanup.policy": _d("LIST", "delete", choices=("compact", "delete")),
    "unclean.leader.election.enable": _d("BOOLEAN", "false"),
    "min.insync.replicas": _d("INT", "1", 1),
    "compression.type": _d(
        "STRING", "producer", choices=("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
    ),
    "compression.gzip.level": _d("INT", "-1", 1, 9),
    "compression.lz4.level": _d("INT", "9", 1, 17),
    "compression.zstd.level": _d("INT", "3", -131072, 22),
    "preallocate": _d("BOOLEAN", "false"),
    "message.timestamp.type": _d("STRING", "CreateTime", choices=("CreateTime", "LogAppendTime")),
    "message.timestamp.before.max.ms": _d("LONG", str(LONG_MAX), 0),
    "message.timestamp.after.max.ms": _d("LONG", "3600000", 0),
    "leader.replication.throttled.replicas": _d("LIST", ""),
    "follower.replication.throttled.replicas": _d("LIST", ""),
    "remote.storage.enable": _d("BOOLEAN", "false"),
    "local.retention.ms": _d("LONG", "-2", -2),
    "local.retention.bytes": _d("LONG", "-2", -2),
    "remote.log.copy.disable": _d("BOOLEAN", "false"),
    "remote.copy.lag.ms": _d("LONG", "0", -1),
    "remote.copy.lag.bytes": _d("LONG", "-1", -1),
    "remote.log.delete.on.disable": _d("BOOLEAN", "false"),
    "errors.deadletterqueue.group.enable": _d("BOOLEAN", "false"),
}


TOPIC_DEFAULTS: Final[Mapping[str, str | None]] = {k: d.default for k, d in TOPIC_CONFIGS.items()}
DEFAULTS: Final = ControllerConfig()


def _invalid(name: str, value: str, why: str) -> ApiError:
    return ApiError(
        ErrorCode.invalid_config, f"Invalid value {value} for configuration {name}: {why}"
    )


def validate_topic_config(name: str, value: str | None) -> None:
    """Raise INVALID_CONFIG unless ``name`` is a topic config and ``value`` fits it."""
    spec = TOPIC_CONFIGS.get(name)
    if spec is None:
        raise ApiError(ErrorCode.invalid_config, f"Unknown topic config name: {name}")
    if value is None:
        raise ApiError(
            ErrorCode.invalid_config, f"Null value not supported for topic config: {name}"
        )
    text = value.strip()
    if spec.type in ("INT", "LONG"):
        try:
            number: float = int(text)
        except ValueError:
            raise _invalid(name, value, f"Not a number of type {spec.type}") from None
        limit = INT_MAX if spec.type == "INT" else LONG_MAX
        if not -limit - 1 <= number <= limit:
            raise _invalid(name, value, f"Not a number of type {spec.type}")
    elif spec.type == "DOUBLE":
        try:
            number = float(text)
        except ValueError:
            raise _invalid(name, value, "Not a number of type DOUBLE") from None
    elif spec.type == "BOOLEAN":
        if text.lower() not in ("true", "false"):
            raise _invalid(name, value, "Expected value to be either true or false")
        return
    elif spec.type == "LIST":
        items = [i.strip() for i in text.split(",") if i.strip()]
        if spec.choices is not None:
            for item in items:
                if item not in spec.choices:
                    raise _invalid(name, value, f"String must be one of: {', '.join(spec.choices)}")
        return
    else:
        if spec.choices is not None and text not in spec.choices:
            raise _invalid(name, value, f"String must be one of: {', '.join(spec.choices)}")
        return
    if name == "compression.gzip.level" and number == -1:
        return
    if spec.low is not None and number < spec.low:
        bound = int(spec.low) if spec.type != "DOUBLE" else spec.low
        raise _invalid(name, value, f"Value must be at least {bound}")
    if spec.high is not None and number > spec.high:
        bound = int(spec.high) if spec.type != "DOUBLE" else spec.high
        raise _invalid(name, value, f"Value must be no more than {bound}")


# pykraft's cluster-wide reassignment configs (KIP-435's limits, the managed throttle):
# positive integers, set on the cluster default broker resource only.
REASSIGNMENT_CONFIGS: Final = {
    **dict.fromkeys(LIMIT_CONFIGS, INT_MAX),
    THROTTLE_POLICY: LONG_MAX,
}


class Resource(Protocol):
    """A config resource of a request (DescribeConfigs, AlterConfigs, IncrementalAlterConfigs;
    CreateTopics describes a topic's as one)."""

    @property
    def resource_type(self) -> int: ...
    @property
    def resource_name(self) -> str: ...


_R = TypeVar("_R", bound=Resource)


def rname_of(resource: Resource) -> str:
    return str(resource.resource_name)


def validate_reassignment_config(broker: str, name: str, value: str) -> None:
    """INVALID_CONFIG unless a reassignment config is a positive integer in range, set
    cluster-wide."""
    high = REASSIGNMENT_CONFIGS.get(name)
    if high is None:
        return
    if broker:
        raise ApiError(
            ErrorCode.invalid_config,
            f"{name} is a cluster-wide config: set it on the default broker resource "
            f"(an empty resource name), not on broker {broker}.",
        )
    try:
        number = int(value.strip())
    except ValueError:
        raise _invalid(name, value, "Expected an integer") from None
    if not 1 <= number <= high:
        raise _invalid(name, value, f"Value must be between 1 and {high}")


def check_resource(image: Image, resource_type: int, name: str) -> None:
    if resource_type == TOPIC_RESOURCE:
        if not name:
            raise ApiError(ErrorCode.invalid_request, "Default topic resources are not allowed.")
        if name not in image.topics_by_name:
            raise ApiError(
                ErrorCode.unknown_topic_or_partition, f"The topic '{name}' does not exist."
            )
        return
    if resource_type == BROKER_RESOURCE:
        if name and not name.lstrip("-").isdigit():
            raise ApiError(
                ErrorCode.invalid_request,
                f"Illegal broker ID {name!r}: the resource name must be a broker id or empty",
            )
        return
    if resource_type == GROUP_RESOURCE:
        if not name:
            raise ApiError(ErrorCode.invalid_request, "Default group resources are not allowed.")
        return
    if resource_type == CLIENT_METRICS_RESOURCE:
        if not name:
            raise ApiError(ErrorCode.invalid_request, "Subscription name can't be empty")
        return
    raise ApiError(
        ErrorCode.invalid_request,
        f"The controller does not handle configs of resource type {resource_type}",
    )


def sensitive_config(resource_type: int, name: str) -> bool:
    """Whether a stored config's value is a secret, never shown (the one rule for
    DescribeConfigs and the pipeline's tables): a broker config that is PASSWORD or of no
    known type (``broker_configs``, Kafka's ``maybeSensitive``); a topic config of no known
    type (Kafka's LogConfig has no PASSWORD: only a name it does not know is masked); nothing
    of a group or a client-metrics subscription."""
    if resource_type == BROKER_RESOURCE:
        return sensitive_broker_config(name)
    if resource_type == TOPIC_RESOURCE:
        return name not in TOPIC_CONFIGS
    return False


def _list_op(current: str | None, items: str, append: bool) -> str:
    have = [i.strip() for i in (current or "").split(",") if i.strip()]
    given = [i.strip() for i in items.split(",") if i.strip()]
    if append:
        return ",".join(have + [i for i in given if i not in have])
    return ",".join(i for i in have if i not in given)


# (resource, its type, its current configs) -> key -> new value (None deletes).
Changes = Callable[[_R, int, dict[str, str]], dict[str, str | None]]
# (resource type, name, the configs the request alters: None deletes) -> raises ApiError
# (alter.config.policy.class.name, controller/policies.py).
PolicyCheck = Callable[[int, str, dict[str, str | None]], None]


def _alter(
    image: Image,
    resources: Iterable[_R],
    validate_only: bool,
    changes_of: Changes[_R],
    forwarded: bool = True,
    policy: PolicyCheck | None = None,
    settings: ControllerConfig = DEFAULTS,
) -> tuple[RecordList, list[views.alter_configs_response.AlterConfigsResourceResponse]]:
    """(records, per-resource results): each resource checked, ``changes_of(resource,
    type, current configs)`` gives key -> new value (None deletes) or raises ApiError.
    ``forwarded``: the request came through a broker (an Envelope), not straight to the
    controller."""
    records: RecordList = []
    results: list[views.alter_configs_response.AlterConfigsResourceResponse] = []
    for resource in resources:
        rtype, rname = int(resource.resource_type), resource.resource_name
        try:
            check_resource(image, rtype, rname)
            current = dict(image.configs.get((rtype, rname), {}))
            changes = changes_of(resource, rtype, current)
            _validate_whole(rtype, rname, current, changes, settings)
            if rtype == BROKER_RESOURCE and CORDONED_LOG_DIRS in changes:
                _check_cordoned(image, current, changes[CORDONED_LOG_DIRS], forwarded)
            elr = elr_enabled(image)
            if elr:
                _check_min_isr_with_elr(rtype, rname, changes)
            if policy is not None:
                policy(rtype, rname, changes)
            if not validate_only:
                records.extend(_records(rtype, rname, current, changes, clear_elr=elr))
            results.append(_result(rtype, rname))
        except ApiError as e:
            results.append(_result(rtype, rname, e))
    return records, results


def _validate_whole(
    rtype: int,
    rname: str,
    current: dict[str, str],
    changes: dict[str, str | None],
    settings: ControllerConfig,
) -> None:
    """TOPIC (the cross-field rules), GROUP and CLIENT_METRICS: Kafka checks the resource's
    whole resulting config map."""
    if rtype not in (TOPIC_RESOURCE, GROUP_RESOURCE, CLIENT_METRICS_RESOURCE):
        return
    result = {**current, **changes}
    whole = {k: v for k, v in result.items() if v is not None}
    if rtype == TOPIC_RESOURCE:
        enabled = settings.remote_log_storage_system_enable
        validate_log_config(current, whole, TOPIC_DEFAULTS, enabled)
    elif rtype == GROUP_RESOURCE:
        validate_group(rname, whole, settings.group_settings)
    else:
        validate_client_metrics(rname, whole)


_LIST_CONFIGS: Final = {CLIENT_METRICS_RESOURCE: frozenset({"metrics", "match"})}


def _incremental_changes(
    resource: views.incremental_alter_configs.AlterConfigsResource,
    rtype: int,
    current: dict[str, str],
) -> dict[str, str | None]:
    changes: dict[str, str | None] = {}
    for c in resource.configs:
        op, key, value = int(c.config_operation), c.name, c.value
        if op == SET:
            new: str | None = value
        elif op == DELETE:
            new = None
        elif op in (APPEND, SUBTRACT):
            if (
                rtype == TOPIC_RESOURCE and TOPIC_CONFIGS.get(key, _d("LIST", "")).type != "LIST"
            ) or (
                rtype in (GROUP_RESOURCE, CLIENT_METRICS_RESOURCE)
                and key not in _LIST_CONFIGS.get(rtype, ())
            ):
                raise ApiError(
                    ErrorCode.invalid_config,
                    f"Can't {'APPEND' if op == APPEND else 'SUBTRACT'} to key {key} "
                    "because its type is not LIST.",
                )
            new = _list_op(changes.get(key, current.get(key)), value or "", op == APPEND)
        else:
            raise ApiError(ErrorCode.invalid_request, f"Unknown operation type {op}")
        if rtype == BROKER_RESOURCE and new is not None:
            validate_reassignment_config(rname_of(resource), key, new)
        if rtype == TOPIC_RESOURCE and new is not None:
            validate_topic_config(key, new)
        elif rtype == TOPIC_RESOURCE and key not in TOPIC_CONFIGS:
            raise ApiError(ErrorCode.invalid_config, f"Unknown topic config name: {key}")
        if op == SET and new is None:
            raise ApiError(ErrorCode.invalid_request, f"Null value not supported for : {key}")
        changes[key] = new
    return changes


def _replacing_changes(
    resource: views.alter_configs.AlterConfigsResource, rtype: int, current: dict[str, str]
) -> dict[str, str | None]:
    wanted: dict[str, str | None] = {}
    for c in resource.configs:
        if rtype == TOPIC_RESOURCE:
            validate_topic_config(c.name, c.value)
        elif c.value is not None:
            validate_reassignment_config(rname_of(resource), c.name, c.value)
        if rtype != TOPIC_RESOURCE and c.value is None:
            raise ApiError(ErrorCode.invalid_request, f"Null value not supported for : {c.name}")
        wanted[c.name] = c.value
    for key in current:
        wanted.setdefault(key, None)
    return wanted


def incremental_alter_configs(
    image: Image,
    resources: Iterable[views.incremental_alter_configs.AlterConfigsResource],
    validate_only: bool,
    forwarded: bool = True,
    policy: PolicyCheck | None = None,
    settings: ControllerConfig = DEFAULTS,
) -> tuple[RecordList, list[views.alter_configs_response.AlterConfigsResourceResponse]]:
    """IncrementalAlterConfigs: SET, DELETE, APPEND, SUBTRACT per key."""
    return _alter(
        image, resources, validate_only, _incremental_changes, forwarded, policy, settings
    )


def alter_configs(
    image: Image,
    resources: Iterable[views.alter_configs.AlterConfigsResource],
    validate_only: bool,
    forwarded: bool = True,
    policy: PolicyCheck | None = None,
    settings: ControllerConfig = DEFAULTS,
) -> tuple[RecordList, list[views.alter_configs_response.AlterConfigsResourceResponse]]:
    """The legacy AlterConfigs: each resource's configs replaced by those given."""
    return _alter(image, resources, validate_only, _replacing_changes, forwarded, policy, settings)


def _check_cordoned(
    image: Image, current: dict[str, str], value: str | None, forwarded: bool
) -> None:
    """``cordoned.log.dirs`` (KIP-1066): from 4.3-IV0; sent straight to a controller (which
    cannot check the broker's paths) only a subset of the current directories (Kafka 4.4.0's
    ``isCordonedLogDirsDisabled`` / ``isCordonedLogDirsInvalid``)."""
    if (image.metadata_version or 0) < IBP_4_3_IV0:
        raise ApiError(
            ErrorCode.invalid_config,
            "The cordoned.log.dirs configuration value cannot be set because it requires "
            "metadata.version >= 4.3-IV0",
        )
    if forwarded or value is None or not value.strip():
        return
    have = {d.strip() for d in current.get(CORDONED_LOG_DIRS, "").split(",") if d.strip()}
    if not {d.strip() for d in value.split(",")} <= have:
        raise ApiError(
            ErrorCode.invalid_config,
            "When updating cordoned.log.dirs via controllers,  the new value must be a "
            "subset of the current configuration value.",
        )


def _check_min_isr_with_elr(rtype: int, rname: str, changes: dict[str, str | None]) -> None:
    """With eligible leader replicas on, min.insync.replicas is the cluster's or a topic's:
    a broker's own may not be set or deleted, the cluster's not deleted (Kafka's
    ``isDisallowedBrokerMinIsrTransition`` / ``isDisallowedClusterMinIsrTransition``)."""
    if rtype != BROKER_RESOURCE or MIN_INSYNC not in changes:
        return
    if rname:
        raise ApiError(
            ErrorCode.invalid_config,
            "Broker-level min.insync.replicas cannot be altered while ELR is enabled.",
        )
    if changes[MIN_INSYNC] is None:
        raise ApiError(
            ErrorCode.invalid_config,
            "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.",
        )


def _records(
    rtype: int,
    rname: str,
    current: dict[str, str],
    changes: dict[str, str | None],
    *,
    clear_elr: bool = False,
) -> RecordList:
    """The ConfigRecords of ``changes``; with eligible leader replicas on, a change of
    min.insync.replicas is followed by a ClearElrRecord (Kafka's
    ``createClearElrRecordsAsNeeded``): the topic's ELRs, or every topic's for the cluster's
    value, which is written (and clears) even when it is the same (KAFKA-14136)."""
    out: RecordList = []
    for key, value in changes.items():
        cluster_min_isr = clear_elr and rtype == BROKER_RESOURCE and key == MIN_INSYNC
        if current.get(key) == value and not cluster_min_isr:
            continue
        out.append(
            (ConfigRecord(resource_type=rtype, resource_name=rname, name=key, value=value), 0)
        )
        if clear_elr and key == MIN_INSYNC and rtype in (TOPIC_RESOURCE, BROKER_RESOURCE):
            topic = rname if rtype == TOPIC_RESOURCE else ""
            out.append((ClearElrRecord(topic_name=topic), 0))
    return out


def _result(
    rtype: int, rname: str, error: ApiError | None = None
) -> views.alter_configs_response.AlterConfigsResourceResponse:
    return {
        "error_code": error.code if error else 0,
        "error_message": error.message if error else None,
        "resource_type": rtype,
        "resource_name": rname,
    }
