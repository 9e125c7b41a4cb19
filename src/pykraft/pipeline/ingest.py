"""The ingest job: nodes' metadata log directories -> Parquet tables.

Each node's ``<metadata.log.dir>/__cluster_metadata-0/`` is read with Spark's ``binaryFile``
source (segments ``*.log`` and snapshots ``*.checkpoint``; ``.checkpoint.part`` files being
written are skipped), so any Hadoop file system URI works. The file split is forced to one
file per partition, so one Spark task decodes one file with ``pykraft.pipeline.decode`` and
hands the columns back as Arrow batches (``mapInArrow``, ``pykraft.pipeline.columnar``); no
decoded row crosses into the JVM one by one. The driver only lists files and collects
per-node totals (a handful of numbers per node, aggregated in the JVM).

Tables written under the output path: ``batches``, ``records``, ``leader_changes``,
``voter_sets`` (with ``committed``), ``snapshots``, ``files`` and ``committed`` (each node's
committed prefix, see ``pykraft.pipeline.committed``). Schemas: ``pykraft.pipeline.schemas``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import reduce

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from pykraft.pipeline import columnar, decode, schemas
from pykraft.pipeline.committed import (
    GIVEN,
    MAJORITY,
    CommittedPrefix,
    NodeLog,
    committed_prefixes,
)
from pykraft.pipeline.session import join_path, progress

PARTITION_DIR = "__cluster_metadata-0"
COMMITTED_TABLE = "committed"
_GLOB = "*.{log,checkpoint}"
# Larger than any file binaryFile can hold (2 GiB), so each file is its own split.
_ONE_FILE_PER_SPLIT = str(4 * 1024**3)


@dataclass(frozen=True, slots=True)
class LogDir:
    """``[NODE=]PATH`` from the command line; the node id comes from ``meta.properties``
    when not given."""

    path: str
    node: int | None = None

    @classmethod
    def parse(cls, spec: str) -> LogDir:
        head, sep, tail = spec.partition("=")
        if sep and head.isdigit():
            return cls(tail, int(head))
        return cls(spec)

    @property
    def partition_path(self) -> str:
        trimmed = self.path.rstrip("/")
        if trimmed.endswith("/" + PARTITION_DIR) or trimmed == PARTITION_DIR:
            return trimmed
        return join_path(trimmed, PARTITION_DIR)


@dataclass(frozen=True, slots=True)
class IngestSummary:
    nodes: int
    files: int
    bytes: int
    batches: int
    records: int
    seconds: float
    prefixes: tuple[CommittedPrefix, ...]

    @property
    def mb_per_s(self) -> float:
        return self.bytes / 1e6 / self.seconds if self.seconds > 0 else 0.0


def node_id_of(spark: SparkSession, log_dir: LogDir) -> int:
    """``node.id`` from ``<dir>/meta.properties`` (read through Spark: any file system)."""
    if log_dir.node is not None:
        return log_dir.node
    base = log_dir.path.rstrip("/")
    if base.endswith("/" + PARTITION_DIR):
        base = base[: -len(PARTITION_DIR) - 1]
    for row in spark.read.text(join_path(base, "meta.properties")).collect():
        key, sep, value = str(row.value).partition("=")
        if sep and key.strip() == "node.id":
            return int(value.strip())
    raise ValueError(f"no node.id in {base}/meta.properties; pass NODE={log_dir.path}")


@contextmanager
def one_file_per_task(spark: SparkSession) -> Iterator[None]:
    """While inside, a file source gives each file its own partition (so its own task).

    DataFrame scans are planned when an action runs, so every action over ``read_files``
    must run inside this block.
    """
    conf = spark.conf
    keys = ("spark.sql.files.maxPartitionBytes", "spark.sql.files.openCostInBytes")
    saved = {key: conf.get(key, None) for key in keys}
    for key in keys:
        conf.set(key, _ONE_FILE_PER_SPLIT)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                conf.unset(key)
            else:
                conf.set(key, value)


def read_files(spark: SparkSession, dirs: Mapping[int, str]) -> DataFrame:
    """``(node, path, content)`` for every segment and snapshot; one partition per file when
    planned inside ``one_file_per_task``."""
    frames = [
        spark.read.format("binaryFile")
        .option("pathGlobFilter", _GLOB)
        .load(path)
        .select(F.lit(node).cast("int").alias(columnar.NODE), "path", "content")
        for node, path in sorted(dirs.items())
    ]
    if not frames:
        return spark.createDataFrame([], "node int, path string, content binary")
    return reduce(DataFrame.union, frames)


def decode_files(files: DataFrame) -> DataFrame:
    """Every table's rows (``columnar.DECODED``), decoded by ``pykraft.pipeline.decode`` in
    one Python task per file, handed to the JVM as Arrow batches."""
    return files.mapInArrow(columnar.decode_files, columnar.DECODED)


def table(decoded: DataFrame, name: str) -> DataFrame:
    """One table's rows out of ``decode_files``'s output, in its schema's columns."""
    return decoded.where(F.col(columnar.TABLE) == name).select(f"{name}.*")


