"""The cluster history report (issue 31): what happened to a cluster, from the metadata tables
ingest writes -- ISR churn per broker, leader changes and their causes, offline intervals,
how long brokers stayed fenced after registering, reassignments, config changes and the
balance of replicas and leaders -- as Parquet event tables, PNG plots and one HTML page.

Theory of operation. One node's log tells the cluster's committed history (every controller
and broker replays the same records); the report reads the node with the longest log
(``--node`` picks another). Its rows are ordered by offset (``history_rows.py``): the
earliest snapshot first when the segments no longer start at offset 0 (its rows are each
partition's starting state, no event), then every segment record after it, and a snapshot the
log skips over (a restore, a gap in a backup) at its offset. Events come from window functions over each
partition's rows (the previous ISR and leader are the last non-null values before a row), and
a leader change's cause from what else its batch wrote (records written together share a
``batch_offset``) and the partition's state before it (``LEADER_CAUSES``): the old leader
fenced, shutting down or unregistered, the partition created, its replicas reassigned, an
unclean or ELR election, the leader lost, the preferred replica elected back, a recovery
(a restored snapshot), else an election. Everything is
computed in Spark; the driver only collects aggregates (per broker, per time bucket) and the
first rows of each event table for the page.
"""

from __future__ import annotations

import html
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession, Window, WindowSpec
from pyspark.sql import functions as F

from pykraft.pipeline import metadata_state, schemas
from pykraft.pipeline.history_rows import history_rows
from pykraft.pipeline.ingest import CLUSTER_ID, exists, read_cluster_table
from pykraft.pipeline.leader_causes import leader_changes
from pykraft.pipeline.session import join_path

__all__ = ["HistoryReport", "events", "load_tables", "run_history_report"]

EVENT_TABLES = (
    "isr_changes",
    "leader_changes",
    "offline_intervals",
    "broker_unfence",
    "reassignments",
    "config_changes",
    "balance",
)
SHOWN_ROWS = 25
TOP_BROKERS = 8  # brokers drawn in the over-time plot: those with the most ISR shrinks
TIME_BUCKETS = 40


class NotIngestOutput(ValueError):
    """The path is not what ``pykraft pipeline ingest`` writes."""


def _no_files_table(path: str) -> NotIngestOutput:
    return NotIngestOutput(
        f"{path} is not the output of `pykraft pipeline ingest` (no files table)"
    )


def check_local_output(path: str) -> None:
    """A local ``path`` holds ingest's files table: checked before a Spark session starts,
    so a mistyped path costs no JVM (a Hadoop URI is checked by ``clusters_in``)."""
    if "://" in path:
        return
    local = path[len("file:") :] if path.startswith("file:") else path
    if not os.path.isdir(os.path.join(local, "files")):
        raise _no_files_table(path)


def clusters_in(spark: SparkSession, path: str) -> list[str]:
    """The clusters whose tables ingest wrote under ``path``."""
    if not exists(spark, join_path(path, "files")):
        raise _no_files_table(path)
    try:
        rows = spark.read.parquet(join_path(path, "files")).select(CLUSTER_ID).distinct().collect()
    except Exception as e:  # AnalysisException: no such path, or not Parquet
        raise NotIngestOutput(
            f"{path} is not the output of `pykraft pipeline ingest` ({str(e).splitlines()[0]})"
        ) from None
    return sorted(str(r[CLUSTER_ID]) for r in rows)


def load_tables(spark: SparkSession, path: str, cluster: str | None = None) -> dict[str, DataFrame]:
    """Every table ingest wrote under ``path`` for ``cluster`` (the only one, when the
    tables hold one); a missing table or an ambiguous cluster is a clear error."""
    found = clusters_in(spark, path)
    if cluster is None:
        if len(found) != 1:
            raise NotIngestOutput(
                f"{path} holds clusters {', '.join(found)}: pick one with --cluster"
            )
        cluster = found[0]
    elif cluster not in found:
        raise NotIngestOutput(f"{path} holds no cluster {cluster} (it holds {', '.join(found)})")
    out: dict[str, DataFrame] = {}
    for name, schema in schemas.BY_TABLE.items():
        try:
            out[name] = read_cluster_table(spark, path, name, cluster, schema)
        except FileNotFoundError:
            raise NotIngestOutput(
                f"{path} is not the output of `pykraft pipeline ingest` (no table {name})"
            ) from None
    return out


