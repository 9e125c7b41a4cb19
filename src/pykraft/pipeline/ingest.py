"""The ingest job: nodes' metadata log directories -> Parquet tables.

Each node's ``<metadata.log.dir>/__cluster_metadata-0/`` is read with Spark's ``binaryFile``
source (segments ``*.log`` and snapshots ``*.checkpoint``; ``.checkpoint.part`` files being
written are skipped), so any Hadoop file system URI works. A Spark task decodes whole files
with ``pykraft.pipeline.decode`` and hands the columns back as Arrow batches
(``mapInArrow``, ``pykraft.pipeline.columnar``); no decoded row crosses into the JVM one by
one. Small files share a task, up to ``DECODE_SPLIT_BYTES`` (each file counted at least
``_FILE_OPEN_COST``), so a log of many small segments is a few tasks, not one Python task
per file; a file larger than that is a task of its own. The driver only lists files and
collects per-node totals (a handful of numbers per node, aggregated in the JVM).

Tables written under the output path: ``batches``, ``records``, ``leader_changes``,
``voter_sets`` (with ``committed``), ``snapshots``, ``files`` and ``committed`` (each node's
committed prefix, see ``pykraft.pipeline.committed``); Kafka's metadata records by concept
(``pykraft.pipeline.metadata_tables``: ``topics``, ``partition_changes``, ``brokers``,
``configs``, ``features``, ``producer_ids``, ``acls``, ``scram_users``, ``quotas``,
``migration_state``, ``transactions``, ``undecoded``); and ``partition_state``, every
partition as of each snapshot and each node's log end (``metadata_state``), computed from the
written tables. Schemas: ``pykraft.pipeline.schemas``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import reduce
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from pykraft.pipeline import columnar, decode, metadata_state, schemas
from pykraft.pipeline.committed import (
    GIVEN,
    MAJORITY,
    CommittedPrefix,
    NodeLog,
    committed_prefixes,
)
from pykraft.pipeline.session import join_path, progress, session_conf
from pykraft.pipeline.totals import NodeTotals, voter_count

PARTITION_DIR = "__cluster_metadata-0"
COMMITTED_TABLE = "committed"
PARTITION_STATE = "partition_state"  # every partition as of each snapshot and the log end
TOTALS = "totals"  # a file's NodeTotals among the decode pass's payloads
ROWS_PER_WRITE_TASK = 100_000
_GLOB = "*.{log,checkpoint}"
DECODE_SPLIT_BYTES = 64 * 1024**2
_FILE_OPEN_COST = 1024**2


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
    clusters: tuple[str, ...] = ()
    file_errors: tuple[str, ...] = ()  # files not read to their end, snapshots failing CRC

    @property
    def mb_per_s(self) -> float:
        return self.bytes / 1e6 / self.seconds if self.seconds > 0 else 0.0


class NotAMetadataLog(ValueError):
    """A ``--log-dir`` that is not a metadata log directory (one line for the operator)."""


UNKNOWN_CLUSTER = "unknown"
CLUSTER_ID = "cluster_id"


def meta_of(spark: SparkSession, log_dir: LogDir) -> tuple[int, str]:
    """(``node.id``, ``cluster.id``) from ``<dir>/meta.properties`` (read through Spark: any
    file system); a NODE= given on the command line wins, and a directory without the file
    is then of cluster ``unknown``."""
    base = _base(log_dir)
    values: dict[str, str] = {}
    if "://" not in base:
        _check_local(base, log_dir)
        meta = Path(base[len("file:") :] if base.startswith("file:") else base) / "meta.properties"
        lines = meta.read_text().splitlines() if meta.is_file() else []
    else:
        try:
            lines = [
                str(r.value) for r in spark.read.text(join_path(base, "meta.properties")).collect()
            ]
        except Exception:  # AnalysisException: no such file
            lines = []
    for line in lines:
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip()
    cluster = values.get("cluster.id", UNKNOWN_CLUSTER)
    if log_dir.node is not None:
        return log_dir.node, cluster
    if "node.id" not in values:
        raise NotAMetadataLog(
            f"{log_dir.path}: no node.id in {base}/meta.properties (pass NODE={log_dir.path})"
        )
    try:
        return int(values["node.id"]), cluster
    except ValueError:
        raise NotAMetadataLog(f"{base}/meta.properties: node.id is not a number") from None


def _base(log_dir: LogDir) -> str:
    """The log directory itself (``--log-dir`` may name its ``__cluster_metadata-0``)."""
    base = log_dir.path.rstrip("/")
    if base.endswith("/" + PARTITION_DIR):
        base = base[: -len(PARTITION_DIR) - 1]
    return base


def check_local_dirs(dirs: Sequence[LogDir]) -> None:
    """Every local ``--log-dir`` exists and is a metadata log directory: checked before a
    Spark session starts, so a mistyped path costs no JVM (``NotAMetadataLog``)."""
    for log_dir in dirs:
        base = _base(log_dir)
        if "://" not in base:
            _check_local(base, log_dir)


def _check_local(base: str, log_dir: LogDir) -> None:
    """A local directory must exist and hold ``__cluster_metadata-0`` (one line, no trace)."""
    import os

    path = base[len("file:") :] if base.startswith("file:") else base
    if not os.path.isdir(path):
        raise NotAMetadataLog(f"{log_dir.path}: no such directory")
    if not os.path.isdir(os.path.join(path, PARTITION_DIR)):
        raise NotAMetadataLog(
            f"{log_dir.path}: not a metadata log directory (no {PARTITION_DIR} inside: give a "
            "controller's metadata.log.dir or a broker's log.dirs entry)"
        )


def node_id_of(spark: SparkSession, log_dir: LogDir) -> int:
    """``node.id`` from ``<dir>/meta.properties`` (``meta_of``)."""
    return meta_of(spark, log_dir)[0]


# The decode pass's splits: files packed into a task up to 64 MiB (a task's Python worker
# holds its files' bytes and their decoded columns), each counted at least 1 MiB. Spark's
# 4 MiB open cost would give each small file its own task whenever the log is small (a split
# is at most the log's bytes per core, open costs included): 147 files of a simulated log
# took 18 s to decode that way, one Python worker hand-off per file.
DECODE_SPLITS = {
    "spark.sql.files.maxPartitionBytes": str(DECODE_SPLIT_BYTES),
    "spark.sql.files.openCostInBytes": str(_FILE_OPEN_COST),
}
# Payloads are up to a few MB each (``decode.CHUNK_ROWS_MAX`` rows); Spark's default of
# 10,000 rows per Arrow batch would hand a write task's Python worker all of a partition's
# payloads in one batch (and hold them in the JVM heap at once).
_PAYLOADS_PER_ARROW_BATCH = {
    "spark.sql.execution.arrow.maxRecordsPerBatch": "4",
    # The cache holds the payloads in columnar batches of this many rows, each deserialized
    # whole when a write reads it: Spark's 10,000 would put a file's every payload (all its
    # tables, hundreds of MB for a 64 MiB segment) in one batch, read by every table's write.
    "spark.sql.inMemoryColumnarStorage.batchSize": "4",
}


def decode_splits(spark: SparkSession) -> AbstractContextManager[None]:
    """While inside, a file source splits as the decode pass does (``DECODE_SPLITS``)."""
    return session_conf(spark, DECODE_SPLITS)


def read_files(spark: SparkSession, dirs: Mapping[int, str]) -> DataFrame:
    """``(node, path, content)`` for every segment and snapshot; split as the decode pass
    wants when planned inside ``decode_splits``."""
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


def _decode_task(batches: Iterable[Any]) -> Iterator[Any]:
    """``mapInArrow`` function of the decode pass: ``(node, path, content)`` rows (whole
    files, as ingest plans them) -> ``columnar.ENCODED`` payloads of every table, then each
    file's ``NodeTotals`` as JSON under the ``totals`` table name."""
    for batch in batches:
        nodes = batch.column(columnar.NODE).to_pylist()
        paths = batch.column("path").to_pylist()
        contents = batch.column("content")
        for node, path, content in zip(nodes, paths, contents, strict=True):
            totals = NodeTotals()
            for cols in decode.decode_file(node, path, content.as_py()):
                totals.add(cols)
                yield columnar.encode_columns(node, cols)
            yield columnar.encoded(node, TOTALS, 1, totals.to_json())


