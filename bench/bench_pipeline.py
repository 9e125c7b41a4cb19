"""Throughput of the pipeline's Spark jobs in local mode.

    python bench/bench_pipeline.py ingest --mb 32 --nodes 3 [--master local[2]]
    python bench/bench_pipeline.py sweep --seeds 0..200 --profile chaos --events 2000

``ingest`` writes ``--nodes`` identical metadata logs of about ``--mb`` MB each (segments of
``--segment-mb``, batches of 20 JSON records of ~100 bytes, a leader change every 500
batches), then runs the ingest job and prints MB/s of log read (all nodes' bytes / job time,
Spark start-up excluded). ``sweep`` runs the sweep job and prints seeds/s and runs/s.

At this size the figure is mostly fixed cost (first Python workers, JIT, one write job per
table) and, on a shared machine, CPU contention. To see the decode pass apart from the
Parquet writes, add ``--conf spark.eventLog.enabled=true --conf spark.eventLog.dir=file:DIR``
and read the job durations; ``--conf spark.driver.extraJavaOptions=-XX:TieredStopAtLevel=1``
(C1 JIT only) is cheaper below ~30 MB and dearer above.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from pykraft.pipeline.ingest import LogDir, run_ingest
from pykraft.pipeline.session import build_session, parse_conf
from pykraft.pipeline.sweep import SweepSpec, parse_pre_vote, parse_profiles, run_sweep
from pykraft.raft.types import ReplicaKey
from pykraft.records import build_batch, leader_change_batch
from pykraft.sim.sweep import parse_seeds

RECORDS_PER_BATCH = 20
BATCHES_PER_EPOCH = 500


def write_log(part: Path, total_bytes: int, segment_bytes: int) -> int:
    """Segments of ~``segment_bytes`` totalling ~``total_bytes``; returns bytes written."""
    part.mkdir(parents=True)
    keys = [ReplicaKey(i) for i in (1, 2, 3)]
    offset = written = 0
    epoch = 0
    segment: list[bytes] = []
    segment_base = 0
    segment_size = 0
    batches = 0
    while written < total_bytes:
        if batches % BATCHES_PER_EPOCH == 0:
            epoch += 1
            batch = leader_change_batch(offset, epoch, offset, 1 + epoch % 3, keys, keys[:2])
        else:
            values = [
                json.dumps({"type": "topic", "name": f"t{offset + i}", "pad": "x" * 60}).encode()
                for i in range(RECORDS_PER_BATCH)
            ]
            batch = build_batch(offset, epoch, values, 1_700_000_000_000 + offset)
        batches += 1
        segment.append(batch)
        segment_size += len(batch)
        written += len(batch)
        offset += 1 if batches % BATCHES_PER_EPOCH == 1 else RECORDS_PER_BATCH
        if segment_size >= segment_bytes:
            (part / f"{segment_base:020d}.log").write_bytes(b"".join(segment))
            segment, segment_size, segment_base = [], 0, offset
    if segment:
        (part / f"{segment_base:020d}.log").write_bytes(b"".join(segment))
    return written


def bench_ingest(args: argparse.Namespace) -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-ingest-"))
    total = 0
    for node in range(1, args.nodes + 1):
        part = root / f"node-{node}" / "__cluster_metadata-0"
        total += write_log(part, int(args.mb * 1e6), int(args.segment_mb * 1e6))
    spark = build_session(args.master, parse_conf(args.conf))
    dirs = [LogDir(str(root / f"node-{n}"), n) for n in range(1, args.nodes + 1)]
    started = time.monotonic()
    s = run_ingest(spark, dirs, str(root / "tables"))
    seconds = time.monotonic() - started
    print(
        f"ingest: {args.nodes} nodes, {s.files} files, {total / 1e6:.1f} MB, {s.batches} batches,"
        f" {s.records} records in {seconds:.1f} s = {total / 1e6 / seconds:.2f} MB/s"
        f" ({s.records / seconds:,.0f} records/s), master {args.master}"
    )


def bench_sweep(args: argparse.Namespace) -> None:
    spec = SweepSpec(
        seeds=parse_seeds(args.seeds),
        profiles=parse_profiles(args.profile) or ("chaos",),
        pre_vote=parse_pre_vote(args.pre_vote),
        events=args.events,
    )
    spark = build_session(args.master, parse_conf(args.conf))
    out = tempfile.mkdtemp(prefix="bench-sweep-")
    s = run_sweep(spark, spec, out, partitions=args.partitions)
    print(
        f"sweep: {len(spec.seeds)} seeds, {s.runs} runs ({spec.events} fault-phase events each,"
        f" profiles {','.join(spec.profiles)}) in {s.seconds:.1f} s ="
        f" {len(spec.seeds) / s.seconds:.2f} seeds/s, {s.runs_per_s:.2f} runs/s,"
        f" {s.violations} violations, master {args.master}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--conf", action="append", default=[])
    sub = parser.add_subparsers(dest="what", required=True)
    ingest = sub.add_parser("ingest")
    ingest.add_argument("--mb", type=float, default=32.0, help="MB of log per node")
    ingest.add_argument("--nodes", type=int, default=3)
    ingest.add_argument("--segment-mb", type=float, default=8.0)
    ingest.set_defaults(func=bench_ingest)
    sweep = sub.add_parser("sweep")
    sweep.add_argument("--seeds", default="0..200")
    sweep.add_argument("--profile", action="append", default=[])
    sweep.add_argument("--pre-vote", default="on")
    sweep.add_argument("--events", type=int, default=2000)
    sweep.add_argument("--partitions", type=int)
    sweep.set_defaults(func=bench_sweep)
    args = parser.parse_args()
    args.func(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
