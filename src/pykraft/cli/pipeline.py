"""`pykraft pipeline <job>`: the PySpark jobs of ``pykraft.pipeline``.

Every job takes ``--master`` (default ``local[*]``) and repeated ``--conf key=value``, passed
to Spark unchanged, so the same command runs on a cluster. Inputs and outputs are paths or
Hadoop file system URIs. Answers go to stdout; Spark's logs (WARN and above) and progress
lines go to stderr.

    pykraft pipeline ingest --log-dir 1=/data/n1 --log-dir 2=/data/n2 --out /tables
    pykraft pipeline audit --in /tables [--hwm 1=120 --hwm 2=118] [--node 1 --node 2] [--out /audit]
    pykraft pipeline sweep --seeds 0..1000 --profile none,crashes --pre-vote both --out /sweep
    pykraft pipeline report --sweep /sweep --ingest /tables --out report/
    pykraft pipeline report --metadata /tables --out history/ [--node 1]
    pykraft pipeline state --metadata /tables --at 120000|1700000000000 --out state/
    pykraft pipeline diff --metadata /tables --from 1200 --to 5000 --out diff/
    pykraft pipeline plan --cluster cluster.json --out plan/ [--replica-count 1]
    pykraft pipeline plan --synthetic 1000000:200 --out plan/
    pykraft pipeline migration-dry-run --export zk-export.jsonl --out dry-run/
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from pykraft.pipeline.committed import parse_node_offsets

_DIVERGENCES_SHOWN = 50


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "pipeline", help="Spark jobs: ingest logs, audit replicas, simulation sweeps, report"
    )
    jobs = parser.add_subparsers(dest="job", metavar="JOB")

    def usage(args: argparse.Namespace) -> int:
        parser.print_help()
        return 2

    parser.set_defaults(func=usage)

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    common.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE", help="Spark setting"
    )
    common.add_argument(
        "--progress-interval", type=float, default=5.0, metavar="S", help="progress every S s"
    )
    for add_job in (
        _ingest_job,
        _audit_job,
        _sweep_job,
        _report_job,
        _state_job,
        _diff_job,
        _plan_job,
        _dry_run_job,
    ):
        add_job(jobs, common)


def _ingest_job(jobs: Any, common: argparse.ArgumentParser) -> None:
    ingest = jobs.add_parser("ingest", parents=[common], help="metadata log dirs -> Parquet tables")
    ingest.add_argument(
        "--log-dir",
        action="append",
        required=True,
        metavar="[NODE=]DIR",
        help="a node's metadata.log.dir (node id from meta.properties unless given); repeat",
    )
    ingest.add_argument("--out", required=True, help="output directory or URI")
    ingest.add_argument(
        "--hwm", action="append", default=[], metavar="NODE=OFFSET", help="known HWM of a node"
    )
    ingest.set_defaults(func=_ingest)


def _audit_job(jobs: Any, common: argparse.ArgumentParser) -> None:
    audit = jobs.add_parser(
        "audit", parents=[common], help="check that replicas agree on the committed prefix"
    )
    audit.add_argument("--in", dest="ingested", required=True, help="ingest's output")
    audit.add_argument(
        "--hwm",
        action="append",
        default=[],
        metavar="NODE=OFFSET",
        help="a node's HWM; nodes without one use the majority estimate (see docs)",
    )
    audit.add_argument(
        "--node",
        action="append",
        type=int,
        metavar="NODE",
        help="audit only this node's log (repeat; default every node ingested)",
    )
    audit.add_argument("--out", help="write the divergences table here")
    audit.set_defaults(func=_audit)


def _sweep_job(jobs: Any, common: argparse.ArgumentParser) -> None:
    sweep = jobs.add_parser("sweep", parents=[common], help="simulator seeds as Spark tasks")
    sweep.add_argument("--seeds", required=True, help="A..B (B excluded) or N")
    sweep.add_argument(
        "--profile", action="append", default=[], help="fault profile(s), comma-separated"
    )
    sweep.add_argument("--pre-vote", default="on", choices=("on", "off", "both"))
    sweep.add_argument("--events", type=int, default=5_000, help="fault-phase events per run")
    sweep.add_argument("--voters", type=int, default=3)
    sweep.add_argument("--observers", type=int, default=0)
    sweep.add_argument("--partitions", type=int, help="seed slices (default 4 x cores)")
    sweep.add_argument("--out", required=True, help="output directory or URI")
    sweep.set_defaults(func=_sweep)


def _report_job(jobs: Any, common: argparse.ArgumentParser) -> None:
    report = jobs.add_parser(
        "report", parents=[common], help="markdown + PNG plots; or a cluster history (--metadata)"
    )
    report.add_argument("--sweep", help="sweep's output")
    report.add_argument("--ingest", help="ingest's output")
    report.add_argument(
        "--metadata", help="ingest's output: the cluster history report (HTML, PNG, Parquet)"
    )
    report.add_argument("--node", type=int, help="whose log tells the history (default longest)")
    report.add_argument("--cluster", help="which cluster (when the tables hold several)")
    report.add_argument("--out", required=True, help="local directory for the report")
    report.set_defaults(func=_report)


def _state_job(jobs: Any, common: argparse.ArgumentParser) -> None:
    state = jobs.add_parser(
        "state", parents=[common], help="topics, partitions, brokers, configs as of a moment"
    )
    state.add_argument("--metadata", required=True, help="ingest's output")
    state.add_argument(
        "--at", default=None, help="an offset, a time in ms since the epoch, or end (default)"
    )
    state.add_argument("--node", type=int, help="one node's view (default every node's)")
    state.add_argument("--cluster", help="which cluster (when the tables hold several)")
    state.add_argument("--out", required=True, help="output directory or URI (Parquet)")
    state.set_defaults(func=_state)


def _diff_job(jobs: Any, common: argparse.ArgumentParser) -> None:
    diff = jobs.add_parser("diff", parents=[common], help="what changed between two moments")
    diff.add_argument("--metadata", required=True, help="ingest's output")
    diff.add_argument("--from", dest="start", required=True, help="an offset or a time (ms)")
    diff.add_argument("--to", dest="end", default=None, help="an offset, a time, or end")
    diff.add_argument("--node", type=int, help="one node's view (default every node's)")
    diff.add_argument("--cluster", help="which cluster (when the tables hold several)")
    diff.add_argument("--out", required=True, help="output directory or URI (Parquet)")
    diff.set_defaults(func=_diff)


def _plan_job(jobs: Any, common: argparse.ArgumentParser) -> None:
    plan = jobs.add_parser(
        "plan", parents=[common], help="a balanced reassignment and its KIP-435 steps"
    )
    source = plan.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--cluster", help="cluster JSON (brokers, partitions) or a directory of two Parquet tables"
    )
    source.add_argument(
        "--synthetic", metavar="PARTITIONS:BROKERS", help="a generated cluster that grew"
    )
    plan.add_argument("--out", required=True, help="local output directory")
    plan.add_argument(
        "--replica-count",
        type=int,
        default=None,
        metavar="R",
        help="reassignment.parallel.replica.count for the step plan (default unbounded)",
    )
    plan.set_defaults(func=_plan)


def _dry_run_job(jobs: Any, common: argparse.ArgumentParser) -> None:
    dry = jobs.add_parser(
        "migration-dry-run",
        parents=[common],
        help="the records a ZooKeeper migration (KIP-866) would write, and what it refuses",
    )
    dry.add_argument(
        "--export", required=True, help="znodes from `pykraft migration export` (JSON lines)"
    )
    dry.add_argument("--out", required=True, help="local output directory")
    dry.set_defaults(func=_migration_dry_run)


def _session(args: argparse.Namespace, app: str) -> Any:
    from pykraft.pipeline.session import build_session, parse_conf

    return build_session(args.master, parse_conf(args.conf), app_name=f"pykraft-{app}")


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def _ingest(args: argparse.Namespace) -> int:
    from pykraft.pipeline.ingest import LogDir, check_local_dirs, run_ingest

    try:
        hwm = parse_node_offsets(args.hwm)
        dirs = [LogDir.parse(spec) for spec in args.log_dir]
        check_local_dirs(dirs)  # NotAMetadataLog is a ValueError: answered before Spark starts
    except ValueError as exc:
        return _fail(str(exc))
    spark = _session(args, "ingest")
    from pykraft.pipeline.ingest import NotAMetadataLog

    try:
        s = run_ingest(spark, dirs, args.out, hwm, progress_interval_s=args.progress_interval)
    except NotAMetadataLog as exc:
        return _fail(str(exc))
    print(
        f"ingested {s.nodes} nodes of {len(s.clusters)} cluster(s) ({', '.join(s.clusters)}), "
        f"{s.files} files, {s.bytes} bytes, {s.batches} batches, "
        f"{s.records} records in {s.seconds:.1f} s ({s.mb_per_s:.2f} MB/s) -> {args.out}"
    )
    for error in s.file_errors:
        print(f"warning: {error}", file=sys.stderr)
    for p in s.prefixes:
        print(
            f"node {p.node}: log {p.log_start_offset}..{p.log_end_offset}, "
            f"committed below {p.committed_offset} ({p.source})"
        )
    if s.file_errors:
        return _fail(f"{len(s.file_errors)} file(s) not read to their end (see the warnings)")
    return 0


def _audit(args: argparse.Namespace) -> int:
    from pykraft.pipeline.audit import run_audit

    try:
        hwm = parse_node_offsets(args.hwm)
    except ValueError as exc:
        return _fail(str(exc))
    spark = _session(args, "audit")
    result = run_audit(
        spark,
        args.ingested,
        hwm,
        args.out,
        nodes=args.node,
        progress_interval_s=args.progress_interval,
    )
    for p in result.prefixes:
        print(
            f"node {p.node}: checked offsets {p.log_start_offset}..{p.committed_offset} "
            f"(committed prefix: {p.source}; log end {p.log_end_offset})"
        )
    print(f"{result.batches_checked} committed batches checked")
    if result.ok:
        print("OK: all replicas agree on the committed prefix")
        return 0
    print(f"DIVERGED: {result.divergence_count} divergences")
    for row in result.divergences.limit(_DIVERGENCES_SHOWN).collect():
        print(
            f"  {row.kind:<16} node {row.node} offsets {row.base_offset}-{row.last_offset}: "
            f"{row.detail}"
        )
    if result.divergence_count > _DIVERGENCES_SHOWN:
        print(f"  ... {result.divergence_count - _DIVERGENCES_SHOWN} more (see --out)")
    return 1


def _sweep(args: argparse.Namespace) -> int:
    from pykraft.pipeline.sweep import SweepSpec, parse_pre_vote, parse_profiles, run_sweep
    from pykraft.sim.sweep import parse_seeds

    try:
        spec = SweepSpec(
            seeds=parse_seeds(args.seeds),
            profiles=parse_profiles(args.profile) or ("none",),
            pre_vote=parse_pre_vote(args.pre_vote),
            events=args.events,
            voters=args.voters,
            observers=args.observers,
        )
        from pykraft.sim import get_profile

        for name in spec.profiles:
            get_profile(name)
    except (ValueError, KeyError) as exc:
        return _fail(str(exc))
    spark = _session(args, "sweep")
    s = run_sweep(
        spark,
        spec,
        args.out,
        partitions=args.partitions,
        progress_interval_s=args.progress_interval,
    )
    print(
        f"{s.runs} runs ({len(spec.seeds)} seeds) in {s.seconds:.1f} s "
        f"({s.runs_per_s:.1f} runs/s), {s.violations} violations -> {args.out}"
    )
    print(
        f"{'profile':<11} {'pre-vote':>8} {'runs':>6} {'viol':>5} {'elect/h':>9} "
        f"{'epochs/h':>9} {'leaderless p50':>14} {'p99 ms':>8} {'elect p50':>9} {'p99 ms':>8}"
    )
    for p in s.profiles:
        print(
            f"{p['profile']:<11} {'on' if p['pre_vote'] else 'off':>8} {p['runs']:>6} "
            f"{p['violations']:>5} {p['elections_per_hour']:>9.1f} {p['epochs_per_hour']:>9.1f} "
            f"{_ms(p['leaderless_ms_p50']):>14} {_ms(p['leaderless_ms_p99']):>8} "
            f"{_ms(p['time_to_elect_ms_p50']):>9} {_ms(p['time_to_elect_ms_p99']):>8}"
        )
        for v in p["violation_seeds"] or []:  # type: ignore[attr-defined]
            print(f"    violation {v['violation_invariant']} with seed {v['seed']}")
    return 1 if s.violations else 0


def _ms(value: object) -> str:
    return "-" if value is None else str(value)


def _report(args: argparse.Namespace) -> int:
    from pykraft.pipeline.report import run_report

    if args.metadata:
        return _history(args)
    if not args.sweep and not args.ingest:
        return _fail("give --metadata, or --sweep and/or --ingest")
    spark = _session(args, "report")
    path = run_report(spark, sweep=args.sweep, ingest=args.ingest, out=args.out)
    print(f"report written to {path}")
    return 0


def _history(args: argparse.Namespace) -> int:
    from pykraft.pipeline.history import NotIngestOutput, check_local_output, run_history_report

    try:
        check_local_output(args.metadata)
    except NotIngestOutput as exc:
        return _fail(str(exc))
    spark = _session(args, "history")
    try:
        report = run_history_report(
            spark, args.metadata, args.out, node=args.node, cluster=args.cluster
        )
    except NotIngestOutput as exc:
        return _fail(str(exc))
    for name, count in report.counts.items():
        print(f"{name}: {count} rows")
    print(f"history of node {report.node}'s log in {report.seconds:.1f} s -> {report.html}")
    return 0


def _tables(args: argparse.Namespace, app: str) -> dict[str, Any] | str:
    """Ingest's tables (of ``--node`` only, when given), or why not."""
    from pyspark.sql import functions as F

    from pykraft.pipeline.history import NotIngestOutput, check_local_output, load_tables

    try:
        check_local_output(args.metadata)
    except NotIngestOutput as exc:
        return str(exc)
    spark = _session(args, app)
    try:
        tables = load_tables(spark, args.metadata, args.cluster)
    except NotIngestOutput as exc:
        return str(exc)
    if args.node is not None:
        tables = {k: v.where(F.col("node") == args.node) for k, v in tables.items()}
    return tables


