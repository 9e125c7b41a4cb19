"""A node's configuration: Kafka's config names and defaults (SPEC I1), typed and frozen.

``load_config(path)`` reads a Kafka-style ``.properties`` file; ``NodeConfig.from_properties``
validates a mapping. Every problem is a :class:`ConfigError` whose message is one line naming
the key, raised before anything starts (no socket opened, no file written).

Keys pykraft does not know are kept in ``NodeConfig.unknown_keys`` so the server can log them,
as Kafka logs "supplied but not used" configs; they are not an error, because operators reuse
their Kafka ``server.properties`` files.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, cast

from pykraft.controller.config import ControllerConfig
from pykraft.controller.group_configs import (
    DEFAULT_GROUP_SETTINGS,
    GroupSettings,
)
from pykraft.controller.policies import AlterConfigPolicy, CreateTopicPolicy
from pykraft.controller.topic_defaults import BROKER_SYNONYMS
from pykraft.net.errors import SecurityConfigError
from pykraft.net.security import (
    ListenerSecurity,
    PlainCallbackHandler,
    PrincipalBuilder,
    listener_security,
)
from pykraft.node.config_keys import (
    ALTER_CONFIG_POLICY,
    BOOLS,
    CREATE_TOPIC_POLICY,
    INTS,
    JAVA_PLUGINS,
    PRINCIPAL_BUILDER,
    SERVER_CALLBACK,
    SPEC_TRACE_FILE,
    STANDARD_AUTHORIZER,
    known,
)
from pykraft.node.plugins import load_plugin
from pykraft.raft.config import RaftConfig
from pykraft.raft.types import Endpoint
from pykraft.storage import properties as _storage_properties
from pykraft.storage.properties import ConfigError

__all__ = [
    "ConfigError",
    "HostPort",
    "Listener",
    "NodeConfig",
    "VoterAddress",
    "load_config",
]

MIB: Final = 1024 * 1024
GIB: Final = 1024 * MIB

PROCESS_ROLES: Final = frozenset({"controller", "broker"})


@dataclass(frozen=True, slots=True)
class HostPort:
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


# One entry of ``listeners``: ``NAME://host:port``; an empty host binds every interface, as
# in Kafka. The raft layer's endpoint type (one endpoint type).
Listener = Endpoint


@dataclass(frozen=True, slots=True)
class VoterAddress:
    """One entry of ``controller.quorum.voters``: ``id@host:port``."""

    id: int
    host: str
    port: int


FETCH_MAX_WAIT_MS = 500  # Kafka's KafkaRaftClient.MAX_FETCH_WAIT_MS


def fetch_max_wait_ms(fetch_timeout_ms: int) -> int:
    """How long a follower lets the leader hold its Fetch: Kafka's 500 ms, but never more
    than half the fetch timeout. A follower's fetch timer restarts on each answer, so with
    ``controller.quorum.fetch.timeout.ms`` below 500 an idle long poll outlived it and every
    follower of an idle quorum started elections, forever (epoch 1 -> 19 in 6 s at 300 ms).
    Kafka's own controllers would do the same with such a setting: it holds polls for 500 ms
    whatever the timeout (an idle Kafka 4.3.1 quorum at 300 ms: epoch 1 to 50 in 20 s;
    docs/DECISIONS.md)."""
    return max(0, min(FETCH_MAX_WAIT_MS, fetch_timeout_ms // 2))


@dataclass(frozen=True, slots=True)
class NodeConfig:
    """Every config of SPEC I1 under Kafka's name (dots become underscores, the
    ``controller.quorum.`` prefix becomes ``quorum_``) with Kafka's default.

    Invariants (checked by :meth:`from_properties`): at least one of ``quorum_voters`` and
    ``quorum_bootstrap_servers`` is set; a controller has a listener named in
    ``controller_listener_names``; every ``*_ms`` and ``*_bytes`` value is positive (linger
    and retry backoff may be 0).
    """

    node_id: int
    process_roles: tuple[str, ...]
    listeners: tuple[Listener, ...]
    controller_listener_names: tuple[str, ...]
    metadata_log_dir: Path
    quorum_voters: tuple[VoterAddress, ...] = ()
    quorum_bootstrap_servers: tuple[HostPort, ...] = ()
    quorum_election_timeout_ms: int = 1000
    quorum_fetch_timeout_ms: int = 2000
    # controller.quorum.fetch.max.bytes / .fetch.snapshot.max.bytes (KIP-1219): Kafka's default
    # is 1 MiB; pykraft's 8 MiB (its catch-up rate, bench/ANALYSIS.md section 4; DECISIONS)
    controller_performance_sample_period_ms: int = 60_000  # the periodic performance message
    controller_performance_always_log_threshold_ms: int = 2_000  # an event this slow: logged
    quorum_fetch_max_bytes: int = 8 * MIB
    quorum_fetch_snapshot_max_bytes: int = 8 * MIB
    quorum_election_backoff_max_ms: int = 1000
    quorum_append_linger_ms: int = 25
    quorum_request_timeout_ms: int = 2000
    quorum_retry_backoff_ms: int = 20
    quorum_auto_join_enable: bool = False
    metadata_log_max_record_bytes_between_snapshots: int = 20 * MIB
    # metadata.log.max.snapshot.interval.ms: a snapshot at least this often when records
    # were written since the last one (Kafka's default 1 hour; 0 = only by bytes).
    metadata_log_max_snapshot_interval_ms: int = 3_600_000
    metadata_log_segment_bytes: int = 1 * GIB
    socket_request_max_bytes: int = 100 * MIB
    metrics_port: int | None = None  # pykraft's own: the Prometheus endpoint, off when None
    # pykraft's own ``pykraft.debug.append.interval.ms``, a test/demo hook: the leader
    # appends a small record this often (0 = never) so that a quorum with no application
    # still moves its high watermark. The end-to-end tests (tests/node, the pipeline's quorum
    # audit) and ``pykraft local`` demos rely on it; see ``pykraft.node.server``.
    debug_append_interval_ms: int = 0
    # pykraft's own ``pykraft.event.loop.stall.stack.ms``, a diagnostic: when the event loop
    # has been held this long, a watchdog thread logs where the loop's thread is (0 = off;
    # node/loop_lag.py). The loop-lag metrics say how long; this says what held it.
    event_loop_stall_stack_ms: int = 0
    # pykraft's own ``pykraft.spec.trace.file``: every step of the core in the KRaft
    # specification's terms, one JSON line each (node/spec_trace_file.py; off when unset).
    spec_trace_file: Path | None = None
    # The metadata controller's settings (Kafka's names; pykraft.controller.config).
    broker_session_timeout_ms: int = 9000
    broker_heartbeat_interval_ms: int = 2000
    num_partitions: int = 1
    default_replication_factor: int = 1
    min_insync_replicas: int = 1
    metadata_max_idle_interval_ms: int = 500
    unclean_leader_election_enable: bool = False
    delete_topic_enable: bool = True  # delete.topic.enable (Kafka's default)
    remote_log_storage_system_enable: bool = False  # remote.log.storage.system.enable
    # The metadata log and its snapshots kept within these (node/log_retention.py); -1: none.
    metadata_max_retention_bytes: int = 100 * 1024 * 1024
    metadata_max_retention_ms: int = 7 * 24 * 3600 * 1000
    # Periodic elections (controller/periodic.py), Kafka's names and defaults.
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_seconds: int = 300
    unclean_leader_election_interval_ms: int = 300_000
    # KIP-866 (Kafka's names): migrate the ZooKeeper cluster at zookeeper.connect; the
    # ZooKeeper brokers' listener this controller reaches them on.
    zookeeper_metadata_migration_enable: bool = False
    zookeeper_connect: str = ""
    inter_broker_listener_name: str = "PLAINTEXT"
    zookeeper_metadata_migration_min_batch_size: int = 200
    # The controller listener's security, both sides (net/security.py: TLS, SASL), and the
    # authorizer's settings (Kafka's names: authorizer.class.name, super.users,
    # allow.everyone.if.no.acl.found; controller/authorizer.py).
    security: ListenerSecurity | None = field(default=None, compare=False)
    authorizer_class_name: str = ""
    super_users: tuple[str, ...] = ()
    allow_everyone_if_no_acl_found: bool = False
    delegation_token_secret_key: str = field(default="", repr=False)
    delegation_token_max_lifetime_ms: int = 604_800_000
    delegation_token_expiry_time_ms: int = 86_400_000
    delegation_token_expiry_check_interval_ms: int = 3_600_000
    # create.topic.policy.class.name / alter.config.policy.class.name, loaded (node/plugins.py)
    create_topic_policy: CreateTopicPolicy | None = field(default=None, compare=False)
    # group.* settings: the bounds of GROUP configs (controller/group_configs.py)
    group_settings: GroupSettings = field(default=DEFAULT_GROUP_SETTINGS, compare=False)
    # log.retention.ms and the other configs topics fall back to (controller/topic_defaults)
    static_broker_configs: Mapping[str, str] = field(default_factory=dict, compare=False)
    alter_config_policy: AlterConfigPolicy | None = field(default=None, compare=False)
    unknown_keys: tuple[str, ...] = ()
    # Every property as read: the listener's TLS is rebuilt from them and the dynamic configs
    # of this node (node/reconfigure.py). Secrets among them: never in a repr.
    properties: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    @property
    def is_controller(self) -> bool:
        return "controller" in self.process_roles

    @property
    def controller_listener(self) -> Listener:
        """The first listener named in ``controller.listener.names`` (where voters talk)."""
        for name in self.controller_listener_names:
            for listener in self.listeners:
                if listener.name == name:
                    return listener
        raise ConfigError("controller.listener.names", "names no entry of listeners")

    def raft_config(self, *, cluster_id: str | None, clock_offset_ms: int) -> RaftConfig:
        """The consensus core's settings from this config (the one place they are copied)."""
        return RaftConfig(
            election_timeout_ms=self.quorum_election_timeout_ms,
            fetch_timeout_ms=self.quorum_fetch_timeout_ms,
            fetch_max_bytes=self.quorum_fetch_max_bytes,
            fetch_snapshot_max_bytes=self.quorum_fetch_snapshot_max_bytes,
            election_backoff_max_ms=self.quorum_election_backoff_max_ms,
            request_timeout_ms=self.quorum_request_timeout_ms,
            retry_backoff_ms=self.quorum_retry_backoff_ms,
            fetch_max_wait_ms=fetch_max_wait_ms(self.quorum_fetch_timeout_ms),
            cluster_id=cluster_id,
            auto_join=self.quorum_auto_join_enable,
            clock_offset_ms=clock_offset_ms,
        )

    def controller_config(self) -> ControllerConfig:
        """The metadata controller's settings from this config."""
        return ControllerConfig(
            broker_session_timeout_ms=self.broker_session_timeout_ms,
            broker_heartbeat_interval_ms=self.broker_heartbeat_interval_ms,
            num_partitions=self.num_partitions,
            min_insync_replicas=self.min_insync_replicas,
            default_replication_factor=self.default_replication_factor,
            metadata_max_idle_interval_ms=self.metadata_max_idle_interval_ms,
            snapshot_max_bytes=self.metadata_log_max_record_bytes_between_snapshots,
            snapshot_interval_ms=self.metadata_log_max_snapshot_interval_ms,
            unclean_leader_election=self.unclean_leader_election_enable,
            delete_topic_enable=self.delete_topic_enable,
            remote_log_storage_system_enable=self.remote_log_storage_system_enable,
            auto_leader_rebalance_enable=self.auto_leader_rebalance_enable,
            leader_imbalance_check_interval_ms=self.leader_imbalance_check_interval_seconds * 1000,
            unclean_leader_election_interval_ms=self.unclean_leader_election_interval_ms,
            zk_migration_enabled=self.zookeeper_metadata_migration_enable,
            inter_broker_listener_name=self.inter_broker_listener_name,
            migration_min_batch_size=self.zookeeper_metadata_migration_min_batch_size,
            authorizer=bool(self.authorizer_class_name),
            super_users=self.super_users,
            allow_everyone_if_no_acl_found=self.allow_everyone_if_no_acl_found,
            delegation_token_secret_key=self.delegation_token_secret_key,
            delegation_token_max_lifetime_ms=self.delegation_token_max_lifetime_ms,
            delegation_token_expiry_time_ms=self.delegation_token_expiry_time_ms,
            delegation_token_expiry_check_interval_ms=(
                self.delegation_token_expiry_check_interval_ms
            ),
            create_topic_policy=self.create_topic_policy,
            alter_config_policy=self.alter_config_policy,
            group_settings=self.group_settings,
            node_id=self.node_id,
            static_broker_configs=self.static_broker_configs,
        )

    @property
    def voter_ids(self) -> tuple[int, ...]:
        return tuple(v.id for v in self.quorum_voters)

    @classmethod
    def from_properties(
        cls, props: Mapping[str, str], *, require_quorum: bool = True
    ) -> NodeConfig:
        """``require_quorum=False``: the quorum's address (controller.quorum.voters or
        .bootstrap.servers) may be missing, as ``kafka-storage format`` accepts it."""
        return _build(props, require_quorum)


