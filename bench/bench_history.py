"""The cluster history pipeline at scale (issue 31): a synthetic year of a 100,000-partition,
300-broker cluster, ingested and reported on ``local[2]`` and on a Spark standalone master with
one worker, same machine, same run.

    .venv/bin/python bench/bench_history.py [--partitions 100000] [--brokers 300]
        [--restarts 200] [--reassignments 500] [--config-changes 300] [--keep DIR]
        [--masters local,standalone] [--report-out DIR]

1. The log is written by the real metadata controller (``QuorumController``, driven as the
   controller tests drive it, each operation's records one batch): the brokers register
   (racks r0..r9) and are unfenced, topics of 100 partitions (RF 3) are created, then a year
   of operations at random times: broker restarts (a controlled shutdown: ISR shrinks and
   leaders move; then a new incarnation registers and is unfenced; ISR expands follow),
   KIP-455 reassignments (completed by the leader's AlterPartition), topic config changes.
   The records go to Kafka's segment files (64 MiB) with ``meta.properties``.
2. For each master: ``pykraft pipeline ingest`` then ``report --metadata`` (as subprocesses,
   as a user runs them), timed; rows/s = metadata records / ingest wall time. The standalone
   cluster is ``spark-class`` Master + Worker (2 cores, 4 GiB) from the pyspark package.
   The drivers' peak RSS is reported (nothing is collected to the driver but aggregates).
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from pykraft.controller.config import ControllerConfig
from pykraft.controller.quorum_controller import Context, QuorumController
from pykraft.metadata.serde import encode_record
from pykraft.metadata.versions import broker_registration_features
from pykraft.protocol import ApiKey
from pykraft.protocol.apis import request_schema
from pykraft.protocol.build import make
from pykraft.records import build_batch

CLUSTER_ID = "HistoryBenchCluster000"[:22]
YEAR_MS = 365 * 24 * 3600 * 1000
T0_MS = 1_735_689_600_000  # 2025-01-01
SEGMENT_BYTES = 64 * 1024 * 1024
PARTITIONS_PER_TOPIC = 100


class Writer:
    """The controller's records as Kafka segments, one batch per operation."""

    def __init__(self, part: Path) -> None:
        self.part = part
        self.offset = 0
        self.records = 0
        self._file: Any = None
        self._size = 0

    def batch(self, values: list[bytes], timestamp_ms: int) -> None:
        if self._file is None or self._size >= SEGMENT_BYTES:
            if self._file is not None:
                self._file.close()
            self._file = (self.part / f"{self.offset:020d}.log").open("wb")
            self._size = 0
        data = build_batch(self.offset, 1, values, timestamp_ms)
        self._file.write(data)
        self._size += len(data)
        self.offset += len(values)
        self.records += len(values)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


