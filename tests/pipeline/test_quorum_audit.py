"""The audit on a real run: three ``pykraft server start`` processes (the node tests' helpers),
the leader SIGKILLed, a new leader committing more, SIGTERM; then ``pykraft pipeline ingest``
and ``audit`` over the three log directories, with each node's HWM as it reported it on its
metrics endpoint and with the majority rule; and a copy of one node's log with one committed
batch's bytes flipped, which the audit must report."""

from __future__ import annotations

import shutil
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pykraft.cli.main import main
from pykraft.pipeline.audit import run_audit
from pykraft.records import BATCH_HEADER_SIZE, iter_batches

from ..node.procs import CLUSTER_ID, Proc, cli, free_ports, make_config, wait_for

pytestmark = pytest.mark.slow

PARTITION = "__cluster_metadata-0"
# The leader appends a record every 20 ms; 8 KiB segments give each node a few files.
EXTRA = "pykraft.debug.append.interval.ms=20\nmetadata.log.segment.bytes=8192\n"
COMMITS_PER_LEADER = 40
COPY = 9  # node id of the corrupted copy


@dataclass(frozen=True)
class Run:
    """What the quorum left behind: its log directories and what the nodes reported."""

    data: dict[int, Path]
    hwm: dict[int, int]  # each node's last reported high watermark
    killed: int  # the first leader, SIGKILLed
    killed_epoch: int


def state(p: Proc) -> dict[str, float]:
    try:
        return p.scrape()
    except OSError:
        return {}


def leader_among(procs: list[Proc], above_epoch: int = 0) -> Proc | None:
    for p in procs:
        m = state(p)
        if (
            m.get("kafka_server_raftmetrics_current_state{current_state=leader}") == 1
            and m["kafka_server_raftmetrics_current_epoch"] > above_epoch
        ):
            return p
    return None


def hwm_of(p: Proc) -> int:
    return int(p.scrape()["kafka_server_raftmetrics_high_watermark"])


def run_quorum(tmp: Path) -> Run:
    ports = free_ports(6)
    voters = ",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(ports[:3]))
    procs = [
        make_config(tmp, i + 1, ports[i], voters=voters, metrics_port=ports[3 + i], extra=EXTRA)
        for i in range(3)
    ]
    for p in procs:
        result = cli(
            "storage", "format", "--config", str(p.config), "--cluster-id", CLUSTER_ID, "-N"
        )
        assert result.returncode == 0, result.stderr
    try:
        for p in procs:
            p.start()
        wait_for(lambda: leader_among(procs) is not None, "a leader")
        first = leader_among(procs)
        assert first is not None
        wait_for(lambda: hwm_of(first) >= COMMITS_PER_LEADER, "commits by the first leader")
        epoch = int(first.scrape()["kafka_server_raftmetrics_current_epoch"])
        hwm = {first.node_id: hwm_of(first)}  # what it knew committed just before dying
        first.stop(signal.SIGKILL)

        survivors = [p for p in procs if p is not first]
        wait_for(lambda: leader_among(survivors, epoch) is not None, "a new leader")
        second = leader_among(survivors, epoch)
        assert second is not None
        target = hwm[first.node_id] + COMMITS_PER_LEADER
        wait_for(lambda: hwm_of(second) >= target, "commits by the new leader")
        for p in survivors:
            hwm[p.node_id] = hwm_of(p)
        for p in survivors:
            assert p.stop(signal.SIGTERM) == 0, p.text()[-2000:]
        return Run({p.node_id: p.data for p in procs}, hwm, first.node_id, epoch)
    finally:
        for p in procs:
            p.kill()


def corrupt_copy(src: Path, dst: Path, committed_below: int) -> tuple[int, int]:
    """Copy a log directory and flip one byte inside a committed data batch's records;
    returns that batch's (base offset, last offset)."""
    shutil.copytree(src / PARTITION, dst / PARTITION)
    for segment in sorted((dst / PARTITION).glob("*.log")):
        data = bytearray(segment.read_bytes())
        for header, pos in iter_batches(bytes(data), verify_crc=False):
            if not header.is_control and header.last_offset < committed_below:
                data[pos + BATCH_HEADER_SIZE + 2] ^= 0xFF
                segment.write_bytes(bytes(data))
                return header.base_offset, header.last_offset
    raise AssertionError("no committed data batch to corrupt")