def load_config(path: str | Path, *, require_quorum: bool = True) -> NodeConfig:
    """Read and validate a ``.properties`` file (parsed by ``pykraft.storage``'s reader,
    so that there is one parser of Kafka properties files). ``require_quorum``: see
    ``NodeConfig.from_properties``."""
    try:
        props = _storage_properties.load_properties(Path(path))
    except ConfigError as e:
        raise ConfigError("<file>", str(e)) from None
    return NodeConfig.from_properties(props, require_quorum=require_quorum)


# ---------------------------------------------------------------------------------------
# Parsing of single values. Each raises ConfigError naming its key.


def _int(key: str, raw: str, *, minimum: int, maximum: int = 2**63 - 1) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        raise ConfigError(key, f"expected an integer, got {raw!r}") from None
    if not minimum <= value <= maximum:
        raise ConfigError(key, f"{value} is outside [{minimum}, {maximum}]")
    return value


def _bool(key: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value not in ("true", "false"):
        raise ConfigError(key, f"expected true or false, got {raw!r}")
    return value == "true"


def _list(raw: str) -> list[str]:
    return [item.strip() for item in raw.split(",") if item.strip()]


def _host_port(key: str, text: str) -> HostPort:
    host, sep, port = text.rpartition(":")
    if not sep:
        raise ConfigError(key, f"expected host:port, got {text!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]  # IPv6 literal
    return HostPort(host, _int(key, port, minimum=0, maximum=65535))


def _listeners(key: str, raw: str) -> tuple[Listener, ...]:
    out: list[Listener] = []
    for item in _list(raw):
        name, sep, address = item.partition("://")
        if not sep or not name:
            raise ConfigError(key, f"expected NAME://host:port, got {item!r}")
        hp = _host_port(key, address)
        if any(listener.name == name for listener in out):
            raise ConfigError(key, f"listener name {name} appears twice")
        out.append(Listener(name, hp.host, hp.port))
    return tuple(out)


def _voters(key: str, raw: str) -> tuple[VoterAddress, ...]:
    out: list[VoterAddress] = []
    for item in _list(raw):
        node_id, sep, address = item.partition("@")
        if not sep:
            raise ConfigError(key, f"expected id@host:port, got {item!r}")
        voter_id = _int(key, node_id, minimum=0, maximum=2**31 - 1)
        hp = _host_port(key, address)
        if not hp.host or hp.port == 0:
            raise ConfigError(key, f"voter {voter_id} needs a host and a non-zero port")
        if any(v.id == voter_id for v in out):
            raise ConfigError(key, f"voter id {voter_id} appears twice")
        out.append(VoterAddress(voter_id, hp.host, hp.port))
    return tuple(out)


def _group_settings(props: Mapping[str, str]) -> GroupSettings:
    try:
        return GroupSettings.from_properties(props)
    except ValueError as e:
        key, _, problem = str(e).partition(": ")
        raise ConfigError(key, problem) from None


def _security(
    props: Mapping[str, str],
    roles: tuple[str, ...],
    listeners: tuple[Listener, ...],
    controller_names: tuple[str, ...],
) -> ListenerSecurity:
    """The controller listener's security (the first of controller.listener.names)."""
    name = next(
        (n for n in controller_names if any(li.name == n for li in listeners)),
        controller_names[0] if controller_names else listeners[0].name,
    )
    try:
        return listener_security(props, name, server="controller" in roles)
    except SecurityConfigError as e:
        raise ConfigError(e.key, e.problem) from None


def _authorizer(props: Mapping[str, str]) -> str:
    name = props.get("authorizer.class.name", "").strip()
    if name and name != STANDARD_AUTHORIZER:
        raise ConfigError(
            "authorizer.class.name", f"pykraft implements {STANDARD_AUTHORIZER} only, not {name}"
        )
    return name


def _super_users(props: Mapping[str, str]) -> tuple[str, ...]:
    """``super.users``: principals separated by semicolons, each ``Type:name``."""
    out = []
    for item in props.get("super.users", "").split(";"):
        item = item.strip()
        if not item:
            continue
        kind, sep, name = item.partition(":")
        if not sep or not kind or not name:
            raise ConfigError("super.users", f"expected Type:name, got {item!r}")
        out.append(item)
    return tuple(out)


def _required(props: Mapping[str, str], key: str) -> str:
    value = props.get(key, "").strip()
    if not value:
        raise ConfigError(key, "is required")
    return value


def _metadata_log_dir(props: Mapping[str, str]) -> Path:
    """Kafka's rule: ``metadata.log.dir``, else the first of ``log.dirs``, else ``log.dir``.
    Unlike Kafka (whose ``log.dir`` defaults to /tmp/kafka-logs) a missing directory is an
    error: silently writing the quorum's log to /tmp loses it on reboot."""
    for key in ("metadata.log.dir", "log.dirs", "log.dir"):
        dirs = _list(props.get(key, ""))
        if dirs:
            return Path(dirs[0])
    raise ConfigError("metadata.log.dir", "is required (or log.dirs)")


def _flag(props: Mapping[str, str], key: str) -> bool:
    """A boolean config; when absent, its default in ``BOOLS`` (else false)."""
    raw = props.get(key)
    return BOOLS.get(key, False) if raw is None else _bool(key, raw)


def _controller_names(
    props: Mapping[str, str], roles: tuple[str, ...], listeners: tuple[Listener, ...]
) -> tuple[str, ...]:
    """``controller.listener.names``: a controller needs one, and one of them in listeners."""
    names = tuple(_list(props.get("controller.listener.names", "")))
    if "controller" in roles:
        if not names:
            raise ConfigError("controller.listener.names", "is required for a controller")
        if not any(listener.name in names for listener in listeners):
            raise ConfigError(
                "controller.listener.names", f"none of {', '.join(names)} is in listeners"
            )
    return names


def _policy(props: Mapping[str, str], key: str) -> object | None:
    """The policy ``key`` names, loaded (ConfigError when it cannot be: a class with
    ``validate``, as Kafka's policy interfaces); None when unset."""
    name = props.get(key, "").strip()
    return load_plugin(key, name, props, "validate") if name else None


def _roles(props: Mapping[str, str]) -> tuple[str, ...]:
    roles = tuple(_list(_required(props, "process.roles")))
    for role in roles:
        if role not in PROCESS_ROLES:
            raise ConfigError("process.roles", f"unknown role {role!r} (controller, broker)")
    return roles


def _quorum(
    props: Mapping[str, str], require_quorum: bool
) -> tuple[tuple[VoterAddress, ...], tuple[HostPort, ...]]:
    """controller.quorum.voters and controller.quorum.bootstrap.servers (one required)."""
    voters = _voters("controller.quorum.voters", props.get("controller.quorum.voters", ""))
    bootstrap = tuple(
        _host_port("controller.quorum.bootstrap.servers", item)
        for item in _list(props.get("controller.quorum.bootstrap.servers", ""))
    )
    if require_quorum and not voters and not bootstrap:
        raise ConfigError(
            "controller.quorum.voters",
            "is required unless controller.quorum.bootstrap.servers is set",
        )
    return voters, bootstrap


def _listener_plugins(props: Mapping[str, str], security: ListenerSecurity) -> ListenerSecurity:
    """The listener's plug-ins: ``principal.builder.class`` and PLAIN's server callback
    handler as Python classes; a plug-in pykraft cannot take refuses the start."""
    prefix = f"listener.name.{security.listener_name.lower()}."
    for key, value in sorted(props.items()):
        instead = JAVA_PLUGINS.get(key.removeprefix(prefix) if key.startswith(prefix) else key)
        if instead is not None and value.strip():
            raise ConfigError(key, f"pykraft cannot load the class {value.strip()}; {instead}")
    builder = props.get(PRINCIPAL_BUILDER, "").strip()
    if builder:
        plugin = load_plugin(PRINCIPAL_BUILDER, builder, props, "build")
        security = dataclasses.replace(security, principal_builder=cast(PrincipalBuilder, plugin))
    for key in (f"{prefix}plain.{SERVER_CALLBACK}", SERVER_CALLBACK):
        name = props.get(key, "").strip()
        if not name:
            continue
        sasl = security.sasl
        if sasl is None or "PLAIN" not in sasl.mechanisms:
            raise ConfigError(key, "the controller listener does not enable PLAIN")
        if key == SERVER_CALLBACK and any(m.startswith("SCRAM") for m in sasl.mechanisms):
            raise ConfigError(key, "pykraft takes it for PLAIN only: name it plain.-prefixed")
        plugin = load_plugin(key, name, props, "authenticate")
        sasl = dataclasses.replace(sasl, plain_callback=cast(PlainCallbackHandler, plugin))
        security = dataclasses.replace(security, sasl=sasl)
        break
    return security


def _build(props: Mapping[str, str], require_quorum: bool = True) -> NodeConfig:
    node_id = _int("node.id", _required(props, "node.id"), minimum=0, maximum=2**31 - 1)
    roles = _roles(props)
    listeners = _listeners("listeners", _required(props, "listeners"))
    controller_names = _controller_names(props, roles, listeners)
    voters, bootstrap = _quorum(props, require_quorum)
    ints = {
        field: _int(key, props[key], minimum=minimum)
        for key, (field, minimum) in INTS.items()
        if key in props
    }
    metrics_raw = props.get("metrics.port", "").strip()
    metrics_port = (
        _int("metrics.port", metrics_raw, minimum=0, maximum=65535) if metrics_raw else None
    )
    migration = _flag(props, "zookeeper.metadata.migration.enable")
    zookeeper_connect = props.get("zookeeper.connect", "").strip()
    if migration and not zookeeper_connect:
        # KafkaConfig: the migration needs the ZooKeeper it migrates.
        raise ConfigError(
            "zookeeper.connect", "is required when zookeeper.metadata.migration.enable=true"
        )
    return NodeConfig(
        node_id=node_id,
        process_roles=roles,
        listeners=listeners,
        controller_listener_names=controller_names,
        metadata_log_dir=_metadata_log_dir(props),
        quorum_voters=voters,
        quorum_bootstrap_servers=bootstrap,
        metrics_port=metrics_port,
        quorum_auto_join_enable=_flag(props, "controller.quorum.auto.join.enable"),
        unclean_leader_election_enable=_flag(props, "unclean.leader.election.enable"),
        delete_topic_enable=_flag(props, "delete.topic.enable"),
        remote_log_storage_system_enable=_flag(props, "remote.log.storage.system.enable"),
        auto_leader_rebalance_enable=_flag(props, "auto.leader.rebalance.enable"),
        allow_everyone_if_no_acl_found=_flag(props, "allow.everyone.if.no.acl.found"),
        zookeeper_metadata_migration_enable=migration,
        zookeeper_connect=zookeeper_connect,
        inter_broker_listener_name=(
            props.get("inter.broker.listener.name", "").strip() or "PLAINTEXT"
        ),
        security=_listener_plugins(props, _security(props, roles, listeners, controller_names)),
        authorizer_class_name=_authorizer(props),
        super_users=_super_users(props),
        delegation_token_secret_key=props.get("delegation.token.secret.key", "").strip(),
        create_topic_policy=cast(CreateTopicPolicy | None, _policy(props, CREATE_TOPIC_POLICY)),
        alter_config_policy=cast(AlterConfigPolicy | None, _policy(props, ALTER_CONFIG_POLICY)),
        group_settings=_group_settings(props),
        static_broker_configs={k: v for k, v in props.items() if k in BROKER_SYNONYMS},
        spec_trace_file=Path(trace) if (trace := props.get(SPEC_TRACE_FILE, "").strip()) else None,
        unknown_keys=tuple(sorted(k for k in props if not known(k))),
        properties=dict(props),
        **ints,
    )
