"""Partition reassignment through the controllers (KIP-455's API; KIP-435's v1 listing and
cluster-wide limits): what ``pykraft reassign`` and embedding programs call."""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pykraft.admin.client import AdminClient, AdminError
from pykraft.admin.metadata import controller_call
from pykraft.protocol import ApiKey, ErrorCode

__all__ = [
    "Ongoing",
    "Step",
    "alter_cluster_configs",
    "alter_reassignments",
    "cluster_configs",
    "list_reassignments",
]

BROKER_RESOURCE = 4
Partition = tuple[str, int]


@dataclass(frozen=True)
class Ongoing:
    """A partition being reassigned: its replica list, the replicas still to add and to
    remove on the way to ``final`` (its final target, in order)."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]
    final: tuple[int, ...]


@dataclass(frozen=True)
class Step:
    """The step in flight of a partition (KIP-435's batch): from ``current`` to ``target``."""

    topic: str
    partition: int
    current: tuple[int, ...]
    target: tuple[int, ...]


async def alter_reassignments(
    admin: AdminClient, plan: Mapping[Partition, Sequence[int] | None]
) -> dict[Partition, AdminError | None]:
    """AlterPartitionReassignments: each partition to its replicas (None cancels); per
    partition None or the error the controller answered."""
    topics: dict[str, list[dict[str, Any]]] = {}
    for (topic, index), replicas in sorted(plan.items()):
        topics.setdefault(topic, []).append(
            {"partition_index": index, "replicas": None if replicas is None else list(replicas)}
        )
    m = await controller_call(
        admin,
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        {
            "timeout": datetime.timedelta(milliseconds=admin.timeout_ms),
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
        },
        "AlterPartitionReassignments",
    )
    out: dict[Partition, AdminError | None] = {}
    for topic in m.responses:
        for p in topic.partitions:
            code = ErrorCode(p.error_code)
            out[(topic.name, int(p.partition_index))] = (
                None if code == ErrorCode.none else AdminError(code, p.error_message)
            )
    return out


async def list_reassignments(
    admin: AdminClient, partitions: Iterable[Partition] | None = None
) -> tuple[list[Ongoing], list[Step]]:
    """ListPartitionReassignments (v1 where the controller serves it): the partitions
    moving and the steps in flight."""
    topics: list[dict[str, Any]] | None = None
    if partitions is not None:
        by_topic: dict[str, list[int]] = {}
        for topic, index in partitions:
            by_topic.setdefault(topic, []).append(index)
        topics = [{"name": t, "partition_indexes": ps} for t, ps in sorted(by_topic.items())]
    m = await controller_call(
        admin,
        ApiKey.LIST_PARTITION_REASSIGNMENTS,
        {"timeout": datetime.timedelta(milliseconds=admin.timeout_ms), "topics": topics},
        "ListPartitionReassignments",
    )
    ongoing = []
    for topic in m.topics:
        for p in topic.partitions:
            replicas = tuple(int(b) for b in p.replicas)
            adding = tuple(int(b) for b in p.adding_replicas)
            removing = tuple(int(b) for b in p.removing_replicas)
            final = tuple(int(b) for b in getattr(p, "final_replicas", ())) or tuple(
                b for b in replicas if b not in removing
            )
            ongoing.append(
                Ongoing(topic.name, int(p.partition_index), replicas, adding, removing, final)
            )
    steps = [
        Step(
            topic.name,
            int(p.partition_id),
            tuple(int(b) for b in p.current_brokers),
            tuple(int(b) for b in p.target_brokers),
        )
        for topic in getattr(m, "current_batch", ())
        for p in topic.partitions
    ]
    return ongoing, steps


async def alter_cluster_configs(
    admin: AdminClient, set_configs: Mapping[str, str], delete: Sequence[str] = ()
) -> None:
    """IncrementalAlterConfigs of the cluster default broker resource; raises AdminError."""
    ops = [{"name": k, "config_operation": 0, "value": v} for k, v in set_configs.items()]
    ops += [{"name": k, "config_operation": 1, "value": None} for k in delete]
    if not ops:
        return
    m = await controller_call(
        admin,
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        {
            "resources": [{"resource_type": BROKER_RESOURCE, "resource_name": "", "configs": ops}],
            "validate_only": False,
        },
        "IncrementalAlterConfigs",
    )
    result = m.responses[0]
    if result.error_code != 0:
        raise AdminError(ErrorCode(result.error_code), result.error_message)


async def cluster_configs(admin: AdminClient) -> dict[str, str]:
    """The dynamic configs of the cluster default broker resource."""
    m = await controller_call(
        admin,
        ApiKey.DESCRIBE_CONFIGS,
        {
            "resources": [
                {"resource_type": BROKER_RESOURCE, "resource_name": "", "configuration_keys": None}
            ],
            "include_synonyms": False,
            "include_documentation": False,
        },
        "DescribeConfigs",
    )
    result = m.results[0]
    if result.error_code != 0:
        raise AdminError(ErrorCode(result.error_code), result.error_message)
    return {c.name: c.value for c in result.configs if c.value is not None}