def _pick_node(tables: Mapping[str, DataFrame], node: int | None) -> int:
    batches = tables["batches"]
    if node is not None:
        if not batches.where(F.col("node") == node).limit(1).count():
            raise NotIngestOutput(f"node {node} has no log in these tables")
        return node
    best = (
        batches.groupBy("node")
        .agg(F.max("last_offset").alias("end"))
        .orderBy(F.desc("end"), "node")
        .first()
    )
    if best is None:
        raise NotIngestOutput("the tables hold no log")
    return int(best["node"])


def _before(w: WindowSpec) -> WindowSpec:
    return w.rowsBetween(Window.unboundedPreceding, -1)


def _names(tables: Mapping[str, DataFrame], node: int) -> DataFrame:
    return (
        tables["topics"]
        .where((F.col("node") == node) & (F.col("event") == "create"))
        .groupBy("topic_id")
        .agg(F.first("name").alias("topic"))
    )


def events(tables: Mapping[str, DataFrame], node: int) -> dict[str, DataFrame]:
    """The report's event tables for ``node``'s log (see the module docstring)."""
    parts = history_rows(tables["partition_changes"], tables, node)
    key = Window.partitionBy("topic_id", "partition").orderBy("rank", "offset")
    parts = (
        parts.withColumn("previous_isr", F.last("isr", ignorenulls=True).over(_before(key)))
        .withColumn(
            "previous_leader",
            F.last(F.when(F.col("leader") != -2, F.col("leader")), ignorenulls=True).over(
                _before(key)
            ),
        )
        .withColumn("reassigning", F.col("replicas").isNotNull() & (F.col("rank") == 1))
    )
    names = _names(tables, node)
    brokers = history_rows(tables["brokers"], tables, node, gaps=False)
    return {
        "isr_changes": _isr_changes(parts, names),
        "leader_changes": leader_changes(parts, brokers, names),
        "offline_intervals": _offline(parts, names),
        "broker_unfence": _broker_unfence(brokers),
        "reassignments": _reassignments(parts).join(names, "topic_id", "left"),
        "config_changes": _config_changes(tables, node),
        "balance": _balance(tables, node),
    }


def _isr_changes(parts: DataFrame, names: DataFrame) -> DataFrame:
    """One row per broker leaving (shrink) or joining (expand) an ISR."""
    changes = parts.where(
        (F.col("rank") == 1) & F.col("isr").isNotNull() & F.col("previous_isr").isNotNull()
    )
    shrinks = changes.select(
        "offset",
        "timestamp_ms",
        "topic_id",
        "partition",
        F.explode(F.array_except("previous_isr", "isr")).alias("broker"),
        F.lit("shrink").alias("kind"),
        "reassigning",
    )
    expands = changes.select(
        "offset",
        "timestamp_ms",
        "topic_id",
        "partition",
        F.explode(F.array_except("isr", "previous_isr")).alias("broker"),
        F.lit("expand").alias("kind"),
        "reassigning",
    )
    return shrinks.unionByName(expands).join(names, "topic_id", "left")


def _offline(parts: DataFrame, names: DataFrame) -> DataFrame:
    """One row per interval a partition had no leader."""
    by_change = Window.partitionBy("topic_id", "partition").orderBy("offset")
    leader_rows = parts.where((F.col("rank") == 1) & (F.col("leader") != -2)).select(
        "topic_id", "partition", "offset", "timestamp_ms", "leader"
    )
    return (
        leader_rows.withColumn("end_ms", F.lead("timestamp_ms").over(by_change))
        .where(F.col("leader") == -1)
        .select(
            "topic_id",
            "partition",
            F.col("offset").alias("start_offset"),
            F.col("timestamp_ms").alias("start_ms"),
            "end_ms",
            (F.col("end_ms") - F.col("timestamp_ms")).alias("duration_ms"),
        )
        .join(names, "topic_id", "left")
    )