@pytest.fixture(scope="module")
def ingested(
    spark: SparkSession, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Run, Path, tuple[int, int]]]:
    # The test session's Spark first: the program's commands below share it (getOrCreate).
    # Started by the first command instead, it had the program's settings for a big log
    # (200 shuffle partitions, the full JIT): the module took 151 CPU-seconds, now 105.
    del spark
    tmp = tmp_path_factory.mktemp("quorum")
    run = run_quorum(tmp)
    source = next(n for n in sorted(run.data) if n != run.killed)
    flipped = corrupt_copy(run.data[source], tmp / "copy", run.hwm[source])
    out = tmp / "tables"
    log_dirs = [a for n, d in sorted(run.data.items()) for a in ("--log-dir", f"{n}={d}")]
    args = ["pipeline", "ingest", "--master", "local[2]", *log_dirs]
    assert main([*args, "--log-dir", f"{COPY}={tmp / 'copy'}", "--out", str(out)]) == 0
    yield run, out, flipped


def hwm_args(hwm: dict[int, int]) -> list[str]:
    return [a for n, h in sorted(hwm.items()) for a in ("--hwm", f"{n}={h}")]


def test_replicas_agree_below_their_reported_hwm(
    ingested: tuple[Run, Path, tuple[int, int]], capsys: pytest.CaptureFixture[str]
) -> None:
    run, out, _ = ingested
    capsys.readouterr()
    nodes = [a for n in sorted(run.data) for a in ("--node", str(n))]
    args = ["pipeline", "audit", "--master", "local[2]", "--in", str(out), *nodes]
    assert main([*args, *hwm_args(run.hwm)]) == 0
    text = capsys.readouterr().out
    assert "OK: all replicas agree" in text and "(committed prefix: given" in text
    checked = int(text.split(" committed batches checked")[0].rsplit("\n", 1)[-1])
    assert checked >= 3 * COMMITS_PER_LEADER  # every node, both leaders' epochs


def test_majority_rule_flags_only_the_killed_leaders_unreplicated_tail(
    spark: SparkSession, ingested: tuple[Run, Path, tuple[int, int]]
) -> None:
    """Without HWMs the committed prefix is estimated from the logs. The SIGKILLed leader
    may hold a batch it appended but nobody fetched: past its HWM, in its old epoch, where
    the new leader wrote its LeaderChange. The estimate counts it (it cannot tell), so that
    tail, and only that, may show up; the survivors must agree."""
    run, out, _ = ingested
    result = run_audit(spark, str(out), nodes=list(run.data))
    assert {p.source for p in result.prefixes} == {"majority"}
    changes = spark.read.parquet(str(out / "leader_changes"))
    new_epoch_start = min(r.offset for r in changes.where(f"epoch > {run.killed_epoch}").collect())
    killed = next(p for p in result.prefixes if p.node == run.killed)
    rows = result.divergences.collect()
    if killed.log_end_offset > new_epoch_start:
        assert rows and all(r.base_offset >= new_epoch_start for r in rows), rows
        assert any(r.node == run.killed for r in rows)
    else:
        assert rows == []
    assert all(r.base_offset >= run.hwm[run.killed] for r in rows)


def test_a_flipped_byte_in_a_committed_batch_is_reported(
    ingested: tuple[Run, Path, tuple[int, int]], capsys: pytest.CaptureFixture[str]
) -> None:
    run, out, (base, last) = ingested
    source = next(n for n in sorted(run.data) if n != run.killed)
    hwm = {**run.hwm, COPY: run.hwm[source]}
    capsys.readouterr()
    args = ["pipeline", "audit", "--master", "local[2]", "--in", str(out), *hwm_args(hwm)]
    assert main(args) == 1
    lines = [ln.split() for ln in capsys.readouterr().out.splitlines() if ln.startswith("  ")]
    assert [(w[0], w[2], w[4]) for w in lines] == [("corrupt", str(COPY), f"{base}-{last}:")]
