"""ZooKeeper's Kafka data (KIP-866): the znodes a Kafka 3.9 cluster keeps, their JSON, and the
metadata records a migration makes of them. Pure: no I/O; ``zk_client`` reads the znodes.

Formats are Kafka 3.9's ``kafka.zk.ZkData`` (see docs/kafka/ZK-MIGRATION.md section 3); the
records are what ``ZkMigrationClient.readAllMetadata`` produces, in its order: topics (each
with its configs and partitions), broker configs, client quotas and SCRAM credentials, the
producer id block. What pykraft cannot migrate is *refused*: listed with the reason, never
silently dropped (ACLs and delegation tokens: pykraft's controller keeps no authorizer state;
encrypted dynamic password configs: no ``password.encoder.secret`` support).
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import unquote_plus

from pykraft.metadata import records as r
from pykraft.storage.meta import kafka_to_uuid, uuid_to_kafka

__all__ = [
    "BROKER",
    "DEFAULT_ENTITY",
    "TOPIC",
    "MigrationLoad",
    "ZkDataError",
    "ZkSnapshot",
    "Znode",
    "controller_json",
    "migration_json",
    "parse_migration",
    "partition_state_json",
    "read_all_metadata",
    "topic_json",
]

# ConfigResource.Type ids
TOPIC: Final = 2
BROKER: Final = 4
DEFAULT_ENTITY: Final = "<default>"  # ZooKeeperInternals.DEFAULT_STRING
SCRAM_MECHANISMS: Final = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
# Dynamic broker configs of type PASSWORD (DynamicBrokerConfig.isPasswordConfig: a key that
# ends with one of them, listener prefixes included): ZooKeeper holds them encrypted.
PASSWORD_CONFIGS: Final = (
    "ssl.key.password",
    "ssl.keystore.password",
    "ssl.truststore.password",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.truststore.certificates",
    "sasl.jaas.config",
)
PRODUCER_ID_BLOCK_SIZE: Final = 1000

# Paths (ZkData.scala)
CLUSTER_ID: Final = "/cluster/id"
CONTROLLER: Final = "/controller"
CONTROLLER_EPOCH: Final = "/controller_epoch"
BROKER_IDS: Final = "/brokers/ids"
TOPICS: Final = "/brokers/topics"
DELETE_TOPICS: Final = "/admin/delete_topics"
CONFIG: Final = "/config"
PRODUCER_ID_BLOCK: Final = "/latest_producer_id_block"
MIGRATION: Final = "/migration"
ACLS: Final = ("/kafka-acl", "/kafka-acl-extended")
DELEGATION_TOKENS: Final = "/delegation_token/tokens"


class ZkDataError(ValueError):
    """A znode whose content is not what Kafka writes there."""


@dataclass(frozen=True, slots=True)
class Znode:
    data: bytes | None
    version: int  # the znode's data version (Stat.version): the fencing token and epochs
    children: tuple[str, ...] = ()


@dataclass(frozen=True)
class ZkSnapshot:
    """The znodes a migration reads, by path (``zk_client.read_snapshot``; or an export)."""

    nodes: Mapping[str, Znode]

    def get(self, path: str) -> Znode | None:
        return self.nodes.get(path)

    def children(self, path: str) -> tuple[str, ...]:
        node = self.nodes.get(path)
        return () if node is None else node.children

    def json(self, path: str) -> dict[str, Any] | None:
        node = self.nodes.get(path)
        if node is None or node.data is None:
            return None
        try:
            value = json.loads(node.data)
        except ValueError as e:
            raise ZkDataError(f"{path}: not JSON: {e}") from None
        if not isinstance(value, dict):
            raise ZkDataError(f"{path}: expected a JSON object")
        return value


@dataclass
class MigrationLoad:
    """What a migration of a snapshot writes: record batches in Kafka's order (each a list
    of ``(record, version)``), the broker ids the metadata names, and what it refuses."""

    batches: list[list[tuple[Any, int]]] = field(default_factory=list)
    broker_ids: set[int] = field(default_factory=set)
    refused: list[str] = field(default_factory=list)
    skipped_deletions: list[str] = field(default_factory=list)

    def records(self) -> Iterator[tuple[Any, int]]:
        for batch in self.batches:
            yield from batch

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for record, _ in self.records():
            name = type(record).__name__
            out[name] = out.get(name, 0) + 1
        return out


# -- reading -----------------------------------------------------------------------------------


def cluster_id(snapshot: ZkSnapshot) -> str | None:
    value = snapshot.json(CLUSTER_ID)
    return None if value is None else str(value["id"])


def read_all_metadata(snapshot: ZkSnapshot) -> MigrationLoad:
    """``ZkMigrationClient.readAllMetadata`` of ``snapshot``."""
    load = MigrationLoad()
    _topics(snapshot, load)
    _broker_configs(snapshot, load)
    _client_quotas(snapshot, load)
    _producer_ids(snapshot, load)
    for root in ACLS:
        if snapshot.children(root):
            load.refused.append(f"{root}: ACLs are not migrated (pykraft keeps no ACLs)")
    if snapshot.children(DELEGATION_TOKENS):
        load.refused.append(
            f"{DELEGATION_TOKENS}: delegation tokens are not migrated (pykraft keeps none)"
        )
    return load


def _topics(snapshot: ZkSnapshot, load: MigrationLoad) -> None:
    deleting = set(snapshot.children(DELETE_TOPICS))
    for name in sorted(snapshot.children(TOPICS)):
        if name in deleting:
            load.skipped_deletions.append(name)  # Kafka: logged, never migrated
            continue
        path = f"{TOPICS}/{name}"
        value = snapshot.json(path)
        if value is None:
            continue
        topic_id_text = value.get("topic_id")
        if not topic_id_text:
            load.refused.append(f"{path}: topic {name!r} has no topic id (IBP < 2.8)")
            continue
        topic_id = kafka_to_uuid(str(topic_id_text))
        batch: list[tuple[Any, int]] = [(r.TopicRecord(name=name, topic_id=topic_id), 0)]
        for key, val in _configs(snapshot, "topics", name, load).items():
            batch.append(
                (r.ConfigRecord(resource_type=TOPIC, resource_name=name, name=key, value=val), 0)
            )
        assignment = _int_lists(value.get("partitions", {}), path)
        adding = _int_lists(value.get("adding_replicas", {}), path)
        removing = _int_lists(value.get("removing_replicas", {}), path)
        for partition in sorted(assignment):
            replicas = assignment[partition]
            batch.append(
                (
                    _partition_record(
                        snapshot,
                        f"{path}/partitions/{partition}/state",
                        topic_id,
                        partition,
                        replicas,
                        adding.get(partition, ()),
                        removing.get(partition, ()),
                    ),
                    0,
                )
            )
            load.broker_ids.update(replicas)
            load.broker_ids.update(adding.get(partition, ()))
        load.batches.append(batch)


def _int_lists(value: object, path: str) -> dict[int, tuple[int, ...]]:
    if not isinstance(value, dict):
        raise ZkDataError(f"{path}: expected a map of partition to replicas")
    try:
        return {int(k): tuple(int(b) for b in v) for k, v in value.items()}
    except (TypeError, ValueError):
        raise ZkDataError(f"{path}: a partition or replica that is not an integer") from None


def _partition_record(
    snapshot: ZkSnapshot,
    state_path: str,
    topic_id: uuid.UUID,
    partition: int,
    replicas: tuple[int, ...],
    adding: tuple[int, ...],
    removing: tuple[int, ...],
) -> r.PartitionRecord:
    state = snapshot.json(state_path)
    node = snapshot.get(state_path)
    if state is None or node is None:
        # As Kafka: a partition without state starts with every replica in sync, the first
        # leading, epochs 0.
        isr, leader, leader_epoch, partition_epoch, recovery = replicas, replicas[0], 0, 0, 0
    else:
        isr = tuple(int(b) for b in state["isr"])
        leader = int(state["leader"])
        leader_epoch = int(state["leader_epoch"])
        partition_epoch = node.version  # the state znode's version is the partition epoch
        recovery = int(state.get("leader_recovery_state", 0))
    return r.PartitionRecord(
        partition_id=partition,
        topic_id=topic_id,
        replicas=replicas,
        isr=isr,
        removing_replicas=removing,
        adding_replicas=adding,
        leader=leader,
        leader_recovery_state=recovery,
        leader_epoch=leader_epoch,
        partition_epoch=partition_epoch,
    )


def _configs(
    snapshot: ZkSnapshot, entity_type: str, name: str, load: MigrationLoad
) -> dict[str, str]:
    """``/config/<type>/<name>``'s map, password configs refused."""
    path = f"{CONFIG}/{entity_type}/{name}"
    value = snapshot.json(path)
    if value is None:
        return {}
    config = value.get("config", {})
    if not isinstance(config, dict):
        raise ZkDataError(f"{path}: 'config' is not a map")
    out: dict[str, str] = {}
    for key, val in sorted(config.items()):
        if entity_type in ("topics", "brokers") and key.endswith(PASSWORD_CONFIGS):
            load.refused.append(
                f"{path}: {key} is an encrypted password config (password.encoder.secret is "
                "not supported); set it again after the migration"
            )
            continue
        out[str(key)] = str(val)
    return out


