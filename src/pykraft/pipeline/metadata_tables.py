"""Kafka's metadata records as table rows (issue 31, SPEC H2): the pure half of what ingest makes of a
``__cluster_metadata`` log's data batches, whoever wrote them (pykraft's controllers or
Apache Kafka's, segments or snapshots).

Theory of operation. Every data record's value is decoded with the generated codecs of Kafka
4.3.1's schemas (``pykraft.metadata.serde``). A record that decodes becomes one row of the
table of its concept (below); a value that does not (an unknown type or version, bytes that
are not a metadata record) becomes a row of ``undecoded`` with the reason, and ingest goes on.
Every row starts with the same columns: node, source (segment/snapshot), file, offset, the
batch's base offset (records written together: a cause and its effects share it), epoch and
the record's timestamp. Inside a snapshot, every row carries the snapshot's last contained
offset (end offset - 1): the rows are the state as of that offset.

Tables: ``topics`` (created, deleted), ``partition_changes`` (every PartitionRecord and
PartitionChangeRecord; a null list is "unchanged", leader -2 is "no change"),
``brokers`` (registration, fencing, unfencing, controlled shutdown, unregistration),
``configs`` (sensitive values, as Kafka hides them, are null with ``sensitive`` true),
``features``, ``producer_ids``, ``acls``, ``scram_users`` (never the salted password or its
keys), ``quotas``, ``migration_state``, ``transactions`` and ``undecoded``. The JSON of every
record (with the same secrets masked) is the ``records`` table's ``value_json``
(``record_json``).
"""

from __future__ import annotations

import base64
import json
import re
import uuid
from collections.abc import Callable
from typing import Any, Final

from pykraft.controller.configs import sensitive_config
from pykraft.metadata import records as r
from pykraft.metadata.serde import MetadataRecordError, decode_record
from pykraft.metadata.tagged import final_target_of
from pykraft.schema.runtime import SchemaDecodeError

__all__ = [
    "ACLS",
    "BROKERS",
    "CONFIGS",
    "FEATURES",
    "METADATA_TABLES",
    "MIGRATION_STATE",
    "PARTITION_CHANGES",
    "PRODUCER_IDS",
    "QUOTAS",
    "SCRAM_USERS",
    "TOPICS",
    "TRANSACTIONS",
    "UNDECODED",
    "WIDTHS",
    "decode_value",
    "is_sensitive",
    "kafka_type_name",
    "metadata_row",
    "record_json",
    "row_of",
]

TOPICS = "topics"
PARTITION_CHANGES = "partition_changes"
BROKERS = "brokers"
CONFIGS = "configs"
FEATURES = "features"
PRODUCER_IDS = "producer_ids"
ACLS = "acls"
SCRAM_USERS = "scram_users"
QUOTAS = "quotas"
MIGRATION_STATE = "migration_state"
TRANSACTIONS = "transactions"
UNDECODED = "undecoded"
METADATA_TABLES: Final = (
    TOPICS,
    PARTITION_CHANGES,
    BROKERS,
    CONFIGS,
    FEATURES,
    PRODUCER_IDS,
    ACLS,
    SCRAM_USERS,
    QUOTAS,
    MIGRATION_STATE,
    TRANSACTIONS,
    UNDECODED,
)
COMMON_WIDTH: Final = 7  # node, source, file, offset, batch_offset, epoch, timestamp_ms
WIDTHS: Final = {
    TOPICS: COMMON_WIDTH + 3,
    PARTITION_CHANGES: COMMON_WIDTH + 15,
    BROKERS: COMMON_WIDTH + 11,
    CONFIGS: COMMON_WIDTH + 6,
    FEATURES: COMMON_WIDTH + 2,
    PRODUCER_IDS: COMMON_WIDTH + 3,
    ACLS: COMMON_WIDTH + 9,
    SCRAM_USERS: COMMON_WIDTH + 4,
    QUOTAS: COMMON_WIDTH + 4,
    MIGRATION_STATE: COMMON_WIDTH + 2,
    TRANSACTIONS: COMMON_WIDTH + 2,
    UNDECODED: COMMON_WIDTH + 2,
}