def decode_files(files: DataFrame) -> DataFrame:
    """Every table's rows as Arrow payloads (``columnar.ENCODED``), decoded by
    ``pykraft.pipeline.decode`` in Python tasks of whole files."""
    return files.mapInArrow(_decode_task, columnar.ENCODED)


def table(decoded: DataFrame, name: str, tasks: int) -> DataFrame:
    """One table out of ``decode_files``'s payloads, in its schema, in ``tasks`` partitions.

    The payloads are coalesced before the Python pass, not after: a coalesce above
    ``mapInArrow`` still runs the Python pass once per cached partition, each a hand-off to a
    Python worker (a table of a 147-file log took 8 s that way, 0.2 s coalesced first)."""
    payloads = decoded.where(F.col(columnar.TABLE) == name).select(columnar.PAYLOAD)
    return payloads.coalesce(tasks).mapInArrow(columnar.payload_batches, schemas.BY_TABLE[name])


def node_totals(decoded: DataFrame) -> dict[int, NodeTotals]:
    """Per-node totals, merged on the driver from one small row per file."""
    out: dict[int, NodeTotals] = {}
    for row in decoded.where(F.col(columnar.TABLE) == TOTALS).select("node", "payload").collect():
        totals = NodeTotals.from_json(bytes(row.payload))
        out[row.node] = out[row.node].merge(totals) if row.node in out else totals
    return out


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


