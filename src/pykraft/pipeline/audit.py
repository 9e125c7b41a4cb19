"""The audit job: do all replicas agree on the committed prefix?

Input: the tables ``ingest`` wrote for several nodes. Each node's committed prefix comes from
``pykraft.pipeline.committed`` (``--hwm node=offset`` when known; otherwise the majority
estimate). Within the committed prefix of each node, from its log start offset, every check
is a DataFrame transform over the ``batches`` table (segment batches only; snapshot batch
offsets are positions inside the snapshot):

* ``mismatch``: nodes hold a batch at the same base offset with a different epoch, last
  offset or CRC. Followers copy the leader's batches byte for byte, so committed batches are
  identical everywhere (SPEC B7: the committed prefix is never lost or changed).
* ``missing``: a committed batch of one node starts at an offset that another node also
  counts as committed (and has not snapshotted away), but the other node has no batch
  starting there: a hole, or batch boundaries that differ.
* ``corrupt``: a committed batch whose CRC does not match.
* ``gap``: a node's own batches are not dense (a batch does not start where the previous
  one ended) inside its committed prefix.
* ``epoch_regression``: a node's batch has a lower epoch than the batch before it.
* ``snapshot_epoch``: a node's snapshot ``(end offset, epoch)`` disagrees with the epoch of
  the batch holding offset ``end offset - 1`` in another node's committed prefix.

Every divergence is listed with its offsets and the nodes involved; the CLI exits 1 when
there is any.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from pykraft.pipeline import decode
from pykraft.pipeline.committed import CommittedPrefix, NodeLog, committed_prefixes
from pykraft.pipeline.ingest import COMMITTED_TABLE
from pykraft.pipeline.session import join_path, progress

DIVERGENCES_TABLE = "divergences"


@dataclass(frozen=True, slots=True)
class AuditResult:
    prefixes: tuple[CommittedPrefix, ...]
    batches_checked: int
    divergences: DataFrame  # schemas.DIVERGENCES, ordered by base offset
    divergence_count: int

    @property
    def ok(self) -> bool:
        return self.divergence_count == 0


def read_prefixes(
    spark: SparkSession,
    ingested: str,
    hwm: Mapping[int, int],
    nodes: Collection[int] | None = None,
) -> list[CommittedPrefix]:
    """Committed prefixes from ingest's ``committed`` table, recomputed with ``hwm`` over
    ``nodes`` (default: every node ingested)."""
    rows = spark.read.parquet(join_path(ingested, COMMITTED_TABLE)).collect()
    if nodes is not None:
        rows = [r for r in rows if r.node in nodes]
    logs = [
        NodeLog(r.node, r.log_start_offset, r.log_end_offset, r.snapshot_end_offset) for r in rows
    ]
    voters = next((r.voter_count for r in rows if r.voter_count is not None), None)
    return committed_prefixes(logs, voters, hwm)


def committed_batches(batches: DataFrame, prefixes: DataFrame) -> DataFrame:
    """Segment batches inside their node's committed prefix (from its log start)."""
    p = prefixes.select("node", "log_start_offset", "committed_offset")
    return (
        batches.where(F.col("source") == decode.SEGMENT)
        .join(F.broadcast(p), "node")
        .where(
            (F.col("base_offset") >= F.col("log_start_offset"))
            & (F.col("base_offset") < F.col("committed_offset"))
        )
        .select("node", "base_offset", "last_offset", "epoch", "crc", "crc_ok")
    )


def _divergence(
    kind: str, node: Column, base: Column, last: Column, detail: Column
) -> list[Column]:
    return [
        F.lit(kind).alias("kind"),
        node.cast("int").alias("node"),
        base.cast("long").alias("base_offset"),
        last.cast("long").alias("last_offset"),
        detail.alias("detail"),
    ]


def _describe(prefix: str = "") -> Column:
    return F.format_string(
        "epoch %d, offsets %d-%d, crc %08x",
        F.col(prefix + "epoch"),
        F.col(prefix + "base_offset"),
        F.col(prefix + "last_offset"),
        F.col(prefix + "crc"),
    )


def _mismatches(c: DataFrame) -> DataFrame:
    """Several distinct batches at one base offset; one row per node involved."""
    variants = c.groupBy("base_offset").agg(
        F.countDistinct("last_offset", "epoch", "crc").alias("variants"),
        F.sort_array(
            F.collect_list(
                F.concat(F.lit("node "), F.col("node").cast("string"), F.lit(": "), _describe())
            )
        ).alias("all"),
    )
    mismatch = c.join(variants.where(F.col("variants") > 1), "base_offset").select(
        *_divergence(
            "mismatch",
            F.col("node"),
            F.col("base_offset"),
            F.col("last_offset"),
            F.concat_ws("; ", F.col("all")),
        )
    )
    return mismatch


def _missing(c: DataFrame, prefixes: DataFrame) -> DataFrame:
    """A batch committed on node n and inside node m's committed prefix that m lacks."""
    p = prefixes.select(
        F.col("node").alias("m"),
        F.col("log_start_offset").alias("m_start"),
        F.col("committed_offset").alias("m_committed"),
    )
    expected = (
        c.alias("c")
        .crossJoin(F.broadcast(p))
        .where(
            (F.col("m") != F.col("c.node"))
            & (F.col("c.base_offset") >= F.col("m_start"))
            & (F.col("c.base_offset") < F.col("m_committed"))
        )
    )
    held = c.select(F.col("node").alias("m"), F.col("base_offset").alias("held_base"))
    missing = (
        expected.join(
            held,
            (expected["m"] == held["m"]) & (F.col("c.base_offset") == F.col("held_base")),
            "left_anti",
        )
        .groupBy(F.col("m"), F.col("c.base_offset"))
        .agg(
            F.max("c.last_offset").alias("last_offset"),
            F.min(
                F.concat(
                    F.lit("node "), F.col("c.node").cast("string"), F.lit(" has "), _describe("c.")
                )
            ).alias("other"),
        )
        .select(
            *_divergence(
                "missing",
                F.col("m"),
                F.col("base_offset"),
                F.col("last_offset"),
                F.concat(F.lit("no batch starts here; "), F.col("other")),
            )
        )
    )
    return missing