NO_LEADER_CHANGE: Final = -2
MIGRATION_STATES: Final = {0: "NONE", 1: "MIGRATION", 2: "PRE_MIGRATION", 3: "POST_MIGRATION"}
SCRAM_MECHANISMS: Final = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
_HEX_PREVIEW: Final = 64
HIDDEN: Final = "[hidden]"


def is_sensitive(resource_type: int, name: str) -> bool:
    """Whether a config value is a secret (its value is never written to a table): the
    controller's rule (``controller/configs.sensitive_config``)."""
    return sensitive_config(resource_type, name)


Common = tuple[int, str, str, int, int, int, int]
Row = tuple[Any, ...]


def decode_value(value: bytes | None) -> tuple[object, int] | str:
    """A data record's value as (metadata record, version), or why it is not one."""
    if value is None:
        return "a null value"
    try:
        return decode_record(value)
    except (MetadataRecordError, SchemaDecodeError, ValueError) as e:
        return str(e) or type(e).__name__


def metadata_row(common: Common, value: bytes | None) -> tuple[str, Row]:
    """The (table, row) of one data record's value; ``undecoded`` when it is not a
    metadata record this version of pykraft reads; ("", ()) for a record kept in
    ``records`` only."""
    return row_of(common, decode_value(value), value)


def row_of(
    common: Common, decoded: tuple[object, int] | str, value: bytes | None
) -> tuple[str, Row]:
    """``metadata_row`` of an already decoded value (``decode_value``)."""
    if isinstance(decoded, str):
        preview = b"" if value is None else bytes(value[:_HEX_PREVIEW])
        return UNDECODED, (*common, decoded, preview.hex())
    record, version = decoded
    rule = _RULES.get(type(record))
    if rule is None:
        if isinstance(record, _RECORDS_ONLY):
            return "", ()  # decoded: in ``records`` only
        return UNDECODED, (*common, f"no table for {type(record).__name__}", "")
    table, make = rule
    return table, (*common, *make(record, version))


def _uuid(value: uuid.UUID | None) -> str | None:
    return None if value is None else str(value)


def _ints(values: tuple[int, ...] | None) -> list[int] | None:
    return None if values is None else list(values)


def _topic(rec: r.TopicRecord, _v: int) -> Row:
    return ("create", rec.name, str(rec.topic_id))


def _remove_topic(rec: r.RemoveTopicRecord, _v: int) -> Row:
    return ("delete", None, str(rec.topic_id))


def _partition(rec: r.PartitionRecord, _v: int) -> Row:
    return (
        "PartitionRecord",
        str(rec.topic_id),
        rec.partition_id,
        list(rec.replicas),
        list(rec.isr),
        list(rec.removing_replicas),
        list(rec.adding_replicas),
        rec.leader,
        rec.leader_recovery_state,
        rec.leader_epoch,
        rec.partition_epoch,
        _ints(rec.eligible_leader_replicas),
        _ints(rec.last_known_elr),
        [str(d) for d in rec.directories],
        _ints(final_target_of(rec)),
    )


def _partition_change(rec: r.PartitionChangeRecord, _v: int) -> Row:
    return (
        "PartitionChangeRecord",
        str(rec.topic_id),
        rec.partition_id,
        _ints(rec.replicas),
        _ints(rec.isr),
        _ints(rec.removing_replicas),
        _ints(rec.adding_replicas),
        rec.leader,
        None if rec.leader_recovery_state == -1 else rec.leader_recovery_state,
        None,
        None,
        _ints(rec.eligible_leader_replicas),
        _ints(rec.last_known_elr),
        None if rec.directories is None else [str(d) for d in rec.directories],
        _ints(final_target_of(rec)),
    )