def _broker_configs(snapshot: ZkSnapshot, load: MigrationLoad) -> None:
    for entity in sorted(snapshot.children(f"{CONFIG}/brokers")):
        resource = "" if entity == DEFAULT_ENTITY else entity
        if resource:
            try:
                load.broker_ids.add(int(resource))
            except ValueError:
                raise ZkDataError(f"{CONFIG}/brokers/{entity}: not a broker id") from None
        batch: list[tuple[Any, int]] = [
            (r.ConfigRecord(resource_type=BROKER, resource_name=resource, name=k, value=v), 0)
            for k, v in _configs(snapshot, "brokers", entity, load).items()
        ]
        if batch:
            load.batches.append(batch)


def _entity(entity_type: str, znode_name: str) -> r.client_quota_record.EntityData:
    # A default quota entity's name is null (a default *config* entity's is "").
    name = None if znode_name == DEFAULT_ENTITY else unquote_plus(znode_name)
    return r.client_quota_record.EntityData(entity_type=entity_type, entity_name=name)


def _quota_batch(
    entity: tuple[r.client_quota_record.EntityData, ...], config: Mapping[str, str], path: str
) -> list[tuple[Any, int]]:
    batch: list[tuple[Any, int]] = []
    for key, value in sorted(config.items()):
        try:
            number = float(value)
        except ValueError:
            raise ZkDataError(f"{path}: quota {key}={value!r} is not a number") from None
        batch.append((r.ClientQuotaRecord(entity=entity, key=key, value=number), 0))
    return batch


