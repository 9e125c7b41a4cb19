"""What a migrating controller writes to ZooKeeper (KIP-866): its own znodes (``/migration``,
``/controller``) and, from SYNC_KRAFT_TO_ZK on, the Kafka data a ZooKeeper-mode broker or a
rollback reads -- topics, partition states, configs, ACLs (``zk_acls.py``) -- as Kafka 3.9's
``kafka.zk.ZkData``
formats them. ``desired`` says what the znodes must hold for a metadata image,
``reconcile`` the operations that make ZooKeeper say it. Pure: ``migration_host`` runs them.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pykraft.metadata.delta import MetadataDelta
from pykraft.metadata.image import Image, TopicState
from pykraft.migration import zk_acls, zk_tokens
from pykraft.migration.zk_acls import ZkAcls
from pykraft.migration.zk_data import (
    BROKER,
    CONFIG,
    DEFAULT_ENTITY,
    DELETE_TOPICS,
    PRODUCER_ID_BLOCK,
    PRODUCER_ID_BLOCK_SIZE,
    TOPIC,
    TOPICS,
    ZkDataError,
    ZkSnapshot,
    Znode,
)
from pykraft.storage.meta import uuid_to_kafka

__all__ = [
    "DesiredTopic",
    "DesiredZk",
    "ZkModel",
    "ZkOp",
    "config_change_json",
    "controller_json",
    "desired",
    "migration_json",
    "parse_migration",
    "partition_state_json",
    "producer_id_block_json",
    "reconcile",
    "topic_json",
]


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


def producer_id_block_json(next_producer_id: int) -> bytes:
    """``/latest_producer_id_block`` (ProducerIdBlockZNode version 1) as Kafka's migrating
    controller writes it (``ZkMigrationClient.writeProducerId``): a block of
    ``PRODUCER_ID_BLOCK_SIZE`` owned by no broker (-1) starting at the next id the log would
    hand out, so a ZooKeeper-mode controller after a rollback allocates after it (from
    ``block_end + 1``); ids are strings, as Kafka writes them."""
    return _dump(
        {
            "version": 1,
            "broker": -1,
            "block_start": str(next_producer_id),
            "block_end": str(next_producer_id + PRODUCER_ID_BLOCK_SIZE - 1),
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
    next_producer_id: int = 0  # 0: none handed out (no ProducerIdsRecord)
    # resource znode -> ACEs (zk_acls); None: ACLs not in this write's scope
    acls: ZkAcls | None = None
    # token id -> token (zk_tokens); None: tokens not in this write's scope
    tokens: Mapping[str, zk_tokens.Token] | None = None


def desired(image: Image, kraft_epoch: int, scope: MetadataDelta | None = None) -> DesiredZk:
    """``image`` as ZooKeeper's topic and config znodes and producer id block; with
    ``scope``, only what it names (a dual write's delta: the rest did not change)."""
    topics: dict[str, DesiredTopic] = {}
    names = image.topics_by_name.keys() if scope is None else scope.topic_names()
    for name in names:
        topic_id = image.topics_by_name.get(name)
        if topic_id is not None:
            topics[name] = _desired_topic(image.topics[topic_id])
    configs: dict[tuple[str, str], dict[str, str]] = {}
    # A topic in scope brings its config znode (reconcile compares the two together).
    keys = (
        image.configs.keys()
        if scope is None
        else scope.configs | {(TOPIC, name) for name in topics}
    )
    for key in keys:
        values = image.configs.get(key)
        zk_key = _zk_entity(key)
        if values and zk_key is not None:
            configs[zk_key] = dict(values)
    next_id = int(image.next_producer_id) if scope is None or scope.producer_ids else 0
    acls = (
        zk_acls.desired_acls(rec for rec, _ in image.acls.records())
        if scope is None or scope.acls
        else None
    )
    tokens = (
        zk_tokens.desired_tokens(image.tokens.by_id.values())
        if scope is None or scope.tokens
        else None
    )
    return DesiredZk(topics, configs, kraft_epoch, next_id, acls, tokens)


def _desired_topic(t: TopicState) -> DesiredTopic:
    parts = t.partitions
    return DesiredTopic(
        t.topic_id,
        {i: p.replicas for i, p in parts.items()},
        {i: p.adding for i, p in parts.items() if p.adding},
        {i: p.removing for i, p in parts.items() if p.removing},
        {
            i: (p.leader, p.leader_epoch, p.isr, p.leader_recovery_state == 1)
            for i, p in parts.items()
        },
    )


def _zk_entity(key: tuple[int, str]) -> tuple[str, str] | None:
    """An image config resource as ZooKeeper's config entity (``/config/<kind>/<name>``)."""
    resource_type, name = key
    if resource_type == TOPIC:
        return ("topics", name)
    if resource_type == BROKER:
        return ("brokers", name or DEFAULT_ENTITY)
    return None


class ZkModel:
    """What ZooKeeper's metadata znodes hold, as this controller last wrote them: valid from
    a full reconciliation on, while its fenced writes are the only metadata writes (in dual
    write the ZooKeeper-mode brokers write none, and another controller's writes fail this
    one's fencing). A dual write reconciles its scope against this model instead of reading
    ZooKeeper again (Kafka's ``KRaftMigrationZkWriter.handleDelta``)."""

    def __init__(self, want: DesiredZk, have: ZkSnapshot, ops: Iterable[ZkOp]) -> None:
        """After the full reconciliation of ``want`` against ``have`` with ``ops``."""
        self.topics: dict[str, DesiredTopic] = dict(want.topics)
        self.configs: dict[tuple[str, str], Mapping[str, str]] = dict(want.configs)
        for name in have.children(f"{CONFIG}/brokers"):  # emptied ones stay, empty
            self.configs.setdefault(("brokers", name), {})
        block = have.get(PRODUCER_ID_BLOCK)
        self.producer_block: bytes | None = None if block is None else block.data
        self.kraft_epoch = want.kraft_epoch
        self.acls: dict[str, frozenset[zk_acls.AclEntry]] = dict(
            want.acls if want.acls is not None else zk_acls.read_acls(have)
        )
        self.acl_parents = zk_acls.acl_parents(have)
        self.tokens: dict[str, zk_tokens.Token] = dict(
            want.tokens if want.tokens is not None else zk_tokens.read_tokens(have)
        )
        self.token_root = have.get(zk_tokens.TOKENS) is not None
        self._wrote(ops)

    def _wrote(self, ops: Iterable[ZkOp]) -> None:
        for op in ops:
            if op.path == PRODUCER_ID_BLOCK and op.kind != "delete":
                self.producer_block = op.data
            elif (
                op.kind == "create"
                and op.path.startswith(zk_acls.ACL_ROOTS)
                and not zk_acls.is_resource(op.path)
            ):
                self.acl_parents.add(op.path)
            elif op.kind == "create" and op.path == zk_tokens.TOKENS:
                self.token_root = True

    def snapshot(self, scope: MetadataDelta) -> ZkSnapshot:
        """The znodes in ``scope`` as ZooKeeper holds them (for ``reconcile``)."""
        nodes: dict[str, Znode] = {}
        names = sorted(n for n in scope.topic_names() if n in self.topics)
        nodes[TOPICS] = Znode(None, 0, tuple(names))
        topic_configs: list[str] = []
        for name in names:
            topic = self.topics[name]
            path = f"{TOPICS}/{name}"
            nodes[path] = Znode(
                topic_json(topic.topic_id, topic.partitions, topic.adding, topic.removing), 0
            )
            nodes[f"{path}/partitions"] = Znode(
                None, 0, tuple(str(p) for p in sorted(topic.partitions))
            )
            for partition, (leader, epoch, isr, recovering) in topic.states.items():
                nodes[f"{path}/partitions/{partition}"] = Znode(None, 0)
                state = partition_state_json(leader, epoch, self.kraft_epoch, isr, recovering)
                nodes[f"{path}/partitions/{partition}/state"] = Znode(state, 0)
            # Every topic the reconciliation wrote has a config znode (empty or not).
            nodes[f"{CONFIG}/topics/{name}"] = Znode(
                _config_json(self.configs.get(("topics", name), {})), 0
            )
            topic_configs.append(name)
        brokers: list[str] = []
        for key in scope.configs:
            entity = _zk_entity(key)
            if entity is None or entity[0] != "brokers" or entity not in self.configs:
                continue
            nodes[f"{CONFIG}/brokers/{entity[1]}"] = Znode(_config_json(self.configs[entity]), 0)
            brokers.append(entity[1])
        nodes[f"{CONFIG}/topics"] = Znode(None, 0, tuple(topic_configs))
        nodes[f"{CONFIG}/brokers"] = Znode(None, 0, tuple(sorted(brokers)))
        if scope.producer_ids and self.producer_block is not None:
            nodes[PRODUCER_ID_BLOCK] = Znode(self.producer_block, 0)
        if scope.acls:
            nodes.update(zk_acls.acl_nodes(self.acls, self.acl_parents))
        if scope.tokens:
            nodes.update(zk_tokens.token_nodes(self.tokens, self.token_root))
        return ZkSnapshot(nodes)

    def apply(self, want: DesiredZk, scope: MetadataDelta, ops: Iterable[ZkOp]) -> None:
        """``ops`` (``reconcile`` of ``want``, of ``scope``) were written: ZooKeeper now says
        what ``want`` says."""
        for name in scope.topic_names():
            topic = want.topics.get(name)
            if topic is None:
                self.topics.pop(name, None)
                self.configs.pop(("topics", name), None)
            else:
                self.topics[name] = topic
        for key in scope.configs:
            entity = _zk_entity(key)
            if entity is None:
                continue
            config = want.configs.get(entity)
            if config:
                self.configs[entity] = config
            elif entity[0] == "brokers":
                if entity in self.configs:
                    self.configs[entity] = {}  # emptied, not deleted (as reconcile does)
            else:
                self.configs.pop(entity, None)
        if want.acls is not None:
            self.acls = dict(want.acls)
        if want.tokens is not None:
            self.tokens = dict(want.tokens)
        self._wrote(ops)
        self.kraft_epoch = want.kraft_epoch


def _config_json(config: Mapping[str, str]) -> bytes:
    return json.dumps(
        {"version": 1, "config": dict(sorted(config.items()))}, separators=(",", ":")
    ).encode()


def _partition_state_ops(
    want: DesiredZk,
    have: ZkSnapshot,
    path: str,
    topic: DesiredTopic,
    partition: int,
    new_topic: bool,
) -> list[ZkOp]:
    """The writes that make one partition's state znode say what the image says."""
    ops: list[ZkOp] = []
    leader, epoch, isr, recovering = topic.states[partition]
    state_path = f"{path}/partitions/{partition}/state"
    state = partition_state_json(leader, epoch, want.kraft_epoch, isr, recovering)
    current_state = have.json(state_path) if not new_topic else None
    if not new_topic and have.get(f"{path}/partitions") is None:
        ops.append(ZkOp("create", f"{path}/partitions"))
    if current_state is None:
        if new_topic or have.get(f"{path}/partitions/{partition}") is None:
            ops.append(ZkOp("create", f"{path}/partitions/{partition}"))
        ops.append(ZkOp("create", state_path, state))
    elif (
        int(current_state.get("leader", -1)),
        int(current_state.get("leader_epoch", -1)),
        tuple(current_state.get("isr", ())),
        int(current_state.get("leader_recovery_state", 0)) == 1,
    ) != (leader, epoch, isr, recovering):
        ops.append(ZkOp("set", state_path, state))
    return ops


def reconcile(want: DesiredZk, have: ZkSnapshot) -> tuple[list[ZkOp], list[str]]:
    """The writes that make ``have`` say what ``want`` says (Kafka's KRaftMigrationZkWriter
    snapshot reconciliation: topics, topic/broker configs, the producer id block), parents
    before children, children before parents for deletes; and the config entity paths changed
    (each gets a ``config_change_`` notification, written outside the fenced writes). A
    topic deleted from the log also loses its ``/admin/delete_topics`` entry, as Kafka's
    ``deleteTopic`` clears it."""
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
            ops += _partition_state_ops(want, have, path, topic, partition, current is None)
        if current is not None:
            for extra in sorted(
                set(_ints(have.children(f"{path}/partitions"))) - set(topic.partitions)
            ):
                ops += _delete_partition(path, extra, have)
    for name in sorted(existing - set(want.topics)):
        # Kafka's deleteTopic order: the partition states, the config, then the topic's own
        # znodes (a reader that no longer sees the topic no longer sees its config either).
        path = f"{TOPICS}/{name}"
        for partition in sorted(_ints(have.children(f"{path}/partitions"))):
            ops += _delete_partition(path, partition, have)
        if have.get(f"{CONFIG}/topics/{name}") is not None:
            ops.append(ZkOp("delete", f"{CONFIG}/topics/{name}"))
        if have.get(f"{path}/partitions") is not None:
            ops.append(ZkOp("delete", f"{path}/partitions"))
        ops.append(ZkOp("delete", path))
    for name in sorted(set(have.children(DELETE_TOPICS)) - set(want.topics)):
        ops.append(ZkOp("delete", f"{DELETE_TOPICS}/{name}"))
    _config_ops(want, have, ops, changed)
    _producer_id_op(want, have, ops)
    if want.acls is not None:
        ops += [ZkOp(kind, path, data) for kind, path, data in zk_acls.acl_ops(want.acls, have)]
    if want.tokens is not None:
        ops += [
            ZkOp(kind, path, data) for kind, path, data in zk_tokens.token_ops(want.tokens, have)
        ]
    return ops, changed


def _producer_id_op(want: DesiredZk, have: ZkSnapshot, ops: list[ZkOp]) -> None:
    """The producer id block, when the log handed out ids ZooKeeper's block does not cover
    (Kafka's ``handleProducerIdSnapshot``/``handleProducerIdDelta``): without it, a rollback
    to a ZooKeeper controller would hand out the same ids again."""
    if not want.next_producer_id:
        return
    current = have.json(PRODUCER_ID_BLOCK) if have.get(PRODUCER_ID_BLOCK) is not None else None
    try:
        covered = int(current["block_end"]) + 1 if current is not None else 0
    except (KeyError, TypeError, ValueError):
        covered = 0
    if covered >= want.next_producer_id:
        return
    body = producer_id_block_json(want.next_producer_id)
    ops.append(ZkOp("set" if current is not None else "create", PRODUCER_ID_BLOCK, body))


def _config_ops(want: DesiredZk, have: ZkSnapshot, ops: list[ZkOp], changed: list[str]) -> None:
    """Topic and broker configs: each entity ``want`` has is written when it differs; one it
    no longer has is emptied (a deleted topic's configs go with the topic)."""
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
