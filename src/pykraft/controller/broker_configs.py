"""Which broker configs are secrets: Apache Kafka 4.4.0's rule (``AbstractKafkaConfig``
``configType`` and ``maybeSensitive``), over Kafka's own table of broker config types
(``broker_config_types.py``) and pykraft's own broker configs.

Theory of operation. A broker config is sensitive when its type is PASSWORD, or when no type
is known for its name: Kafka masks what it cannot classify rather than risk showing a secret.
The type of a name is its own; else, for a listener override (``listener.name.<listener>.``
prefix), the type of what follows, with a SASL mechanism's prefix (``plain.``,
``scram-sha-512.``, ...) taken off as well when the rest alone is unknown (Kafka's
``brokerConfigSynonyms``). DescribeConfigs answers a sensitive config with a null value and
``is_sensitive`` set (Kafka's ``ConfigHelper``); its stored value never leaves the controller.
"""

from __future__ import annotations

from typing import Final

from pykraft.controller.broker_config_types import BROKER_CONFIG_TYPES
from pykraft.controller.steps import LIMIT_CONFIGS
from pykraft.controller.throttles import THROTTLE_POLICY

__all__ = ["broker_config_type", "sensitive_broker_config"]

LISTENER_PREFIX: Final = "listener.name."
# pykraft's own broker-level configs (KIP-435's limits, the managed throttle), beside Kafka's.
TYPES: Final[dict[str, str]] = {
    **BROKER_CONFIG_TYPES,
    **dict.fromkeys(LIMIT_CONFIGS, "INT"),
    THROTTLE_POLICY: "LONG",
}


def broker_config_type(name: str) -> str | None:
    """The ConfigDef type of broker config ``name`` (``PASSWORD``, ``INT``, ...), or None."""
    known = TYPES.get(name)
    if known is not None or not name.startswith(LISTENER_PREFIX):
        return known
    _listener, dot, rest = name[len(LISTENER_PREFIX) :].partition(".")
    if not dot:
        return None
    known = TYPES.get(rest)
    if known is not None:
        return known
    _mechanism, dot, base = rest.partition(".")
    return TYPES.get(base) if dot else None


def sensitive_broker_config(name: str) -> bool:
    """Kafka's ``maybeSensitive``: PASSWORD, or of no known type."""
    kind = broker_config_type(name)
    return kind is None or kind == "PASSWORD"
