"""Real data moved by partition reassignment (issue 17): six Apache Kafka 4.3.1 brokers on three
pykraft controllers, a topic of 12 partitions filled with ``--gib`` GiB (RF 3 on brokers 100,
101, 102), moved to brokers 103, 104, 105 under produce load; once as plain KIP-455 (no
limits: every partition moves at once) and once with KIP-435's limits
(``reassignment.parallel.replica.count`` 1, ``reassignment.parallel.partition.count`` 2).

    .venv/bin/python bench/wl_reassign.py [--gib 1.0] [--only kip455,kip435]

Each mode gets a fresh cluster. Measured, per mode:

* ``peak_replicas_moving``: the most replicas being added at once, sampled every 0.5 s from
  ListPartitionReassignments (v1: the steps in flight);
* ``peak_in_mb_s``: per target broker, the highest growth rate of its log directory between
  two samples (bytes written into it: the replicas it copies);
* ``move_s``: from ``pykraft reassign --execute`` until no reassignment is listed;
* ``produce_p99_ms`` / ``produce_p50_ms``: acks=all produce latency (kafka-python, one record
  in flight per request, a moving 6-partition topic) during the move, and the same before it
  (``baseline_p99_ms``);
* ``lost``: records acknowledged during the run that a consumer does not find afterwards
  (must be 0).

One line of JSON per mode on stdout; ``run_all.py --only reassign`` reports them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pykraft.interop.cluster import LocalCluster
from pykraft.interop.kafka import KafkaDist
from pykraft.interop.load import Load, consume_all, missing

SOURCES = (100, 101, 102)
TARGETS = (103, 104, 105)
BULK_PARTITIONS = 12
LIVE_PARTITIONS = 6
RECORD_SIZE = 1024


def emit(row: dict[str, Any]) -> None:
    print(json.dumps(row), flush=True)


def pykraft(*args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "pykraft.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if result.returncode != 0:
        raise RuntimeError(f"pykraft {' '.join(args)}: {result.stderr}")
    return result.stdout


def ring(brokers: tuple[int, ...], partitions: int) -> str:
    """kafka-topics --replica-assignment: RF 3 over ``brokers``, leaders rotating."""
    n = len(brokers)
    return ",".join(
        ":".join(str(brokers[(p + i) % n]) for i in range(3)) for p in range(partitions)
    )


def dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)


def moving_replicas(controllers: str) -> tuple[int, bool]:
    """(replicas being added now, anything still listed)."""
    from pykraft.admin import AdminClient
    from pykraft.admin.reassignments import list_reassignments

    async def go() -> tuple[int, bool]:
        async with AdminClient(controllers, bootstrap_controllers=True) as admin:
            ongoing, steps = await list_reassignments(admin)
        adding = sum(len(set(s.target) - set(s.current)) for s in steps)
        return adding, bool(ongoing)

    return asyncio.run(go())


def run_mode(mode: str, dist: KafkaDist, work: Path, gib: float) -> dict[str, Any]:
    cluster = LocalCluster(
        dist,
        work / mode,
        controllers=3,
        brokers=6,
        broker_config={"num.replica.fetchers": 2, "log.segment.bytes": 256 * 1024 * 1024},
    )
    row: dict[str, Any] = {"bench": "reassign", "mode": mode, "gib": gib}
    try:
        cluster.start(wait=True)
        for topic, partitions in (("bulk", BULK_PARTITIONS), ("live", LIVE_PARTITIONS)):
            dist.run(
                "topics",
                "--bootstrap-server",
                cluster.bootstrap,
                "--create",
                "--topic",
                topic,
                "--replica-assignment",
                ring(SOURCES, partitions),
            )
        records = int(gib * 2**30 / RECORD_SIZE)
        started = time.monotonic()
        dist.run(
            "producer-perf-test",
            "--topic",
            "bulk",
            "--num-records",
            str(records),
            "--record-size",
            str(RECORD_SIZE),
            "--throughput",
            "-1",
            "--producer-props",
            f"bootstrap.servers={cluster.bootstrap}",
            "acks=1",
            "linger.ms=20",
            "batch.size=524288",
            "compression.type=none",
            timeout_s=3600,
        )
        row["fill_s"] = round(time.monotonic() - started, 1)
        load = Load(cluster.bootstrap, "live", linger_ms=0, pause_s=0.002, window="before")
        load.start()
        time.sleep(10)  # the baseline
        plan = work / f"{mode}-plan.json"
        plan.write_text(
            json.dumps(
                {
                    "version": 1,
                    "partitions": [
                        {
                            "topic": topic,
                            "partition": p,
                            "replicas": list(TARGETS[(p + i) % 3] for i in range(3)),
                        }
                        for topic, count in (("bulk", BULK_PARTITIONS), ("live", LIVE_PARTITIONS))
                        for p in range(count)
                    ],
                }
            )
        )
        limits = ["--replica-count", "1", "--partition-count", "2"] if mode == "kip435" else []
        controllers = cluster.bootstrap_controllers
        targets = {b.node_id: b.data for b in cluster.brokers if b.node_id in TARGETS}
        sizes = {b: dir_bytes(d) for b, d in targets.items()}
        load.window = "during"
        started = time.monotonic()
        pykraft(
            "reassign",
            "--bootstrap-controller",
            controllers,
            "--execute",
            "--reassignment-json-file",
            str(plan),
            *limits,
        )
        peak_moving = 0
        peak_rate = dict.fromkeys(targets, 0.0)
        last = time.monotonic()
        while True:
            time.sleep(0.5)
            moving, listed = moving_replicas(controllers)
            peak_moving = max(peak_moving, moving)
            now = time.monotonic()
            for b, d in targets.items():
                size = dir_bytes(d)
                peak_rate[b] = max(peak_rate[b], (size - sizes[b]) / (now - last) / 1e6)
                sizes[b] = size
            last = now
            if not listed:
                break
            if now - started > 3600:
                raise TimeoutError("the move did not finish within an hour")
        row["move_s"] = round(time.monotonic() - started, 1)
        load.window = "after"
        time.sleep(5)
        load.stop()
        row["peak_replicas_moving"] = peak_moving
        row["peak_in_mb_s"] = {str(b): round(v, 1) for b, v in sorted(peak_rate.items())}
        row["baseline_p99_ms"] = percentile(load.latencies.get("before", []), 0.99)
        row["produce_p50_ms"] = percentile(load.latencies.get("during", []), 0.50)
        row["produce_p99_ms"] = percentile(load.latencies.get("during", []), 0.99)
        row["produce_errors"] = load.errors
        row["acked"] = sum(len(v) for v in load.acked.values())
        row["lost"] = missing(load, consume_all(cluster.bootstrap, "live", LIVE_PARTITIONS))
        out = dist.run(
            "topics", "--bootstrap-server", cluster.bootstrap, "--describe", "--topic", "bulk"
        ).stdout
        replica_sets = [
            {int(b) for b in line.split("Replicas: ")[1].split("\t")[0].split(",")}
            for line in out.splitlines()
            if "Partition:" in line
        ]
        row["partitions_on_targets"] = sum(1 for r in replica_sets if r == set(TARGETS))
    finally:
        cluster.kill()
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--only", default="kip455,kip435")
    args = parser.parse_args()
    dist = KafkaDist.get("4")
    work = Path(tempfile.mkdtemp(prefix="pykraft-reassign-"))
    try:
        for mode in args.only.split(","):
            emit(run_mode(mode, dist, work, args.gib))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
