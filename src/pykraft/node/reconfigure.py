"""Reconfiguration without a restart (issue 47 item 5): the controller listener's key store
and trust store, changed as Kafka's are, through this node's dynamic broker configs
(``kafka-configs --bootstrap-controller ... --entity-type brokers --entity-name <node id>
--alter --add-config listener.name.<listener>.ssl.keystore.location=...``).

Theory of operation. Such an IncrementalAlterConfigs is a ConfigRecord of resource BROKER
``<node id>`` in the metadata log, replayed by every controller. After each sync the host
asks :meth:`ListenerTls.check` to compare this node's committed listener-prefixed SSL configs
of Kafka's reconfigurable set (``SslConfigs.RECONFIGURABLE_CONFIGS``) with those its TLS
context was built from; when they differ, the listener's security is rebuilt from the
node's properties with the dynamic ones over them (a dynamic ``listener.name.<l>.ssl.x``
wins over the file's, as Kafka's DynamicBrokerConfig) and the new context replaces the
server's: new connections handshake with the new certificate, open ones keep theirs. A
configuration that does not load (a missing file, a wrong password, a key that does not fit)
leaves the listener as it was, with one log line naming the config and the problem, never a
value, and a count (``pykraft_tls_reload_failures_total``). As in Kafka, a value written
again unchanged writes no record: a file rotated in place is picked up by a change of its
location or password.

Only the listening side is rebuilt: the stores this node presents when it dials its peers
are read at start.
"""

from __future__ import annotations

import dataclasses
import logging
import socket
import ssl
from collections.abc import Callable, Mapping
from typing import Final, Generic, Protocol, TypeVar

from prometheus_client.core import CounterMetricFamily, Metric

from pykraft.metadata.image import BROKER_RESOURCE, Image
from pykraft.net.connection_quotas import UNLIMITED, ConnectionGate, ConnectionLimits
from pykraft.net.errors import SecurityConfigError
from pykraft.net.security import listener_security
from pykraft.net.server import KafkaServer

__all__ = [
    "RECONFIGURABLE_SSL",
    "CommittedWatch",
    "ListenerLimits",
    "ListenerTls",
    "Watch",
    "limits_of",
    "replace_tls",
]

log = logging.getLogger("pykraft.node")
T = TypeVar("T")

# Kafka's SslConfigs.RECONFIGURABLE_CONFIGS.
RECONFIGURABLE_SSL: Final = frozenset(
    {
        "ssl.keystore.type",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.key.password",
        "ssl.keystore.key",
        "ssl.keystore.certificate.chain",
        "ssl.truststore.type",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.truststore.certificates",
    }
)


def replace_tls(server: KafkaServer, context: ssl.SSLContext) -> None:
    """New connections to ``server`` handshake with ``context``; open ones keep theirs."""
    server.security = dataclasses.replace(server.security, server_ssl=context)


class Watch(Protocol):
    """What the host calls after each sync, and reads at each scrape."""

    def check(self, image: Image) -> None: ...

    def metrics(self) -> list[Metric]: ...


class CommittedWatch(Generic[T]):
    """What a reconfiguration reads of the image (``read``), applied (``apply``) when its
    committed value differs from the one last applied. Invariant: ``applied`` is that last
    value."""

    applied: T

    def read(self, image: Image) -> T:
        raise NotImplementedError

    def apply(self, value: T, image: Image) -> None:
        """Called with ``image`` as of the committed offset."""
        raise NotImplementedError

    def metrics(self) -> list[Metric]:
        return []

    def check(self, image: Image) -> None:
        """After a sync: cheap when nothing changed; the committed value otherwise."""
        if self.read(image) == self.applied:
            return
        with image.timeline.at_committed():
            committed = self.read(image)
            if committed != self.applied:
                self.applied = committed
                self.apply(committed, image)


