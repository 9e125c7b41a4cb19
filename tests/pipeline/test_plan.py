"""Reassignment planning on Spark (issue 17): a balanced target with few moves, rack-aware,
its KIP-435 steps through the controller's own step function, and Kafka's reassignment JSON
that ``pykraft reassign`` and Kafka's tool read."""

from __future__ import annotations

import json
import random
from pathlib import Path

from pyspark.sql import SparkSession

from pykraft.cli.reassign import parse_plan
from pykraft.controller.steps import next_step
from pykraft.pipeline.plan import load_cluster, run_plan, synthetic


def cluster_file(path: Path) -> Path:
    """12 brokers in 3 racks, 9 of them full (RF 3 across racks, sizes skewed) and 3 new."""
    rng = random.Random(5)
    brokers = [{"id": b, "rack": f"r{b % 3}"} for b in range(1, 13)]
    old = list(range(1, 10))
    partitions = []
    for p in range(300):
        first = p % 9
        replicas = [old[(first + k) % 9] for k in range(3)]  # consecutive: one per rack
        partitions.append(
            {
                "topic": f"t{p % 7}",
                "partition": p // 7,
                "replicas": replicas,
                "size_bytes": int(rng.lognormvariate(20, 1)),
            }
        )
    path.write_text(json.dumps({"brokers": brokers, "partitions": partitions}))
    return path


def test_plan_balances_with_few_moves_and_steps(spark: SparkSession, tmp_path: Path) -> None:
    source = cluster_file(tmp_path / "cluster.json")
    brokers, partitions = load_cluster(spark, str(source))
    out = tmp_path / "plan"
    summary = run_plan(spark, brokers, partitions, str(out), max_replicas=1)
    # The new brokers took load: the busiest broker is much closer to the mean.
    assert summary.max_over_mean_before > 1.3
    assert summary.max_over_mean_after < 1.15, summary
    # Few moves: about the quarter of the bytes the new brokers should hold, not more.
    total = sum(p["size_bytes"] * 3 for p in json.loads(source.read_text())["partitions"])
    assert summary.moved_bytes < 0.4 * total, summary
    plan = parse_plan((out / "reassignment.json").read_text())  # Kafka's format, checked
    assert len(plan) == summary.moved_partitions > 0
    racks = {b: f"r{b % 3}" for b in range(1, 13)}
    originals = {
        (p["topic"], p["partition"]): tuple(p["replicas"])
        for p in json.loads(source.read_text())["partitions"]
    }
    for key, target in plan.items():
        assert len(set(target)) == 3 and all(1 <= b <= 12 for b in target)
        assert len({racks[b] for b in target}) == 3, (key, target)  # still one per rack
        assert target[0] == originals[key][0] or originals[key][0] not in target
    # The step table is the controller's next_step applied until the target.
    steps = spark.read.parquet(str(out / "steps")).collect()
    by_partition: dict[tuple[str, int], list[list[int]]] = {}
    for row in sorted(steps, key=lambda r: (r.topic, r.partition, r.step)):
        by_partition.setdefault((row.topic, row.partition), []).append(list(row.added))
    assert set(by_partition) == set(plan)
    for key, added in by_partition.items():
        cr = originals[key]
        for step_added in added:
            nxt = next_step(cr, plan[key], in_sync=cr, max_replicas=1)
            assert [b for b in nxt if b not in cr] == step_added
            cr = nxt
        assert cr == plan[key]
    lines = (out / "bytes_per_broker_per_step.csv").read_text().splitlines()
    assert lines[0] == "step,broker,bytes"
    assert sum(int(line.split(",")[2]) for line in lines[1:]) == summary.moved_bytes


def test_synthetic_cluster_plans(spark: SparkSession, tmp_path: Path) -> None:
    brokers, partitions = synthetic(spark, 5_000, 40)
    summary = run_plan(spark, brokers, partitions, str(tmp_path / "s"))
    assert summary.partitions == 5_000 and summary.brokers == 40
    assert summary.max_over_mean_after < summary.max_over_mean_before
    assert summary.max_over_mean_after < 1.2, summary