def _endpoints(endpoints: tuple[Any, ...]) -> list[str]:
    return [f"{e.name}://{e.host}:{e.port}" for e in endpoints]


def _register_broker(rec: r.RegisterBrokerRecord, _v: int) -> Row:
    return (
        "RegisterBrokerRecord",
        "register",
        rec.broker_id,
        rec.broker_epoch,
        str(rec.incarnation_id),
        rec.rack,
        _endpoints(rec.end_points),
        rec.fenced,
        rec.in_controlled_shutdown,
        rec.is_migrating_zk_broker,
        [str(d) for d in rec.log_dirs],
    )


def _broker_change(rec: r.BrokerRegistrationChangeRecord, _v: int) -> Row:
    fenced = {1: True, -1: False}.get(rec.fenced)
    shutdown = True if rec.in_controlled_shutdown == 1 else None
    event = (
        "fence"
        if fenced is True
        else "unfence"
        if fenced is False
        else "controlled_shutdown"
        if shutdown
        else "change"
    )
    return (
        "BrokerRegistrationChangeRecord",
        event,
        rec.broker_id,
        rec.broker_epoch,
        None,
        None,
        None,
        fenced,
        shutdown,
        None,
        [str(d) for d in rec.log_dirs] if rec.log_dirs else None,
    )


def _fence(rec: r.FenceBrokerRecord, _v: int) -> Row:
    return (
        "FenceBrokerRecord",
        "fence",
        rec.id,
        rec.epoch,
        None,
        None,
        None,
        True,
        None,
        None,
        None,
    )


def _unfence(rec: r.UnfenceBrokerRecord, _v: int) -> Row:
    return (
        "UnfenceBrokerRecord",
        "unfence",
        rec.id,
        rec.epoch,
        None,
        None,
        None,
        False,
        None,
        None,
        None,
    )


def _unregister(rec: r.UnregisterBrokerRecord, _v: int) -> Row:
    return (
        "UnregisterBrokerRecord",
        "unregister",
        rec.broker_id,
        rec.broker_epoch,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
    )


def _config(rec: r.ConfigRecord, _v: int) -> Row:
    sensitive = is_sensitive(rec.resource_type, rec.name)
    value = None if sensitive else rec.value
    return (rec.resource_type, rec.resource_name, rec.name, value, sensitive, rec.value is None)


def _feature(rec: r.FeatureLevelRecord, _v: int) -> Row:
    return (rec.name, rec.feature_level)


def _producer_ids(rec: r.ProducerIdsRecord, _v: int) -> Row:
    return (rec.broker_id, rec.broker_epoch, rec.next_producer_id)


def _acl(rec: r.AccessControlEntryRecord, _v: int) -> Row:
    return (
        "add",
        str(rec.id),
        rec.resource_type,
        rec.resource_name,
        rec.pattern_type,
        rec.principal,
        rec.host,
        rec.operation,
        rec.permission_type,
    )


def _remove_acl(rec: r.RemoveAccessControlEntryRecord, _v: int) -> Row:
    return ("remove", str(rec.id), None, None, None, None, None, None, None)


def _scram(rec: r.UserScramCredentialRecord, _v: int) -> Row:
    mechanism = SCRAM_MECHANISMS.get(rec.mechanism, str(rec.mechanism))
    return ("upsert", rec.name, mechanism, rec.iterations)


def _remove_scram(rec: r.RemoveUserScramCredentialRecord, _v: int) -> Row:
    mechanism = SCRAM_MECHANISMS.get(rec.mechanism, str(rec.mechanism))
    return ("delete", rec.name, mechanism, None)


def _quota(rec: r.ClientQuotaRecord, _v: int) -> Row:
    entity = ",".join(
        f"{e.entity_type}={'<default>' if e.entity_name is None else e.entity_name}"
        for e in rec.entity
    )
    return (entity, rec.key, float(rec.value), rec.remove)


def _migration(rec: r.ZkMigrationStateRecord, _v: int) -> Row:
    state = rec.zk_migration_state
    return (state, MIGRATION_STATES.get(state, str(state)))


