"""Fault runs with Kafka brokers, pykraft's controllers beside Apache Kafka's (issue 29):

    sudo .venv/bin/python bench/bench_faults.py [--seconds 300] [--seed 30 ...] [--brokers 3]

For each seed, ``pykraft faults run --brokers N`` twice with the same schedule: once on
pykraft's controllers, once on Kafka 4.3.1's own (``--controllers kafka``), one after the
other on the same machine. Each run is checked by the same checker (nothing acknowledged lost
or duplicated, no unsafe election, ...); the table gives what both cost the clients: time
without an agreed controller leader, the slowest leader recovery after a heal, partitions
offline, and the time until a healed broker is listed alive again. Prints a Markdown table
(bench/ANALYSIS.md section 16) and each run's report.
"""

from __future__ import annotations

import argparse
import logging

from pykraft.faults.broker_side import pct
from pykraft.faults.run import Report, RunConfig, run


def row(kind: str, report: Report) -> str:
    side = report.brokers
    assert side is not None
    v = side.verdict
    leaderless = sorted(report.leaderless_ms)
    recoveries = sorted(report.recoveries_ms)
    offline = sorted(side.watch.offline_ms)
    unfence = sorted(side.unfence_ms)
    return (
        f"| {kind} | {'OK' if report.ok else 'FAILED'} | {v.acked:,} | {len(v.lost)} | "
        f"{len(v.duplicated)} | {len(v.elections)} | {len(leaderless)}: "
        f"{pct(leaderless, 0.5)} / {pct(leaderless, 1.0)} | {pct(recoveries, 1.0)} | "
        f"{len(offline)}: {pct(offline, 0.5)} / {pct(offline, 0.99)} / {pct(offline, 1.0)} | "
        f"{pct(unfence, 0.5)} / {pct(unfence, 1.0)} | {sum(leaderless):,.0f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--seed", type=int, nargs="+", default=[30])
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument(
        "--controllers",
        default="pykraft,kafka",
        help="the sides to run, in order (e.g. pykraft alone to rerun one side of a seed)",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    rows: list[str] = []
    reports: list[str] = []  # printed as each run ends
    for seed in args.seed:
        for controllers in args.controllers.split(","):
            report = run(
                RunConfig(
                    seed=seed,
                    seconds=args.seconds,
                    voters=3,
                    observers=1,
                    brokers=args.brokers,
                    controllers=controllers,
                    log=lambda _line: None,
                )
            )
            reports.append(report.format())
            rows.append(row(f"seed {seed}, {controllers}", report))
            print(reports[-1], flush=True)
    print()
    print(
        "| run | result | records acked | lost | duplicated | unsafe elections | "
        "leaderless windows: p50 / max ms | slowest leader recovery ms | "
        "partition offline intervals: p50 / p99 / max ms | broker alive again p50 / max ms | "
        "leaderless total ms |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for line in rows:
        print(line)


if __name__ == "__main__":
    main()