class Year:
    """The real controller driven through a year of a busy cluster."""

    def __init__(self, writer: Writer, seed: int) -> None:
        self.writer = writer
        self.rng = random.Random(seed)
        self.now = T0_MS
        self.controller = QuorumController(
            ControllerConfig(broker_session_timeout_ms=10 * YEAR_MS),
            node_id=1,
            cluster_id=CLUSTER_ID,
            rng=random.Random(seed),
        )
        self._write(self.controller.activate(self.now, None))
        self.incarnations: dict[int, int] = {}

    def _write(self, records: list[tuple[Any, int]]) -> None:
        if not records:
            return
        base = self.writer.offset
        values = [encode_record(rec, v) for rec, v in records]
        for i, (rec, v) in enumerate(records):
            self.controller.replay(rec, v, base + i)
        self.controller.wrote(self.now)
        self.writer.batch(values, self.now)

    def call(self, api_key: int, version: int, **fields: Any) -> Any:
        request = make(request_schema(api_key, version), fields)
        ctx = Context(now_ms=self.now, next_offset=self.writer.offset)
        result = self.controller.handle(api_key, version, request, ctx)
        self._write(result.records)
        if result.on_written is not None and result.records:
            result.on_written(self.writer.offset - 1)
        return result.response

    def register(self, broker: int) -> None:
        incarnation = self.incarnations.get(broker, 0) + 1
        self.incarnations[broker] = incarnation
        response = self.call(
            ApiKey.BROKER_REGISTRATION,
            4,
            broker_id=broker,
            cluster_id=CLUSTER_ID,
            incarnation_id=uuid.UUID(int=(broker << 64) + incarnation),
            listeners=[
                {
                    "name": "PLAINTEXT",
                    "host": "10.0.0.1",
                    "port": 9000 + broker,
                    "security_protocol": 0,
                }
            ],
            features=broker_registration_features(33),
            rack=f"r{broker % 10}",
            log_dirs=[uuid.UUID(int=(broker << 64) + 500)],
        )
        assert response["error_code"] == 0, response
        self.heartbeat(broker)

    def heartbeat(self, broker: int, **kw: Any) -> Any:
        state = self.controller.image.brokers[broker]
        return self.call(
            ApiKey.BROKER_HEARTBEAT,
            1,
            broker_id=broker,
            broker_epoch=state.epoch,
            current_metadata_offset=self.writer.offset - 1,
            want_fence=False,
            want_shut_down=kw.get("want_shut_down", False),
        )

    def in_sync(self, topic_id: uuid.UUID, index: int, members: tuple[int, ...]) -> None:
        p = self.controller.image.partition(topic_id, index)
        if p is None or p.leader < 0:
            return
        leader = self.controller.image.brokers[p.leader]
        self.call(
            ApiKey.ALTER_PARTITION,
            3,
            broker_id=p.leader,
            broker_epoch=leader.epoch,
            topics=[
                {
                    "topic_id": topic_id,
                    "partitions": [
                        {
                            "partition_index": index,
                            "leader_epoch": p.leader_epoch,
                            "new_isr_with_epochs": [
                                {
                                    "broker_id": b,
                                    "broker_epoch": self.controller.image.brokers[b].epoch,
                                }
                                for b in members
                                if b in self.controller.image.brokers
                            ],
                            "leader_recovery_state": 0,
                            "partition_epoch": p.partition_epoch,
                        }
                    ],
                }
            ],
        )

    def restart(self, broker: int) -> None:
        """A controlled shutdown, a new incarnation, then the ISRs it left expand again."""
        led_or_in = [
            (p.topic_id, p.partition_id)
            for p in self.controller.image.all_partitions()
            if broker in p.replicas
        ]
        for _ in range(5):  # leaders move first; then the controller lets it stop
            self.now += 1_000
            if self.heartbeat(broker, want_shut_down=True)["should_shut_down"]:
                break
            for other in list(self.controller.image.brokers):  # they replay the move
                if other != broker:
                    self.heartbeat(other)
        else:
            raise AssertionError(f"broker {broker}'s controlled shutdown never completed")
        self.now += self.rng.randrange(30_000, 600_000)
        self.register(broker)
        for topic_id, index in led_or_in:
            p = self.controller.image.partition(topic_id, index)
            if p is not None and broker not in p.isr:
                self.in_sync(topic_id, index, (*p.isr, broker))

    def reassign(self, brokers: int) -> None:
        topics = sorted(self.controller.image.topics_by_name)
        name = topics[self.rng.randrange(len(topics))]
        topic_id = self.controller.image.topics_by_name[name]
        index = self.rng.randrange(PARTITIONS_PER_TOPIC)
        p = self.controller.image.partition(topic_id, index)
        if p is None or p.adding or p.removing:
            return
        target = self.rng.sample(range(brokers), 3)
        self.call(
            ApiKey.ALTER_PARTITION_REASSIGNMENTS,
            0,
            timeout=30_000,
            topics=[{"name": name, "partitions": [{"partition_index": index, "replicas": target}]}],
        )
        p = self.controller.image.partition(topic_id, index)
        if p is not None and p.adding:
            self.now += self.rng.randrange(60_000, 3_600_000)
            self.in_sync(topic_id, index, p.replicas)

    def config(self) -> None:
        topics = sorted(self.controller.image.topics_by_name)
        name = topics[self.rng.randrange(len(topics))]
        self.call(
            ApiKey.INCREMENTAL_ALTER_CONFIGS,
            1,
            validate_only=False,
            resources=[
                {
                    "resource_type": 2,
                    "resource_name": name,
                    "configs": [
                        {
                            "name": "retention.ms",
                            "config_operation": 0,
                            "value": str(self.rng.randrange(1, 30) * 86_400_000),
                        }
                    ],
                }
            ],
        )


