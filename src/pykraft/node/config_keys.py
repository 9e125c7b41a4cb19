"""The config names a node reads (Kafka's, where Kafka has one): the integer and boolean
settings with their fields and defaults, the names read elsewhere (security, group.*, the
broker configs topics fall back to), and :func:`known`, which says whether a key is used at
all (the others are logged once as not used, as Kafka logs "supplied but not used")."""

from __future__ import annotations

import re
from typing import Final

from pykraft.controller.group_configs import GROUP_SETTING_DEFAULTS
from pykraft.controller.topic_defaults import BROKER_SYNONYMS

__all__ = [
    "ALTER_CONFIG_POLICY",
    "BOOLS",
    "CREATE_TOPIC_POLICY",
    "INTS",
    "JAVA_PLUGINS",
    "PRINCIPAL_BUILDER",
    "SERVER_CALLBACK",
    "SPEC_TRACE_FILE",
    "STANDARD_AUTHORIZER",
    "base_security_key",
    "known",
]

# Kafka names of the integer configs with defaults, mapped to (field, minimum).
INTS: Final[dict[str, tuple[str, int]]] = {
    "controller.quorum.election.timeout.ms": ("quorum_election_timeout_ms", 1),
    "controller.quorum.fetch.timeout.ms": ("quorum_fetch_timeout_ms", 1),
    "controller.quorum.election.backoff.max.ms": ("quorum_election_backoff_max_ms", 1),
    "controller.quorum.append.linger.ms": ("quorum_append_linger_ms", 0),
    "controller.quorum.request.timeout.ms": ("quorum_request_timeout_ms", 1),
    "controller.quorum.retry.backoff.ms": ("quorum_retry_backoff_ms", 0),
    "controller.quorum.fetch.max.bytes": ("quorum_fetch_max_bytes", 1),
    "controller.performance.sample.period.ms": ("controller_performance_sample_period_ms", 100),
    "controller.performance.always.log.threshold.ms": (
        "controller_performance_always_log_threshold_ms",
        0,
    ),
    "controller.quorum.fetch.snapshot.max.bytes": ("quorum_fetch_snapshot_max_bytes", 1),
    "metadata.log.max.record.bytes.between.snapshots": (
        "metadata_log_max_record_bytes_between_snapshots",
        1,
    ),
    "metadata.log.max.snapshot.interval.ms": ("metadata_log_max_snapshot_interval_ms", 0),
    # Kafka's minimum for the metadata log's segments is 8 MiB; tests use smaller ones.
    "metadata.log.segment.bytes": ("metadata_log_segment_bytes", 1024),
    "socket.request.max.bytes": ("socket_request_max_bytes", 1),
    "pykraft.debug.append.interval.ms": ("debug_append_interval_ms", 0),
    "pykraft.event.loop.stall.stack.ms": ("event_loop_stall_stack_ms", 0),
    "broker.session.timeout.ms": ("broker_session_timeout_ms", 1),
    "broker.heartbeat.interval.ms": ("broker_heartbeat_interval_ms", 1),
    "num.partitions": ("num_partitions", 1),
    "min.insync.replicas": ("min_insync_replicas", 1),
    "default.replication.factor": ("default_replication_factor", 1),
    "metadata.max.idle.interval.ms": ("metadata_max_idle_interval_ms", 0),
    "zookeeper.metadata.migration.min.batch.size": (
        "zookeeper_metadata_migration_min_batch_size",
        1,
    ),
    "delegation.token.max.lifetime.ms": ("delegation_token_max_lifetime_ms", 1),
    "delegation.token.expiry.time.ms": ("delegation_token_expiry_time_ms", 1),
    "delegation.token.expiry.check.interval.ms": ("delegation_token_expiry_check_interval_ms", 1),
    "leader.imbalance.check.interval.seconds": ("leader_imbalance_check_interval_seconds", 1),
    "metadata.max.retention.bytes": ("metadata_max_retention_bytes", -1),
    "metadata.max.retention.ms": ("metadata_max_retention_ms", -1),
    "unclean.leader.election.interval.ms": ("unclean_leader_election_interval_ms", 1),
}

CREATE_TOPIC_POLICY: Final = "create.topic.policy.class.name"
SPEC_TRACE_FILE: Final = "pykraft.spec.trace.file"  # node/spec_trace_file.py
ALTER_CONFIG_POLICY: Final = "alter.config.policy.class.name"


