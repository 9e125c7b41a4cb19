"""Topics, configs and brokers through the controllers (``--bootstrap-controller``), on an
:class:`~pykraft.admin.client.AdminClient`: what ``pykraft topics`` and ``pykraft cluster``
use. Writes go to the active controller (found through NOT_CONTROLLER answers and
DescribeQuorum, as the quorum calls are); reads (Metadata, DescribeCluster) are answered from
the metadata image of the active controller.

Each call raises :class:`~pykraft.admin.client.AdminError` for a request refused as a whole;
per-item outcomes (one topic of several) come back in the results.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pykraft.admin.client import _RETRIABLE, AdminClient, AdminError
from pykraft.protocol import ApiKey, ErrorCode
from pykraft.protocol.apis import request_schema
from pykraft.protocol.build import make

__all__ = [
    "BrokerInfo",
    "PartitionInfo",
    "TopicInfo",
    "TopicResult",
    "alter_topic_configs",
    "brokers",
    "controller_call",
    "create_partitions",
    "create_topics",
    "delete_topics",
    "topics",
]


@dataclass(frozen=True)
class TopicResult:
    name: str
    error: ErrorCode
    message: str | None = None
    topic_id: uuid.UUID | None = None


@dataclass(frozen=True)
class PartitionInfo:
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline: tuple[int, ...]


@dataclass(frozen=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    internal: bool
    partitions: tuple[PartitionInfo, ...]


@dataclass(frozen=True)
class BrokerInfo:
    broker_id: int
    host: str
    port: int
    rack: str | None
    fenced: bool


async def controller_call(
    admin: AdminClient, api_key: ApiKey, fields: Mapping[str, Any], what: str
) -> Any:
    """Send a request built from ``fields`` (at the version both sides speak) to the active
    controller; returns the response message."""

    async def call(address: tuple[str, int]) -> tuple[Any, Any]:
        m = await admin._send(
            address, lambda version: make(request_schema(api_key, version), fields), api_key
        )
        code = ErrorCode(getattr(m, "error_code", 0))
        if code == ErrorCode.none:
            code = _item_error(m)
        if code in _RETRIABLE:
            hint = await admin.describe_quorum_leader_hint()
            return None, (AdminError(code, getattr(m, "error_message", None)), hint)
        if code != ErrorCode.none:
            raise AdminError(code, getattr(m, "error_message", None))
        return m, None

    return await admin._call_leader(call, what)


def _item_error(m: Any) -> ErrorCode:
    """A retriable error every item carries (a standby refuses each item of APIs that have
    no top-level error code), else NONE."""
    for name in ("topics", "responses", "results"):
        items = getattr(m, name, None)
        if items:
            codes = {ErrorCode(getattr(i, "error_code", 0)) for i in items}
            if len(codes) == 1 and next(iter(codes)) in _RETRIABLE:
                return next(iter(codes))
    return ErrorCode.none


async def create_topics(
    admin: AdminClient,
    specs: Sequence[Mapping[str, Any]],
    *,
    validate_only: bool = False,
) -> list[TopicResult]:
    """CreateTopics: each spec has ``name`` and optionally ``partitions``,
    ``replication_factor`` (-1: the controller's defaults), ``assignment`` (partition ->
    broker ids) and ``configs``."""
    topics = [
        {
            "name": s["name"],
            "num_partitions": s.get("partitions", -1),
            "replication_factor": s.get("replication_factor", -1),
            "assignments": [
                {"partition_index": p, "broker_ids": list(ids)}
                for p, ids in sorted((s.get("assignment") or {}).items())
            ],
            "configs": [{"name": k, "value": v} for k, v in (s.get("configs") or {}).items()],
        }
        for s in specs
    ]
    m = await controller_call(
        admin,
        ApiKey.CREATE_TOPICS,
        {"topics": topics, "timeout": admin.timeout_ms, "validate_only": validate_only},
        "CreateTopics",
    )
    return [
        TopicResult(t.name, ErrorCode(t.error_code), t.error_message, getattr(t, "topic_id", None))
        for t in m.topics
    ]


async def delete_topics(admin: AdminClient, names: Sequence[str]) -> list[TopicResult]:
    m = await controller_call(
        admin,
        ApiKey.DELETE_TOPICS,
        {
            "topic_names": list(names),
            "topics": [{"name": n, "topic_id": uuid.UUID(int=0)} for n in names],
            "timeout": admin.timeout_ms,
        },
        "DeleteTopics",
    )
    return [
        TopicResult(r.name or "", ErrorCode(r.error_code), getattr(r, "error_message", None))
        for r in m.responses
    ]


async def create_partitions(
    admin: AdminClient,
    name: str,
    count: int,
    assignment: Sequence[Sequence[int]] | None = None,
    *,
    validate_only: bool = False,
) -> TopicResult:
    m = await controller_call(
        admin,
        ApiKey.CREATE_PARTITIONS,
        {
            "topics": [
                {
                    "name": name,
                    "count": count,
                    "assignments": None
                    if assignment is None
                    else [{"broker_ids": list(ids)} for ids in assignment],
                }
            ],
            "timeout": admin.timeout_ms,
            "validate_only": validate_only,
        },
        "CreatePartitions",
    )
    r = m.results[0]
    return TopicResult(r.name, ErrorCode(r.error_code), r.error_message)


async def alter_topic_configs(
    admin: AdminClient,
    name: str,
    set_configs: Mapping[str, str],
    delete_configs: Sequence[str] = (),
    *,
    validate_only: bool = False,
) -> TopicResult:
    """IncrementalAlterConfigs of one topic: SET each of ``set_configs``, DELETE each of
    ``delete_configs``."""
    ops = [{"name": k, "config_operation": 0, "value": v} for k, v in set_configs.items()]
    ops += [{"name": k, "config_operation": 1, "value": None} for k in delete_configs]
    m = await controller_call(
        admin,
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        {
            "resources": [{"resource_type": 2, "resource_name": name, "configs": ops}],
            "validate_only": validate_only,
        },
        "IncrementalAlterConfigs",
    )
    r = m.responses[0]
    return TopicResult(name, ErrorCode(r.error_code), r.error_message)


async def topic_configs(admin: AdminClient, name: str) -> dict[str, tuple[str | None, bool]]:
    """A topic's configs: name -> (value, is it the default)."""
    m = await controller_call(
        admin,
        ApiKey.DESCRIBE_CONFIGS,
        {
            "resources": [{"resource_type": 2, "resource_name": name, "configuration_keys": None}],
            "include_synonyms": False,
            "include_documentation": False,
        },
        "DescribeConfigs",
    )
    r = m.results[0]
    if r.error_code != 0:
        raise AdminError(ErrorCode(r.error_code), r.error_message)
    return {c.name: (c.value, c.config_source == 5) for c in r.configs}