def _broker_unfence(brokers: DataFrame) -> DataFrame:
    """Per broker registration, how long until it was unfenced."""
    registered = brokers.where((F.col("rank") == 1) & (F.col("event") == "register")).select(
        "broker_id", "broker_epoch", F.col("timestamp_ms").alias("registered_ms")
    )
    unfenced = (
        brokers.where((F.col("rank") == 1) & (F.col("event") == "unfence"))
        .groupBy("broker_id", "broker_epoch")
        .agg(F.min("timestamp_ms").alias("unfenced_ms"))
    )
    return registered.join(unfenced, ["broker_id", "broker_epoch"], "left").withColumn(
        "duration_ms", F.col("unfenced_ms") - F.col("registered_ms")
    )


def _config_changes(tables: Mapping[str, DataFrame], node: int) -> DataFrame:
    return (
        history_rows(tables["configs"], tables, node, gaps=False)
        .where(F.col("rank") == 1)
        .select(
            "offset",
            "timestamp_ms",
            "resource_type",
            "resource_name",
            "name",
            "value",
            "sensitive",
            "deleted",
        )
    )


def _balance(tables: Mapping[str, DataFrame], node: int) -> DataFrame:
    """Replicas and leaders per broker in the final state."""
    final = metadata_state.partitions_as_of(
        {k: v.where(F.col("node") == node) for k, v in tables.items()}, metadata_state.Moment(None)
    )
    replicas = final.select(F.explode("replicas").alias("broker")).groupBy("broker").count()
    leaders = final.where(F.col("leader") >= 0).groupBy(F.col("leader").alias("broker")).count()
    return (
        replicas.withColumnRenamed("count", "replicas")
        .join(leaders.withColumnRenamed("count", "leaders"), "broker", "full_outer")
        .fillna(0)
    )


def _reassignments(parts: DataFrame) -> DataFrame:
    """One row per reassignment of a partition: when adding/removing replicas first appear,
    when they are gone again (null while in progress), the steps (distinct replica lists
    with replicas being added) and the replicas it ended with."""
    key = Window.partitionBy("topic_id", "partition").orderBy("rank", "offset")
    adding = F.last("adding", ignorenulls=True).over(key.rowsBetween(Window.unboundedPreceding, 0))
    removing = F.last("removing", ignorenulls=True).over(
        key.rowsBetween(Window.unboundedPreceding, 0)
    )
    moving = (F.size(F.coalesce(adding, F.array())) > 0) | (
        F.size(F.coalesce(removing, F.array())) > 0
    )
    rows = parts.withColumn("moving", moving).withColumn(
        "was_moving", F.coalesce(F.lag("moving").over(key), F.lit(False))
    )
    rows = rows.withColumn(
        "session",
        F.sum(F.when(F.col("moving") & ~F.col("was_moving"), 1).otherwise(0)).over(
            key.rowsBetween(Window.unboundedPreceding, 0)
        ),
    ).where(F.col("moving") | F.col("was_moving"))
    ended = ~F.col("moving") & F.col("was_moving")
    return (
        rows.where(F.col("rank") == 1)
        .groupBy("topic_id", "partition", "session")
        .agg(
            F.min("timestamp_ms").alias("start_ms"),
            F.min("offset").alias("start_offset"),
            F.max(F.when(ended, F.col("timestamp_ms"))).alias("end_ms"),
            F.count_distinct(
                F.when(F.size(F.coalesce("adding", F.array())) > 0, F.col("replicas"))
            ).alias("steps"),
            F.max_by(
                F.col("replicas"), F.when(F.col("replicas").isNotNull(), F.col("offset"))
            ).alias("replicas"),
        )
        .withColumn("duration_ms", F.col("end_ms") - F.col("start_ms"))
        .drop("session")
    )


@dataclass(frozen=True)
class HistoryReport:
    node: int
    counts: dict[str, int]
    html: Path
    plots: tuple[Path, ...]
    seconds: float


