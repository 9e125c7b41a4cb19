from __future__ import annotations

from pathlib import Path

import pytest

from pykraft.node.config import (
    ConfigError,
    HostPort,
    Listener,
    NodeConfig,
    VoterAddress,
    load_config,
)

BASE = {
    "node.id": "1",
    "process.roles": "controller",
    "listeners": "CONTROLLER://127.0.0.1:9093",
    "controller.listener.names": "CONTROLLER",
    "metadata.log.dir": "/tmp/data",
    "controller.quorum.voters": "1@127.0.0.1:9093,2@127.0.0.1:9094,3@localhost:9095",
}


def test_defaults_are_kafkas() -> None:
    cfg = NodeConfig.from_properties(BASE)
    assert cfg.node_id == 1
    assert cfg.process_roles == ("controller",)
    assert cfg.listeners == (Listener("CONTROLLER", "127.0.0.1", 9093),)
    assert cfg.controller_listener == Listener("CONTROLLER", "127.0.0.1", 9093)
    assert cfg.metadata_log_dir == Path("/tmp/data")
    assert cfg.quorum_voters == (
        VoterAddress(1, "127.0.0.1", 9093),
        VoterAddress(2, "127.0.0.1", 9094),
        VoterAddress(3, "localhost", 9095),
    )
    assert cfg.voter_ids == (1, 2, 3)
    assert cfg.quorum_bootstrap_servers == ()
    assert cfg.quorum_election_timeout_ms == 1000
    assert cfg.quorum_fetch_timeout_ms == 2000
    assert cfg.quorum_election_backoff_max_ms == 1000
    assert cfg.quorum_append_linger_ms == 25
    assert cfg.quorum_request_timeout_ms == 2000
    assert cfg.quorum_retry_backoff_ms == 20
    assert cfg.quorum_auto_join_enable is False
    assert cfg.metadata_log_max_record_bytes_between_snapshots == 20 * 1024 * 1024
    assert cfg.metadata_log_segment_bytes == 1024**3
    assert cfg.socket_request_max_bytes == 100 * 1024 * 1024
    assert cfg.metrics_port is None
    assert cfg.unknown_keys == ()


def test_overrides_and_unknown_keys() -> None:
    cfg = NodeConfig.from_properties(
        {
            **BASE,
            "controller.quorum.election.timeout.ms": "300",
            "controller.quorum.append.linger.ms": "0",
            "controller.quorum.auto.join.enable": "TRUE",
            "controller.quorum.bootstrap.servers": "127.0.0.1:9093, [::1]:9094",
            "metrics.port": "9100",
            "num.network.threads": "3",
        }
    )
    assert cfg.quorum_election_timeout_ms == 300
    assert cfg.quorum_append_linger_ms == 0
    assert cfg.quorum_auto_join_enable is True
    assert cfg.quorum_bootstrap_servers == (HostPort("127.0.0.1", 9093), HostPort("::1", 9094))
    assert cfg.metrics_port == 9100
    assert cfg.unknown_keys == ("num.network.threads",)


def test_periodic_elections_are_kafkas_configs() -> None:
    """auto.leader.rebalance.enable, leader.imbalance.check.interval.seconds and
    unclean.leader.election.interval.ms reach the controller (Kafka's defaults: on, 300 s,
    300 s), and none is reported as unused."""
    default = NodeConfig.from_properties(BASE).controller_config()
    assert default.auto_leader_rebalance_enable is True
    assert default.leader_imbalance_check_interval_ms == 300_000
    assert default.unclean_leader_election_interval_ms == 300_000
    cfg = NodeConfig.from_properties(
        {
            **BASE,
            "auto.leader.rebalance.enable": "false",
            "leader.imbalance.check.interval.seconds": "30",
            "unclean.leader.election.interval.ms": "5000",
        }
    )
    assert cfg.unknown_keys == ()
    controller = cfg.controller_config()
    assert controller.auto_leader_rebalance_enable is False
    assert controller.leader_imbalance_check_interval_ms == 30_000
    assert controller.unclean_leader_election_interval_ms == 5_000


def test_metadata_log_retention_is_kafkas() -> None:
    """metadata.max.retention.bytes / .ms: Kafka's defaults, -1 for no limit."""
    default = NodeConfig.from_properties(BASE)
    assert default.metadata_max_retention_bytes == 100 * 1024 * 1024
    assert default.metadata_max_retention_ms == 7 * 24 * 3600 * 1000
    off = NodeConfig.from_properties(
        {**BASE, "metadata.max.retention.bytes": "-1", "metadata.max.retention.ms": "-1"}
    )
    assert (off.metadata_max_retention_bytes, off.metadata_max_retention_ms) == (-1, -1)
    assert off.unknown_keys == ()


def test_log_dirs_fallback() -> None:
    props = {k: v for k, v in BASE.items() if k != "metadata.log.dir"}
    cfg = NodeConfig.from_properties({**props, "log.dirs": "/a,/b"})
    assert cfg.metadata_log_dir == Path("/a")