async def topics(admin: AdminClient, names: Sequence[str] | None = None) -> list[TopicInfo]:
    """Topics in the active controller's image (all when ``names`` is None); a name that
    does not exist raises UNKNOWN_TOPIC_OR_PARTITION."""
    fields: dict[str, Any] = {
        "topics": None if names is None else [{"name": n, "topic_id": None} for n in names],
        "allow_auto_topic_creation": False,
    }
    m = await controller_call(admin, ApiKey.METADATA, fields, "Metadata")
    out = []
    for t in m.topics:
        if t.error_code == ErrorCode.unknown_topic_or_partition:
            raise AdminError(
                ErrorCode.unknown_topic_or_partition, f"Topic '{t.name}' does not exist."
            )
        out.append(
            TopicInfo(
                t.name,
                t.topic_id,
                bool(t.is_internal),
                tuple(
                    PartitionInfo(
                        int(p.partition_index),
                        int(p.leader_id),
                        int(p.leader_epoch),
                        tuple(int(b) for b in p.replica_nodes),
                        tuple(int(b) for b in p.isr_nodes),
                        tuple(int(b) for b in p.offline_replicas),
                    )
                    for p in t.partitions
                ),
            )
        )
    return sorted(out, key=lambda t: t.name)


async def brokers(admin: AdminClient) -> tuple[int, list[BrokerInfo]]:
    """(active controller id, the registered brokers, fenced ones included)."""
    m = await controller_call(
        admin,
        ApiKey.DESCRIBE_CLUSTER,
        {
            "include_cluster_authorized_operations": False,
            "endpoint_type": 1,
            "include_fenced_brokers": True,
        },
        "DescribeCluster",
    )
    return int(m.controller_id), [
        BrokerInfo(
            int(b.broker_id), b.host, int(b.port), b.rack, bool(getattr(b, "is_fenced", False))
        )
        for b in m.brokers
    ]
