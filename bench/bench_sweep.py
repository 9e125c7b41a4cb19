"""Simulator sweeps: runs per second per fault profile, interpreted and compiled, beside the
figure of 2026-11-25 (issue 49 item 6: deeper checking must not cost the sweep its breadth).

    .venv/bin/python bench/bench_sweep.py [--seeds-per-profile 6] [--voters 5] [--observers 2]
        [--events 20000] [--jobs 2] [--profiles P1,P2...]

Each line is one ``pykraft dev sim sweep`` in a process of its own, with ``PYKRAFT_NATIVE``
0 (the interpreted core) or 1 (compiled, ``python -m pykraft.native build``), every check of
the day on (the invariants after every event, the specification's transition rules, the
client appends' history at each run's end). The last two lines are the mixed sweep the
reference was measured with (``--spread``: each seed once, the profiles in turn).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys

from pykraft.sim import PROFILES

# 2026-11-25 (the figure): 601 seeds, 5 voters and 2 observers, 20,000 events, two
# jobs, --spread, interpreted core, "under 380 s".
REFERENCE_RUNS_PER_S = 601 / 380.0
_SUMMARY = re.compile(r"(\d+) runs, (\d+) failures, (\d+) events in ([\d.]+) s")


def sweep(
    seeds: str, profiles: str, args: argparse.Namespace, native: bool, spread: bool
) -> tuple[int, int, int, float]:
    """(runs, failures, events, seconds) of one sweep."""
    argv = [sys.executable, "-m", "pykraft.cli.main", "dev", "sim", "sweep", "--seeds", seeds]
    argv += ["--profile", profiles, "--voters", str(args.voters)]
    argv += ["--observers", str(args.observers), "--events", str(args.events)]
    argv += ["--jobs", str(args.jobs), "--quiet"] + (["--spread"] if spread else [])
    env = {**os.environ, "PYKRAFT_NATIVE": "1" if native else "0"}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    found = _SUMMARY.search(done.stdout)
    if found is None:
        raise SystemExit(f"no summary from {' '.join(argv)}:\n{done.stdout}\n{done.stderr}")
    runs, failures, events = (int(found[i]) for i in (1, 2, 3))
    return runs, failures, events, float(found[4])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--seeds-per-profile", type=int, default=6)
    parser.add_argument("--voters", type=int, default=5)
    parser.add_argument("--observers", type=int, default=2)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--profiles", default=",".join(PROFILES))
    args = parser.parse_args()
    n = args.seeds_per_profile
    profiles = args.profiles.split(",")
    print(f"{'profile':<16} {'core':<12} {'runs':>5} {'fail':>5} {'runs/s':>7} {'events/s':>9}")
    rows = [(p, p, f"9000..{9000 + n}", False) for p in profiles]
    rows.append(("all (--spread)", ",".join(profiles), f"9000..{9000 + n * len(profiles)}", True))
    for name, chosen, seeds, spread in rows:
        for native in (False, True):
            runs, failures, events, seconds = sweep(seeds, chosen, args, native, spread)
            core = "compiled" if native else "interpreted"
            print(
                f"{name:<16} {core:<12} {runs:>5} {failures:>5} {runs / seconds:>7.2f} "
                f"{events / seconds:>9,.0f}"
            )
    print(
        f"2026-11-25, all (--spread), interpreted: {REFERENCE_RUNS_PER_S:.2f} runs/s or more "
        "(601 seeds in under 380 s)"
    )


if __name__ == "__main__":
    main()
