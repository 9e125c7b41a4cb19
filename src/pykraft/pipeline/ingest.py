"""The ingest job: nodes' metadata log directories -> Parquet tables.

Each node's ``<metadata.log.dir>/__cluster_metadata-0/`` is read with Spark's ``binaryFile``
source (segments ``*.log`` and snapshots ``*.checkpoint``; ``.checkpoint.part`` files being
written are skipped), so any Hadoop file system URI works. The file split is forced to one
file per partition, so one Spark task decodes one file with ``pykraft.pipeline.decode``; the
driver only lists files and collects per-node totals (a handful of numbers per node).

Tables written under the output path: ``batches``, ``records``, ``leader_changes``,
``voter_sets`` (with ``committed``), ``snapshots``, ``files`` and ``committed`` (each node's
committed prefix, see ``pykraft.pipeline.committed``). Schemas: ``pykraft.pipeline.schemas``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark import RDD, StorageLevel
from pyspark.sql import DataFrame, SparkSession

from pykraft.pipeline import decode, schemas
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

FileContent = tuple[int, str, bytes]


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


def read_files(spark: SparkSession, dirs: Mapping[int, str]) -> RDD[FileContent]:
    """``(node, path, content)`` for every segment and snapshot, one partition per file."""
    conf = spark.conf
    saved = {
        k: conf.get(k)
        for k in ("spark.sql.files.maxPartitionBytes", "spark.sql.files.openCostInBytes")
    }
    conf.set("spark.sql.files.maxPartitionBytes", _ONE_FILE_PER_SPLIT)
    conf.set("spark.sql.files.openCostInBytes", _ONE_FILE_PER_SPLIT)
    try:
        parts: list[RDD[FileContent]] = []
        for node, path in sorted(dirs.items()):
            frame = spark.read.format("binaryFile").option("pathGlobFilter", _GLOB).load(path)
            # ``.rdd`` plans the scan now, while the split settings above are in force.
            parts.append(frame.select("path", "content").rdd.map(_with_node(node)))
    finally:
        for key, value in saved.items():
            if value is None:
                conf.unset(key)
            else:
                conf.set(key, value)
    return spark.sparkContext.union(parts) if parts else spark.sparkContext.emptyRDD()


def _with_node(node: int):  # type: ignore[no-untyped-def]
    def attach(row: object) -> FileContent:
        return (node, row.path, bytes(row.content))  # type: ignore[attr-defined]

    return attach


def _is_table(name: str) -> Callable[[tuple[str, decode.Row]], bool]:
    def check(item: tuple[str, decode.Row]) -> bool:
        return item[0] == name

    return check


def _row(item: tuple[str, decode.Row]) -> decode.Row:
    return item[1]


def _decode(item: FileContent) -> Iterator[tuple[str, decode.Row]]:
    node, path, content = item
    return decode.decode_file(node, path, content)


@dataclass(slots=True)
class NodeTotals:
    """Per-node totals gathered from decoded rows; ``merge`` combines two partitions'."""

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

    def add(self, table: str, row: decode.Row) -> None:
        if table == decode.FILES:
            self.files += 1
            self.bytes += row[3]
        elif table == decode.BATCHES:
            self.batches += 1
            if row[1] == decode.SEGMENT:
                self.log_start_offset = _min(self.log_start_offset, row[4])
                if row[12]:
                    self.log_end_offset = _max(self.log_end_offset, row[5] + 1)
        elif table == decode.RECORDS:
            self.records += 1
        elif table == decode.SNAPSHOTS:
            if row[7]:
                self.snapshot_end_offset = max(self.snapshot_end_offset, row[2])
        elif table == decode.VOTER_SETS:
            self.voter_set = _max((row[2], row[3], len(row[4])), self.voter_set)
        elif table == decode.LEADER_CHANGES:
            self.leader_change = _max((row[2], row[3], len(row[6])), self.leader_change)

    def merge(self, other: NodeTotals) -> NodeTotals:
        return NodeTotals(
            self.files + other.files,
            self.bytes + other.bytes,
            self.batches + other.batches,
            self.records + other.records,
            _min(self.log_start_offset, other.log_start_offset),
            _max(self.log_end_offset, other.log_end_offset),
            max(self.snapshot_end_offset, other.snapshot_end_offset),
            _max(self.voter_set, other.voter_set),
            _max(self.leader_change, other.leader_change),
        )

    def node_log(self, node: int) -> NodeLog:
        snap = self.snapshot_end_offset
        end = self.log_end_offset if self.log_end_offset is not None else snap
        start = self.log_start_offset if self.log_start_offset is not None else snap
        return NodeLog(node, min(start, end), end, snap)