def test_bootstrap_servers_alone_suffice() -> None:
    props = {k: v for k, v in BASE.items() if k != "controller.quorum.voters"}
    cfg = NodeConfig.from_properties(
        {**props, "controller.quorum.bootstrap.servers": "localhost:9093"}
    )
    assert cfg.quorum_voters == ()


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"node.id": None}, "node.id"),
        ({"node.id": "x"}, "node.id"),
        ({"node.id": "-1"}, "node.id"),
        ({"process.roles": None}, "process.roles"),
        ({"process.roles": "controller,zookeeper"}, "process.roles"),
        ({"listeners": None}, "listeners"),
        ({"listeners": "127.0.0.1:9093"}, "listeners"),
        ({"listeners": "CONTROLLER://127.0.0.1:x"}, "listeners"),
        ({"listeners": "A://:1,A://:2"}, "listeners"),
        ({"controller.listener.names": None}, "controller.listener.names"),
        ({"controller.listener.names": "OTHER"}, "controller.listener.names"),
        ({"metadata.log.dir": None}, "metadata.log.dir"),
        ({"controller.quorum.voters": None}, "controller.quorum.voters"),
        ({"controller.quorum.voters": "1@127.0.0.1"}, "controller.quorum.voters"),
        ({"controller.quorum.voters": "127.0.0.1:9093"}, "controller.quorum.voters"),
        ({"controller.quorum.voters": "1@a:1,1@b:2"}, "controller.quorum.voters"),
        ({"controller.quorum.voters": "x@a:1"}, "controller.quorum.voters"),
        ({"controller.quorum.election.timeout.ms": "0"}, "controller.quorum.election.timeout.ms"),
        ({"controller.quorum.fetch.timeout.ms": "soon"}, "controller.quorum.fetch.timeout.ms"),
        ({"controller.quorum.retry.backoff.ms": "-1"}, "controller.quorum.retry.backoff.ms"),
        ({"controller.quorum.auto.join.enable": "yes"}, "controller.quorum.auto.join.enable"),
        ({"socket.request.max.bytes": "0"}, "socket.request.max.bytes"),
        ({"metrics.port": "70000"}, "metrics.port"),
        ({"controller.quorum.bootstrap.servers": "nohost"}, "controller.quorum.bootstrap.servers"),
        ({"auto.leader.rebalance.enable": "on"}, "auto.leader.rebalance.enable"),
        (
            {"leader.imbalance.check.interval.seconds": "0"},
            "leader.imbalance.check.interval.seconds",
        ),
        ({"unclean.leader.election.interval.ms": "x"}, "unclean.leader.election.interval.ms"),
        ({"metadata.max.retention.bytes": "-2"}, "metadata.max.retention.bytes"),
        ({"metadata.max.retention.ms": "week"}, "metadata.max.retention.ms"),
    ],
)
def test_errors_name_the_key(change: dict[str, str | None], key: str) -> None:
    props = dict(BASE)
    for k, v in change.items():
        if v is None:
            props.pop(k, None)
        else:
            props[k] = v
    with pytest.raises(ConfigError) as info:
        NodeConfig.from_properties(props)
    assert info.value.key == key
    message = str(info.value)
    assert key in message
    assert "\n" not in message