# Kafka names of the boolean configs, with their defaults (absent: false).
BOOLS: Final[dict[str, bool]] = {
    "controller.quorum.auto.join.enable": False,
    "unclean.leader.election.enable": False,
    "delete.topic.enable": True,
    "auto.leader.rebalance.enable": True,
    "allow.everyone.if.no.acl.found": False,
    "zookeeper.metadata.migration.enable": False,
    "remote.log.storage.system.enable": False,
}

KNOWN: Final = frozenset(
    {
        "node.id",
        "process.roles",
        "listeners",
        "controller.listener.names",
        "metadata.log.dir",
        "log.dirs",
        "log.dir",
        "controller.quorum.voters",
        "controller.quorum.bootstrap.servers",
        "metrics.port",
        "zookeeper.connect",
        "inter.broker.listener.name",
        *INTS,
        *BOOLS,
        CREATE_TOPIC_POLICY,
        ALTER_CONFIG_POLICY,
        SPEC_TRACE_FILE,
    }
)


# Security configs (read by net/security.py and net/tls.py), as they may appear after a
# ``listener.name.<listener>.`` prefix and a SASL mechanism's prefix (``plain.``, ...).
SECURITY_READ: Final = frozenset(
    {
        "ssl.keystore.type",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.keystore.key",
        "ssl.keystore.certificate.chain",
        "ssl.key.password",
        "ssl.truststore.type",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.truststore.certificates",
        "ssl.client.auth",
        "ssl.enabled.protocols",
        "ssl.cipher.suites",
        "ssl.endpoint.identification.algorithm",
        "ssl.principal.mapping.rules",
        "sasl.enabled.mechanisms",
        "sasl.mechanism.controller.protocol",
        "sasl.jaas.config",
        "sasl.server.max.receive.size",
        "connections.max.reauth.ms",
    }
)
# Plug-in classes Kafka loads into its listener. pykraft takes a Python class in the shape of
# Kafka's interface for the principal builder and PLAIN's server callback handler
# (node/plugins.py); the others it cannot take, so a node that names one is refused at start,
# with what pykraft does in its place, rather than run without it (OAUTHBEARER's handler:
# net/security.py).
PRINCIPAL_BUILDER: Final = "principal.builder.class"
SERVER_CALLBACK: Final = "sasl.server.callback.handler.class"
JAVA_PLUGINS: Final[dict[str, str]] = {
    "ssl.engine.factory.class": "TLS is set up from the ssl.keystore.* and ssl.truststore.* configs",
    f"scram-sha-256.{SERVER_CALLBACK}": "SCRAM checks the credentials in the metadata log",
    f"scram-sha-512.{SERVER_CALLBACK}": "SCRAM checks the credentials in the metadata log",
}
_MECHANISM_PREFIX: Final = re.compile(r"^(?:plain|scram-sha-256|scram-sha-512|oauthbearer)\.")
_LISTENER_PREFIX: Final = re.compile(r"^listener\.name\.[^.]+\.")
SECURITY_KEYS: Final = frozenset(
    {
        "listener.security.protocol.map",
        "connection.failed.authentication.delay.ms",
        "authorizer.class.name",
        "super.users",
        "allow.everyone.if.no.acl.found",
        "delegation.token.secret.key",
    }
)


def _listener_prefix(key: str) -> str:
    match = _LISTENER_PREFIX.match(key)
    return match.group(0) if match else ""


def base_security_key(key: str) -> str:
    """A security key without its listener and mechanism prefixes:
    ``listener.name.internal.plain.sasl.jaas.config`` -> ``sasl.jaas.config``."""
    return _MECHANISM_PREFIX.sub("", _LISTENER_PREFIX.sub("", key))


STANDARD_AUTHORIZER: Final = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def known(key: str) -> bool:
    return (
        key in KNOWN
        or key in SECURITY_KEYS
        or base_security_key(key) in SECURITY_READ
        or base_security_key(key) in (PRINCIPAL_BUILDER, SERVER_CALLBACK)
        or key.removeprefix(_listener_prefix(key)) in JAVA_PLUGINS
        or key in GROUP_SETTING_DEFAULTS
        or key in BROKER_SYNONYMS
    )
