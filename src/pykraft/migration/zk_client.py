"""ZooKeeper I/O of the migration, through kazoo: reading every znode a migration needs into a
:class:`~pykraft.migration.zk_data.ZkSnapshot` (pipelined: each level's reads are all sent
before the first answer is awaited, so 100,000 partitions cost round trips per level, not
per znode)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from pykraft.migration import zk_acls, zk_tokens
from pykraft.migration import zk_data as z

__all__ = [
    "TOP_LEVEL_PATHS",
    "close",
    "connect",
    "ensure_top_level_paths",
    "read_snapshot",
    "session",
]

_CONFIG_TYPES = ("topics", "brokers", "users", "clients", "ips")

# Persistent paths Kafka creates before anything else (KafkaZkClient.createTopLevelPaths).
TOP_LEVEL_PATHS = (
    "/consumers",
    "/brokers/ids",
    "/brokers/topics",
    "/config/changes",
    "/admin/delete_topics",
    "/brokers/seqid",
    "/isr_change_notification",
    "/latest_producer_id_block",
    "/log_dir_event_notification",
    "/config/topics",
    "/config/clients",
    "/config/users",
    "/config/brokers",
    "/config/ips",
)


def ensure_top_level_paths(client: KazooClient) -> None:
    """Kafka's persistent top-level znodes, created where missing (a migrating controller
    writes under them)."""
    for path in TOP_LEVEL_PATHS:
        client.ensure_path(path)


def connect(hosts: str, *, timeout_s: float = 15) -> KazooClient:
    """A started client of ``zookeeper.connect`` ``hosts`` (a chroot suffix allowed)."""
    client = KazooClient(hosts=hosts, timeout=timeout_s)
    client.start(timeout=timeout_s)
    return client


def close(client: KazooClient) -> None:
    """Stop and close ``client`` (its sockets too)."""
    client.stop()
    client.close()


@contextlib.contextmanager
def session(hosts: str, *, timeout_s: float = 15) -> Iterator[KazooClient]:
    """A client of ``hosts`` for a ``with`` block."""
    client = connect(hosts, timeout_s=timeout_s)
    try:
        yield client
    finally:
        close(client)


def _get_all(zk: KazooClient, paths: Iterable[str], *, children: bool) -> dict[str, z.Znode]:
    """Data (and children) of ``paths``; absent znodes are left out."""
    paths = list(paths)
    pending: list[tuple[str, Any, Any]] = [
        (p, zk.get_async(p), zk.get_children_async(p) if children else None) for p in paths
    ]
    out: dict[str, z.Znode] = {}
    for path, data_result, children_result in pending:
        try:
            data, stat = data_result.get()
            kids = tuple(children_result.get()) if children_result is not None else ()
        except NoNodeError:
            continue
        out[path] = z.Znode(data or None, stat.version, kids)
    return out


def read_snapshot(zk: KazooClient) -> z.ZkSnapshot:
    """Every znode ``zk_data.read_all_metadata`` and the migration driver read."""
    nodes: dict[str, z.Znode] = {}
    top = [
        z.CLUSTER_ID,
        z.CONTROLLER,
        z.CONTROLLER_EPOCH,
        z.MIGRATION,
        z.PRODUCER_ID_BLOCK,
        z.BROKER_IDS,
        z.TOPICS,
        z.DELETE_TOPICS,
        z.DELEGATION_TOKENS,
        *z.ACLS,
        *(f"{z.CONFIG}/{t}" for t in _CONFIG_TYPES),
    ]
    nodes.update(_get_all(zk, top, children=True))

    def kids(path: str) -> list[str]:
        node = nodes.get(path)
        return [] if node is None else [f"{path}/{c}" for c in node.children]

    nodes.update(_get_all(zk, kids(z.BROKER_IDS), children=False))
    topics = kids(z.TOPICS)
    nodes.update(_get_all(zk, topics, children=False))
    nodes.update(_get_all(zk, (f"{t}/partitions" for t in topics), children=True))
    states = [f"{p}/state" for t in topics for p in kids(f"{t}/partitions")]
    nodes.update(_get_all(zk, states, children=False))
    entities = [e for t in _CONFIG_TYPES for e in kids(f"{z.CONFIG}/{t}")]
    nodes.update(_get_all(zk, entities, children=False))
    users = kids(f"{z.CONFIG}/users")
    nodes.update(_get_all(zk, (f"{u}/clients" for u in users), children=True))
    clients = [c for u in users for c in kids(f"{u}/clients")]
    nodes.update(_get_all(zk, clients, children=False))
    # ACLs: /kafka-acl/<Type>/<name> and /kafka-acl-extended/prefixed/<Type>/<name>
    nodes.update(_get_all(zk, kids(zk_acls.EXTENDED_ROOT), children=True))
    types = kids(zk_acls.LITERAL_ROOT) + kids(zk_acls.PREFIXED_ROOT)
    nodes.update(_get_all(zk, types, children=True))
    nodes.update(_get_all(zk, [r for t in types for r in kids(t)], children=False))
    nodes.update(_get_all(zk, [zk_tokens.ROOT], children=True))
    nodes.update(_get_all(zk, kids(zk_tokens.TOKENS), children=False))
    return z.ZkSnapshot(nodes)
