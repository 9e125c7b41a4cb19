"""What eligible leader replicas (KIP-966) cost the controller (issue 28):

    .venv/bin/python bench/bench_elr.py [--topics 1000] [--partitions 100] [--repeat 3]

The real metadata controller in memory (no I/O), six brokers, ``--topics`` topics of
``--partitions`` partitions (RF 3, min.insync.replicas 2), once at 4.0-IV3 (25, ELR off) and
once at 4.1-IV1 (27, ELR on). Timed, the best of ``--repeat``: the controller's work for
fencing one broker (its ISR memberships and leaderships move: one PartitionChangeRecord per
partition it is in), then a second (below min ISR: with ELR on, the ELR fills), a third (the
partitions on those three lose their last ISR member), then unfencing the second (leaderless
partitions elect it: from the ELR with ELR on, as their last ISR member without). The time is that of ``handle`` (the records built)
plus their replay, as the active controller does before it appends.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from pykraft.sim.standalone import StandaloneController as Cluster
from pykraft.sim.standalone import build_cluster


def build(metadata_version: int, topics: int, partitions: int) -> Cluster:
    return build_cluster(metadata_version, topics, partitions, configs={"min.insync.replicas": "2"})


def timed(cluster: Cluster, step: Any) -> tuple[float, int]:
    start = time.perf_counter()
    written = step(cluster)
    return (time.perf_counter() - start) * 1000, written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    steps = [
        ("fence broker 0", lambda c: c.heartbeat(0, fence=True)),
        ("fence broker 1 (below min ISR)", lambda c: c.heartbeat(1, fence=True)),
        ("fence broker 2 (some ISRs empty)", lambda c: c.heartbeat(2, fence=True)),
        ("unfence broker 1 (elected where it may)", lambda c: c.heartbeat(1)),
    ]
    total = args.topics * args.partitions
    print(f"{total:,} partitions, RF 3, min.insync.replicas 2, 6 brokers")
    print("| step | ELR off (4.0-IV3): ms, records | ELR on (4.1-IV1): ms, records |")
    print("|---|---|---|")
    results: dict[str, dict[int, tuple[float, int]]] = {name: {} for name, _ in steps}
    for mv in (25, 27):
        best: dict[str, tuple[float, int]] = {}
        for _ in range(args.repeat):
            cluster = build(mv, args.topics, args.partitions)
            for name, step in steps:
                ms, written = timed(cluster, step)
                if name not in best or ms < best[name][0]:
                    best[name] = (ms, written)
        for name, _ in steps:
            results[name][mv] = best[name]
    for name, _ in steps:
        off, on = results[name][25], results[name][27]
        print(f"| {name} | {off[0]:,.0f} ms, {off[1]:,} | {on[0]:,.0f} ms, {on[1]:,} |")


if __name__ == "__main__":
    main()