def generate(root: Path, args: argparse.Namespace) -> tuple[Path, int, float]:
    log_dir = root / "controller-1"
    part = log_dir / "__cluster_metadata-0"
    part.mkdir(parents=True)
    (log_dir / "meta.properties").write_text(
        f"version=1\ncluster.id={CLUSTER_ID}\nnode.id=1\ndirectory.id=AAAAAAAAAAAAAAAAAAAAAA\n"
    )
    started = time.monotonic()
    writer = Writer(part)
    year = Year(writer, seed=7)
    for broker in range(args.brokers):
        year.register(broker)
    topics = args.partitions // PARTITIONS_PER_TOPIC
    for first in range(0, topics, 10):
        year.now += 1_000
        response = year.call(
            ApiKey.CREATE_TOPICS,
            7,
            topics=[
                {
                    "name": f"topic-{t:05d}",
                    "num_partitions": PARTITIONS_PER_TOPIC,
                    "replication_factor": 3,
                }
                for t in range(first, min(topics, first + 10))
            ],
            timeout=30_000,
            validate_only=False,
        )
        assert all(t["error_code"] == 0 for t in response["topics"]), response
    kinds = (
        ["restart"] * args.restarts
        + ["reassign"] * args.reassignments
        + ["config"] * args.config_changes
    )
    year.rng.shuffle(kinds)
    step = YEAR_MS // max(1, len(kinds))
    for i, kind in enumerate(kinds):
        year.now = T0_MS + 3_600_000 + i * step + year.rng.randrange(step // 2)
        if kind == "restart":
            year.restart(year.rng.randrange(args.brokers))
        elif kind == "reassign":
            year.reassign(args.brokers)
        else:
            year.config()
    writer.close()
    return log_dir, writer.records, time.monotonic() - started


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Standalone:
    """A Spark standalone master and one worker (2 cores, 4 GiB) from the pyspark package."""

    def __init__(self, tmp: Path) -> None:
        import pyspark

        self.spark_class = Path(pyspark.__file__).parent / "bin" / "spark-class"
        self.port = free_port()
        self.tmp = tmp
        self.procs: list[subprocess.Popen[bytes]] = []

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def start(self) -> None:
        env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
        master = [
            str(self.spark_class),
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--webui-port",
            str(free_port()),
        ]
        worker = [
            str(self.spark_class),
            "org.apache.spark.deploy.worker.Worker",
            self.url,
            "--cores",
            "2",
            "--memory",
            "4g",
            "--webui-port",
            str(free_port()),
            "--work-dir",
            str(self.tmp / "work"),
        ]
        for name, cmd in (("master", master), ("worker", worker)):
            log = (self.tmp / f"{name}.log").open("wb")
            self.procs.append(subprocess.Popen(cmd, stdout=log, stderr=log, env=env))
            deadline = time.monotonic() + 60
            needle = (
                b"I have been elected leader"
                if name == "master"
                else b"Successfully registered with master"
            )
            while needle not in (self.tmp / f"{name}.log").read_bytes():
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"the standalone {name} did not start: {self.tmp}/{name}.log"
                    )
                time.sleep(0.5)

    def stop(self) -> None:
        for proc in reversed(self.procs):
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def run(cmd: list[str]) -> tuple[float, str, int]:
    """(wall seconds, stdout, the child's peak RSS in MiB)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.monotonic()
    done = subprocess.run(
        cmd, capture_output=True, text=True, env={**os.environ, "PYSPARK_PYTHON": sys.executable}
    )
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])} failed:\n{done.stderr[-3000:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return seconds, done.stdout, max(peak, before) // 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--brokers", type=int, default=300)
    parser.add_argument("--restarts", type=int, default=200)
    parser.add_argument("--reassignments", type=int, default=500)
    parser.add_argument("--config-changes", type=int, default=300)
    parser.add_argument("--masters", default="local,standalone")
    parser.add_argument("--keep", type=Path, help="keep the log and outputs here")
    parser.add_argument("--report-out", type=Path, help="copy the local[2] report here")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-history-", dir=args.keep))
    try:
        log_dir, records, seconds = generate(tmp, args)
        size = sum(f.stat().st_size for f in (log_dir / "__cluster_metadata-0").iterdir())
        print(
            f"generated: {records:,} metadata records ({size / 1e6:.0f} MB) of a year of "
            f"{args.partitions:,} partitions / {args.brokers} brokers: {args.restarts} broker "
            f"restarts, {args.reassignments} reassignments, {args.config_changes} config "
            f"changes, by the real controller in {seconds:.0f} s",
            flush=True,
        )
        cli = [sys.executable, "-m", "pykraft.cli.main", "pipeline"]
        for kind in args.masters.split(","):
            standalone = Standalone(tmp / "standalone") if kind == "standalone" else None
            if standalone is not None:
                (tmp / "standalone").mkdir(exist_ok=True)
                standalone.start()
            master = standalone.url if standalone is not None else "local[2]"
            conf = ["--conf", "spark.executor.memory=3g"] if standalone else []
            try:
                out = tmp / f"tables-{kind}"
                ingest_s, _, ingest_mb = run(
                    [
                        *cli,
                        "ingest",
                        "--master",
                        master,
                        *conf,
                        "--log-dir",
                        str(log_dir),
                        "--out",
                        str(out),
                    ]
                )
                report = tmp / f"report-{kind}"
                report_s, stdout, report_mb = run(
                    [
                        *cli,
                        "report",
                        "--master",
                        master,
                        *conf,
                        "--metadata",
                        str(out),
                        "--out",
                        str(report),
                    ]
                )
            finally:
                if standalone is not None:
                    standalone.stop()
            print(
                f"{master:24s}: ingest {ingest_s:6.1f} s ({records / ingest_s:,.0f} records/s), "
                f"report {report_s:6.1f} s; driver peak RSS {max(ingest_mb, report_mb):,} MiB",
                flush=True,
            )
            print("    " + stdout.strip().replace("\n", "\n    "), flush=True)
            if kind == "local" and args.report_out is not None:
                shutil.rmtree(args.report_out, ignore_errors=True)
                shutil.copytree(report, args.report_out, ignore=shutil.ignore_patterns("tables"))
    finally:
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
