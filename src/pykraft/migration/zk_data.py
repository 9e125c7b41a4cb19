"""ZooKeeper's Kafka data (KIP-866): the znodes a Kafka 3.9 cluster keeps, their JSON, and the
metadata records a migration makes of them (SPEC G1). Pure: no I/O; ``zk_client`` reads the
znodes.
The other direction (what a migrating controller writes to ZooKeeper) is ``zk_writes.py``.

Formats are Kafka 3.9's ``kafka.zk.ZkData`` (see docs/kafka/ZK-MIGRATION.md section 3); the
records are what ``ZkMigrationClient.readAllMetadata`` produces, in its order: topics (each
with its configs and partitions), broker configs, client quotas and SCRAM credentials, the
producer id block, ACLs (``zk_acls.py``), delegation tokens (``zk_tokens.py``). What pykraft
cannot migrate is *refused*: listed with the reason, never silently dropped (encrypted
dynamic password configs: no ``password.encoder.secret`` support).
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import unquote_plus

from pykraft.metadata import records as r
from pykraft.migration import zk_acls, zk_tokens
from pykraft.storage.meta import kafka_to_uuid

__all__ = [
    "BROKER",
    "DEFAULT_ENTITY",
    "TOPIC",
    "MigrationLoad",
    "ZkDataError",
    "ZkSnapshot",
    "Znode",
    "read_all_metadata",
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
ACLS: Final = zk_acls.ACL_ROOTS
DELEGATION_TOKENS: Final = zk_tokens.TOKENS


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
    try:
        load.batches.extend(zk_acls.acl_records(zk_acls.read_acls(snapshot)))
        load.batches.extend(zk_tokens.token_records(zk_tokens.read_tokens(snapshot)))
    except ValueError as e:
        raise ZkDataError(str(e)) from None
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