def _client_quotas(snapshot: ZkSnapshot, load: MigrationLoad) -> None:
    """Users (with their SCRAM credentials), clients, users/clients, then ips: Kafka's order."""

    def entities(zk_type: str, entity_type: str) -> None:
        for znode in sorted(snapshot.children(f"{CONFIG}/{zk_type}")):
            path = f"{CONFIG}/{zk_type}/{znode}"
            config = _configs(snapshot, zk_type, znode, load)
            for mechanism, mech_type in SCRAM_MECHANISMS.items():
                text = config.pop(mechanism, None)
                if text is not None:
                    load.batches.append([(_scram(unquote_plus(znode), mech_type, text, path), 0)])
            batch = _quota_batch((_entity(entity_type, znode),), config, path)
            if batch:
                load.batches.append(batch)

    entities("users", "user")
    entities("clients", "client-id")
    for user in sorted(snapshot.children(f"{CONFIG}/users")):
        for client in sorted(snapshot.children(f"{CONFIG}/users/{user}/clients")):
            path = f"{CONFIG}/users/{user}/clients/{client}"
            config = _configs(snapshot, f"users/{user}/clients", client, load)
            entity = (_entity("user", user), _entity("client-id", client))
            batch = _quota_batch(entity, config, path)
            if batch:
                load.batches.append(batch)
    entities("ips", "ip")


