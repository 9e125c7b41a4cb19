"""Simulated events per second on one core (target: >= 50,000).

    .venv/bin/python bench/bench_sim.py [--events 100000] [--profiles none,chaos] [--repeat 3]
        [--cprofile]

An event is one thing the simulator processes: a message delivered to a core, a timer that
fired, a connection refused, a workload append, a nemesis strike or a heal (stale timers and
messages for a previous incarnation are skipped and not counted). Each event includes
performing the node's Ready and checking every invariant. ``--cprofile`` prints the top
functions by own time and how the time splits between the core (``pykraft/raft``) and the
simulator.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

from pykraft.sim import SimConfig, run


def bench(profile: str, events: int, seed: int, observers: int, repeat: int) -> tuple[int, float]:
    """The best of ``repeat`` identical runs (deterministic: same events each time), by wall
    time and by this process's CPU time: on a shared machine the best run and the CPU time
    are the least disturbed by other load."""
    config = SimConfig.make(seed=seed, profile=profile, events=events, observers=observers)
    elapsed = cpu = float("inf")
    for _ in range(repeat):
        started, cpu_started = time.perf_counter(), time.process_time()
        result = run(config)
        elapsed = min(elapsed, time.perf_counter() - started)
        cpu = min(cpu, time.process_time() - cpu_started)
    status = "ok" if result.violation is None else f"VIOLATION {result.violation.invariant}"
    print(
        f"{profile:<11} seed {seed}: {result.events:>8} events in {elapsed:6.2f} s = "
        f"{result.events / elapsed:>9,.0f} events/s, CPU {result.events / cpu:>9,.0f}/s  "
        f"({result.sim_time_ms / 1000:.0f} s simulated, {result.committed_records} records "
        f"committed, {status})"
    )
    return result.events, elapsed


def split_by_package(stats: pstats.Stats) -> None:
    """Own time in the core vs the simulator vs everything else."""
    totals: dict[str, float] = {
        "pykraft/raft": 0.0,
        "pykraft/sim/memory": 0.0,  # the in-memory storage (written with the core)
        "pykraft/sim": 0.0,  # the simulator itself: event loop, network, checks, app
        "pykraft/records": 0.0,
    }
    other = 0.0
    raw: dict[tuple[str, int, str], tuple[int, int, float, float, object]]
    raw = stats.stats  # type: ignore[attr-defined]
    for (filename, _line, _name), (_cc, _nc, tottime, _ct, _callers) in raw.items():
        for key in totals:
            if key in filename:
                totals[key] += tottime
                break
        else:
            other += tottime
    whole = sum(totals.values()) + other
    for key, value in totals.items():
        print(f"  own time in {key:<20} {value:6.2f} s ({100 * value / whole:4.1f} %)")
    print(f"  own time elsewhere               {other:6.2f} s ({100 * other / whole:4.1f} %)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--profiles", default="none,lossy,chaos")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--observers", type=int, default=1)
    parser.add_argument("--cprofile", action="store_true")
    parser.add_argument("--repeat", type=int, default=1, help="best of N runs per profile")
    args = parser.parse_args()
    total_events = 0
    total_s = 0.0
    for profile in args.profiles.split(","):
        if args.cprofile:
            prof = cProfile.Profile()
            prof.enable()
            bench(profile, args.events, args.seed, args.observers, 1)
            prof.disable()
            stats = pstats.Stats(prof)
            split_by_package(stats)
            stats.sort_stats("tottime").print_stats(15)
        else:
            n, s = bench(profile, args.events, args.seed, args.observers, args.repeat)
            total_events += n
            total_s += s
    if total_s:
        print(f"overall: {total_events / total_s:,.0f} events/s (target 50,000)")


if __name__ == "__main__":
    main()