def _corrupt(c: DataFrame) -> DataFrame:
    """A committed batch whose CRC does not match."""
    corrupt = c.where(~F.col("crc_ok")).select(
        *_divergence(
            "corrupt",
            F.col("node"),
            F.col("base_offset"),
            F.col("last_offset"),
            F.concat(F.lit("CRC mismatch in "), _describe()),
        )
    )

    return corrupt


def _gaps_and_regressions(c: DataFrame) -> DataFrame:
    """Per node, in offset order: a batch not starting right after the previous one, and an
    epoch lower than the previous batch's."""
    w = Window.partitionBy("node").orderBy("base_offset")
    ordered = c.select(
        "*",
        F.lag("last_offset").over(w).alias("prev_last"),
        F.lag("epoch").over(w).alias("prev_epoch"),
    )
    gap = ordered.where(
        F.col("prev_last").isNotNull() & (F.col("base_offset") != F.col("prev_last") + 1)
    ).select(
        *_divergence(
            "gap",
            F.col("node"),
            F.col("prev_last") + 1,
            F.col("base_offset") - 1,
            F.format_string(
                "previous batch ends at %d, next starts at %d",
                F.col("prev_last"),
                F.col("base_offset"),
            ),
        )
    )
    regression = ordered.where(F.col("epoch") < F.col("prev_epoch")).select(
        *_divergence(
            "epoch_regression",
            F.col("node"),
            F.col("base_offset"),
            F.col("last_offset"),
            F.format_string("epoch %d after epoch %d", F.col("epoch"), F.col("prev_epoch")),
        )
    )

    return gap.unionByName(regression)


def _snapshot_epochs(c: DataFrame, snapshots: DataFrame) -> DataFrame:
    """A snapshot whose epoch is not that of the committed batch holding its last offset."""
    snaps = snapshots.where(F.col("crc_ok")).select(
        F.col("node").alias("s_node"), "end_offset", F.col("epoch").alias("s_epoch")
    )
    snapshot_epoch = (
        snaps.join(
            c,
            (F.col("end_offset") - 1 >= F.col("base_offset"))
            & (F.col("end_offset") - 1 <= F.col("last_offset")),
        )
        .where(F.col("s_epoch") != F.col("epoch"))
        .select(
            *_divergence(
                "snapshot_epoch",
                F.col("s_node"),
                F.col("end_offset") - 1,
                F.col("end_offset") - 1,
                F.format_string(
                    "snapshot epoch %d, node %d's batch has epoch %d",
                    F.col("s_epoch"),
                    F.col("node"),
                    F.col("epoch"),
                ),
            )
        )
    )
    return snapshot_epoch


def find_divergences(batches: DataFrame, snapshots: DataFrame, prefixes: DataFrame) -> DataFrame:
    """All divergences (``schemas.DIVERGENCES``) of the committed prefixes, a pure transform."""
    c = committed_batches(batches, prefixes)
    return (
        _mismatches(c)
        .unionByName(_missing(c, prefixes))
        .unionByName(_corrupt(c))
        .unionByName(_gaps_and_regressions(c))
        .unionByName(_snapshot_epochs(c, snapshots))
    )


def run_audit(
    spark: SparkSession,
    ingested: str,
    hwm: Mapping[int, int] | None = None,
    out: str | None = None,
    *,
    nodes: Collection[int] | None = None,
    progress_interval_s: float = 5.0,
) -> AuditResult:
    """Audit the tables under ``ingested`` (only ``nodes`` when given: they alone then make
    the majority); write divergences under ``out`` when given."""
    read = spark.read.parquet
    batches = read(join_path(ingested, decode.BATCHES)).where(F.col("source") == decode.SEGMENT)
    snapshots = read(join_path(ingested, decode.SNAPSHOTS))
    if nodes is not None:
        batches = batches.where(F.col("node").isin(sorted(nodes)))
        snapshots = snapshots.where(F.col("node").isin(sorted(nodes)))
    with progress(spark.sparkContext, "audit", interval_s=progress_interval_s):
        prefixes = read_prefixes(spark, ingested, hwm or {}, nodes)
        rows = [(p.node, p.log_start_offset, p.committed_offset) for p in prefixes]
        prefix_frame = spark.createDataFrame(
            rows, "node int, log_start_offset long, committed_offset long"
        )
        # Only the columns the checks read, in memory once for the six checks.
        batches = batches.select(
            "node", "source", "base_offset", "last_offset", "epoch", "crc", "crc_ok"
        ).cache()
        divergences = find_divergences(batches, snapshots, prefix_frame).orderBy(
            "base_offset", "kind", "node"
        )
        checked = committed_batches(batches, prefix_frame).count()
        if out is not None:
            divergences.coalesce(1).write.mode("overwrite").parquet(
                join_path(out, DIVERGENCES_TABLE)
            )
            divergences = read(join_path(out, DIVERGENCES_TABLE)).orderBy(
                "base_offset", "kind", "node"
            )
        else:
            divergences = divergences.cache()
        count = divergences.count()
        batches.unpersist()
    return AuditResult(tuple(prefixes), checked, divergences, count)