def _min(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else min(a, b)


def _max(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else max(a, b)


def summarize(items: Iterable[tuple[str, decode.Row]]) -> Iterator[dict[int, NodeTotals]]:
    """One partition's rows -> per-node totals (a ``mapPartitions`` function)."""
    totals: dict[int, NodeTotals] = {}
    for table, row in items:
        node = row[0]
        if node not in totals:
            totals[node] = NodeTotals()
        totals[node].add(table, row)
    yield totals


def merge_totals(a: dict[int, NodeTotals], b: dict[int, NodeTotals]) -> dict[int, NodeTotals]:
    out = dict(a)
    for node, totals in b.items():
        out[node] = out[node].merge(totals) if node in out else totals
    return out


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


def voter_set_committed(row: decode.Row, prefixes: Mapping[int, CommittedPrefix]) -> decode.Row:
    """A ``voter_sets`` row plus ``committed``: true below the node's committed offset
    (always for a snapshot's voter set), false at or above it under a given or majority
    bound, None when only a snapshot bound is known."""
    node, source, offset = row[0], row[1], row[2]
    prefix = prefixes.get(node)
    committed: bool | None
    if source == decode.SNAPSHOT or (prefix and offset < prefix.committed_offset):
        committed = True
    elif prefix and prefix.source in (GIVEN, MAJORITY):
        committed = False
    else:
        committed = None
    return (*row, committed)


def run_ingest(
    spark: SparkSession,
    log_dirs: Sequence[LogDir],
    out: str,
    hwm: Mapping[int, int] | None = None,
    *,
    progress_interval_s: float = 5.0,
) -> IngestSummary:
    """Read ``log_dirs``, write every table under ``out`` (overwriting), return totals.

    Jobs: one decode pass (one task per file) that also sums per-node totals on the
    executors, then one write per table from the persisted rows, coalesced to the default
    parallelism so a tiny log does not become hundreds of tiny Parquet files.
    """
    started = time.monotonic()
    dirs = {node_id_of(spark, d): d.partition_path for d in log_dirs}
    if len(dirs) != len(log_dirs):
        raise ValueError("two log directories have the same node id")
    sc = spark.sparkContext
    with progress(sc, "ingest", interval_s=progress_interval_s):
        tagged = read_files(spark, dirs).flatMap(_decode).persist(StorageLevel.MEMORY_AND_DISK)
        try:
            totals = tagged.mapPartitions(summarize).fold({}, merge_totals)
            logs = [totals.get(node, NodeTotals()).node_log(node) for node in sorted(dirs)]
            voters = voter_count(totals)
            prefixes = committed_prefixes(logs, voters, hwm or {})
            by_node = {p.node: p for p in prefixes}
            width = max(1, sc.defaultParallelism)
            for name, schema in schemas.BY_TABLE.items():
                rows = tagged.filter(_is_table(name)).map(_row)
                if name == decode.VOTER_SETS:
                    rows = rows.map(lambda row: voter_set_committed(row, by_node))
                    schema = schemas.VOTER_SETS_COMMITTED
                frame = spark.createDataFrame(rows, schema, verifySchema=False)
                frame.coalesce(width).write.mode("overwrite").parquet(join_path(out, name))
            prefixes_frame(spark, logs, voters, prefixes).coalesce(1).write.mode(
                "overwrite"
            ).parquet(join_path(out, COMMITTED_TABLE))
        finally:
            tagged.unpersist()
    return IngestSummary(
        nodes=len(dirs),
        files=sum(t.files for t in totals.values()),
        bytes=sum(t.bytes for t in totals.values()),
        batches=sum(t.batches for t in totals.values()),
        records=sum(t.records for t in totals.values()),
        seconds=time.monotonic() - started,
        prefixes=tuple(prefixes),
    )