def _scram(user: str, mechanism: int, text: str, path: str) -> r.UserScramCredentialRecord:
    """ScramCredentialUtils.credentialFromString: ``salt=..,stored_key=..,server_key=..,
    iterations=N`` (base64 values)."""
    try:
        fields = dict(part.split("=", 1) for part in text.split(","))
        return r.UserScramCredentialRecord(
            name=user,
            mechanism=mechanism,
            salt=base64.b64decode(fields["salt"]),
            stored_key=base64.b64decode(fields["stored_key"]),
            server_key=base64.b64decode(fields["server_key"]),
            iterations=int(fields["iterations"]),
        )
    except (KeyError, ValueError) as e:
        raise ZkDataError(f"{path}: not a SCRAM credential: {e}") from None


def _producer_ids(snapshot: ZkSnapshot, load: MigrationLoad) -> None:
    value = snapshot.json(PRODUCER_ID_BLOCK)
    if value is None:
        return
    # The next block's first id (KAFKA-15552: not the current block's).
    load.batches.append(
        [
            (
                r.ProducerIdsRecord(
                    broker_id=int(value["broker"]),
                    broker_epoch=-1,
                    next_producer_id=int(value["block_end"]) + 1,
                ),
                0,
            )
        ]
    )


# -- the controller's znodes -------------------------------------------------------------------


