"""The performance anchor: Apache Kafka's own raft benchmark server beside pykraft, same
machine, same run, interleaved (issue 11, SPEC J4).

    .venv/bin/python bench/wl_kafka.py [--quick]          # JSON lines out

Kafka's side is ``kafka.tools.TestRaftServer`` (in the ``kafka_2.13`` jar, fetched through
``scripts/kafka.sh``): three of them on 127.0.0.1 with static voters, the leader's workload
thread appending one record of ``--record-size`` bytes per call at ``--throughput`` records/s
(open loop: it does not wait for commits), measuring each record from the append call to
the leader's commit callback. It prints, every 5 s, the committed bytes/s and the latency
p75/p99/p999 of Kafka's metrics (a 2 x 30 s window; percentiles in 1,000 buckets up to
250 ms, so "249" means 249 ms *or more*). A point runs ``KAFKA_POINT_S`` and the last line is
taken, whose window leaves the first 30 s (JVM warm-up) out.

pykraft's side is the same offered load on three ``kraft_node.py`` voters: one paced caller
of ``RaftNode.schedule_append`` (Kafka's ``scheduleAppend``, what Kafka's workload thread
calls; open loop, no future per call) issuing one record per call at the same rate, latency
from the call to the commit callback, p75/p99 nearest-rank over the measured window. (Until
2026-11-28 pykraft's side was paced coroutines awaiting ``RaftNode.append``, a future per
call: it peaked at about 50,000 rec/s, ANALYSIS.md section 0.)

Both fsync before a record counts toward the high watermark: pykraft by design (B13), Kafka
because its raft client flushes the leader's log before counting its own offset and a
follower's log after each append (seen with ``strace -f -e fsync`` on TestRaftServer: ~15
fsyncs/s per follower under load). Both use ``controller.quorum.append.linger.ms`` = 25 (Kafka's
default) and Kafka's default election and fetch timeouts.

Failover is measured the same way on both (``_probe.py``): a light steady load (200
records/s), SIGKILL the leader, time to the first observer Fetch answer from a new leader
whose high watermark moved past the one seen before the kill.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from _common import Cluster, free_ports, install_reaper
from _load import LoadSpec
from _probe import METADATA_TOPIC_ID, TEST_RAFT_TOPIC_ID, time_to_new_commit, wait_leader
from pykraft.interop.kafka import KafkaDist, KafkaProcess, write_properties
from pykraft.storage import uuid_to_kafka
from wl_kraft import KAFKA_DEFAULTS, KraftCluster, run_throughput

KAFKA_POINT_S = 66.0  # > 60 s: the last print's 2 x 30 s window has left the warm-up
PYKRAFT_WARMUP_S = 10.0
PYKRAFT_MEASURE_S = 20.0
STEADY_RATE = 200  # records/s during failover runs
# kafka-server-start.sh's JVM (KAFKA_HEAP_OPTS and KAFKA_JVM_PERFORMANCE_OPTS defaults).
KAFKA_JVM = (
    "-Xmx1G",
    "-Xms1G",
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
)
_SUMMARY = re.compile(
    r"Throughput \(bytes/second\): ([\d.]+), Latency \(ms\): ([\d.]+) p75 ([\d.]+) p99 ([\d.]+) p999"
)

FULL_POINTS = {
    100: (10_000, 25_000, 50_000, 100_000, 150_000),
    1024: (5_000, 10_000, 25_000, 50_000),
}
QUICK_POINTS = {100: (10_000,)}


class TestRaftCluster:
    """Three ``TestRaftServer`` processes (static voters 1..3) in their own directories."""

    def __init__(self, kafka: KafkaDist, workdir: Path, *, timeouts: dict[str, int]) -> None:
        self.kafka = kafka
        self.workdir = workdir
        self.ports = free_ports(3)
        self.timeouts = timeouts
        self.procs: dict[int, KafkaProcess] = {}
        self.addresses = [("127.0.0.1", p) for p in self.ports]
        voters = ",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(self.ports))
        self.configs = {}
        for i, port in enumerate(self.ports, start=1):
            self.configs[i] = write_properties(
                workdir / f"testraft-{i}.properties",
                {
                    "node.id": i,
                    "controller.listener.names": "CONTROLLER",
                    "listeners": f"CONTROLLER://127.0.0.1:{port}",
                    "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
                    "controller.quorum.voters": voters,
                    "metadata.log.dir": workdir / f"testraft-{i}",
                    "controller.quorum.election.timeout.ms": timeouts["election_timeout_ms"],
                    "controller.quorum.fetch.timeout.ms": timeouts["fetch_timeout_ms"],
                },
            )

    def start(self, node_id: int, *, rate: int, size: int) -> None:
        self.procs[node_id] = self.kafka.start(
            "test-raft-server",
            "--config",
            str(self.configs[node_id]),
            "--throughput",
            str(rate),
            "--record-size",
            str(size),
            "--replica-directory-id",
            uuid_to_kafka(uuid.uuid5(uuid.NAMESPACE_OID, f"testraft-{node_id}")),
            log=self.workdir / f"testraft-{node_id}.log",
            jvm=KAFKA_JVM,
        )

    def start_all(self, *, rate: int, size: int) -> None:
        for node_id in self.configs:
            self.start(node_id, rate=rate, size=size)

    def close(self) -> None:
        for proc in self.procs.values():
            proc.kill()

    def summaries(self) -> list[tuple[float, float, float, float]]:
        """Every summary line any node printed (only the leader prints)."""
        out = []
        for proc in self.procs.values():
            out += [tuple(map(float, m)) for m in _SUMMARY.findall(proc.text())]
        return out  # type: ignore[return-value]


def kafka_point(
    kafka: KafkaDist, workdir: Path, size: int, rate: int, seconds: float
) -> dict[str, Any]:
    base = workdir / f"testraft-{size}-{rate}"
    base.mkdir(parents=True)
    cluster = TestRaftCluster(kafka, base, timeouts=KAFKA_DEFAULTS)
    try:
        cluster.start_all(rate=rate, size=size)
        time.sleep(seconds)
        lines = cluster.summaries()
    finally:
        cluster.close()
        shutil.rmtree(base, ignore_errors=True)
    if not lines:
        return {
            "system": "kafka",
            "record_bytes": size,
            "offered_rps": rate,
            "error": "no summary line",
        }
    bytes_s, p75, p99, p999 = lines[-1]
    return {
        "system": "kafka",
        "record_bytes": size,
        "offered_rps": rate,
        "records_per_s": bytes_s / size,
        "p75_ms": p75,
        "p99_ms": p99,
        "p999_ms": p999,
        "p99_censored": p99 >= 249.0,
        "window": "last 30-60 s of the run",
    }


def pykraft_point(
    workdir: Path, size: int, rate: int, warmup_s: float, measure_s: float
) -> dict[str, Any]:
    appenders = 1
    spec = LoadSpec(
        size, appenders, rate_rps=rate, warmup_s=warmup_s, measure_s=measure_s, schedule=True
    )
    [row] = run_throughput(
        workdir / f"pykraft-{size}-{rate}", [spec], linger_ms=25, log=lambda _: None
    )
    return {
        "system": "pykraft",
        "record_bytes": size,
        "offered_rps": rate,
        "records_per_s": row["records_per_s"],
        "appenders": appenders,
        "api": "schedule_append",
        "p50_ms": row["p50_ms"],
        "p75_ms": row["p75_ms"],
        "p99_ms": row["p99_ms"],
        "p999_ms": row["p999_ms"],
        "errors": row["errors"],
    }


def kafka_failover(kafka: KafkaDist, workdir: Path, reps: int, log: Any) -> dict[str, Any]:
    base = workdir / "testraft-failover"
    base.mkdir(parents=True)
    cluster = TestRaftCluster(kafka, base, timeouts=KAFKA_DEFAULTS)
    samples: list[float] = []
    failures = 0
    try:
        cluster.start_all(rate=STEADY_RATE, size=100)
        for rep in range(reps):
            seen = wait_leader(cluster.addresses, TEST_RAFT_TOPIC_ID)
            time.sleep(1.0)
            seen = wait_leader(cluster.addresses, TEST_RAFT_TOPIC_ID)
            t_kill = time.time()
            cluster.procs[seen.leader_id].kill()
            survivors = [a for i, a in enumerate(cluster.addresses, start=1) if i != seen.leader_id]
            try:
                samples.append(
                    time_to_new_commit(survivors, TEST_RAFT_TOPIC_ID, seen, t_kill) * 1000
                )
                log(f"  kafka failover #{rep + 1}: {samples[-1]:7.0f} ms")
            except TimeoutError:
                failures += 1
            cluster.start(seen.leader_id, rate=STEADY_RATE, size=100)
    finally:
        cluster.close()
        shutil.rmtree(base, ignore_errors=True)
    return _failover_row("kafka", samples, failures)


def pykraft_failover(workdir: Path, reps: int, log: Any) -> dict[str, Any]:
    samples: list[float] = []
    failures = 0
    with Cluster(workdir / "pykraft-failover") as cluster:
        kc = KraftCluster(cluster, timeouts=KAFKA_DEFAULTS, steady_ms=1000 // STEADY_RATE)
        kc.start_all()
        addresses = [("127.0.0.1", p) for p in kc.ports]
        for rep in range(reps):
            wait_leader(addresses, METADATA_TOPIC_ID)
            time.sleep(1.0)
            seen = wait_leader(addresses, METADATA_TOPIC_ID)
            t_kill = time.time()
            kc.nodes[seen.leader_id].kill()
            kc.nodes[seen.leader_id].proc.wait(timeout=10)
            survivors = [a for i, a in enumerate(addresses, start=1) if i != seen.leader_id]
            try:
                samples.append(
                    time_to_new_commit(survivors, METADATA_TOPIC_ID, seen, t_kill) * 1000
                )
                log(f"  pykraft failover #{rep + 1}: {samples[-1]:7.0f} ms")
            except TimeoutError:
                failures += 1
            kc.start(seen.leader_id)
    return _failover_row("pykraft", samples, failures)


def _failover_row(system: str, samples: list[float], failures: int) -> dict[str, Any]:
    ordered = sorted(samples)
    return {
        "system": system,
        "samples_ms": samples,
        "p50_ms": ordered[(len(ordered) - 1) // 2] if ordered else None,
        "max_ms": ordered[-1] if ordered else None,
        "failures": failures,
    }


def run_kafka_anchor(
    workdir: Path,
    *,
    quick: bool,
    log: Any = print,
    sizes: tuple[int, ...] | None = None,
    failover_reps: int | None = None,
) -> dict[str, Any]:
    """Every point of both systems, interleaved (Kafka first on even points, pykraft first on
    odd ones), then both failovers (``sizes``: only those record sizes' points)."""
    kafka = KafkaDist.get("4")
    points = QUICK_POINTS if quick else FULL_POINTS
    if sizes is not None:
        points = {size: rates for size, rates in points.items() if size in sizes}
    kafka_s = 20.0 if quick else KAFKA_POINT_S
    warm, measure = (2.0, 5.0) if quick else (PYKRAFT_WARMUP_S, PYKRAFT_MEASURE_S)
    rows: list[dict[str, Any]] = []
    n = 0
    for size, rates in points.items():
        for rate in rates:
            runs = [
                lambda s=size, r=rate: kafka_point(kafka, workdir, s, r, kafka_s),
                lambda s=size, r=rate: pykraft_point(workdir, s, r, warm, measure),
            ]
            for run in runs if n % 2 == 0 else runs[::-1]:
                row = run()
                rows.append(row)
                log(
                    f"  {row['system']:8s} {size:5d} B offered {rate:7,d}/s: "
                    f"{row.get('records_per_s', 0):10,.0f} rec/s p75 {row.get('p75_ms') or 0:6.1f} "
                    f"p99 {row.get('p99_ms') or 0:6.1f} ms {row.get('error', '')}"
                )
            n += 1
    reps = failover_reps if failover_reps is not None else 2 if quick else 10
    failovers = [kafka_failover(kafka, workdir, reps, log), pykraft_failover(workdir, reps, log)]
    return {"kafka_version": kafka.version, "points": rows, "failover": failovers}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sizes", type=int, nargs="+", help="record sizes (default: all)")
    parser.add_argument("--failover-reps", type=int, help="default: 10 (2 with --quick)")
    args = parser.parse_args()
    install_reaper()
    work = Path(tempfile.mkdtemp(prefix="pykraft-kafka-anchor-"))
    try:
        result = run_kafka_anchor(
            work,
            quick=args.quick,
            sizes=tuple(args.sizes) if args.sizes else None,
            failover_reps=args.failover_reps,
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
