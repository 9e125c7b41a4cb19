"""DescribeConfigs on the controller (Kafka's ``ConfigurationControlManager.describe`` and
``ConfigHelper``): a topic's or group's every config, set ones with their source and the rest
at Kafka's defaults (a topic's from the broker configs it falls back to on this controller,
``topic_defaults.py``), and a broker's or client-metrics subscription's stored configs, with
secrets masked (``configs.sensitive_config``). The resources are checked as
IncrementalAlterConfigs checks them (``configs.check_resource``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Final, Protocol

from pykraft.controller.config import ControllerConfig
from pykraft.controller.configs import (
    DEFAULTS,
    TOPIC_CONFIGS,
    Resource,
    check_resource,
    sensitive_config,
)
from pykraft.controller.errors import ApiError
from pykraft.controller.group_configs import CLIENT_METRICS_RESOURCE, GROUP_CONFIGS, GROUP_RESOURCE
from pykraft.controller.topic_defaults import broker_default
from pykraft.metadata.image import TOPIC_RESOURCE, Image
from pykraft.protocol import views

__all__ = ["Described", "describe_configs"]

# DescribeConfigs' ConfigSource and ConfigType (Kafka's enums).
SOURCE_TOPIC: Final = 1
SOURCE_DYNAMIC_BROKER: Final = 2
SOURCE_DYNAMIC_DEFAULT_BROKER: Final = 3
SOURCE_DEFAULT: Final = 5
SOURCE_CLIENT_METRICS: Final = 7
SOURCE_GROUP: Final = 8
_TYPE_IDS: Final = {"BOOLEAN": 1, "STRING": 2, "INT": 3, "LONG": 5, "DOUBLE": 6, "LIST": 7}


class Described(Resource, Protocol):
    """A resource of DescribeConfigs: the keys asked for (None: all)."""

    @property
    def configuration_keys(self) -> tuple[str, ...] | None: ...


class _Spec(Protocol):
    @property
    def type(self) -> str: ...
    @property
    def default(self) -> str | None: ...


def _with_defaults(
    specs: Mapping[str, _Spec], stored: Mapping[str, str], wanted: set[str] | None, source: int
) -> list[views.describe_configs_response.DescribeConfigsResourceResult]:
    """Every config of a defined set: the stored ones with ``source``, the rest at their
    defaults (DEFAULT_CONFIG), as Kafka describes topics and groups."""
    entries: list[views.describe_configs_response.DescribeConfigsResourceResult] = []
    for key, spec in specs.items():
        if wanted is not None and key not in wanted:
            continue
        explicit = key in stored
        entries.append(
            {
                "name": key,
                "value": stored[key] if explicit else spec.default,
                "read_only": False,
                "config_source": source if explicit else SOURCE_DEFAULT,
                "is_sensitive": False,
                "config_type": _TYPE_IDS.get(spec.type, 0),
            }
        )
    return entries


def describe_configs(
    image: Image, resources: Iterable[Described], settings: ControllerConfig = DEFAULTS
) -> list[views.describe_configs_response.DescribeConfigsResult]:
    """DescribeConfigs results: a topic's or group's every config (set ones as TOPIC_CONFIG /
    GROUP_CONFIG; a topic's others from the broker configs they fall back to, on this
    controller, ``topic_defaults.py``; the rest at Kafka's defaults), a broker's or
    client-metrics subscription's stored configs."""
    results: list[views.describe_configs_response.DescribeConfigsResult] = []
    for resource in resources:
        rtype, rname = int(resource.resource_type), resource.resource_name
        wanted = None if resource.configuration_keys is None else set(resource.configuration_keys)
        try:
            check_resource(image, rtype, rname)
        except ApiError as e:
            results.append(_described(rtype, rname, (), e))
            continue
        stored = image.configs.get((rtype, rname), {})
        entries: list[views.describe_configs_response.DescribeConfigsResourceResult] = []
        if rtype == TOPIC_RESOURCE:
            entries = _with_defaults(TOPIC_CONFIGS, stored, wanted, SOURCE_TOPIC)
            for entry in entries:
                if entry["config_source"] == SOURCE_DEFAULT:
                    found = broker_default(
                        entry["name"], image, settings.static_broker_configs, settings.node_id
                    )
                    if found is not None:
                        entry["value"], entry["config_source"] = found
        elif rtype == GROUP_RESOURCE:
            entries = _with_defaults(GROUP_CONFIGS, stored, wanted, SOURCE_GROUP)
        else:
            source = SOURCE_DYNAMIC_BROKER if rname else SOURCE_DYNAMIC_DEFAULT_BROKER
            if rtype == CLIENT_METRICS_RESOURCE:
                source = SOURCE_CLIENT_METRICS
            for key, value in sorted(stored.items()):
                if wanted is not None and key not in wanted:
                    continue
                secret = sensitive_config(rtype, key)
                entries.append(
                    {
                        "name": key,
                        "value": None if secret else value,
                        "read_only": False,
                        "config_source": source,
                        "is_sensitive": secret,
                    }
                )
        results.append(_described(rtype, rname, entries))
    return results


def _described(
    rtype: int,
    rname: str,
    entries: Sequence[views.describe_configs_response.DescribeConfigsResourceResult],
    error: ApiError | None = None,
) -> views.describe_configs_response.DescribeConfigsResult:
    return {
        "error_code": error.code if error else 0,
        "error_message": error.message if error else None,
        "resource_type": rtype,
        "resource_name": rname,
        "configs": entries,
    }