def _bucketed(frame: DataFrame, span: tuple[int, int], by: Column) -> list[Any]:
    lo, hi = span
    width = max(1, (hi - lo) // TIME_BUCKETS + 1)
    bucket = ((F.col("timestamp_ms") - lo) / width).cast("int")
    return (
        frame.groupBy(bucket.alias("bucket"), by.alias("series"))
        .count()
        .orderBy("bucket")
        .collect()
    )


def _plots(found: Mapping[str, DataFrame], out: Path, node: int) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths: list[Path] = []

    def save(fig: Any, name: str) -> None:
        path = out / name
        fig.tight_layout()
        fig.savefig(path, dpi=90)
        plt.close(fig)
        paths.append(path)

    isr = found["isr_changes"].where(~F.col("reassigning"))
    _plot_isr(plt, save, isr, node)
    _plot_isr_over_time(plt, save, isr)
    _plot_durations(plt, save, found)
    _plot_balance(plt, save, found)
    return paths


Save = Callable[[Any, str], None]


def _plot_isr(plt: Any, save: Save, isr: DataFrame, node: int) -> None:
    per_broker = isr.groupBy("broker", "kind").count().orderBy("broker").collect()
    brokers = sorted({int(r["broker"]) for r in per_broker})
    fig, ax = plt.subplots(figsize=(8, 4))
    for shift, kind in ((-0.2, "shrink"), (0.2, "expand")):
        counts = {int(r["broker"]): int(r["count"]) for r in per_broker if r["kind"] == kind}
        ax.bar([b + shift for b in brokers], [counts.get(b, 0) for b in brokers], 0.4, label=kind)
    ax.set(
        title=f"ISR shrinks and expands per broker (node {node}'s log)",
        xlabel="broker",
        ylabel="events",
    )
    ax.legend()
    save(fig, "isr_per_broker.png")


def _plot_isr_over_time(plt: Any, save: Save, isr: DataFrame) -> None:
    span_row = isr.agg(F.min("timestamp_ms"), F.max("timestamp_ms")).first()
    if span_row is not None and span_row[0] is not None:
        import datetime

        span = (int(span_row[0]), int(span_row[1]))
        width = max(1, (span[1] - span[0]) // TIME_BUCKETS + 1)
        shrinks = isr.where(F.col("kind") == "shrink")
        ranked = shrinks.groupBy("broker").count().orderBy(F.desc("count"), "broker")
        top = [int(r["broker"]) for r in ranked.limit(TOP_BROKERS).collect()]
        rows = _bucketed(shrinks.where(F.col("broker").isin(top)), span, F.col("broker"))
        fig, ax = plt.subplots(figsize=(9, 4))
        start = datetime.datetime.fromtimestamp(span[0] / 1000, datetime.UTC)
        for broker in top:
            points = sorted(
                (int(r["bucket"]), int(r["count"])) for r in rows if r["series"] == broker
            )
            days = [b * width / 86_400_000 for b, _ in points]
            ax.plot(days, [c for _, c in points], marker="o", label=f"broker {broker}")
        ax.set(
            title=f"ISR shrinks over time: the {len(top)} brokers with the most",
            xlabel=f"days since {start:%Y-%m-%d %H:%M} UTC",
            ylabel=f"shrinks per {width / 3_600_000:.1f} h",
        )
        ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8)
        save(fig, "isr_shrinks_over_time.png")


def _plot_durations(plt: Any, save: Save, found: Mapping[str, DataFrame]) -> None:
    """Leader changes by cause, offline intervals, registration to unfence."""
    causes = found["leader_changes"].groupBy("cause").count().orderBy(F.desc("count")).collect()
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.barh([str(r["cause"]) for r in causes], [int(r["count"]) for r in causes])
    ax.set(title="Leader changes by cause", xlabel="leader changes")
    save(fig, "leader_changes_by_cause.png")

    durations = [
        int(r["duration_ms"])
        for r in found["offline_intervals"]
        .where(F.col("duration_ms").isNotNull())
        .select("duration_ms")
        .limit(100_000)
        .collect()
    ]
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.hist(durations or [0], bins=30)
    ax.set(
        title="Offline partition intervals (no leader)", xlabel="duration (ms)", ylabel="intervals"
    )
    save(fig, "offline_intervals.png")

    unfence = [
        int(r["duration_ms"])
        for r in found["broker_unfence"]
        .where(F.col("duration_ms").isNotNull())
        .select("duration_ms")
        .limit(100_000)
        .collect()
    ]
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.hist(unfence or [0], bins=30)
    ax.set(title="Registration to unfence", xlabel="duration (ms)", ylabel="registrations")
    save(fig, "time_to_unfence.png")


def _plot_balance(plt: Any, save: Save, found: Mapping[str, DataFrame]) -> None:
    balance = found["balance"].orderBy("broker").collect()
    fig, ax = plt.subplots(figsize=(8, 4))
    ids = [int(r["broker"]) for r in balance]
    ax.bar([b - 0.2 for b in ids], [int(r["replicas"]) for r in balance], 0.4, label="replicas")
    ax.bar([b + 0.2 for b in ids], [int(r["leaders"]) for r in balance], 0.4, label="leaders")
    ax.set(title="Replicas and leaders per broker (log end)", xlabel="broker")
    if len(ids) <= 30:
        ax.set_xticks(ids)
    ax.legend()
    save(fig, "balance.png")


def _table_html(frame: DataFrame, order: Sequence[str]) -> str:
    rows = frame.orderBy(*order).limit(SHOWN_ROWS).collect()
    if not rows:
        return "<p><em>none</em></p>"
    head = "".join(f"<th>{html.escape(c)}</th>" for c in frame.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_cell(row[c]))}</td>" for c in frame.columns) + "</tr>"
        for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return json.dumps(value)
    return str(value)