def _dump(value: Mapping[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def migration_json(
    controller_id: int, controller_epoch: int, metadata_offset: int, metadata_epoch: int
) -> bytes:
    """``/migration`` (MigrationZNode, version 0)."""
    return _dump(
        {
            "version": 0,
            "kraft_controller_id": controller_id,
            "kraft_controller_epoch": controller_epoch,
            "kraft_metadata_offset": metadata_offset,
            "kraft_metadata_epoch": metadata_epoch,
        }
    )


def parse_migration(data: bytes) -> tuple[int, int, int, int]:
    """``/migration`` -> (controller id, controller epoch, metadata offset, metadata epoch);
    any version but 0 is refused, as Kafka does."""
    try:
        value = json.loads(data)
        if value.get("version") != 0:
            raise ZkDataError(f"/migration: unknown version {value.get('version')!r}")
        return (
            int(value["kraft_controller_id"]),
            int(value["kraft_controller_epoch"]),
            int(value["kraft_metadata_offset"]),
            int(value["kraft_metadata_epoch"]),
        )
    except (ValueError, KeyError, AttributeError) as e:
        raise ZkDataError(f"/migration: {e}") from None


def controller_json(broker_id: int, timestamp_ms: int, kraft_controller_epoch: int) -> bytes:
    """``/controller`` (ControllerZNode version 2; the timestamp is a string)."""
    return _dump(
        {
            "version": 2,
            "brokerid": broker_id,
            "timestamp": str(timestamp_ms),
            "kraftControllerEpoch": kraft_controller_epoch,
        }
    )


def topic_json(
    topic_id: uuid.UUID,
    partitions: Mapping[int, tuple[int, ...]],
    adding: Mapping[int, tuple[int, ...]],
    removing: Mapping[int, tuple[int, ...]],
) -> bytes:
    """``/brokers/topics/<t>`` (TopicZNode version 3; the adding/removing maps hold only
    partitions with a non-empty list)."""
    return _dump(
        {
            "version": 3,
            "partitions": {str(p): list(b) for p, b in sorted(partitions.items())},
            "adding_replicas": {str(p): list(b) for p, b in sorted(adding.items()) if b},
            "removing_replicas": {str(p): list(b) for p, b in sorted(removing.items()) if b},
            "topic_id": uuid_to_kafka(topic_id),
        }
    )


def partition_state_json(
    leader: int, leader_epoch: int, controller_epoch: int, isr: tuple[int, ...], recovering: bool
) -> bytes:
    """``/brokers/topics/<t>/partitions/<p>/state`` (version 1; ``leader_recovery_state`` only
    while RECOVERING)."""
    value: dict[str, Any] = {
        "version": 1,
        "leader": leader,
        "leader_epoch": leader_epoch,
        "controller_epoch": controller_epoch,
        "isr": list(isr),
    }
    if recovering:
        value["leader_recovery_state"] = 1
    return _dump(value)


# -- KRaft -> ZooKeeper: what the znodes must say (SYNC_KRAFT_TO_ZK, DUAL_WRITE) ---------------


@dataclass(frozen=True, slots=True)
class ZkOp:
    """One write: ``kind`` is ``create``, ``set`` or ``delete``."""

    kind: str
    path: str
    data: bytes = b""


@dataclass(frozen=True)
class DesiredTopic:
    topic_id: uuid.UUID
    partitions: Mapping[int, tuple[int, ...]]
    adding: Mapping[int, tuple[int, ...]]
    removing: Mapping[int, tuple[int, ...]]
    # partition -> (leader, leader epoch, isr, recovering)
    states: Mapping[int, tuple[int, int, tuple[int, ...], bool]]


@dataclass(frozen=True)
class DesiredZk:
    """What ZooKeeper must hold for the image (taken on the event loop, diffed off it)."""

    topics: Mapping[str, DesiredTopic]
    configs: Mapping[tuple[str, str], Mapping[str, str]]  # ("topics"|"brokers", name)
    kraft_epoch: int


def desired(image: Any, kraft_epoch: int) -> DesiredZk:
    """``image`` (a ``controller.image.Image``) as ZooKeeper's topic and config znodes."""
    topics: dict[str, DesiredTopic] = {}
    for t in image.topics.values():
        parts = t.partitions
        topics[t.name] = DesiredTopic(
            t.topic_id,
            {i: p.replicas for i, p in parts.items()},
            {i: p.adding for i, p in parts.items() if p.adding},
            {i: p.removing for i, p in parts.items() if p.removing},
            {
                i: (p.leader, p.leader_epoch, p.isr, p.leader_recovery_state == 1)
                for i, p in parts.items()
            },
        )
    configs: dict[tuple[str, str], dict[str, str]] = {}
    for (resource_type, name), values in image.configs.items():
        if resource_type == TOPIC:
            configs[("topics", name)] = dict(values)
        elif resource_type == BROKER:
            configs[("brokers", name or DEFAULT_ENTITY)] = dict(values)
    return DesiredZk(topics, configs, kraft_epoch)


def _config_json(config: Mapping[str, str]) -> bytes:
    return json.dumps(
        {"version": 1, "config": dict(sorted(config.items()))}, separators=(",", ":")
    ).encode()


def reconcile(want: DesiredZk, have: ZkSnapshot) -> tuple[list[ZkOp], list[str]]:
    """The writes that make ``have`` say what ``want`` says (Kafka's KRaftMigrationZkWriter
    snapshot reconciliation, topics and topic/broker configs), parents before children,
    children before parents for deletes; and the config entity paths changed (each gets a
    ``config_change_`` notification, written outside the fenced writes)."""
    ops: list[ZkOp] = []
    changed: list[str] = []
    existing = set(have.children(TOPICS))
    for name in sorted(want.topics):
        topic = want.topics[name]
        path = f"{TOPICS}/{name}"
        body = topic_json(topic.topic_id, topic.partitions, topic.adding, topic.removing)
        current = have.json(path) if name in existing else None
        if current is None:
            ops.append(ZkOp("create", path, body))
            if have.get(f"{CONFIG}/topics/{name}") is None and ("topics", name) not in want.configs:
                ops.append(ZkOp("create", f"{CONFIG}/topics/{name}", _config_json({})))
            ops.append(ZkOp("create", f"{path}/partitions"))
        elif _assignment(current) != _assignment(json.loads(body)):
            ops.append(ZkOp("set", path, body))
        for partition in sorted(topic.partitions):
            leader, epoch, isr, recovering = topic.states[partition]
            state_path = f"{path}/partitions/{partition}/state"
            state = partition_state_json(leader, epoch, want.kraft_epoch, isr, recovering)
            current_state = have.json(state_path) if current is not None else None
            if current is not None and have.get(f"{path}/partitions") is None:
                ops.append(ZkOp("create", f"{path}/partitions"))
            if current_state is None:
                if current is None or have.get(f"{path}/partitions/{partition}") is None:
                    ops.append(ZkOp("create", f"{path}/partitions/{partition}"))
                ops.append(ZkOp("create", state_path, state))
            elif (
                int(current_state.get("leader", -1)),
                int(current_state.get("leader_epoch", -1)),
                tuple(current_state.get("isr", ())),
                int(current_state.get("leader_recovery_state", 0)) == 1,
            ) != (leader, epoch, isr, recovering):
                ops.append(ZkOp("set", state_path, state))
        if current is not None:
            for extra in sorted(
                set(_ints(have.children(f"{path}/partitions"))) - set(topic.partitions)
            ):
                ops += _delete_partition(path, extra, have)
    for name in sorted(existing - set(want.topics)):
        path = f"{TOPICS}/{name}"
        for partition in sorted(_ints(have.children(f"{path}/partitions"))):
            ops += _delete_partition(path, partition, have)
        if have.get(f"{path}/partitions") is not None:
            ops.append(ZkOp("delete", f"{path}/partitions"))
        ops.append(ZkOp("delete", path))
        if have.get(f"{CONFIG}/topics/{name}") is not None:
            ops.append(ZkOp("delete", f"{CONFIG}/topics/{name}"))
    for (kind, name), config in sorted(want.configs.items()):
        if kind == "topics" and name not in want.topics:
            continue
        path = f"{CONFIG}/{kind}/{name}"
        current_config = (have.json(path) or {}).get("config") if have.get(path) else None
        if current_config == dict(config):
            continue
        ops.append(
            ZkOp("set" if have.get(path) is not None else "create", path, _config_json(config))
        )
        changed.append(f"{kind}/{name}")
    for kind in ("topics", "brokers"):
        for name in have.children(f"{CONFIG}/{kind}"):
            path = f"{CONFIG}/{kind}/{name}"
            if (kind, name) in want.configs or (kind == "topics" and name not in want.topics):
                continue
            if (have.json(path) or {}).get("config"):
                ops.append(ZkOp("set", path, _config_json({})))  # every key removed
                changed.append(f"{kind}/{name}")
    return ops, changed


def _assignment(value: Mapping[str, Any]) -> tuple[Any, ...]:
    return (
        value.get("topic_id"),
        {str(k): list(v) for k, v in value.get("partitions", {}).items()},
        {str(k): list(v) for k, v in value.get("adding_replicas", {}).items() if v},
        {str(k): list(v) for k, v in value.get("removing_replicas", {}).items() if v},
    )


def _ints(names: Iterable[str]) -> list[int]:
    return [int(n) for n in names if n.isdigit()]


def _delete_partition(topic_path: str, partition: int, have: ZkSnapshot) -> list[ZkOp]:
    path = f"{topic_path}/partitions/{partition}"
    ops = []
    if have.get(f"{path}/state") is not None:
        ops.append(ZkOp("delete", f"{path}/state"))
    ops.append(ZkOp("delete", path))
    return ops


def config_change_json(entity_path: str) -> bytes:
    """``/config/changes/config_change_<seq>`` (version 2)."""
    return json.dumps({"version": 2, "entity_path": entity_path}, separators=(",", ":")).encode()
