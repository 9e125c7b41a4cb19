"""`pykraft verify`: the simulator's evidence with a chosen budget, as a report an operator
or an auditor can read (issue 49 item 5).

    pykraft verify [--seeds-per-profile 20] [--events 8000] [--profile P[,P2...]]
                   [--voters 3] [--observers 1] [--jobs 2] [--first-seed 0] [--out DIR]

It runs ``--seeds-per-profile`` seeds of every profile (seeds ``--first-seed`` on, spread
over the profiles): every safety invariant after every event, every role transition walked
through the KRaft specification's rules, the heal phase's liveness checks. For one seed per
profile it writes the trace to ``DIR/traces/`` and walks the file again with ``pykraft sim
check-trace``'s rules, and hands its client appends' history to Porcupine
(``tools/linearize``, ``faults/linearizable.py``), the check every run makes itself
(``appends-linearizable``) done a second way. Then ``DIR/report.html`` (plots embedded) and ``DIR/verify.json``;
exit 1 when anything failed (each failure with the command that reproduces it).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pykraft.pipeline.verify_report import TraceCheck


def register(sub: Any) -> None:
    p = sub.add_parser(
        "verify", help="run the simulator's checks with a budget and write an HTML report"
    )
    p.add_argument("--seeds-per-profile", type=int, default=20)
    p.add_argument("--events", type=int, default=8_000, help="fault-phase events per run")
    p.add_argument("--profile", default=None, help="comma-separated profiles (default: all)")
    p.add_argument("--voters", type=int, default=3)
    p.add_argument("--observers", type=int, default=1)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path("verify-report"))
    p.set_defaults(func=_verify)


def _verify(args: argparse.Namespace) -> int:
    from pykraft.pipeline.verify_report import write_report
    from pykraft.sim import PROFILES, sweep

    profiles = args.profile.split(",") if args.profile else list(PROFILES)
    if args.seeds_per_profile < 1 or args.events < 1:
        print("error: --seeds-per-profile and --events must be positive")
        return 2
    first = args.first_seed
    seeds = range(first, first + args.seeds_per_profile * len(profiles))
    report = sweep(
        seeds,
        profiles,
        events=args.events,
        voters=args.voters,
        observers=args.observers,
        spread=True,
        jobs=args.jobs,
    )
    n = len(profiles)
    # A seed of the sweep for each profile (the sweep gives seed s profile s % n).
    traces = [_trace_check(args, name, first + (i - first) % n) for i, name in enumerate(profiles)]
    budget = {
        "seeds": f"{seeds.start}..{seeds.stop}",
        "profiles": profiles,
        "events": args.events,
        "voters": args.voters,
        "observers": args.observers,
    }
    page = write_report(args.out, report, traces, budget)
    bad = [t for t in traces if t.violation is not None]
    illegal = [t for t in traces if t.linearizability != "Ok"]
    print(report.format())
    print(f"{len(traces)} trace files walked again, {len(bad)} with a forbidden step")
    print(f"{len(traces)} append histories checked by Porcupine, {len(illegal)} not Ok")
    print(f"report: {page}")
    return 0 if report.ok and not bad and not illegal else 1


def _trace_check(args: argparse.Namespace, profile: str, seed: int) -> TraceCheck:
    from pykraft.faults.linearizable import check
    from pykraft.pipeline.verify_report import TraceCheck
    from pykraft.sim import SimConfig, TraceWriter
    from pykraft.sim.client_appends import append_history, write_history
    from pykraft.sim.simulator import Simulation
    from pykraft.sim.spec_trace import check_trace_lines

    folder = args.out / "traces"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{profile}-{seed}.jsonl"
    with path.open("w", encoding="utf-8") as f:
        config = SimConfig.make(
            seed, profile, events=args.events, voters=args.voters, observers=args.observers
        )
        sim = Simulation(config, TraceWriter(f))
        sim.run()
    with path.open(encoding="utf-8") as f:
        steps, violation = check_trace_lines(f)
    found = None if violation is None else f"spec:{violation.rule}: {violation.message}"
    appends = append_history(sim.checker.client_appends, sim.history)
    answer = check(write_history(appends, folder / f"{profile}-{seed}-appends.jsonl"), "log")
    lin = answer.result if answer.ok else "; ".join(answer.lines())
    return TraceCheck(profile, seed, str(path), steps, found, len(appends), lin)
