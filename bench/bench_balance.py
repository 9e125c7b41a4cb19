"""What the periodic preferred-leader election costs the active controller (issue 46):

    .venv/bin/python bench/bench_balance.py [--topics 10000] [--partitions 100]
        [--out bench/results/balance.json]

The real metadata controller in memory (no I/O), six brokers, ``--topics`` topics of
``--partitions`` partitions (RF 3). Broker 0 is fenced (its leaderships move), unfenced and
put back into every ISR it was in (as its leaders' AlterPartition would): the partitions it
is first replica of are then led by another broker. Then Kafka's electPreferred runs until
nothing is imbalanced (``controller/periodic.balance_partition_leaders``: at most 1,000
elections a run, each run one tick of the active controller). Timed: each run's election
(the records built) plus their replay, as the active controller does before it appends; the
longest run is the longest the event loop is held by the duty. Also one run with nothing to
balance (the cost of the duty every ``leader.imbalance.check.interval.seconds`` in a
balanced cluster).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from pathlib import Path

from pykraft.controller.periodic import balance_partition_leaders
from pykraft.controller.result import RecordList
from pykraft.metadata import records as r
from pykraft.node.collector import freeze_after_long_collections
from pykraft.sim.standalone import StandaloneController, build_cluster


def restore_isrs(cluster: StandaloneController, broker: int) -> int:
    """Broker ``broker`` back in the ISR of every partition it is a replica of."""
    image = cluster.c.image
    records: RecordList = []
    for p in image.all_partitions():
        if broker in p.replicas and broker not in p.isr:
            isr = tuple(b for b in p.replicas if b in p.isr or b == broker)
            change = r.PartitionChangeRecord(
                partition_id=p.partition_id, topic_id=p.topic_id, isr=isr
            )
            records.append((change, 0))
    cluster._apply(records)
    return len(records)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results" / "balance.json"
    )
    args = parser.parse_args()
    started = time.perf_counter()
    cluster = build_cluster(33, args.topics, args.partitions)
    built_s = time.perf_counter() - started
    cluster.heartbeat(0, fence=True)
    cluster.heartbeat(0)
    restored = restore_isrs(cluster, 0)
    image = cluster.c.image
    imbalanced = len(image.topics_image.imbalanced)
    gc.freeze()  # as a node freezes its image once loaded, and then its survivors
    freeze_after_long_collections()  # of long full collections (node/collector.py)
    runs: list[float] = []
    elections = 0
    while True:
        start = time.perf_counter()
        records, again = balance_partition_leaders(image)
        cluster._apply(records)
        runs.append((time.perf_counter() - start) * 1000)
        elections += len(records)
        if not again:
            break
    start = time.perf_counter()
    idle, _ = balance_partition_leaders(image)
    idle_ms = (time.perf_counter() - start) * 1000
    assert not idle and not image.topics_image.imbalanced
    total = args.topics * args.partitions
    print(
        f"{total:,} partitions, RF 3, 6 brokers (built in {built_s:.0f} s); broker 0 back in "
        f"{restored:,} ISRs; {imbalanced:,} partitions imbalanced"
    )
    print("| runs | elections | run p50 ms | run max ms | total s | balanced run ms |")
    print("|---|---|---|---|---|---|")
    print(
        f"| {len(runs)} | {elections:,} | {statistics.median(runs):.1f} | {max(runs):.1f} | "
        f"{sum(runs) / 1000:.2f} | {idle_ms:.2f} |"
    )
    result = {
        "partitions": total,
        "imbalanced": imbalanced,
        "runs": len(runs),
        "elections": elections,
        "run_p50_ms": statistics.median(runs),
        "run_max_ms": max(runs),
        "total_s": sum(runs) / 1000,
        "balanced_run_ms": idle_ms,
        "at": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
