"""The sweep job: the deterministic simulator over seeds x fault profiles x Pre-Vote, as
Spark tasks.

The seed range is cut into contiguous slices, one per partition; the driver ships only
``(start, stop)`` per partition and each task runs every (seed, profile, pre-vote) of its
slice with ``pykraft.sim.run`` and yields plain rows. There is no per-seed round trip to
the driver: results go straight from the tasks to Parquet (``runs``), and the per-profile
figures (``profiles``) are a DataFrame aggregation over that table.

``profiles`` columns, per (profile, pre_vote): runs, violations, elections and max epochs
per simulated hour, leaderless fraction, p50/p99 of per-run time without a leader and of the
longest unavailability window, p50/p99 time to elect the first leader, and the seeds (with
the invariant) of the first violations.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from pykraft.pipeline.session import join_path, progress

RUNS_TABLE = "runs"
PROFILES_TABLE = "profiles"
VIOLATION_SEEDS_MAX = 20  # seeds listed per profile in the aggregate table

# (column, type) of the ``runs`` table; all but the last three come from SimResult.as_row.
_RUN_COLUMNS: tuple[tuple[str, object], ...] = (
    ("seed", LongType()),
    ("profile", StringType()),
    ("pre_vote", BooleanType()),
    ("voters", IntegerType()),
    ("observers", IntegerType()),
    ("fault_phase_events", LongType()),
    ("events", LongType()),
    ("sim_time_ms", LongType()),
    ("elections", LongType()),
    ("max_epoch", LongType()),
    ("committed_offset", LongType()),
    ("committed_records", LongType()),
    ("appends", LongType()),
    ("snapshots", LongType()),
    ("snapshots_installed", LongType()),
    ("messages_sent", LongType()),
    ("messages_dropped", LongType()),
    ("messages_duplicated", LongType()),
    ("requests_failed", LongType()),
    ("faults", MapType(StringType(), LongType())),
    ("invariants_checked", LongType()),
    ("leaderless_ms", LongType()),
    ("unavailability_windows", LongType()),
    ("max_unavailability_ms", LongType()),
    ("time_to_first_leader_ms", LongType()),
    ("recovery_ms", LongType()),
    ("fingerprint", StringType()),
    ("violation_invariant", StringType()),
    ("violation_message", StringType()),
    ("repro", StringType()),
    ("wall_ms", DoubleType()),
)
RUNS = StructType([StructField(name, kind, True) for name, kind in _RUN_COLUMNS])  # type: ignore[arg-type]
_SIM_FIELDS = tuple(name for name, _ in _RUN_COLUMNS[:-2])


@dataclass(frozen=True, slots=True)
class SweepSpec:
    """Everything a task needs (picklable): which runs, and the simulator's knobs."""

    seeds: range
    profiles: tuple[str, ...]
    pre_vote: tuple[bool, ...] = (True,)
    events: int = 5_000
    voters: int = 3
    observers: int = 0

    @property
    def runs(self) -> int:
        return len(self.seeds) * len(self.profiles) * len(self.pre_vote)

    def slices(self, partitions: int) -> list[range]:
        """The seed range cut into at most ``partitions`` contiguous, non-empty slices."""
        n = max(1, min(partitions, len(self.seeds)))
        step, extra = divmod(len(self.seeds), n)
        out = []
        start = self.seeds.start
        for i in range(n):
            stop = start + step + (1 if i < extra else 0)
            out.append(range(start, stop))
            start = stop
        return out


def run_slice(spec: SweepSpec, seeds: range) -> Iterator[tuple[object, ...]]:
    """Rows of ``runs`` for every (seed, profile, pre-vote) of ``seeds``: a pure function,
    the body of one Spark task."""
    from pykraft.sim import SimConfig, run  # the simulator is imported on the executor

    for seed in seeds:
        for profile in spec.profiles:
            for pre_vote in spec.pre_vote:
                config = SimConfig.make(
                    seed,
                    profile,
                    events=spec.events,
                    voters=spec.voters,
                    observers=spec.observers,
                    pre_vote=pre_vote,
                )
                started = time.perf_counter()
                result = run(config)
                wall_ms = (time.perf_counter() - started) * 1000.0
                row = result.as_row()
                values = [row.get(name) for name in _SIM_FIELDS]
                yield (*values, result.repro_command(), wall_ms)


def run_rows(spark: SparkSession, spec: SweepSpec, partitions: int) -> DataFrame:
    """The ``runs`` DataFrame (lazy): one partition per seed slice."""
    slices = spec.slices(partitions)
    bounds = [(s.start, s.stop) for s in slices]
    rdd = spark.sparkContext.parallelize(bounds, len(bounds)).flatMap(
        lambda b: run_slice(spec, range(b[0], b[1]))
    )
    return spark.createDataFrame(rdd, RUNS, verifySchema=False)


