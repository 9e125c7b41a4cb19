"""Spark schemas of the pipeline's tables, in the column order of the rows that
``pykraft.pipeline.decode`` and ``pykraft.pipeline.sweep`` produce.

Offsets are Kafka offsets (``long``); ``source`` is ``"segment"`` or ``"snapshot"``. Inside a
snapshot, batch and record offsets are positions within the snapshot (Kafka writes them from
0); rows derived from a snapshot's control records (voter sets) carry the snapshot's last
contained offset (end offset - 1) instead.
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)


def _struct(*fields: tuple[str, object, bool]) -> StructType:
    return StructType([StructField(name, kind, nullable) for name, kind, nullable in fields])  # type: ignore[arg-type]


_REPLICA_KEY = _struct(("id", IntegerType(), False), ("directory_id", StringType(), True))
_ENDPOINT = _struct(
    ("name", StringType(), False), ("host", StringType(), False), ("port", IntegerType(), False)
)
_VOTER = _struct(
    ("id", IntegerType(), False),
    ("directory_id", StringType(), True),
    ("endpoints", ArrayType(_ENDPOINT, False), False),
    ("min_kraft_version", IntegerType(), False),
    ("max_kraft_version", IntegerType(), False),
)

BATCHES = _struct(
    ("node", IntegerType(), False),
    ("source", StringType(), False),
    ("file", StringType(), False),
    ("position", LongType(), False),
    ("base_offset", LongType(), False),
    ("last_offset", LongType(), False),
    ("epoch", IntegerType(), False),
    ("timestamp_ms", LongType(), False),  # the batch's max timestamp
    ("size_bytes", IntegerType(), False),
    ("record_count", IntegerType(), False),
    ("is_control", BooleanType(), False),
    ("crc", LongType(), False),
    ("crc_ok", BooleanType(), False),
)

RECORDS = _struct(
    ("node", IntegerType(), False),
    ("source", StringType(), False),
    ("file", StringType(), False),
    ("offset", LongType(), False),
    ("epoch", IntegerType(), False),
    ("timestamp_ms", LongType(), False),
    ("is_control", BooleanType(), False),
    ("record_type", StringType(), False),  # DATA, LEADER_CHANGE, ..., UNKNOWN_CONTROL
    ("control_type", IntegerType(), True),  # the control record key's type code
    ("key_hex", StringType(), True),
    ("value_size", IntegerType(), False),  # -1 for a null value
    ("value_json", StringType(), False),
)

LEADER_CHANGES = _struct(
    ("node", IntegerType(), False),
    ("source", StringType(), False),
    ("offset", LongType(), False),
    ("epoch", IntegerType(), False),
    ("timestamp_ms", LongType(), False),
    ("leader_id", IntegerType(), False),
    ("voters", ArrayType(_REPLICA_KEY, False), False),
    ("granting_voters", ArrayType(_REPLICA_KEY, False), False),
)

_VOTER_SET_FIELDS = (
    ("node", IntegerType(), False),
    ("source", StringType(), False),
    ("offset", LongType(), False),
    ("epoch", IntegerType(), False),
    ("voters", ArrayType(_VOTER, False), False),
)
VOTER_SETS = _struct(*_VOTER_SET_FIELDS)  # as decoded
# As written by ingest: committed is null when unknown (see pykraft.pipeline.committed).
VOTER_SETS_COMMITTED = _struct(*_VOTER_SET_FIELDS, ("committed", BooleanType(), True))

SNAPSHOTS = _struct(
    ("node", IntegerType(), False),
    ("file", StringType(), False),
    ("end_offset", LongType(), False),
    ("epoch", IntegerType(), False),
    ("size_bytes", LongType(), False),
    ("batches", IntegerType(), False),
    ("records", LongType(), False),  # application records (not control records)
    ("crc_ok", BooleanType(), False),
    ("has_header", BooleanType(), False),
    ("has_footer", BooleanType(), False),
    ("last_contained_log_timestamp_ms", LongType(), True),
    ("kraft_version", IntegerType(), True),
    ("voters", ArrayType(_VOTER, False), True),
)

FILES = _struct(
    ("node", IntegerType(), False),
    ("source", StringType(), False),
    ("file", StringType(), False),
    ("size_bytes", LongType(), False),
    ("base_offset", LongType(), True),  # a segment's base offset from its name
    ("batches", IntegerType(), False),
    ("valid_bytes", LongType(), False),  # bytes up to the end of the last whole batch
    ("error", StringType(), True),  # why reading stopped early (torn tail, bad framing)
)

# Kafka's metadata records by concept (``pykraft.pipeline.metadata_tables``): every row starts
# with where the record is (inside a snapshot: its last contained offset) and when it was
# written.
_COMMON = (
    ("node", IntegerType(), False),
    ("source", StringType(), False),
    ("file", StringType(), False),
    ("offset", LongType(), False),
    ("batch_offset", LongType(), False),  # records written together share it
    ("epoch", IntegerType(), False),
    ("timestamp_ms", LongType(), False),
)
_INTS = ArrayType(IntegerType(), False)
_STRINGS = ArrayType(StringType(), False)

TOPICS = _struct(
    *_COMMON,
    ("event", StringType(), False),  # create, delete
    ("name", StringType(), True),  # null on delete (RemoveTopicRecord names the id only)
    ("topic_id", StringType(), False),
)
PARTITION_CHANGES = _struct(
    *_COMMON,
    ("record_type", StringType(), False),  # PartitionRecord, PartitionChangeRecord
    ("topic_id", StringType(), False),
    ("partition", IntegerType(), False),
    ("replicas", _INTS, True),  # null: unchanged (PartitionChangeRecord)
    ("isr", _INTS, True),
    ("removing", _INTS, True),
    ("adding", _INTS, True),
    ("leader", IntegerType(), False),  # -1 none, -2 unchanged
    ("leader_recovery_state", IntegerType(), True),
    ("leader_epoch", IntegerType(), True),  # PartitionRecord only
    ("partition_epoch", IntegerType(), True),  # PartitionRecord only
    ("elr", _INTS, True),
    ("last_known_elr", _INTS, True),
    ("directories", _STRINGS, True),
    ("final_target", _INTS, True),  # KIP-435's plan (tag 435); [] ends it
)
BROKERS = _struct(
    *_COMMON,
    ("record_type", StringType(), False),
    ("event", StringType(), False),  # register, fence, unfence, controlled_shutdown, ...
    ("broker_id", IntegerType(), False),
    ("broker_epoch", LongType(), False),
    ("incarnation_id", StringType(), True),
    ("rack", StringType(), True),
    ("endpoints", _STRINGS, True),  # NAME://host:port
    ("fenced", BooleanType(), True),  # null: unchanged
    ("in_controlled_shutdown", BooleanType(), True),
    ("is_migrating_zk_broker", BooleanType(), True),
    ("log_dirs", _STRINGS, True),
)
CONFIGS = _struct(
    *_COMMON,
    ("resource_type", IntegerType(), False),  # 2 topic, 4 broker, ...
    ("resource_name", StringType(), False),  # "" for the cluster default
    ("name", StringType(), False),
    ("value", StringType(), True),  # null when deleted or sensitive
    ("sensitive", BooleanType(), False),
    ("deleted", BooleanType(), False),
)
FEATURES = _struct(*_COMMON, ("name", StringType(), False), ("level", IntegerType(), False))
PRODUCER_IDS = _struct(
    *_COMMON,
    ("broker_id", IntegerType(), False),
    ("broker_epoch", LongType(), False),
    ("next_producer_id", LongType(), False),
)
ACLS = _struct(
    *_COMMON,
    ("event", StringType(), False),  # add, remove
    ("id", StringType(), False),
    ("resource_type", IntegerType(), True),  # null on remove
    ("resource_name", StringType(), True),
    ("pattern_type", IntegerType(), True),
    ("principal", StringType(), True),
    ("host", StringType(), True),
    ("operation", IntegerType(), True),
    ("permission_type", IntegerType(), True),
)
SCRAM_USERS = _struct(
    *_COMMON,
    ("event", StringType(), False),  # upsert, delete
    ("name", StringType(), False),
    ("mechanism", StringType(), False),
    ("iterations", IntegerType(), True),  # never the salt or the keys
)
QUOTAS = _struct(
    *_COMMON,
    ("entity", StringType(), False),  # user=alice,client-id=<default>
    ("key", StringType(), False),
    ("value", DoubleType(), False),
    ("remove", BooleanType(), False),
)
MIGRATION_STATE = _struct(
    *_COMMON, ("state", IntegerType(), False), ("state_name", StringType(), False)
)
TRANSACTIONS = _struct(*_COMMON, ("record_type", StringType(), False), ("name", StringType(), True))
UNDECODED = _struct(*_COMMON, ("reason", StringType(), False), ("value_hex", StringType(), False))

BY_TABLE = {
    "batches": BATCHES,
    "records": RECORDS,
    "leader_changes": LEADER_CHANGES,
    "voter_sets": VOTER_SETS,
    "snapshots": SNAPSHOTS,
    "files": FILES,
    "topics": TOPICS,
    "partition_changes": PARTITION_CHANGES,
    "brokers": BROKERS,
    "configs": CONFIGS,
    "features": FEATURES,
    "producer_ids": PRODUCER_IDS,
    "acls": ACLS,
    "scram_users": SCRAM_USERS,
    "quotas": QUOTAS,
    "migration_state": MIGRATION_STATE,
    "transactions": TRANSACTIONS,
    "undecoded": UNDECODED,
}

COMMITTED = _struct(
    ("node", IntegerType(), False),
    ("log_start_offset", LongType(), False),
    ("log_end_offset", LongType(), False),
    ("snapshot_end_offset", LongType(), False),
    ("voter_count", IntegerType(), True),  # latest voter set in the logs; null when none
    ("committed_offset", LongType(), False),
    ("source", StringType(), False),  # given, majority or snapshot
)

# Audit output.
DIVERGENCES = _struct(
    ("kind", StringType(), False),
    ("node", IntegerType(), False),
    ("base_offset", LongType(), False),
    ("last_offset", LongType(), False),
    ("detail", StringType(), False),
)
