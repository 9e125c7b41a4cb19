"""Reassignment planning at scale (issue 17): from a cluster description (brokers with racks,
partitions with their replicas and sizes) a balanced target with few moves, its KIP-435 step
plan and the bytes each broker receives at each step, written as Kafka's reassignment JSON.

Inputs (``load_cluster``): a JSON file ``{"brokers": [{"id": 1, "rack": "a"}, ...],
"partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2, 3], "size_bytes": 123},
...]}``, or a directory holding ``brokers`` and ``partitions`` as Parquet tables of those
columns; or ``synthetic`` (N partitions of RF 3 with log-normal sizes on the first brokers of
a cluster that grew, for measurements).

The target (``balance``), in Spark; Python code runs only for the partitions that move
(steps 4 and the step plan):

1. each broker's load is the bytes of the replicas it holds; the goal is the mean;
2. an overloaded broker (over the mean by more than 1%) sheds its largest replicas first (fewest moves for the bytes), those
   whose middle byte lies within its excess over the mean (a window over the broker's
   replicas by size);
3. the shed replicas, in a fixed order, are laid end to end and matched to the underloaded
   brokers' deficits laid end to end (each goes to the broker whose deficit interval holds its
   middle byte, scaled: a range join against a broadcast table of at most a few hundred
   brokers);
4. a replica that would land on a broker already holding the partition, or in a rack the
   partition already uses while another rack is free, goes instead to an underloaded broker
   that holds none of it and adds a new rack where one is left, chosen by weighted rendezvous
   hashing in proportion to the deficits (a UDF over the partitions that move);
5. the new replica takes the shed one's place in the list, so the preferred leader stays
   unless it was shed;
6. three rounds, each from the previous targets: a round can leave a broker over the mean
   (the rack rule narrows where a replica may go), the next sheds only that; the round whose
   busiest broker is the least busy is the plan.

The step plan (``step_plan``) applies ``controller.steps.next_step`` (the same function the
controller runs) to every moved partition in Arrow batches, with
``reassignment.parallel.replica.count`` = ``max_replicas``: each step's added brokers with the
partition's bytes give the bytes per broker per step (step 1 of every partition, step 2, ...;
the controller runs at most ``reassignment.parallel.partition.count`` of them at a time).
"""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from pykraft.controller.steps import INT_MAX, next_step

__all__ = [
    "PlanSummary",
    "balance",
    "load_cluster",
    "run_plan",
    "step_plan",
    "synthetic",
    "write_reassignment_json",
]

PARTITION_SCHEMA = T.StructType(
    [
        T.StructField("topic", T.StringType(), False),
        T.StructField("partition", T.IntegerType(), False),
        T.StructField("replicas", T.ArrayType(T.IntegerType(), False), False),
        T.StructField("size_bytes", T.LongType(), False),
    ]
)
BROKER_SCHEMA = T.StructType(
    [
        T.StructField("id", T.IntegerType(), False),
        T.StructField("rack", T.StringType(), True),
    ]
)


@dataclass(frozen=True)
class PlanSummary:
    partitions: int
    brokers: int
    moved_partitions: int
    moved_replicas: int
    moved_bytes: int
    max_over_mean_before: float
    max_over_mean_after: float
    steps: int
    seconds: float


def load_cluster(spark: SparkSession, path: str) -> tuple[DataFrame, DataFrame]:
    """(brokers, partitions) from a JSON file or a directory of two Parquet tables."""
    p = Path(path)
    if p.is_file():
        data = json.loads(p.read_text())
        brokers = spark.createDataFrame(
            [(int(b["id"]), b.get("rack")) for b in data["brokers"]], BROKER_SCHEMA
        )
        partitions = spark.createDataFrame(
            [
                (
                    str(x["topic"]),
                    int(x["partition"]),
                    [int(r) for r in x["replicas"]],
                    int(x.get("size_bytes", 0)),
                )
                for x in data["partitions"]
            ],
            PARTITION_SCHEMA,
        )
        return brokers, partitions
    return (
        spark.read.parquet(str(p / "brokers")).select("id", "rack"),
        spark.read.parquet(str(p / "partitions")).select(
            "topic", "partition", "replicas", "size_bytes"
        ),
    )