def _per_hour(column: str) -> Column:
    hours = F.sum("sim_time_ms") / F.lit(3_600_000.0)
    return F.sum(column) / hours


def aggregate(runs: DataFrame) -> DataFrame:
    """Per (profile, pre_vote) figures from the ``runs`` table (see the module docstring)."""
    violated = F.col("violation_invariant").isNotNull()
    first_violations = F.slice(
        F.sort_array(
            F.collect_list(F.when(violated, F.struct(F.col("seed"), F.col("violation_invariant"))))
        ),
        1,
        VIOLATION_SEEDS_MAX,
    )
    return (
        runs.groupBy("profile", "pre_vote")
        .agg(
            F.count("*").alias("runs"),
            F.sum(violated.cast("long")).alias("violations"),
            F.sum("events").alias("events"),
            (F.sum("sim_time_ms") / F.lit(3_600_000.0)).alias("sim_hours"),
            _per_hour("elections").alias("elections_per_hour"),
            _per_hour("max_epoch").alias("epochs_per_hour"),
            (F.sum("leaderless_ms") / F.sum("sim_time_ms")).alias("leaderless_fraction"),
            F.percentile_approx("leaderless_ms", 0.5).alias("leaderless_ms_p50"),
            F.percentile_approx("leaderless_ms", 0.99).alias("leaderless_ms_p99"),
            F.percentile_approx("max_unavailability_ms", 0.5).alias("max_unavailability_ms_p50"),
            F.percentile_approx("max_unavailability_ms", 0.99).alias("max_unavailability_ms_p99"),
            F.percentile_approx("time_to_first_leader_ms", 0.5).alias("time_to_elect_ms_p50"),
            F.percentile_approx("time_to_first_leader_ms", 0.99).alias("time_to_elect_ms_p99"),
            F.max("max_epoch").alias("max_epoch"),
            first_violations.alias("violation_seeds"),
        )
        .orderBy("profile", F.col("pre_vote").desc())
    )


@dataclass(frozen=True, slots=True)
class SweepSummary:
    runs: int
    violations: int
    seconds: float
    profiles: tuple[dict[str, object], ...]  # rows of the profiles table

    @property
    def runs_per_s(self) -> float:
        return self.runs / self.seconds if self.seconds > 0 else 0.0


def run_sweep(
    spark: SparkSession,
    spec: SweepSpec,
    out: str,
    *,
    partitions: int | None = None,
    progress_interval_s: float = 5.0,
) -> SweepSummary:
    """Run the sweep, write ``runs`` and ``profiles`` under ``out``, return the figures."""
    from pykraft.sim import get_profile

    for name in spec.profiles:
        get_profile(name)  # a typo fails here, not in every task
    sc = spark.sparkContext
    # Several slices per core balance runs of unequal length (faults make some slower).
    n = partitions if partitions is not None else 4 * max(1, sc.defaultParallelism)
    started = time.monotonic()
    with progress(sc, "sweep", interval_s=progress_interval_s):
        run_rows(spark, spec, n).write.mode("overwrite").parquet(join_path(out, RUNS_TABLE))
        runs = spark.read.parquet(join_path(out, RUNS_TABLE))
        aggregate(runs).coalesce(1).write.mode("overwrite").parquet(join_path(out, PROFILES_TABLE))
        seconds = time.monotonic() - started
        rows = (
            spark.read.parquet(join_path(out, PROFILES_TABLE))
            .orderBy("profile", F.col("pre_vote").desc())
            .collect()
        )
    profiles = tuple(r.asDict(recursive=True) for r in rows)
    total = sum(int(p["runs"]) for p in profiles)
    violations = sum(int(p["violations"]) for p in profiles)
    return SweepSummary(total, violations, seconds, profiles)


def parse_pre_vote(text: str) -> tuple[bool, ...]:
    """``on``, ``off`` or ``both`` (both runs every seed twice, to show KIP-996's effect)."""
    choices = {"on": (True,), "off": (False,), "both": (True, False)}
    if text not in choices:
        raise ValueError(f"--pre-vote expects on, off or both, got {text!r}")
    return choices[text]


def parse_profiles(values: Sequence[str]) -> tuple[str, ...]:
    """Profile names from repeated or comma-separated ``--profile`` values."""
    names = [n.strip() for v in values for n in v.split(",") if n.strip()]
    return tuple(dict.fromkeys(names))
