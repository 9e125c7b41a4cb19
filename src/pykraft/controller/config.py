"""The metadata controller's configuration: Kafka's config names and defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from pykraft.controller.group_configs import DEFAULT_GROUP_SETTINGS, GroupSettings
from pykraft.controller.policies import AlterConfigPolicy, CreateTopicPolicy
from pykraft.metadata.versions import DEFAULT_METADATA_VERSION

__all__ = ["ControllerConfig", "RandomSource"]


class RandomSource(Protocol):
    """The randomness the controller takes as an input (a seeded ``random.Random`` in the
    node and the simulator): topic ids and where a topic's replicas start."""

    def randrange(self, stop: int, /) -> int: ...

    def getrandbits(self, k: int, /) -> int: ...


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    """Kafka's controller settings (``KafkaConfig``), in milliseconds where timed."""

    broker_session_timeout_ms: int = 9_000  # broker.session.timeout.ms
    broker_heartbeat_interval_ms: int = 2_000  # broker.heartbeat.interval.ms (brokers')
    num_partitions: int = 1  # num.partitions
    default_replication_factor: int = 1  # default.replication.factor
    # metadata.max.idle.interval.ms: the active controller appends a NoOpRecord when it has
    # written nothing for this long (Kafka's default 500; 0 turns it off).
    metadata_max_idle_interval_ms: int = 500
    # metadata.log.max.record.bytes.between.snapshots: a snapshot of the image after this many
    # bytes of records (Kafka's default 20 MiB).
    snapshot_max_bytes: int = 20 * 1024 * 1024
    # metadata.log.max.snapshot.interval.ms: and at least this often while records arrive.
    snapshot_interval_ms: int = 3_600_000
    # Producer ids are handed to brokers in blocks of this size (Kafka's 1000).
    producer_id_block_size: int = 1000
    # unclean.leader.election.enable (cluster default): elect a leader outside the ISR when
    # no ISR member is alive (data may be lost).
    unclean_leader_election: bool = False
    # unclean.leader.election.interval.ms: how often the active controller elects uncleanly
    # the leaderless partitions of topics that allow it (controller/periodic.py).
    unclean_leader_election_interval_ms: int = 300_000
    # auto.leader.rebalance.enable, leader.imbalance.check.interval.seconds (in ms here):
    # periodic preferred-replica elections of the partitions not led by their first replica.
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_ms: int = 300_000
    # delete.topic.enable: false refuses DeleteTopics (TOPIC_DELETION_DISABLED; INVALID_REQUEST
    # before v3), before authorization, as Kafka's ControllerApis.deleteTopics.
    delete_topic_enable: bool = True
    # create.topic.policy.class.name, alter.config.policy.class.name: Python plug-ins in the
    # shape of Kafka's policies (controller/policies.py), loaded by node/plugins.py.
    create_topic_policy: CreateTopicPolicy | None = field(default=None, compare=False)
    alter_config_policy: AlterConfigPolicy | None = field(default=None, compare=False)
    # min.insync.replicas (the controller's own): the cluster-wide value written when
    # eligible leader replicas are turned on, at bootstrap or by UpdateFeatures (KIP-966).
    min_insync_replicas: int = 1
    # Feature levels written into an empty log when the directory has no bootstrap records
    # (Kafka: the latest production level, as ``storage format`` defaults to).
    bootstrap_metadata_version: int = DEFAULT_METADATA_VERSION.level
    # zookeeper.metadata.migration.enable (KIP-866): this quorum migrates a ZooKeeper cluster.
    zk_migration_enabled: bool = False
    # inter.broker.listener.name: the listener every migrating ZooKeeper broker must register.
    inter_broker_listener_name: str = "PLAINTEXT"
    # zookeeper.metadata.migration.min.batch.size: records per batch of the initial load.
    migration_min_batch_size: int = 200
    # authorizer.class.name is Kafka's StandardAuthorizer (controller/authorizer.py): ACLs
    # from the log are enforced on every request; without it everything is allowed and the
    # ACL APIs answer SECURITY_DISABLED.
    authorizer: bool = False
    # super.users: principal strings (Type:name) allowed everything, before any ACL.
    super_users: tuple[str, ...] = ()
    # allow.everyone.if.no.acl.found: a resource no ACL names is open to all.
    allow_everyone_if_no_acl_found: bool = False
    # delegation.token.secret.key: tokens are on when set (the same on every node; never
    # logged). Lifetimes and the expiry sweep as Kafka's defaults.
    delegation_token_secret_key: str = field(default="", repr=False)
    delegation_token_max_lifetime_ms: int = 604_800_000
    delegation_token_expiry_time_ms: int = 86_400_000
    delegation_token_expiry_check_interval_ms: int = 3_600_000
    # group.* (the group coordinator's settings): the bounds GROUP configs are validated
    # against, as Kafka's controller passes its own to GroupConfig.validate.
    group_settings: GroupSettings = field(default=DEFAULT_GROUP_SETTINGS, compare=False)
    # remote.log.storage.system.enable: tiered storage on in the cluster; a topic may set
    # remote.storage.enable=true only then (controller/log_config.py).
    remote_log_storage_system_enable: bool = False
    # This node's id and the broker configs of its properties file that topic configs fall
    # back to (log.retention.ms, message.max.bytes, ...): what DescribeConfigs(TOPIC) shows
    # for a config the topic does not set, as STATIC_BROKER_CONFIG (controller/topic_defaults).
    node_id: int = 0
    static_broker_configs: Mapping[str, str] = field(default_factory=dict, compare=False)
