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
import ssl
from collections.abc import Callable, Mapping
from typing import Final

from prometheus_client.core import CounterMetricFamily, Metric

from pykraft.metadata.image import BROKER_RESOURCE, Image
from pykraft.net.errors import SecurityConfigError
from pykraft.net.security import listener_security
from pykraft.net.server import KafkaServer

__all__ = ["RECONFIGURABLE_SSL", "ListenerTls", "replace_tls"]

log = logging.getLogger("pykraft.node")

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


class ListenerTls:
    """Invariant: ``applied`` holds the dynamic SSL configs last tried (the listener's
    context was built from them unless that attempt failed)."""

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

    def dynamic(self, image: Image) -> dict[str, str]:
        """This node's listener-prefixed reconfigurable SSL configs in ``image`` now."""
        configs = image.configs.get(self.resource) or {}
        n = len(self.prefix)
        return {
            k: v
            for k, v in configs.items()
            if k.startswith(self.prefix) and k[n:] in RECONFIGURABLE_SSL
        }

    def check(self, image: Image) -> None:
        """Reload when the committed dynamic SSL configs changed (module docstring)."""
        if self.dynamic(image) == self.applied:
            return
        with image.timeline.at_committed():
            committed = self.dynamic(image)
        if committed != self.applied:
            self.applied = committed
            self._reload(committed)

    def _reload(self, dynamic: dict[str, str]) -> None:
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
