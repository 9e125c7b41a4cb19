"""Run every benchmark and write the report: the one command.

    .venv/bin/python bench/run_all.py [--quick] [--publish] [--only PHASES] [--out DIR]

Phases (in order): machine facts, Apache Kafka's raft benchmark server (TestRaftServer)
against pykraft at the same offered loads, interleaved, and both failovers (``wl_kafka.py``,
~20 min; Kafka's jars come through scripts/kafka.sh), pykraft throughput/latency (linger 25 ms = Kafka's default,
and linger 0), the same load on PySyncObj (4 configurations), pykraft failover (Kafka's
default timeouts and tuned ones), catch-up (a follower down, a new voter), a profile of pykraft at saturation, the
simulator's speed and the single-area benches (``bench_log.py``, ``bench_protocol.py``,
``bench_sim.py``), Kafka clusters on each kind of controller (``wl_cluster.py``), reassignment
(``wl_reassign.py``) and the scale curves (``bench_scale.py``: 10,000 to 1,000,000 partitions,
100 to 5,000 brokers, ~40 min). A phase that fails is recorded as an error in the report; the others
still run. Results go to ``<out>/results.json``, the report to ``<out>/REPORT.md`` with its
PNGs beside it; ``--publish`` copies them to ``bench/REPORT.md`` and ``bench/plots/``.

``--quick`` is a 2-3 minute smoke run (short windows, few points, 2 failovers each): its
figures show the harness works, not what the code can do.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import report
from _common import BENCH_DIR, fsync_probe_ms, install_reaper, machine_info
from _load import LoadSpec
from report_results import save_result
from scripts import SCRIPTS, Script, run_script
from wl_kafka import run_kafka_anchor
from wl_kraft import (
    KAFKA_DEFAULTS,
    TUNED,
    run_catchup,
    run_catchup_new_voter,
    run_failover,
    run_throughput,
)
from wl_syncobj import run_syncobj

SYNCOBJ_VARIANTS = ((False, True), (False, False), (True, True), (True, False))  # journal, batch
CORE_PHASES = (
    "kafka",
    "kraft",
    "syncobj",
    "failover",
    "catchup",
    "profile",
    "cluster",
    "reassign",
    "scale",
)
SCRIPT_PHASES = {row.phase: row for row in SCRIPTS}
PHASES = CORE_PHASES + tuple(SCRIPT_PHASES)
DEFAULT = CORE_PHASES + tuple(row.phase for row in SCRIPTS if row.default)


@dataclass(frozen=True)
class Plan:
    grid: dict[int, tuple[int, ...]]  # record bytes -> appender counts
    warmup_s: float
    measure_s: float
    failover_reps: int
    catchup_down_s: float
    catchup_log_bytes: int  # the new-voter case: leader's log past its snapshot
    catchup_snapshot_bytes: int
    sim_events: int
    log_records: int
    syncobj_sizes: tuple[int, ...]
    # (K, records per call) points at 100 B: many records per append call, as an embedding
    # application with its own batches would do; shows the log's capacity apart from the
    # per-call cost of Python coroutines/callbacks.
    batched: tuple[tuple[int, int], ...] = ((16, 100),)

    def specs(self, sizes: tuple[int, ...] | None = None) -> list[LoadSpec]:
        out = [
            LoadSpec(size, k, warmup_s=self.warmup_s, measure_s=self.measure_s)
            for size, ks in self.grid.items()
            if sizes is None or size in sizes
            for k in ks
        ]
        out += [
            LoadSpec(100, k, rpc, warmup_s=self.warmup_s, measure_s=self.measure_s)
            for k, rpc in self.batched
        ]
        return out


FULL = Plan(
    grid={100: (1, 4, 16, 64, 256, 1024), 1024: (1, 16, 256, 1024), 10240: (1, 16, 256)},
    warmup_s=2.0,
    measure_s=10.0,
    failover_reps=20,
    catchup_down_s=30.0,
    catchup_log_bytes=1 << 30,
    catchup_snapshot_bytes=256 << 20,
    sim_events=200_000,
    log_records=1_000_000,
    syncobj_sizes=(100, 1024, 10240),
    batched=((16, 100), (64, 100), (256, 100)),
)
QUICK = Plan(
    grid={100: (1, 64, 1024), 1024: (64,), 10240: (64,)},
    warmup_s=0.5,
    measure_s=1.5,
    failover_reps=2,
    catchup_down_s=5.0,
    catchup_log_bytes=64 << 20,
    catchup_snapshot_bytes=16 << 20,
    sim_events=20_000,
    log_records=50_000,
    syncobj_sizes=(100,),
)


def say(line: str) -> None:
    print(line, flush=True)


def phase(results: dict[str, Any], name: str, fn: Callable[[], Any]) -> None:
    say(f"== {name}")
    t0 = time.monotonic()
    try:
        results[name] = fn()
    except Exception as exc:
        results.setdefault("errors", {})[name] = f"{type(exc).__name__}: {exc}"
        say(f"   {name} FAILED: {exc}")
        traceback.print_exc()
    results.setdefault("phase_seconds", {})[name] = round(time.monotonic() - t0, 1)
    say(f"   ({time.monotonic() - t0:.0f} s)")


def kraft_throughput(plan: Plan, work: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for linger_ms in (25, 0):
        rows = run_throughput(work, plan.specs(), linger_ms=linger_ms, log=say)
        out += rows
        # Latency at half of the saturating 100-byte load, paced: the same rate offered by
        # the saturating K's appenders and by 256 (each appender is a task on the leader's
        # loop; the report shows both and names the K of the figure it judges).
        sat = max(
            (r for r in rows if r["record_bytes"] == 100 and r["records_per_call"] == 1),
            key=lambda r: r["records_per_s"],
        )
        halves = [
            LoadSpec(
                100,
                k,
                rate_rps=sat["records_per_s"] / 2,
                warmup_s=plan.warmup_s,
                measure_s=plan.measure_s,
            )
            for k in sorted({sat["appenders"], min(256, sat["appenders"])})
        ]
        for row in run_throughput(work / "half", halves, linger_ms=linger_ms, log=say):
            row["half_load_of"] = sat["records_per_s"]
            out.append(row)
    return out


def syncobj_throughput(plan: Plan, work: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for journal, batch in SYNCOBJ_VARIANTS:
        specs = plan.specs(plan.syncobj_sizes)
        out += run_syncobj(work, specs, journal=journal, batch=batch, log=say)
    return out


def failover(plan: Plan, work: Path) -> list[dict[str, Any]]:
    return [
        run_failover(
            work, name="kafka-defaults", timeouts=KAFKA_DEFAULTS, repetitions=plan.failover_reps
        ),
        run_failover(work, name="tuned", timeouts=TUNED, repetitions=plan.failover_reps),
    ]


def catchup(plan: Plan, work: Path) -> list[dict[str, Any]]:
    """Both cases; one that fails is reported as an error row, the other still runs."""
    spec = LoadSpec(1024, 256, warmup_s=0.0, measure_s=plan.catchup_down_s)
    cases: list[tuple[str, Callable[[], dict[str, Any]]]] = [
        (
            "follower down",
            lambda: run_catchup(work, down_s=plan.catchup_down_s, spec=spec, log=say),
        ),
        (
            "new voter",
            lambda: run_catchup_new_voter(
                work,
                log_bytes=plan.catchup_log_bytes,
                snapshot_bytes=plan.catchup_snapshot_bytes,
                log=say,
            ),
        ),
    ]
    out: list[dict[str, Any]] = []
    for name, run in cases:
        try:
            out.append(run())
        except Exception as exc:
            say(f"   catch-up {name} FAILED: {exc}")
            traceback.print_exc()
            out.append({"name": name, "error": f"{type(exc).__name__}: {exc}"})
    return out


def profile(plan: Plan, work: Path, out_dir: Path) -> dict[str, Any]:
    k = max(plan.grid[100])
    spec = LoadSpec(100, k, warmup_s=plan.warmup_s, measure_s=min(plan.measure_s, 5.0))
    path = out_dir / "profile-pykraft-leader.txt"
    rows = run_throughput(work / "profile", [spec], linger_ms=0, profile_last=path, log=say)
    return {"result": rows[0], "path": str(path)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="1-3 minute smoke run")
    parser.add_argument("--publish", action="store_true", help="copy to bench/REPORT.md, plots/")
    parser.add_argument(
        "--only",
        default=",".join(DEFAULT),
        help=f"subset of {','.join(PHASES)} (or 'all'); the default leaves the long scripts out",
    )
    parser.add_argument("--out", type=Path, default=BENCH_DIR / "out")
    parser.add_argument("--workdir", type=Path, default=None, help="scratch (default: tmp)")
    args = parser.parse_args()
    install_reaper()
    plan = QUICK if args.quick else FULL
    only = set(PHASES) if args.only == "all" else set(args.only.split(","))
    if "single" in only:  # the old name of the four single-area benches
        only |= {"sim", "log", "protocol", "controller"}
    unknown = only - set(PHASES) - {"single"}
    if unknown:
        parser.error(f"unknown phases: {', '.join(sorted(unknown))}")
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    work = Path(tempfile.mkdtemp(prefix="pykraft-bench-", dir=args.workdir))
    results: dict[str, Any] = {"quick": args.quick, "started": started}
    try:
        results["machine"] = machine_info(work)
        results["machine"]["fsync_4k_median_ms"] = round(fsync_probe_ms(work), 3)
        say(f"machine: {json.dumps(results['machine'])}")
        if "kafka" in only:
            phase(results, "kafka", lambda: run_kafka_anchor(work, quick=args.quick, log=say))
        if "kraft" in only:
            phase(results, "kraft", lambda: kraft_throughput(plan, work))
        if "syncobj" in only:
            phase(results, "syncobj", lambda: syncobj_throughput(plan, work))
        if "failover" in only:
            phase(results, "failover", lambda: failover(plan, work))
        if "catchup" in only:
            phase(results, "catchup", lambda: catchup(plan, work))
        if "profile" in only:
            phase(results, "profile", lambda: profile(plan, work, args.out))
        if "cluster" in only:
            from wl_cluster import run_cluster

            phase(
                results,
                "cluster",
                lambda: run_cluster(
                    work,
                    quick=args.quick,
                    only={"parity", "failover", "heartbeats", "catchup"},
                    log=say,
                    failover_reps=2 if args.quick else 10,
                    parity_reps=1 if args.quick else 3,
                ),
            )
        if "reassign" in only:
            from pykraft.interop.kafka import KafkaDist
            from wl_reassign import run_mode

            dist = KafkaDist.get("4")
            gib = 0.1 if args.quick else 1.0
            phase(
                results,
                "reassign",
                lambda: [run_mode(mode, dist, work, gib) for mode in ("kip455", "kip435")],
            )
        if "scale" in only:
            from bench_scale import run_scale

            phase(
                results,
                "scale",
                lambda: run_scale(
                    [10_000] if args.quick else [10_000, 100_000, 1_000_000],
                    [100] if args.quick else [100, 1_000, 5_000],
                    ["pykraft", "kafka"],
                    1 if args.quick else 2,
                ),
            )
        for row in SCRIPTS:
            if row.phase in only:
                script_phase(results, row, quick=args.quick, out_dir=args.out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        results["elapsed_s"] = round(time.time() - started, 1)
        (args.out / "results.json").write_text(json.dumps(results, indent=1))
    report_path = report.write(results, args.out)
    say(f"report: {report_path}")
    if args.publish:
        publish(results, args.out)
    return 1 if results.get("errors") else 0


def script_phase(results: dict[str, Any], row: Script, *, quick: bool, out_dir: Path) -> None:
    def run() -> dict[str, Any]:
        result = run_script(row, quick=quick, out_dir=out_dir, log=say)
        say(
            "   " + (result.get("stdout") or result.get("error", "")).strip().replace("\n", "\n   ")
        )
        if "error" in result:
            raise RuntimeError(f"{row.script}: {result['error']}")
        return result

    phase(results, row.phase, run)


def publish(results: dict[str, Any], out: Path) -> None:
    """Each phase's figures become ``bench/results/<phase>.json`` (with the machine and the
    run they come from), and ``bench/REPORT.md`` is generated again from every result file
    there; ``bench/ANALYSIS.md``, the written analysis, is never touched."""
    plots = BENCH_DIR / "plots"
    plots.mkdir(exist_ok=True)
    for png in out.glob("*.png"):
        shutil.copy2(png, plots / png.name)
    profile = out / "profile-pykraft-leader.txt"
    if profile.exists():
        shutil.copy2(profile, plots / profile.name)
    for name in PHASES:
        if name in results and name not in (results.get("errors") or {}):
            save_result(BENCH_DIR / "results", name, results)
    path = report.write_published(BENCH_DIR / "results", BENCH_DIR)
    say(f"published: {path}, bench/results/ and {plots}/")


if __name__ == "__main__":
    sys.exit(main())