def test_load_config_file(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    lines = [f"{k}={v}" for k, v in BASE.items()]
    path.write_text(
        "# a comment\n" + "\n".join(lines) + "\ncontroller.quorum.fetch.timeout.ms: 3000\n"
    )
    cfg = load_config(path)
    assert cfg.node_id == 1
    assert cfg.quorum_fetch_timeout_ms == 3000
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.properties")


def test_config_is_frozen() -> None:
    cfg = NodeConfig.from_properties(BASE)
    with pytest.raises(AttributeError):
        cfg.node_id = 2  # type: ignore[misc]


POLICY_MODULE = """
from pykraft.controller.policies import PolicyViolation


class MaxPartitions:
    def configure(self, configs):
        self.limit = int(configs.get("my.max.partitions", "3"))

    def validate(self, request):
        if (request.num_partitions or 0) > self.limit:
            raise PolicyViolation(f"at most {self.limit} partitions")


class NoValidate:
    pass
"""


def test_policies_load_python_classes_and_refuse_java_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """create.topic.policy.class.name / alter.config.policy.class.name: a Python class
    (module:Class or module.Class), configured with the node's properties; a Java class name
    refused at start with one line saying what pykraft takes."""
    (tmp_path / "my_policies.py").write_text(POLICY_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = NodeConfig.from_properties(
        {
            **BASE,
            "create.topic.policy.class.name": "my_policies:MaxPartitions",
            "alter.config.policy.class.name": "my_policies.MaxPartitions",
            "my.max.partitions": "5",
        }
    )
    policy = cfg.controller_config().create_topic_policy
    assert policy is not None and getattr(policy, "limit", None) == 5
    assert cfg.controller_config().alter_config_policy is not None
    assert cfg.unknown_keys == ("my.max.partitions",)
    for value, why in (
        ("org.apache.kafka.server.policy.MyPolicy", "a Java class: pykraft takes a Python class"),
        ("my_policies:NoValidate", "has no validate() method"),
        ("my_policies:Missing", "has no class Missing"),
        ("nowhere.at.all:Policy", "cannot import nowhere.at.all"),
    ):
        with pytest.raises(ConfigError) as info:
            NodeConfig.from_properties({**BASE, "create.topic.policy.class.name": value})
        assert info.value.key == "create.topic.policy.class.name"
        assert why in str(info.value) and "\n" not in str(info.value), str(info.value)


def test_group_settings_bound_group_configs_and_are_not_unused() -> None:
    """``group.*`` properties are the controller's group-coordinator settings: they reach the
    controller's GROUP validation and are not reported as unused; a bad one is refused."""
    props = {**BASE, "group.consumer.min.session.timeout.ms": "6000"}
    cfg = NodeConfig.from_properties(props)
    settings = cfg.controller_config().group_settings
    assert settings.ints["group.consumer.min.session.timeout.ms"] == 6000
    assert settings.ints["group.consumer.max.session.timeout.ms"] == 60_000  # Kafka's default
    assert "group.consumer.min.session.timeout.ms" not in cfg.unknown_keys
    with pytest.raises(ConfigError, match=r"group\.share\.max\.delivery\.count\.limit"):
        NodeConfig.from_properties({**BASE, "group.share.max.delivery.count.limit": "ten"})


def test_broker_configs_topics_fall_back_to_reach_describe_and_are_not_unused() -> None:
    cfg = NodeConfig.from_properties({**BASE, "log.retention.hours": "24", "x.y": "1"})
    controller = cfg.controller_config()
    assert dict(controller.static_broker_configs) == {"log.retention.hours": "24"}
    assert controller.node_id == cfg.node_id
    assert "log.retention.hours" not in cfg.unknown_keys and "x.y" in cfg.unknown_keys


def test_kip_1219_fetch_sizes_reach_the_core() -> None:
    cfg = NodeConfig.from_properties(
        {
            **BASE,
            "controller.quorum.fetch.max.bytes": "1048576",
            "controller.quorum.fetch.snapshot.max.bytes": "65536",
        }
    )
    raft = cfg.raft_config(cluster_id=None, clock_offset_ms=0)
    assert (raft.fetch_max_bytes, raft.fetch_snapshot_max_bytes) == (1_048_576, 65_536)
    default = NodeConfig.from_properties(BASE).raft_config(cluster_id=None, clock_offset_ms=0)
    assert default.fetch_max_bytes == 8 * 1024 * 1024
    with pytest.raises(ConfigError, match=r"controller\.quorum\.fetch\.max\.bytes"):
        NodeConfig.from_properties({**BASE, "controller.quorum.fetch.max.bytes": "0"})


@pytest.mark.parametrize(
    ("key", "says"),
    [
        ("principal.builder.class", "a Java class: pykraft takes a Python class"),
        ("ssl.engine.factory.class", "ssl.keystore"),
        (
            "listener.name.controller.scram-sha-256.sasl.server.callback.handler.class",
            "SCRAM checks the credentials in the metadata log",
        ),
        ("sasl.server.callback.handler.class", "does not enable PLAIN"),
    ],
)
def test_a_listener_plug_in_pykraft_cannot_take_is_refused_with_what_it_does(
    key: str, says: str
) -> None:
    """No such setting is silently ignored: a Java class pykraft cannot load (or a handler
    for what pykraft does itself) refuses the start with one line naming the key and why."""
    with pytest.raises(ConfigError) as info:
        NodeConfig.from_properties({**BASE, key: "com.example.Custom"})
    text = str(info.value)
    assert text.startswith(f"invalid config {key}: ") and "\n" not in text
    assert says in text, text


def test_security_settings_pykraft_does_not_read_are_reported_unused() -> None:
    """Security settings are honoured only where pykraft reads them; the others (a JCE
    provider, a login refresh factor) are reported as not used, listener prefixes too."""
    cfg = NodeConfig.from_properties(
        {
            **BASE,
            "ssl.provider": "SunJSSE",
            "sasl.login.refresh.window.factor": "0.8",
            "listener.name.controller.ssl.keystore.type": "PKCS12",
            "listener.name.controller.plain.sasl.jaas.config": "x",
            "listener.name.controller.ssl.protocol": "TLSv1.3",
        }
    )
    assert cfg.unknown_keys == (
        "listener.name.controller.ssl.protocol",
        "sasl.login.refresh.window.factor",
        "ssl.provider",
    )