def _write(frames: dict[str, Any], out: str) -> None:
    from pykraft.pipeline.session import join_path

    for name, frame in frames.items():
        frame.write.mode("overwrite").parquet(join_path(out, name))
        print(f"{name}: {frame.count()} rows -> {join_path(out, name)}")


def _state(args: argparse.Namespace) -> int:
    from pykraft.pipeline.metadata_state import Moment, state_as_of

    try:
        moment = Moment.parse(args.at)
    except ValueError as exc:
        return _fail(str(exc))
    tables = _tables(args, "state")
    if isinstance(tables, str):
        return _fail(tables)
    print(f"the cluster's metadata as of {moment.describe()}")
    _write(state_as_of(tables, moment), args.out)
    return 0


def _diff(args: argparse.Namespace) -> int:
    from pykraft.pipeline.metadata_state import Moment, diff

    try:
        before, after = Moment.parse(args.start), Moment.parse(args.end)
    except ValueError as exc:
        return _fail(str(exc))
    tables = _tables(args, "diff")
    if isinstance(tables, str):
        return _fail(tables)
    print(f"what changed from {before.describe()} to {after.describe()}")
    _write(diff(tables, before, after), args.out)
    return 0


def _migration_dry_run(args: argparse.Namespace) -> int:
    import os

    from pykraft.migration.zk_data import ZkDataError
    from pykraft.pipeline.migration_dry_run import run_dry_run

    if "://" not in args.export and not os.path.exists(args.export):
        return _fail(f"cannot read {args.export}: no such file")
    spark = _session(args, "migration-dry-run")
    try:
        report = run_dry_run(spark, args.export, args.out)
    except ZkDataError as exc:
        return _fail(f"{args.export}: {exc}")
    for line in report.lines():
        print(line)
    print(f"records written to {args.out}/records, report to {args.out}/report.json")
    return 0


def _plan(args: argparse.Namespace) -> int:
    from pykraft.controller.steps import INT_MAX
    from pykraft.pipeline.plan import load_cluster, run_plan, synthetic

    spark = _session(args, "plan")
    if args.synthetic:
        try:
            count, brokers_count = (int(x) for x in args.synthetic.split(":"))
        except ValueError:
            return _fail(f"--synthetic {args.synthetic!r}: expected PARTITIONS:BROKERS")
        brokers, partitions = synthetic(spark, count, brokers_count)
    else:
        try:
            brokers, partitions = load_cluster(spark, args.cluster)
        except (OSError, ValueError, KeyError) as exc:
            return _fail(f"cannot read {args.cluster}: {exc}")
    s = run_plan(spark, brokers, partitions, args.out, max_replicas=args.replica_count or INT_MAX)
    print(
        f"{s.partitions} partitions on {s.brokers} brokers: {s.moved_partitions} partitions move "
        f"({s.moved_replicas} replicas, {s.moved_bytes / 2**30:.1f} GiB) in up to {s.steps} "
        f"steps; busiest broker {s.max_over_mean_before}x the mean before, "
        f"{s.max_over_mean_after}x after; {s.seconds} s -> {args.out}/reassignment.json"
    )
    return 0