_ORDER = {
    "isr_changes": ["offset", "broker"],
    "leader_changes": ["offset", "partition"],
    "offline_intervals": ["start_offset", "partition"],
    "broker_unfence": ["registered_ms", "broker_id"],
    "reassignments": ["start_offset", "partition"],
    "config_changes": ["offset", "name"],
    "balance": ["broker"],
}
_STYLE = (
    "body{font-family:sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse;"
    "font-size:12px;margin-bottom:1em}td,th{border:1px solid #ccc;padding:2px 6px}"
    "th{background:#eee}img{max-width:100%;border:1px solid #ddd;margin:0.5em 0}"
)


def run_history_report(
    spark: SparkSession,
    tables_path: str,
    out: str,
    *,
    node: int | None = None,
    cluster: str | None = None,
) -> HistoryReport:
    """``pykraft pipeline report --metadata``: the event tables as Parquet under
    ``out/tables``, the plots and ``out/index.html``."""
    started = time.monotonic()
    tables = load_tables(spark, tables_path, cluster)
    chosen = _pick_node(tables, node)
    found = events(tables, chosen)
    for name, frame in found.items():
        frame.write.mode("overwrite").parquet(join_path(out, f"tables/{name}"))
    written = load_written(spark, out)
    directory = Path(out)
    directory.mkdir(parents=True, exist_ok=True)
    plots = _plots(written, directory, chosen)
    counts = {name: frame.count() for name, frame in written.items()}
    sections = [
        f"<h1>Cluster history: node {chosen}'s metadata log</h1>",
        f"<p>From <code>{html.escape(tables_path)}</code>. Event tables (Parquet) under "
        "<code>tables/</code>.</p>",
        "<ul>"
        + "".join(f"<li>{html.escape(name)}: {count:,} rows</li>" for name, count in counts.items())
        + "</ul>",
    ]
    sections += [f'<img src="{p.name}" alt="{p.stem}">' for p in plots]
    for name in EVENT_TABLES:
        sections.append(f"<h2>{html.escape(name.replace('_', ' '))}</h2>")
        sections.append(_table_html(written[name], _ORDER[name]))
    page = directory / "index.html"
    page.write_text(
        f"<!doctype html><html><head><meta charset='utf-8'><title>Cluster history</title>"
        f"<style>{_STYLE}</style></head><body>{''.join(sections)}</body></html>\n"
    )
    return HistoryReport(chosen, counts, page, tuple(plots), time.monotonic() - started)


def load_written(spark: SparkSession, out: str) -> dict[str, DataFrame]:
    return {name: spark.read.parquet(join_path(out, f"tables/{name}")) for name in EVENT_TABLES}
