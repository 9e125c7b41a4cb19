"""The Spark jobs on tiny local data, with one SparkSession for the test session."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pykraft.cli.main import main
from pykraft.pipeline import decode
from pykraft.pipeline.audit import run_audit
from pykraft.pipeline.ingest import (
    DECODE_SPLIT_BYTES,
    LogDir,
    decode_splits,
    read_files,
    run_ingest,
)
from pykraft.pipeline.report import run_report
from pykraft.pipeline.sweep import RUNS, SweepSpec, run_slice, run_sweep
from pykraft.records import build_batch, iter_batches, read_header
from pykraft.sim import SimConfig

from .logfiles import LogBuilder, write_node, write_snapshot
from .simlogs import run_and_write


def diverging_cluster(root: Path) -> None:
    """Three nodes agree on offsets 0-13; at 14-16 node 2 holds a batch from a stale epoch-1
    leader that nodes 1 and 3 replaced in epoch 2; node 3 also lacks the last batch."""
    b = LogBuilder()
    b.leader_change(1, 1)
    b.voters(1)
    for i in range(4):
        b.data(1, tag=f"a{i}")
    stale = b.copy()
    stale.data(1, tag="stale")
    b.leader_change(2, 3)  # offset 14
    b.data(2, tag="new")
    lagging = b.copy()
    b.data(2, tag="last")
    write_node(root, 1, b.batches)
    write_node(root, 2, stale.batches)
    write_node(root, 3, lagging.batches)
    write_snapshot(root / "node-1", 10, 1, [b'{"k": 1}'])


@pytest.fixture(scope="module")
def ingested(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cluster")
    diverging_cluster(root)
    out = root / "tables"
    dirs = [
        LogDir.parse(str(root / "node-1")),
        LogDir.parse(f"2={root / 'node-2'}"),
        LogDir.parse(str(root / "node-3" / "__cluster_metadata-0") + "/"),
    ]
    # node 3's id comes from meta.properties even when the partition dir is given
    summary = run_ingest(spark, dirs, str(out))
    assert summary.nodes == 3 and summary.files == 3 + 3 + 3 + 1
    return out


def test_decode_tasks_pack_small_files_and_keep_a_large_one_alone(
    spark: SparkSession, tmp_path: Path
) -> None:
    diverging_cluster(tmp_path)
    dirs = {n: str(tmp_path / f"node-{n}" / "__cluster_metadata-0") for n in (1, 2, 3)}
    # A file over the split size (sparse: planning reads only its size, and the job below
    # selects no content).
    big = Path(dirs[1]) / "00000000000000009999.log"
    with big.open("wb") as f:
        f.truncate(DECODE_SPLIT_BYTES + 1)
    with decode_splits(spark):
        files = read_files(spark, dirs).select("path", F.spark_partition_id().alias("task"))
        tasks: dict[int, list[str]] = {}
        for row in files.collect():
            tasks.setdefault(row.task, []).append(row.path)
    assert sum(len(paths) for paths in tasks.values()) == 11
    # Each node's small files share at most one task per core (each node's directory is
    # its own scan), not a task each; the large file is alone in its task.
    assert len(tasks) <= 1 + 2 * len(dirs)
    alone = [paths for paths in tasks.values() if any(p.endswith(big.name) for p in paths)]
    assert alone == [[alone[0][0]]]


def test_ingest_tables(spark: SparkSession, ingested: Path) -> None:
    t = {name: spark.read.parquet(str(ingested / name)) for name in (*decode.TABLES, "committed")}
    assert t["batches"].where("source = 'segment'").count() == 9 + 7 + 8
    assert t["snapshots"].count() == 1
    changes = {(r.node, r.offset, r.epoch, r.leader_id) for r in t["leader_changes"].collect()}
    assert changes == {(n, 0, 1, 1) for n in (1, 2, 3)} | {(1, 14, 2, 3), (3, 14, 2, 3)}
    node2 = t["records"].where("node = 2 and offset = 14").collect()
    assert node2[0].record_type == "DATA" and '"stale"' in node2[0].value_json
    committed = {
        r.node: (r.log_end_offset, r.committed_offset, r.source) for r in t["committed"].collect()
    }
    # log ends 21, 17, 18: a majority reaches 18
    assert committed == {1: (21, 18, "majority"), 2: (17, 17, "majority"), 3: (18, 18, "majority")}
    voter_sets = {(r.node, r.source, r.offset, r.committed) for r in t["voter_sets"].collect()}
    assert voter_sets == {
        (1, "segment", 1, True),
        (2, "segment", 1, True),
        (3, "segment", 1, True),
        (1, "snapshot", 9, True),
    }


def test_audit_finds_the_divergence_with_offsets(spark: SparkSession, ingested: Path) -> None:
    result = run_audit(spark, str(ingested))
    assert not result.ok
    found = {(r.kind, r.node, r.base_offset, r.last_offset) for r in result.divergences.collect()}
    # Node 2's stale batch at 14-16 against the epoch-2 leader change at 14 on nodes 1 and 3,
    # and, as batch boundaries differ, each side lacks the other's batch starts.
    assert ("mismatch", 2, 14, 16) in found
    assert ("mismatch", 1, 14, 14) in found and ("mismatch", 3, 14, 14) in found
    assert ("missing", 2, 15, 17) in found
    assert all(base >= 14 for _, _, base, _ in found)


def test_cli_audit_agrees_below_the_given_hwm(
    ingested: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # (exit code 1 and the divergence listing: tests/pipeline/test_quorum_audit.py)
    args = ["pipeline", "audit", "--master", "local[2]", "--in", str(ingested)]
    assert main([*args, "--hwm", "1=14", "--hwm", "2=14", "--hwm", "3=14"]) == 0
    out = capsys.readouterr().out
    assert "OK: all replicas agree" in out and "\n18 committed batches checked" in out  # 3 x 6


def test_audit_on_simulator_logs_after_leader_kills(spark: SparkSession, tmp_path: Path) -> None:
    """A 3-voter simulated run with crashes (leaders killed and restarted), its logs written
    with FileLog; plus node 9, a copy of node 1 with one committed batch rewritten."""
    # seed 12: after the snapshots, the logs still hold LeaderChange records of 2 epochs (seed
    # 4 did until followers learned the high watermark at once, KIP-1166: the runs changed)
    config = SimConfig.make(seed=12, profile="crashes", events=3000, snapshot_interval_records=400)
    hwm = run_and_write(tmp_path, config, segment_bytes=8192)
    assert len(hwm) == 3
    forged = tmp_path / "node-9" / "__cluster_metadata-0"
    forged.mkdir(parents=True)
    segments = sorted((tmp_path / "node-1" / "__cluster_metadata-0").glob("*.log"))
    for seg in segments:
        (forged / seg.name).write_bytes(seg.read_bytes())
    target = forged / segments[-1].name
    data = bytearray(target.read_bytes())
    header, pos = next(
        (h, p) for h, p in iter_batches(bytes(data)) if not h.is_control and h.last_offset < hwm[1]
    )
    forged_batch = build_batch(
        header.base_offset, header.epoch, [b"forged"] * header.record_count, header.base_timestamp
    )
    rest = bytes(data[pos + header.size :])
    target.write_bytes(bytes(data[:pos]) + forged_batch + rest)
    assert read_header(forged_batch).base_offset == header.base_offset

    out = tmp_path / "tables"
    dirs = [LogDir.parse(str(tmp_path / f"node-{n}")) for n in (1, 2, 3)]
    dirs.append(LogDir.parse(f"9={tmp_path / 'node-9'}"))
    summary = run_ingest(spark, dirs, str(out), hwm={**hwm, 9: hwm[1]})
    assert summary.nodes == 4
    changes = spark.read.parquet(str(out / "leader_changes")).select("epoch").distinct().count()
    assert changes >= 2  # the logs span leader changes
    result = run_audit(spark, str(out), hwm={**hwm, 9: hwm[1]})
    rows = result.divergences.collect()
    assert {r.base_offset for r in rows} == {header.base_offset}
    assert {r.kind for r in rows} == {"mismatch"}
    assert result.batches_checked > 10


def test_sweep_rows_are_pure(spark: SparkSession) -> None:
    spec = SweepSpec(range(5, 7), ("none",), (True, False), events=200)
    rows = list(run_slice(spec, spec.seeds))
    assert len(rows) == 4 and all(len(r) == len(RUNS.fields) for r in rows)
    assert [(r[0], r[2]) for r in rows] == [(5, True), (5, False), (6, True), (6, False)]
    assert spec.slices(3) == [range(5, 6), range(6, 7)]
    assert SweepSpec(range(0, 10), ("none",)).slices(3) == [range(0, 4), range(4, 7), range(7, 10)]


def test_sweep_and_report(spark: SparkSession, ingested: Path, tmp_path: Path) -> None:
    spec = SweepSpec(range(0, 4), ("none", "partitions"), (True, False), events=400)
    summary = run_sweep(spark, spec, str(tmp_path / "sweep"), partitions=2)
    assert summary.runs == 16 and summary.violations == 0
    runs = spark.read.parquet(str(tmp_path / "sweep" / "runs"))
    assert runs.count() == 16
    assert runs.select("seed").distinct().count() == 4
    by = {(p["profile"], p["pre_vote"]): p for p in summary.profiles}
    assert set(by) == {("none", True), ("none", False), ("partitions", True), ("partitions", False)}
    for p in summary.profiles:
        assert p["runs"] == 4 and p["violations"] == 0
        assert p["elections_per_hour"] > 0
        assert p["leaderless_ms_p50"] <= p["leaderless_ms_p99"]
        assert p["time_to_elect_ms_p50"] is not None

    path = run_report(
        spark, sweep=str(tmp_path / "sweep"), ingest=str(ingested), out=str(tmp_path / "report")
    )
    text = path.read_text()
    assert "| none | on | 4 | 0 |" in text and "Invariant violations: 0" in text
    for png in ("leaderless.png", "epochs_prevote.png", "leader_changes.png"):
        assert (tmp_path / "report" / png).stat().st_size > 1000
        assert f"({png})" in text