@dataclass(frozen=True, slots=True)
class NodeTotals:
    """What ``committed_prefixes`` and the summary need from one node's decoded tables."""

    files: int = 0
    bytes: int = 0
    batches: int = 0
    records: int = 0
    log_start_offset: int | None = None  # first segment batch's base offset
    log_end_offset: int | None = None  # end of the last CRC-valid segment batch
    snapshot_end_offset: int = 0  # latest CRC-valid snapshot
    # (offset, epoch, voter count) of the latest voter set / leader change seen
    voter_set: tuple[int, int, int] | None = None
    leader_change: tuple[int, int, int] | None = None

    def node_log(self, node: int) -> NodeLog:
        snap = self.snapshot_end_offset
        end = self.log_end_offset if self.log_end_offset is not None else snap
        start = self.log_start_offset if self.log_start_offset is not None else snap
        return NodeLog(node, min(start, end), end, snap)


def _latest(name: str, voters: str) -> Column:
    """max((offset, epoch, size of voters)) over one table's rows (null when none)."""
    c = F.col(name)
    return F.max(
        F.when(
            c.isNotNull(),
            F.struct(c["offset"], c["epoch"], F.size(c[voters]).alias("voters")),
        )
    ).alias(name)


def node_totals(decoded: DataFrame) -> dict[int, NodeTotals]:
    """Per-node totals of ``decode_files``'s output: one aggregation, in the JVM, that never
    reads the ``records`` column (the bulk of the cache); rows are counted by ``table``."""
    b, s, t = F.col(decode.BATCHES), F.col(decode.SNAPSHOTS), F.col(columnar.TABLE)
    segment = b["source"] == decode.SEGMENT
    rows = (
        decoded.groupBy(columnar.NODE)
        .agg(
            F.count(F.when(t == decode.FILES, 1)).alias("files"),
            F.sum(F.col(decode.FILES)["size_bytes"]).alias("bytes"),
            F.count(F.when(t == decode.BATCHES, 1)).alias("batches"),
            F.count(F.when(t == decode.RECORDS, 1)).alias("records"),
            F.min(F.when(segment, b["base_offset"])).alias("start"),
            F.max(F.when(segment & b["crc_ok"], b["last_offset"] + 1)).alias("end"),
            F.max(F.when(s["crc_ok"], s["end_offset"])).alias("snapshot_end"),
            _latest(decode.VOTER_SETS, "voters"),
            _latest(decode.LEADER_CHANGES, "voters"),
        )
        .collect()
    )
    return {
        r.node: NodeTotals(
            r.files,
            r.bytes or 0,
            r.batches,
            r.records,
            r.start,
            r.end,
            r.snapshot_end or 0,
            None if r.voter_sets is None else tuple(r.voter_sets),
            None if r.leader_changes is None else tuple(r.leader_changes),
        )
        for r in rows
    }