class ListenerTls(CommittedWatch[dict[str, str]]):
    """The listener's TLS context, built from the dynamic SSL configs in ``applied`` unless
    that attempt failed (then the one before stays)."""

    def __init__(
        self,
        properties: Mapping[str, str],
        listener_name: str,
        node_id: int,
        install: Callable[[ssl.SSLContext], None],
    ) -> None:
        self.properties = properties
        self.listener_name = listener_name
        self.resource = (BROKER_RESOURCE, str(node_id))
        self.prefix = f"listener.name.{listener_name.lower()}."
        self.install = install
        self.applied: dict[str, str] = {}
        self.reloads = 0
        self.failures = 0

    def read(self, image: Image) -> dict[str, str]:
        """This node's listener-prefixed reconfigurable SSL configs in ``image`` now."""
        configs = image.configs.get(self.resource) or {}
        n = len(self.prefix)
        return {
            k: v
            for k, v in configs.items()
            if k.startswith(self.prefix) and k[n:] in RECONFIGURABLE_SSL
        }

    def apply(self, dynamic: dict[str, str], image: Image) -> None:
        names = ", ".join(sorted(dynamic)) or "the file's own"
        try:
            security = listener_security(
                {**self.properties, **dynamic}, self.listener_name, server=True
            )
        except SecurityConfigError as e:
            self.failures += 1
            log.error(
                "listener %s: TLS not reconfigured, it keeps its key and trust stores "
                "(invalid config %s: %s)",
                self.listener_name,
                e.key,
                e.problem,
            )
            return
        assert security.server_ssl is not None
        self.install(security.server_ssl)
        self.reloads += 1
        log.info(
            "listener %s: TLS reconfigured from %s (new connections)", self.listener_name, names
        )

    def metrics(self) -> list[Metric]:
        return [
            CounterMetricFamily(
                "pykraft_tls_reloads",
                "times the listener's TLS was rebuilt from dynamic configs",
                value=self.reloads,
            ),
            CounterMetricFamily(
                "pykraft_tls_reload_failures",
                "dynamic TLS configs that did not load (the listener kept its stores)",
                value=self.failures,
            ),
        ]


# The configs of Kafka's ConnectionQuotas (a listener's own, then the node's), as ints.
LIMIT_KEYS: Final = ("max.connections", "max.connection.creation.rate", "max.connections.per.ip")
OVERRIDES_KEY: Final = "max.connections.per.ip.overrides"


class ListenerLimits(CommittedWatch[tuple[tuple[tuple[str, str], ...], int]]):
    """The listener's connection quotas (``net/connection_quotas.py``) from the file's
    properties, the cluster's and this node's dynamic broker configs (this node's winning)
    and the ``ip`` client quotas; ``applied`` is (the configs read, the ip quotas' change
    count)."""

    def __init__(
        self, properties: Mapping[str, str], listener_name: str, node_id: int, gate: ConnectionGate
    ) -> None:
        self.properties, self.gate = properties, gate
        self.listener_name, self.node = listener_name, str(node_id)
        self.prefix = f"listener.name.{listener_name.lower()}."
        self.keys = (*LIMIT_KEYS, OVERRIDES_KEY, *(self.prefix + k for k in LIMIT_KEYS[:2]))
        # The file's, once: read() runs after every sync.
        self.static = {k: v for k, v in properties.items() if k in self.keys}
        self.applied = ((), -1)

    def read(self, image: Image) -> tuple[tuple[tuple[str, str], ...], int]:
        merged = dict(self.static)
        for name in ("", self.node):  # the cluster's default, then this node's
            configs = image.configs.get((BROKER_RESOURCE, name)) or {}
            merged.update((k, v) for k, v in configs.items() if k in self.keys)
        return tuple(sorted(merged.items())), image.client_quotas.ip_changes

    def apply(self, value: tuple[tuple[tuple[str, str], ...], int], image: Image) -> None:
        limits = limits_of(dict(value[0]), self.prefix, image.client_quotas.ip_rates())
        if limits != self.gate.limits:
            self.gate.limits = limits
            log.info("listener %s: connection quotas now %s", self.listener_name, limits)

    def metrics(self) -> list[Metric]:
        return [
            CounterMetricFamily(
                "pykraft_connections_rejected",
                "connections closed for their address's count or rate quota",
                value=self.gate.rejected,
            )
        ]


def _int(configs: Mapping[str, str], key: str) -> int:
    try:
        return int(configs.get(key, UNLIMITED))
    except ValueError:
        log.warning("ignoring %s=%r: not an integer", key, configs.get(key))
        return UNLIMITED


def _overrides(text: str) -> dict[str, int]:
    """``max.connections.per.ip.overrides``: ``host:count`` pairs, hosts resolved."""
    out: dict[str, int] = {}
    for entry in filter(None, (e.strip() for e in text.split(","))):
        host, _, count = entry.rpartition(":")
        try:
            out[socket.gethostbyname(host)] = int(count)
        except (OSError, ValueError):
            log.warning("ignoring %s entry %r", OVERRIDES_KEY, entry)
    return out


def limits_of(
    configs: Mapping[str, str], prefix: str, ip_rates: Mapping[str | None, float]
) -> ConnectionLimits:
    """Kafka's: a listener's own limit and the node's both hold (the smaller wins)."""
    return ConnectionLimits(
        max_connections=min(
            _int(configs, "max.connections"), _int(configs, prefix + "max.connections")
        ),
        max_creation_rate=min(
            _int(configs, "max.connection.creation.rate"),
            _int(configs, prefix + "max.connection.creation.rate"),
        ),
        max_per_ip=_int(configs, "max.connections.per.ip"),
        per_ip=_overrides(configs.get(OVERRIDES_KEY, "")),
        ip_rate_default=ip_rates.get(None, UNLIMITED),
        ip_rates={ip: rate for ip, rate in ip_rates.items() if ip is not None},
    )
