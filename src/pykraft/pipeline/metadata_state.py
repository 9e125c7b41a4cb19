"""The cluster's metadata as of a moment, from the tables ingest writes (issue 31; SPEC H2's
"cluster state at an offset"): topics,
partitions, brokers and configs as of an offset (or a time), each node's own view; and what
changed between two moments. All in Spark: nothing is collected to the driver.

Theory of operation. A node's log is its newest snapshot at or before the moment, then the
segment records after that snapshot up to the moment (``effective``): snapshot rows carry the
snapshot's last contained offset, so a snapshot's rows and the records it already contains
never both count. Over those rows each concept keeps, per key, its latest value:

* a partition: the last PartitionRecord sets every field; each later PartitionChangeRecord
  sets the fields it carries (a null list, or leader -2, is "unchanged"), bumps the partition
  epoch, and the leader epoch when it names a leader (Kafka's ``PartitionRegistration.merge``);
  partitions of a topic deleted by then are gone;
* a topic: created and not deleted; a broker: its last registration and the fencing and
  shutdown flags of the records after it, gone once unregistered; a config: its last value,
  gone once deleted (a topic's configs go with the topic).

``partition_state`` (written by ingest) is the partition state as of each snapshot and as of
each node's log end.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

__all__ = [
    "LOG_END",
    "Moment",
    "brokers_as_of",
    "configs_as_of",
    "diff",
    "effective",
    "partition_state",
    "partitions_as_of",
    "state_as_of",
    "topics_as_of",
]

LOG_END = "log_end"
_KEY = ("node", "topic_id", "partition")
_LISTS = ("replicas", "isr", "removing", "adding", "elr", "last_known_elr", "directories")
# A value this large is a time (ms since the epoch), not an offset.
_TIMESTAMP_FROM = 10**11


@dataclass(frozen=True)
class Moment:
    """An offset (``--at 1234``), a time in ms since the epoch (``--at 1700000000000``),
    or the log end (None)."""

    value: int | None = None

    @classmethod
    def parse(cls, text: str | None) -> Moment:
        if text is None or text in ("", "end", LOG_END):
            return cls(None)
        try:
            return cls(int(text))
        except ValueError:
            raise ValueError(f"not an offset or a time in ms since the epoch: {text!r}") from None

    @property
    def is_time(self) -> bool:
        return self.value is not None and self.value >= _TIMESTAMP_FROM

    def describe(self) -> str:
        if self.value is None:
            return "the log end"
        return f"time {self.value} ms" if self.is_time else f"offset {self.value}"


def _cutoffs(tables: Mapping[str, DataFrame], moment: Moment) -> DataFrame:
    """Per node, the last offset the moment includes (``cutoff``)."""
    batches = tables["batches"]
    if moment.value is None:
        return batches.groupBy("node").agg(F.max("last_offset").alias("cutoff"))
    if not moment.is_time:
        return batches.select("node").distinct().withColumn("cutoff", F.lit(moment.value))
    # A time: the last record written at or before it (segments only: snapshots rewrite).
    written = tables["records"].where(
        (F.col("source") == "segment") & (F.col("timestamp_ms") <= moment.value)
    )
    return (
        batches.select("node")
        .distinct()
        .join(written.groupBy("node").agg(F.max("offset").alias("cutoff")), "node", "left")
        .fillna(-1, ["cutoff"])
    )


def effective(table: DataFrame, tables: Mapping[str, DataFrame], moment: Moment) -> DataFrame:
    """The rows of ``table`` that make each node's state as of ``moment``: its newest
    snapshot at or before the moment, and the segment rows after that snapshot up to it.
    Adds ``rank`` (0 for the snapshot's rows, 1 for the log's) for ordering."""
    cutoffs = _cutoffs(tables, moment)
    snapshots = (
        tables["snapshots"]
        .where(F.col("crc_ok"))
        .select("node", (F.col("end_offset") - 1).alias("snapshot_offset"))
        .join(cutoffs, "node")
        .where(F.col("snapshot_offset") <= F.col("cutoff"))
        .groupBy("node")
        .agg(F.max("snapshot_offset").alias("base"))
    )
    rows = table.join(cutoffs, "node").join(snapshots, "node", "left")
    base = F.coalesce(F.col("base"), F.lit(-1))
    from_snapshot = (F.col("source") == "snapshot") & (F.col("offset") == base)
    from_log = (F.col("source") == "segment") & (F.col("offset") > base)
    return (
        rows.where((from_snapshot | from_log) & (F.col("offset") <= F.col("cutoff")))
        .withColumn("rank", F.when(F.col("source") == "snapshot", 0).otherwise(1))
        .drop("cutoff", "base")
    )


def _latest(column: str, order: Column) -> Column:
    """The last non-null value of ``column`` by ``order`` (``max_by`` skips null orders)."""
    return F.max_by(F.col(column), F.when(F.col(column).isNotNull(), order))


def _order() -> Column:
    return F.struct(F.col("rank"), F.col("offset"))


def topics_as_of(tables: Mapping[str, DataFrame], moment: Moment) -> DataFrame:
    """(node, topic_id, name) of every topic that exists."""
    rows = effective(tables["topics"], tables, moment)
    latest = rows.groupBy("node", "topic_id").agg(
        F.max_by(F.col("event"), _order()).alias("event"), _latest("name", _order()).alias("name")
    )
    return latest.where(F.col("event") == "create").select("node", "topic_id", "name")


def partitions_as_of(tables: Mapping[str, DataFrame], moment: Moment) -> DataFrame:
    """Every partition of every existing topic: replicas, ISR, leader and the epochs."""
    rows = effective(tables["partition_changes"], tables, moment).withColumn(
        "leader", F.when(F.col("leader") == -2, None).otherwise(F.col("leader"))
    )
    order = _order()
    base = (
        rows.where(F.col("record_type") == "PartitionRecord")
        .groupBy(*_KEY)
        .agg(
            F.max(order).alias("base_order"),
            F.max_by(F.col("leader_epoch"), order).alias("base_leader_epoch"),
            F.max_by(F.col("partition_epoch"), order).alias("base_partition_epoch"),
        )
    )
    after = rows.join(base, list(_KEY)).where(order >= F.col("base_order"))
    is_change = F.col("record_type") == "PartitionChangeRecord"
    merged = after.groupBy(*_KEY).agg(
        *(_latest(c, order).alias(c) for c in (*_LISTS, "leader", "leader_recovery_state")),
        F.first("base_leader_epoch").alias("base_leader_epoch"),
        F.first("base_partition_epoch").alias("base_partition_epoch"),
        F.sum(F.when(is_change, 1).otherwise(0)).alias("changes"),
        F.sum(F.when(is_change & F.col("leader").isNotNull(), 1).otherwise(0)).alias("elections"),
        F.max("timestamp_ms").alias("changed_ms"),
    )
    topics = topics_as_of(tables, moment).withColumnRenamed("name", "topic")
    return merged.join(topics, ["node", "topic_id"]).select(
        "node",
        "topic",
        "topic_id",
        "partition",
        "replicas",
        "isr",
        "leader",
        (F.col("base_leader_epoch") + F.col("elections")).alias("leader_epoch"),
        (F.col("base_partition_epoch") + F.col("changes")).alias("partition_epoch"),
        "elr",
        "last_known_elr",
        "adding",
        "removing",
        "leader_recovery_state",
        "directories",
        "changed_ms",
    )


def brokers_as_of(tables: Mapping[str, DataFrame], moment: Moment) -> DataFrame:
    """Every registered broker: its registration, fenced and shutting-down flags."""
    rows = effective(tables["brokers"], tables, moment)
    order = _order()
    registered = (
        rows.where(F.col("event") == "register")
        .groupBy("node", "broker_id")
        .agg(
            F.max(order).alias("register_order"),
            F.max_by(F.col("broker_epoch"), order).alias("registered_epoch"),
            F.max_by(F.col("incarnation_id"), order).alias("incarnation_id"),
            F.max_by(F.col("rack"), order).alias("rack"),
            F.max_by(F.col("endpoints"), order).alias("endpoints"),
            F.max_by(F.col("is_migrating_zk_broker"), order).alias("is_migrating_zk_broker"),
        )
    )
    after = rows.join(registered, ["node", "broker_id"]).where(
        (order >= F.col("register_order")) & (F.col("broker_epoch") == F.col("registered_epoch"))
    )
    state = after.groupBy("node", "broker_id").agg(
        _latest("fenced", order).alias("fenced"),
        _latest("in_controlled_shutdown", order).alias("in_controlled_shutdown"),
        F.max(F.when(F.col("event") == "unregister", 1).otherwise(0)).alias("unregistered"),
    )
    return (
        registered.join(state, ["node", "broker_id"])
        .where(F.col("unregistered") == 0)
        .select(
            "node",
            "broker_id",
            F.col("registered_epoch").alias("broker_epoch"),
            "incarnation_id",
            "rack",
            "endpoints",
            F.coalesce(F.col("fenced"), F.lit(True)).alias("fenced"),
            F.coalesce(F.col("in_controlled_shutdown"), F.lit(False)).alias(
                "in_controlled_shutdown"
            ),
            "is_migrating_zk_broker",
        )
    )


def configs_as_of(tables: Mapping[str, DataFrame], moment: Moment) -> DataFrame:
    """Every config set, per resource (a topic's only while the topic exists)."""
    rows = effective(tables["configs"], tables, moment)
    order = _order()
    latest = rows.groupBy("node", "resource_type", "resource_name", "name").agg(
        F.max_by(F.col("value"), order).alias("value"),
        F.max_by(F.col("sensitive"), order).alias("sensitive"),
        F.max_by(F.col("deleted"), order).alias("deleted"),
        F.max_by(F.col("offset"), order).alias("offset"),
    )
    topics = topics_as_of(tables, moment).select(
        "node", F.col("name").alias("resource_name"), F.lit(2).alias("resource_type")
    )
    live_topic = latest.join(topics, ["node", "resource_type", "resource_name"], "left_semi")
    others = latest.where(F.col("resource_type") != 2)
    return (
        live_topic.unionByName(others)
        .where(~F.col("deleted"))
        .select("node", "resource_type", "resource_name", "name", "value", "sensitive")
    )


def state_as_of(tables: Mapping[str, DataFrame], moment: Moment) -> dict[str, DataFrame]:
    """``pykraft pipeline state``: topics, partitions, brokers and configs as of ``moment``."""
    return {
        "topics": topics_as_of(tables, moment),
        "partitions": partitions_as_of(tables, moment),
        "brokers": brokers_as_of(tables, moment),
        "configs": configs_as_of(tables, moment),
    }


# A partition_state row after (node, as_of, as_of_offset).
_STATE_COLUMNS = (
    "topic",
    "topic_id",
    "partition",
    "replicas",
    "isr",
    "leader",
    "leader_epoch",
    "partition_epoch",
    "elr",
    "adding",
    "removing",
)


def partition_state(tables: Mapping[str, DataFrame]) -> DataFrame:
    """The ``partition_state`` table: every partition as of each snapshot (the snapshot's
    own PartitionRecords) and as of each node's log end."""
    snapshot_rows = (
        tables["partition_changes"]
        .where(F.col("source") == "snapshot")
        .join(
            tables["topics"]
            .where(F.col("source") == "snapshot")
            .select("node", "offset", "topic_id", F.col("name").alias("topic")),
            ["node", "offset", "topic_id"],
            "left",
        )
        .select(
            "node",
            F.lit("snapshot").alias("as_of"),
            (F.col("offset") + 1).alias("as_of_offset"),
            *_STATE_COLUMNS,
        )
    )
    ends = tables["batches"].groupBy("node").agg((F.max("last_offset") + 1).alias("as_of_offset"))
    log_end = (
        partitions_as_of(tables, Moment(None))
        .join(ends, "node")
        .select(
            "node",
            F.lit(LOG_END).alias("as_of"),
            "as_of_offset",
            *_STATE_COLUMNS,
        )
    )
    return snapshot_rows.unionByName(log_end)


_DIFF_KEYS = {
    "topics": ["node", "topic_id"],
    "partitions": ["node", "topic_id", "partition"],
    "brokers": ["node", "broker_id"],
    "configs": ["node", "resource_type", "resource_name", "name"],
}
_DIFF_VALUES = {
    "topics": ["name"],
    # partition_epoch too: an ISR that shrank and grew back between the two moments changed
    # the partition's registration twice although its replicas, ISR and leader are the same.
    "partitions": [
        "replicas",
        "isr",
        "leader",
        "leader_epoch",
        "partition_epoch",
        "adding",
        "removing",
        "elr",
    ],
    "brokers": ["broker_epoch", "fenced", "in_controlled_shutdown", "endpoints", "rack"],
    "configs": ["value"],
}


def diff(tables: Mapping[str, DataFrame], before: Moment, after: Moment) -> dict[str, DataFrame]:
    """``pykraft pipeline diff``: per concept, what was added, removed or changed between two
    moments (``change`` added/removed/changed, the values before and after)."""
    first, second = state_as_of(tables, before), state_as_of(tables, after)
    out: dict[str, DataFrame] = {}
    for name, keys in _DIFF_KEYS.items():
        values = _DIFF_VALUES[name]
        a = first[name].select(*keys, F.struct(*values).alias("before"))
        b = second[name].select(*keys, F.struct(*values).alias("after"))
        joined = a.join(b, keys, "full_outer")
        change = (
            F.when(F.col("before").isNull(), "added")
            .when(F.col("after").isNull(), "removed")
            .when(F.to_json("before") != F.to_json("after"), "changed")
        )
        out[name] = (
            joined.withColumn("change", change)
            .where(F.col("change").isNotNull())
            .select(
                *keys,
                "change",
                F.to_json("before").alias("before"),
                F.to_json("after").alias("after"),
            )
        )
    return out