def voter_count(totals: Mapping[int, NodeTotals]) -> int | None:
    """Size of the latest voter set in any node's log: VotersRecord, else LeaderChange."""
    voter_sets = [t.voter_set for t in totals.values() if t.voter_set is not None]
    changes = [t.leader_change for t in totals.values() if t.leader_change is not None]
    for latest in (max(voter_sets, default=None), max(changes, default=None)):
        if latest is not None:
            return int(latest[2])
    return None


def prefixes_frame(
    spark: SparkSession,
    logs: Sequence[NodeLog],
    voters: int | None,
    prefixes: Sequence[CommittedPrefix],
) -> DataFrame:
    """The ``committed`` table: what ``committed_prefixes`` was given and what it chose, so
    the audit can recompute prefixes (with other ``--hwm``) without rereading the logs."""
    by_node = {log.node: log for log in logs}
    rows = [
        (
            p.node,
            p.log_start_offset,
            p.log_end_offset,
            by_node[p.node].snapshot_end_offset,
            voters,
            p.committed_offset,
            p.source,
        )
        for p in prefixes
    ]
    return spark.createDataFrame(rows, schemas.COMMITTED)


def voter_sets_committed(voter_sets: DataFrame, prefixes: Sequence[CommittedPrefix]) -> DataFrame:
    """``voter_sets`` plus ``committed``: true below the node's committed offset (always for
    a snapshot's voter set), false at or above it under a given or majority bound, null when
    only a snapshot bound is known."""
    committed = F.lit(None).cast("boolean")
    for p in prefixes:
        at_node = F.col("node") == p.node
        known = p.source in (GIVEN, MAJORITY)
        below = F.col("offset") < p.committed_offset
        # true OR null is true, false OR null is null: unknown above a snapshot-only bound
        committed = F.when(at_node, below | F.lit(False if known else None)).otherwise(committed)
    snapshot = F.col("source") == decode.SNAPSHOT
    return voter_sets.select("*", F.when(snapshot, True).otherwise(committed).alias("committed"))


def run_ingest(
    spark: SparkSession,
    log_dirs: Sequence[LogDir],
    out: str,
    hwm: Mapping[int, int] | None = None,
    *,
    progress_interval_s: float = 5.0,
) -> IngestSummary:
    """Read ``log_dirs``, write every table under ``out`` (overwriting), return totals.

    Jobs: one decode pass (one Python task per file, Arrow batches back to the JVM, cached)
    that also sums per-node totals, then one write per table from the cache, coalesced to the
    default parallelism so a tiny log does not become hundreds of tiny Parquet files.
    """
    started = time.monotonic()
    dirs = {node_id_of(spark, d): d.partition_path for d in log_dirs}
    if len(dirs) != len(log_dirs):
        raise ValueError("two log directories have the same node id")
    width = max(1, spark.sparkContext.defaultParallelism)
    with (
        progress(spark.sparkContext, "ingest", interval_s=progress_interval_s),
        one_file_per_task(spark),
    ):
        decoded = decode_files(read_files(spark, dirs)).persist(StorageLevel.MEMORY_AND_DISK)
        try:
            totals = node_totals(decoded)
            logs = [totals.get(node, NodeTotals()).node_log(node) for node in sorted(dirs)]
            voters = voter_count(totals)
            prefixes = committed_prefixes(logs, voters, hwm or {})
            for name in schemas.BY_TABLE:
                frame = table(decoded, name)
                if name == decode.VOTER_SETS:
                    frame = voter_sets_committed(frame, prefixes)
                frame.coalesce(width).write.mode("overwrite").parquet(join_path(out, name))
            prefixes_frame(spark, logs, voters, prefixes).coalesce(1).write.mode(
                "overwrite"
            ).parquet(join_path(out, COMMITTED_TABLE))
        finally:
            decoded.unpersist()
    return IngestSummary(
        nodes=len(dirs),
        files=sum(t.files for t in totals.values()),
        bytes=sum(t.bytes for t in totals.values()),
        batches=sum(t.batches for t in totals.values()),
        records=sum(t.records for t in totals.values()),
        seconds=time.monotonic() - started,
        prefixes=tuple(prefixes),
    )
