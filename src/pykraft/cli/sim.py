"""`pykraft sim`: run the deterministic simulator.

    pykraft dev sim run --seed N [--voters 3] [--observers 1] [--profile NAME] [--events K]
                    [--no-pre-vote] [--trace FILE.jsonl]
    pykraft dev sim sweep --seeds A..B [--profile P[,P2...]] [--jobs 2] [--spread] [--events K] ...
    pykraft dev sim profiles
    pykraft dev sim check-trace FILE.jsonl [FILE.jsonl...]

``run`` prints a summary; on a violated invariant it prints the seed, the invariant and the
last events, and exits 1. ``sweep`` runs every seed of ``A..B`` (B excluded) with every
profile, reports failures with their seeds and a per-profile table, and exits 1 if any run
failed. The trace format is documented in ``pykraft.sim.trace``. ``check-trace`` walks a
trace's steps through the specification's rules (``pykraft.spec``; the simulator applies them
as it runs too) and exits 1 naming the first step they forbid. Several files (real nodes'
``pykraft.spec.trace.file``, one per node) are walked as one history, merged by time.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

# Every profile of pykraft.sim.profiles.PROFILES (kept in step by tests/sim/test_cli_sim.py).
_DEFAULT_PROFILES = (
    "none,lossy,partitions,crashes,disk,reconfig,membership,majority-loss,upgrade,controller,chaos"
)


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "sim", help="deterministic simulation of a KRaft quorum under faults"
    )

    def usage(args: argparse.Namespace) -> int:
        parser.print_help()
        return 2

    parser.set_defaults(func=usage)
    cmds = parser.add_subparsers(dest="sim_command", metavar="SIM_COMMAND")

    run_p = cmds.add_parser("run", help="run one seed and print a summary")
    run_p.add_argument("--seed", type=int, required=True)
    run_p.add_argument("--profile", default="none", help="fault profile (see `sim profiles`)")
    _common(run_p, events_default=20_000)
    run_p.add_argument("--trace", metavar="FILE.jsonl", help="write every event as JSONL")
    run_p.set_defaults(func=_cmd_run)

    sweep_p = cmds.add_parser("sweep", help="run many seeds on several cores")
    sweep_p.add_argument("--seeds", required=True, help="A..B (B excluded) or N")
    sweep_p.add_argument(
        "--profile", default=_DEFAULT_PROFILES, help="comma-separated fault profiles"
    )
    sweep_p.add_argument("--jobs", type=int, default=2, help="worker processes")
    sweep_p.add_argument(
        "--spread",
        action="store_true",
        help="run each seed once, with profile number seed %% len(profiles) (default: every "
        "seed with every profile)",
    )
    sweep_p.add_argument("--quiet", action="store_true", help="no progress line per failure")
    _common(sweep_p, events_default=5_000)
    sweep_p.set_defaults(func=_cmd_sweep)

    prof_p = cmds.add_parser("profiles", help="list the fault profiles")
    prof_p.set_defaults(func=_cmd_profiles)

    check_p = cmds.add_parser(
        "check-trace", help="walk traces' steps through the KRaft specification's rules"
    )
    check_p.add_argument("trace", metavar="FILE.jsonl", nargs="+")
    check_p.set_defaults(func=_cmd_check_trace)


def _common(p: argparse.ArgumentParser, events_default: int) -> None:
    p.add_argument("--voters", type=int, default=3)
    p.add_argument("--observers", type=int, default=1)
    p.add_argument(
        "--events",
        type=int,
        default=events_default,
        help="events of the fault phase (the heal phase follows)",
    )
    p.add_argument("--no-pre-vote", dest="pre_vote", action="store_false")


def _cmd_run(args: argparse.Namespace) -> int:
    from pykraft.sim import SimConfig, TraceWriter, get_profile, run

    try:
        profile = get_profile(args.profile)
    except ValueError as e:
        print(f"pykraft sim: {e}", file=sys.stderr)
        return 2
    config = SimConfig(
        seed=args.seed,
        voters=args.voters,
        observers=args.observers,
        profile=profile,
        events=args.events,
        pre_vote=args.pre_vote,
    )
    if args.trace:
        with open(args.trace, "w", encoding="utf-8") as f:
            result = run(config, TraceWriter(f))
    else:
        result = run(config)
    print(result.summary())
    return 0 if result.violation is None else 1


def _cmd_sweep(args: argparse.Namespace) -> int:
    from pykraft.sim import SimResult, get_profile, sweep
    from pykraft.sim.sweep import parse_seeds

    try:
        seeds = parse_seeds(args.seeds)
        profiles = [p.strip() for p in args.profile.split(",") if p.strip()]
        for name in profiles:
            get_profile(name)
    except ValueError as e:
        print(f"pykraft sim: {e}", file=sys.stderr)
        return 2

    def progress(result: SimResult) -> None:
        if result.violation is not None and not args.quiet:
            v = result.violation
            print(
                f"FAIL seed {result.seed} profile {result.profile}: {v.invariant}: "
                f"{v.message[:200]}",
                flush=True,
            )

    report = sweep(
        seeds,
        profiles,
        events=args.events,
        voters=args.voters,
        observers=args.observers,
        pre_vote=args.pre_vote,
        spread=args.spread,
        jobs=args.jobs,
        on_result=progress,
    )
    print(report.format())
    return 0 if report.ok else 1


def _cmd_profiles(args: argparse.Namespace) -> int:
    from pykraft.sim import PROFILES

    for profile in PROFILES.values():
        print(profile.describe())
    return 0


def _cmd_check_trace(args: argparse.Namespace) -> int:
    from pathlib import Path

    from pykraft.spec import check_trace_files

    try:
        steps, violation = check_trace_files([Path(t) for t in args.trace])
    except (OSError, ValueError, KeyError, AssertionError) as e:
        print(f"error: {' '.join(args.trace)}: not a trace ({e})", file=sys.stderr)
        return 2
    if violation is not None:
        print(f"VIOLATION spec:{violation.rule}: {violation.message} ({steps} steps checked)")
        return 1
    print(f"{steps} steps, every one a step the specification allows")
    return 0