def _begin(rec: r.BeginTransactionRecord, _v: int) -> Row:
    return ("begin", rec.name)


def _end(rec: r.EndTransactionRecord, _v: int) -> Row:
    return ("end", None)


def _abort(rec: r.AbortTransactionRecord, _v: int) -> Row:
    return ("abort", rec.reason)


_RULES: Final[dict[type, tuple[str, Callable[[Any, int], Row]]]] = {
    r.TopicRecord: (TOPICS, _topic),
    r.RemoveTopicRecord: (TOPICS, _remove_topic),
    r.PartitionRecord: (PARTITION_CHANGES, _partition),
    r.PartitionChangeRecord: (PARTITION_CHANGES, _partition_change),
    r.RegisterBrokerRecord: (BROKERS, _register_broker),
    r.BrokerRegistrationChangeRecord: (BROKERS, _broker_change),
    r.FenceBrokerRecord: (BROKERS, _fence),
    r.UnfenceBrokerRecord: (BROKERS, _unfence),
    r.UnregisterBrokerRecord: (BROKERS, _unregister),
    r.ConfigRecord: (CONFIGS, _config),
    r.FeatureLevelRecord: (FEATURES, _feature),
    r.ProducerIdsRecord: (PRODUCER_IDS, _producer_ids),
    r.AccessControlEntryRecord: (ACLS, _acl),
    r.RemoveAccessControlEntryRecord: (ACLS, _remove_acl),
    r.UserScramCredentialRecord: (SCRAM_USERS, _scram),
    r.RemoveUserScramCredentialRecord: (SCRAM_USERS, _remove_scram),
    r.ClientQuotaRecord: (QUOTAS, _quota),
    r.ZkMigrationStateRecord: (MIGRATION_STATE, _migration),
    r.BeginTransactionRecord: (TRANSACTIONS, _begin),
    r.EndTransactionRecord: (TRANSACTIONS, _end),
    r.AbortTransactionRecord: (TRANSACTIONS, _abort),
}
# Decoded, but only in ``records`` (their JSON): nothing the report asks of them.
_RECORDS_ONLY: Final = (
    r.NoOpRecord,
    r.RegisterControllerRecord,
    r.DelegationTokenRecord,
    r.RemoveDelegationTokenRecord,
    r.ClearElrRecord,
)


def _masked(record: object) -> dict[str, Any]:
    """A record's fields as JSON values, secrets masked: SCRAM salts and keys, and the
    values of sensitive configs."""
    out: dict[str, Any] = {}
    for name in getattr(record, "__dataclass_fields__", {}):
        if name == "unknown_tagged_fields":
            continue
        value = getattr(record, name)
        if isinstance(record, r.UserScramCredentialRecord) and name in (
            "salt",
            "stored_key",
            "server_key",
        ):
            out[name] = HIDDEN
        elif (
            isinstance(record, r.ConfigRecord)
            and name == "value"
            and is_sensitive(record.resource_type, record.name)
        ):
            out[name] = None if value is None else HIDDEN
        else:
            out[name] = _jsonable(value)
    return out


def _jsonable(value: object) -> Any:
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    if hasattr(value, "__dataclass_fields__"):
        return _masked(value)
    return value


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def kafka_type_name(record: object) -> str:
    """Kafka's name of a record's type (``MetadataRecordType``): ``TopicRecord`` ->
    ``TOPIC_RECORD``, as ``kafka-dump-log`` prints it."""
    return _CAMEL.sub("_", type(record).__name__).upper()


def record_json(record: object, version: int) -> str:
    """A decoded record as JSON, ``{"type", "version", "data"}`` with secrets masked, as
    ``kafka-dump-log --cluster-metadata-decoder`` prints a payload."""
    return json.dumps(
        {"type": kafka_type_name(record), "version": version, "data": _masked(record)},
        sort_keys=True,
        separators=(",", ":"),
    )
