"""The cause of each leader change in a metadata log, for the history report
(``history.py``): what else the change's batch wrote and the partition's state before it
(``LEADER_CAUSES``, the first that applies)."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

__all__ = ["LEADER_CAUSES", "leader_changes"]


def leader_changes(parts: DataFrame, brokers: DataFrame, names: DataFrame) -> DataFrame:
    """One row per leader change, with its cause (``LEADER_CAUSES``, first that applies)."""
    batch_events = brokers.where(F.col("rank") == 1).select(
        "batch_offset",
        F.col("broker_id").alias("previous_leader"),
        F.col("event").alias("broker_event"),
    )
    key = Window.partitionBy("topic_id", "partition").orderBy("rank", "offset")
    replicas_now = F.last("replicas", ignorenulls=True).over(
        key.rowsBetween(Window.unboundedPreceding, 0)
    )
    moved = (
        parts.withColumn(
            "previous_elr",
            F.last("elr", ignorenulls=True).over(key.rowsBetween(Window.unboundedPreceding, -1)),
        )
        .withColumn("replicas_now", replicas_now)
        .where(
            (F.col("rank") == 1)
            & (F.col("leader") != -2)
            & (F.col("previous_leader").isNull() | (F.col("leader") != F.col("previous_leader")))
        )
    )
    changed = F.col("record_type") == "PartitionChangeRecord"
    with_cause = (
        moved.join(batch_events, ["batch_offset", "previous_leader"], "left")
        .groupBy("offset", "timestamp_ms", "topic_id", "partition", "previous_leader", "leader")
        .agg(
            F.collect_set("broker_event").alias("broker_events"),
            F.max(changed & (F.col("replicas").isNotNull() | F.col("adding").isNotNull())).alias(
                "moving"
            ),
            F.max(~changed & F.col("previous_leader").isNull()).alias("created"),
            F.max(F.coalesce(F.col("leader_recovery_state"), F.lit(0))).alias("recovery"),
            F.max(
                F.coalesce(F.array_contains("previous_elr", F.col("leader")), F.lit(False))
            ).alias("from_elr"),
            F.max(F.element_at("replicas_now", 1) == F.col("leader")).alias("preferred"),
            F.max("gap").alias("gap"),
        )
    )
    return (
        with_cause.withColumn("cause", _cause())
        .drop("broker_events", "moving", "created", "recovery", "from_elr", "preferred", "gap")
        .join(names, "topic_id", "left")
    )


# A leader change's causes, the first that applies: a snapshot the log skips over, a restore's
# ("recovery") or another gap's ("log gap": what happened in it is not in the log;
# ``history_rows.py``); a broker event written in the same batch
# (the old leader fenced, shutting down, unregistered); the partition's creation (its
# PartitionRecord); a reassignment (a PartitionChangeRecord changing the replicas); an unclean
# election (the new leader RECOVERING); the last leader lost with no one to take over; an
# election from the eligible leader replicas (KIP-966); another election of a leaderless
# partition; the preferred (first) replica elected back -- by ElectLeaders or by the
# controller's periodic balancing, which write the same record, so the log cannot tell them
# apart; any other election.
LEADER_CAUSES = (
    "recovery",
    "log gap",
    "fenced",
    "controlled shutdown",
    "unregistered",
    "creation",
    "reassignment",
    "unclean election",
    "went offline",
    "ELR election",
    "election (was offline)",
    "preferred leader",
    "election",
)


def _cause() -> Column:
    return (
        F.when(F.col("gap").isNotNull(), F.col("gap"))
        .when(F.array_contains("broker_events", "fence"), "fenced")
        .when(F.array_contains("broker_events", "controlled_shutdown"), "controlled shutdown")
        .when(F.array_contains("broker_events", "unregister"), "unregistered")
        .when(F.col("created"), "creation")
        .when(F.col("moving"), "reassignment")
        .when(F.col("recovery") == 1, "unclean election")
        .when(F.col("leader") == -1, "went offline")
        .when((F.col("previous_leader") == -1) & F.col("from_elr"), "ELR election")
        .when(F.col("previous_leader") == -1, "election (was offline)")
        .when(F.col("preferred"), "preferred leader")
        .otherwise("election")
    )