def write_tasks(rows: int, parallelism: int) -> int:
    """Tasks (and Parquet files) for writing a table of ``rows`` rows: one per
    ``ROWS_PER_WRITE_TASK`` up to the parallelism, so a small table is one file written by
    one task (each write task also starts a Python worker's pass over the payloads)."""
    return max(1, min(parallelism, -(-rows // ROWS_PER_WRITE_TASK)))


def write_all(
    frames: Mapping[str, DataFrame], out: str, cluster: str = UNKNOWN_CLUSTER, first: bool = True
) -> None:
    """Write each frame as Parquet under ``out/<name>/cluster_id=<cluster>``, as concurrent
    Spark jobs (the first cluster of a run removes the table first, the next ones add
    theirs; reading ``out/<name>`` gives a ``cluster_id`` column).

    The tables are small next to the decode pass, so each write is mostly fixed cost
    (planning, task launch, commit); running them side by side overlaps it.
    """
    if first:
        for name in frames:
            _delete(frames[name].sparkSession, join_path(out, name))
    with ThreadPoolExecutor(max_workers=len(frames), thread_name_prefix="ingest-write") as pool:
        futures = [
            pool.submit(frame.write.mode("overwrite").parquet, cluster_path(out, name, cluster))
            for name, frame in frames.items()
        ]
        for future in futures:
            future.result()


def _hadoop_path(spark: SparkSession, path: str) -> tuple[Any, Any]:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    return hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), hadoop_path


def exists(spark: SparkSession, path: str) -> bool:
    """Whether ``path`` (local or any Hadoop URI) exists, asked without reading it."""
    fs, hadoop_path = _hadoop_path(spark, path)
    return bool(fs.exists(hadoop_path))


def _delete(spark: SparkSession, path: str) -> None:
    fs, hadoop_path = _hadoop_path(spark, path)
    fs.delete(hadoop_path, True)


def cluster_path(out: str, name: str, cluster: str) -> str:
    """Where one cluster's part of table ``name`` is (read without a cluster_id column)."""
    return join_path(out, name, f"{CLUSTER_ID}={cluster}")


def read_cluster_table(
    spark: SparkSession, out: str, name: str, cluster: str, schema: StructType
) -> DataFrame:
    """One cluster's part of table ``name``; empty when the cluster has no such rows (an
    empty table writes no ``cluster_id=`` directory). Raises ``FileNotFoundError`` when the
    table itself is missing."""
    part = cluster_path(out, name, cluster)
    if exists(spark, part):
        return spark.read.schema(schema).parquet(part)
    if not exists(spark, join_path(out, name)):
        raise FileNotFoundError(join_path(out, name))
    return spark.createDataFrame([], schema)


def run_ingest(
    spark: SparkSession,
    log_dirs: Sequence[LogDir],
    out: str,
    hwm: Mapping[int, int] | None = None,
    *,
    progress_interval_s: float = 5.0,
) -> IngestSummary:
    """Read ``log_dirs``, write every table under ``out`` (overwriting), return totals.

    Jobs: one decode pass (Python tasks of whole files; their Arrow payloads cached) that also
    sums per-node totals, then one write per table from the cache, all at once, each
    coalesced to a few tasks (``write_tasks``) so a tiny log does not become hundreds of tiny
    Parquet files.
    """
    started = time.monotonic()
    clusters: dict[str, dict[int, str]] = {}
    for d in log_dirs:
        node, cluster = meta_of(spark, d)
        nodes = clusters.setdefault(cluster, {})
        if node in nodes:
            raise NotAMetadataLog(f"two log directories of cluster {cluster} are node {node}")
        nodes[node] = d.partition_path
    summaries = [
        _ingest_cluster(
            spark, cluster, dirs, out, hwm, first=i == 0, progress_interval_s=progress_interval_s
        )
        for i, (cluster, dirs) in enumerate(sorted(clusters.items()))
    ]
    return IngestSummary(
        nodes=sum(x.nodes for x in summaries),
        files=sum(x.files for x in summaries),
        bytes=sum(x.bytes for x in summaries),
        batches=sum(x.batches for x in summaries),
        records=sum(x.records for x in summaries),
        seconds=time.monotonic() - started,
        prefixes=tuple(p for x in summaries for p in x.prefixes),
        clusters=tuple(sorted(clusters)),
        file_errors=tuple(e for x in summaries for e in x.file_errors),
    )


def _ingest_cluster(
    spark: SparkSession,
    cluster: str,
    dirs: Mapping[int, str],
    out: str,
    hwm: Mapping[int, int] | None,
    *,
    first: bool,
    progress_interval_s: float,
) -> IngestSummary:
    """``run_ingest`` of one cluster's nodes."""
    started = time.monotonic()
    width = max(1, spark.sparkContext.defaultParallelism)
    with (
        progress(spark.sparkContext, f"ingest {cluster}", interval_s=progress_interval_s),
        session_conf(spark, {**DECODE_SPLITS, **_PAYLOADS_PER_ARROW_BATCH}),
    ):
        decoded = decode_files(read_files(spark, dirs)).persist(StorageLevel.MEMORY_AND_DISK)
        try:
            totals = node_totals(decoded)
            logs = [totals.get(node, NodeTotals()).node_log(node) for node in sorted(dirs)]
            voters = voter_count(totals)
            prefixes = committed_prefixes(logs, voters, hwm or {})
            rows = {
                decode.BATCHES: sum(t.batches for t in totals.values()),
                decode.RECORDS: sum(t.records for t in totals.values()),
            }
            frames = {
                name: table(decoded, name, write_tasks(rows.get(name, 0), width))
                for name in schemas.BY_TABLE
            }
            frames[decode.VOTER_SETS] = voter_sets_committed(frames[decode.VOTER_SETS], prefixes)
            frames[COMMITTED_TABLE] = prefixes_frame(spark, logs, voters, prefixes).coalesce(1)
            write_all(frames, out, cluster, first)
        finally:
            decoded.unpersist()
        written = {
            name: read_cluster_table(spark, out, name, cluster, schema)
            for name, schema in schemas.BY_TABLE.items()
        }
        state = metadata_state.partition_state(written).coalesce(write_tasks(0, width))
        write_all({PARTITION_STATE: state}, out, cluster, first)
        errors = tuple(
            f"{r['file']}: {r['error']}"
            for r in written[decode.FILES].where(F.col("error").isNotNull()).collect()
        ) + tuple(
            f"{r['file']}: a batch fails its CRC"
            for r in written[decode.SNAPSHOTS].where(~F.col("crc_ok")).collect()
        )
    return IngestSummary(
        nodes=len(dirs),
        files=sum(t.files for t in totals.values()),
        bytes=sum(t.file_bytes for t in totals.values()),
        batches=sum(t.batches for t in totals.values()),
        records=sum(t.records for t in totals.values()),
        seconds=time.monotonic() - started,
        prefixes=tuple(prefixes),
        clusters=(cluster,),
        file_errors=errors,
    )
