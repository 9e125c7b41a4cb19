"""Kafka 4.4.0's cross-field rules for a topic's configs (``LogConfig.validate``, which
``ControllerConfigurationValidator`` calls with the topic's existing configs, its resulting
configs, the broker's log defaults and ``remote.log.storage.system.enable``): what no single
value's check can see. Each value's own type and bounds are checked first
(``configs.validate_topic_config``); the rules here read the resulting map with the defaults
filled in. Every text below is Kafka 4.4.0's, printed by ``LogConfig.validate`` on its jars.

In Kafka's order:
1. ``min.compaction.lag.ms`` not above ``max.compaction.lag.ms``;
2. with ``remote.storage.enable=true``: tiered storage on in the cluster, ``cleanup.policy``
   ``delete`` (or empty), the local retention (bytes, then ms; -2 means "as the total") not -1
   and not above a total retention that is not -1, ``remote.copy.lag.*`` not above the
   effective local retention, and with ``remote.log.copy.disable=true`` the local and total
   retentions identical;
3. remote storage turned off on a topic that had it only with
   ``remote.log.delete.on.disable=true``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from kio.schema.errors import ErrorCode

from pykraft.controller.errors import ApiError

__all__ = ["validate_log_config"]

TIERED_OFF = (
    "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with "
    "remote log storage."
)
DELETE_ONLY = (
    "Remote log storage only supports topics with cleanup.policy=delete or cleanup.policy "
    "being an empty list."
)
TURN_OFF = (
    "It is invalid to disable remote storage without deleting remote data. If you want to keep "
    "the remote data and turn to read only, please set "
    "`remote.storage.enable=true,remote.log.copy.disable=true`. If you want to disable remote "
    "storage and delete all remote data, please set "
    "`remote.storage.enable=false,remote.log.delete.on.disable=true`."
)


def _invalid(message: str) -> ApiError:
    return ApiError(ErrorCode.invalid_config, message)


def _value_error(name: str, value: int, why: str) -> ApiError:
    return _invalid(f"Invalid value {value} for configuration {name}: {why}")


def _true(value: str | None) -> bool:
    return (value or "").strip().lower() == "true"


def validate_log_config(
    existing: Mapping[str, str],
    configs: Mapping[str, str],
    defaults: Mapping[str, str | None],
    remote_storage_system_enabled: bool,
) -> None:
    """ApiError (INVALID_CONFIG with Kafka's text) when the topic's resulting ``configs``
    break a rule; ``defaults`` fill in what they do not set (each value already checked)."""
    merged = {k: v for k, v in defaults.items() if v is not None} | dict(configs)

    def number(name: str) -> int:
        return int(merged[name].strip())

    low, high = number("min.compaction.lag.ms"), number("max.compaction.lag.ms")
    if low > high:
        raise _invalid(
            f"conflict topic config setting min.compaction.lag.ms ({low}) > "
            f"max.compaction.lag.ms ({high})"
        )
    if _true(merged.get("remote.storage.enable")):
        _remote_storage(merged, number, remote_storage_system_enabled)
    elif _true(existing.get("remote.storage.enable")) and not _true(
        merged.get("remote.log.delete.on.disable")
    ):
        raise _invalid(TURN_OFF)


def _remote_storage(
    merged: Mapping[str, str], number: Callable[[str], int], system_enabled: bool
) -> None:
    if not system_enabled:
        raise _invalid(TIERED_OFF)
    policies = {p.strip() for p in merged.get("cleanup.policy", "").split(",") if p.strip()}
    if policies - {"delete"}:
        raise _invalid(DELETE_ONLY)
    for kind in ("bytes", "ms"):
        total, local = number(f"retention.{kind}"), number(f"local.retention.{kind}")
        if total != -1 and local != -2:
            name = f"local.retention.{kind}"
            if local == -1:
                why = f"Value must not be -1 as retention.{kind} value is set as {total}."
                raise _value_error(name, local, why)
            if local > total:
                why = f"Value must not be more than retention.{kind} property value: {total}"
                raise _value_error(name, local, why)
    for kind in ("bytes", "ms"):
        effective = _effective_local(number, kind)
        lag = number(f"remote.copy.lag.{kind}")
        if lag > 0 and effective >= 0 and lag > effective:
            why = f"Value must not exceed local.retention.{kind} (effective value: {effective})"
            raise _value_error(f"remote.copy.lag.{kind}", lag, why)
    if _true(merged.get("remote.log.copy.disable")):
        for kind in ("bytes", "ms"):
            if _effective_local(number, kind) != number(f"retention.{kind}"):
                raise _invalid(
                    f"When `remote.log.copy.disable` is set to true, the "
                    f"`local.retention.{kind}` and `retention.{kind}` must be set to the "
                    "identical value because there will be no more logs copied to the remote "
                    "storage."
                )


def _effective_local(number: Callable[[str], int], kind: str) -> int:
    """``local.retention.<kind>``, its -2 meaning "as ``retention.<kind>``"."""
    local = number(f"local.retention.{kind}")
    return number(f"retention.{kind}") if local == -2 else local