def synthetic(
    spark: SparkSession,
    partitions: int,
    brokers: int,
    *,
    old_brokers: int | None = None,
    racks: int = 4,
    topics: int = 1000,
    seed: int = 7,
) -> tuple[DataFrame, DataFrame]:
    """A cluster that grew: ``partitions`` of RF 3 (log-normal sizes, median 64 MiB) placed
    rack-aware on the first ``old_brokers`` (default 3/4) of ``brokers`` brokers."""
    old = old_brokers or max(3, brokers * 3 // 4)
    broker_rows = spark.range(brokers).select(
        (F.col("id") + 1).cast("int").alias("id"),
        F.concat(F.lit("rack"), (F.col("id") % racks).cast("string")).alias("rack"),
    )
    n = F.col("id")
    # Partition i's replicas on old brokers i, i+1, i+2 (mod old), in consecutive racks.
    replicas = F.array(*[((n + k) % old + 1).cast("int") for k in range(3)])
    size = F.exp(F.randn(seed) * 1.0 + math.log(64 * 2**20)).cast("long")
    partition_rows = spark.range(partitions).select(
        F.concat(F.lit("topic-"), (n % topics).cast("string")).alias("topic"),
        (n / topics).cast("int").alias("partition"),
        replicas.alias("replicas"),
        size.alias("size_bytes"),
    )
    return broker_rows, partition_rows


def _load(replicas: DataFrame, brokers: DataFrame) -> DataFrame:
    """(id, rack, load) for every broker, 0 for the empty ones."""
    per = replicas.groupBy("broker").agg(F.sum("size_bytes").alias("load"))
    return brokers.join(per, brokers.id == per.broker, "left").select(
        "id", "rack", F.coalesce("load", F.lit(0)).alias("load")
    )


def balance(brokers: DataFrame, partitions: DataFrame, rounds: int = 3) -> DataFrame:
    """Partitions with their ``target`` replicas (see the module docstring): ``rounds``
    rounds, each starting from the previous round's targets (a rack constraint can leave a
    broker over the mean after one round; the next sheds that, and only that)."""
    frame = partitions.withColumn("target", F.col("replicas"))
    best, best_ratio = frame, max_over_mean(brokers, frame, "target")
    for _ in range(rounds):
        frame = _round(brokers, frame).localCheckpoint()
        ratio = max_over_mean(brokers, frame, "target")
        if ratio < best_ratio:
            best, best_ratio = frame, ratio
    return best


def _round(brokers: DataFrame, partitions: DataFrame) -> DataFrame:
    """One round of ``balance`` on the ``target`` column."""
    spark = brokers.sparkSession
    replicas = partitions.select(
        "topic", "partition", "size_bytes", F.posexplode("target").alias("pos", "broker")
    )
    loads = _load(replicas, brokers).cache()
    total, count = loads.agg(F.sum("load"), F.count("id")).first()  # type: ignore[misc]
    mean = float(total or 0) / max(1, int(count))
    rows = loads.collect()
    rack_of = {int(r.id): r.rack for r in rows}
    # Within 1% of the mean counts as balanced: no shedding from, nor filling of, such a
    # broker (else later rounds shuffle small amounts around).
    slack = 0.01 * mean
    deficits = sorted(
        ((mean - float(r.load), int(r.id)) for r in rows if r.load < mean - slack),
        reverse=True,
    )
    excess = loads.select(
        F.col("id").alias("broker"), (F.col("load") - F.lit(mean)).alias("excess")
    ).where(F.col("excess") > slack)
    by_size = Window.partitionBy("broker").orderBy(F.desc("size_bytes"), "topic", "partition")
    shed = (
        replicas.join(F.broadcast(excess), "broker")
        .withColumn("upto", F.sum("size_bytes").over(by_size))
        .where(F.col("upto") - F.col("size_bytes") / 2 < F.col("excess"))
        .select("topic", "partition", "pos", "broker", "size_bytes", "upto")
    )
    # Deficit intervals, laid end to end; shed replicas laid end to end and scaled onto them.
    starts, position = [], 0.0
    for deficit, broker in deficits:
        starts.append((broker, position, position + deficit))
        position += deficit
    intervals = spark.createDataFrame(starts or [(-1, 0.0, 0.0)], "dest int, lo double, hi double")
    shed, shed_total = _laid_end_to_end(shed)
    scale = position / shed_total if shed_total else 0.0
    mid = (F.col("end") - F.col("size_bytes") / 2) * F.lit(scale)
    placed = shed.join(
        F.broadcast(intervals), (mid >= F.col("lo")) & (mid < F.col("hi")), "left"
    ).withColumn("dest", F.coalesce("dest", F.lit(deficits[0][1] if deficits else -1)))
    moves = placed.select("topic", "partition", "pos", "dest")
    with_moves = partitions.join(
        moves.groupBy("topic", "partition").agg(
            F.map_from_entries(F.collect_list(F.struct("pos", "dest"))).alias("moves")
        ),
        ["topic", "partition"],
        "left",
    )
    fix = _fixer({b: d for d, b in deficits}, rack_of)
    columns = ["topic", "partition", "replicas", "size_bytes"]
    staying = with_moves.where(F.col("moves").isNull()).select(*columns, "target")
    moving = with_moves.where(F.col("moves").isNotNull()).select(
        *columns,
        fix(F.col("topic"), F.col("partition"), F.col("target"), F.col("moves")).alias("target"),
    )
    return staying.unionByName(moving)


def _laid_end_to_end(shed: DataFrame) -> tuple[DataFrame, float]:
    """The shed replicas laid end to end (an ``end`` column), and their total size: without
    a global sort, each broker's shed replicas are a prefix of its replicas by size (``upto``
    is their running total), the brokers' blocks one after the other (offsets from at most a
    few hundred per-broker totals)."""
    shed = shed.cache()
    blocks = shed.groupBy("broker").agg(F.max("upto").alias("bytes")).orderBy("broker").collect()
    offsets, shed_total = [], 0.0
    for block in blocks:
        offsets.append((int(block.broker), shed_total))
        shed_total += float(block.bytes)
    offset_table = shed.sparkSession.createDataFrame(
        offsets or [(-1, 0.0)], "broker int, offset double"
    )
    laid = shed.join(F.broadcast(offset_table), "broker").withColumn(
        "end", F.col("offset") + F.col("upto")
    )
    return laid, shed_total


def _fixer(deficits: dict[int, float], rack_of: dict[int, str | None]) -> Any:
    """The UDF of step 4, run only on partitions with moves: the new replica list with each
    move applied; a move that clashes (the broker already holds the partition, or its rack is
    taken while another is free) goes instead to an eligible underloaded broker chosen by
    weighted rendezvous hashing on the partition (chosen in proportion to the deficits, so
    redirected bytes spread as the deficits do), else to any eligible broker."""
    everyone = sorted(rack_of)
    racks_total = len(set(rack_of.values()))

    def score(key: str, b: int, weight: float) -> float:
        u = (zlib.crc32(f"{key}\0{b}".encode()) + 0.5) / 2**32
        return -weight / math.log(u)

    @F.udf(T.ArrayType(T.IntegerType()), useArrow=False)
    def fix(topic: str, partition: int, replicas: list[int], moves: dict[int, int] | None):  # type: ignore[no-untyped-def]
        if not moves:
            return replicas
        out = list(replicas)
        kept = [b for i, b in enumerate(replicas) if i not in moves]
        for pos in sorted(moves):
            used = set(kept) | {out[i] for i in moves if i < pos}
            used_racks = {rack_of.get(b) for b in used}
            want_new_rack = len(used_racks) < min(len(replicas), racks_total)

            def ok(
                b: int,
                used: set[int] = used,
                racks: set[Any] = used_racks,
                new: bool = want_new_rack,
            ) -> bool:
                return b not in used and not (new and rack_of.get(b) in racks)

            dest = moves[pos]
            if not ok(dest):
                key = f"{topic}\0{partition}\0{pos}"
                eligible = [b for b in deficits if ok(b)]
                if eligible:
                    dest = max(eligible, key=lambda b: score(key, b, deficits[b]))
                else:  # no underloaded broker fits: any that does, spread evenly
                    fallback = [b for b in everyone if ok(b)] or [
                        b for b in everyone if b not in used
                    ]
                    if fallback:
                        dest = max(fallback, key=lambda b: score(key, b, 1.0))
                    else:
                        dest = replicas[pos]
            out[pos] = dest
        return out

    return fix


def step_plan(targets: DataFrame, max_replicas: int = INT_MAX) -> DataFrame:
    """(topic, partition, step, added, size_bytes) for every step of every moved partition,
    computed with the controller's own ``next_step``."""
    moved = targets.where(F.col("replicas") != F.col("target")).select(
        "topic", "partition", "replicas", "target", "size_bytes"
    )
    schema = T.StructType(
        [
            T.StructField("topic", T.StringType()),
            T.StructField("partition", T.IntegerType()),
            T.StructField("step", T.IntegerType()),
            T.StructField("added", T.ArrayType(T.IntegerType())),
            T.StructField("size_bytes", T.LongType()),
        ]
    )

    def steps(batches: Iterable[Any]) -> Iterator[Any]:
        import pyarrow as pa  # type: ignore[import-untyped]

        arrow_schema = pa.schema(
            [
                ("topic", pa.string()),
                ("partition", pa.int32()),
                ("step", pa.int32()),
                ("added", pa.list_(pa.int32())),
                ("size_bytes", pa.int64()),
            ]
        )
        for batch in batches:
            cols = batch.to_pydict()
            rows: dict[str, list[Any]] = {name: [] for name in arrow_schema.names}
            for topic, index, current, final, size in zip(
                cols["topic"],
                cols["partition"],
                cols["replicas"],
                cols["target"],
                cols["size_bytes"],
                strict=True,
            ):
                cr, ftr = tuple(current), tuple(final)
                number = 0
                while cr != ftr and number < 64:
                    nxt = next_step(cr, ftr, in_sync=cr, max_replicas=max_replicas)
                    number += 1
                    rows["topic"].append(topic)
                    rows["partition"].append(index)
                    rows["step"].append(number)
                    rows["added"].append([b for b in nxt if b not in cr])
                    rows["size_bytes"].append(size)
                    cr = nxt
            yield pa.RecordBatch.from_pydict(rows, schema=arrow_schema)

    return moved.mapInArrow(steps, schema)


def write_reassignment_json(targets: DataFrame, path: str) -> int:
    """Kafka's reassignment JSON of the moved partitions; returns how many."""
    moved = (
        targets.where(F.col("replicas") != F.col("target"))
        .select("topic", "partition", "target")
        .orderBy("topic", "partition")
    )
    count = 0
    with open(path, "w") as out:
        out.write('{"version":1,"partitions":[')
        for row in moved.toLocalIterator():
            out.write("," if count else "")
            out.write(
                json.dumps(
                    {
                        "topic": row.topic,
                        "partition": row.partition,
                        "replicas": list(row.target),
                        "log_dirs": ["any"] * len(row.target),
                    },
                    separators=(",", ":"),
                )
            )
            count += 1
        out.write("]}\n")
    return count


def max_over_mean(brokers: DataFrame, partitions: DataFrame, column: str) -> float:
    replicas = partitions.select("size_bytes", F.explode(column).alias("broker"))
    loads = _load(replicas, brokers)
    top, mean = loads.agg(F.max("load"), F.avg("load")).first()  # type: ignore[misc]
    return round(float(top) / float(mean), 3) if mean else 1.0


def run_plan(
    spark: SparkSession,
    brokers: DataFrame,
    partitions: DataFrame,
    out: str,
    *,
    max_replicas: int = INT_MAX,
) -> PlanSummary:
    """Balance, plan the steps, write ``out``/reassignment.json, ``out``/steps (Parquet) and
    ``out``/bytes_per_broker_per_step.csv."""
    import time

    started = time.monotonic()
    Path(out).mkdir(parents=True, exist_ok=True)
    targets = balance(brokers, partitions).cache()
    steps = step_plan(targets, max_replicas).cache()
    steps.write.mode("overwrite").parquet(str(Path(out) / "steps"))
    per_step = (
        steps.select("step", F.explode("added").alias("broker"), "size_bytes")
        .groupBy("step", "broker")
        .agg(F.sum("size_bytes").alias("bytes"))
        .orderBy("step", "broker")
        .collect()
    )
    with open(Path(out) / "bytes_per_broker_per_step.csv", "w") as f:
        f.write("step,broker,bytes\n")
        for row in per_step:
            f.write(f"{row.step},{row.broker},{row.bytes}\n")
    moved = write_reassignment_json(targets, str(Path(out) / "reassignment.json"))
    changed = targets.where(F.col("replicas") != F.col("target"))
    moved_replicas, moved_bytes = changed.select(
        F.sum(F.size(F.array_except("target", "replicas"))),
        F.sum(F.size(F.array_except("target", "replicas")) * F.col("size_bytes")),
    ).first()  # type: ignore[misc]
    summary = PlanSummary(
        partitions=partitions.count(),
        brokers=brokers.count(),
        moved_partitions=moved,
        moved_replicas=int(moved_replicas or 0),
        moved_bytes=int(moved_bytes or 0),
        max_over_mean_before=max_over_mean(brokers, targets, "replicas"),
        max_over_mean_after=max_over_mean(brokers, targets, "target"),
        steps=int(steps.agg(F.max("step")).first()[0] or 0),  # type: ignore[index]
        seconds=round(time.monotonic() - started, 1),
    )
    targets.unpersist()
    steps.unpersist()
    return summary
