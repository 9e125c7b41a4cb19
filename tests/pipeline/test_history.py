"""The cluster history over Kafka's metadata records (issue 31, SPEC H1, H2): a simulated cluster whose
log the real controller wrote (brokers crash and come back, their sessions expire, topics
come and go, configs change), written to disk in Kafka's layout, ingested with Spark; the
typed tables, ``partition_state``, ``state --at`` and ``diff`` checked against a replay of
the same log with the controller's own image, and the report rendered by a real browser."""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pykraft.metadata.image import Image
from pykraft.metadata.serde import decode_record, encode_record
from pykraft.pipeline import decode
from pykraft.pipeline.history import load_tables, run_history_report
from pykraft.pipeline.ingest import LogDir, run_ingest
from pykraft.pipeline.metadata_state import Moment, diff, state_as_of
from pykraft.records import decode_records, iter_batches
from pykraft.sim import SimConfig
from pykraft.sim.profiles import get_profile

from .logfiles import write_snapshot
from .simlogs import run_and_write

NODE = 1


SNAPSHOT_NODE = 2


@pytest.fixture(scope="module")
def cluster(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Three nodes' logs of a simulated cluster (no snapshots: the whole history stays), and
    on node 2 a snapshot of the image at half its log (its segments keep every record, so
    the snapshot and the records before it must not both count)."""
    root = tmp_path_factory.mktemp("history")
    logs = root / "logs"
    config = SimConfig(
        seed=11, profile=get_profile("controller"), events=8000, snapshot_interval_records=10**9
    )
    run_and_write(logs, config)
    node2 = logs / f"node-{SNAPSHOT_NODE}"
    _, end = _replayed(node2)
    image, last = _replayed(node2, end // 2)
    mv = image.metadata_version or 7
    values = [encode_record(rec, v) for rec, v in image.records(2 if mv >= 23 else 1, 3)]
    write_snapshot(node2, last + 1, 1, values)
    out = root / "tables"
    run_ingest(spark, [LogDir(str(logs / f"node-{n}")) for n in (1, 2, 3)], str(out))
    return logs, out


def _replayed(log_dir: Path, upto: int | None = None) -> tuple[Image, int]:
    """The image of ``log_dir``'s snapshot and segments (to offset ``upto``), replayed by
    the controller's own Image; and the last offset replayed."""
    image = Image()
    part = log_dir / "__cluster_metadata-0"
    snapshots = sorted(part.glob("*.checkpoint"))
    base = -1
    if snapshots:
        name = decode.parse_file_name(str(snapshots[-1]))
        assert name is not None
        if upto is None or name.offset - 1 <= upto:
            base = name.offset - 1
            data = snapshots[-1].read_bytes()
            for header, pos in iter_batches(data):
                if not header.is_control:
                    for record in decode_records(data[pos : pos + header.size]):
                        value, version = decode_record(record.value)
                        image.replay(value, version, base)
    last = base
    for segment in sorted(part.glob("*.log")):
        data = segment.read_bytes()
        for header, pos in iter_batches(data):
            if header.is_control:
                continue
            for record in decode_records(data[pos : pos + header.size]):
                if record.offset <= base or (upto is not None and record.offset > upto):
                    continue
                value, version = decode_record(record.value)
                image.replay(value, version, record.offset)
                last = record.offset
    return image, last


def _partitions(rows: list[Any]) -> dict[tuple[str, int], tuple[Any, ...]]:
    return {
        (r["topic_id"], r["partition"]): (
            tuple(r["replicas"]),
            tuple(r["isr"]),
            r["leader"],
            r["leader_epoch"],
            r["partition_epoch"],
        )
        for r in rows
    }


def _image_partitions(image: Image) -> dict[tuple[str, int], tuple[Any, ...]]:
    return {
        (str(p.topic_id), p.partition_id): (
            p.replicas,
            p.isr,
            p.leader,
            p.leader_epoch,
            p.partition_epoch,
        )
        for p in image.all_partitions()
    }


def test_tables_hold_every_metadata_record(spark: SparkSession, cluster: tuple[Path, Path]) -> None:
    _, out = cluster
    tables = load_tables(spark, str(out))
    records = tables["records"].where(~F.col("is_control"))
    assert tables["undecoded"].count() == 0
    for name in ("topics", "partition_changes", "brokers", "configs", "features"):
        assert tables[name].count() > 0, name
    # Every data record is one row of records, with its type named in the JSON.
    typed = records.select(F.get_json_object("value_json", "$.type").alias("type"))
    assert typed.where(F.col("type").isNull()).count() == 0
    events = {r["event"] for r in tables["brokers"].select("event").distinct().collect()}
    assert {"register", "unfence"} <= events


def test_partition_state_at_the_log_end_is_the_controllers_image(
    spark: SparkSession, cluster: tuple[Path, Path]
) -> None:
    logs, out = cluster
    state = spark.read.parquet(str(out / "partition_state"))
    rows = state.where((F.col("node") == NODE) & (F.col("as_of") == "log_end")).collect()
    image, _ = _replayed(logs / f"node-{NODE}")
    assert _partitions(rows) == _image_partitions(image)
    assert rows  # the cluster has partitions at its end
    # Node 2: its snapshot, then only the records after it.
    rows = state.where((F.col("node") == SNAPSHOT_NODE) & (F.col("as_of") == "log_end")).collect()
    image, _ = _replayed(logs / f"node-{SNAPSHOT_NODE}")
    assert _partitions(rows) == _image_partitions(image)
    snapshot_rows = state.where(
        (F.col("node") == SNAPSHOT_NODE) & (F.col("as_of") == "snapshot")
    ).collect()
    part = logs / f"node-{SNAPSHOT_NODE}" / "__cluster_metadata-0"
    (snapshot,) = part.glob("*.checkpoint")
    name = decode.parse_file_name(str(snapshot))
    assert name is not None
    at_snapshot, _ = _replayed(logs / f"node-{SNAPSHOT_NODE}", name.offset - 1)
    assert {r["as_of_offset"] for r in snapshot_rows} == {name.offset}
    assert _partitions(snapshot_rows) == _image_partitions(at_snapshot)


def test_state_and_diff_at_offsets(spark: SparkSession, cluster: tuple[Path, Path]) -> None:
    logs, out = cluster
    tables = {k: v.where(F.col("node") == NODE) for k, v in load_tables(spark, str(out)).items()}
    end = tables["batches"].agg(F.max("last_offset")).first()
    assert end is not None
    middle = int(end[0]) * 3 // 4
    image, _ = _replayed(logs / f"node-{NODE}", middle)
    state = state_as_of(tables, Moment(middle))
    assert _partitions(state["partitions"].collect()) == _image_partitions(image)
    names = {r["name"] for r in state["topics"].collect()}
    assert names == {t.name for t in image.topics.values()}
    brokers = {(r["broker_id"], r["broker_epoch"], r["fenced"]) for r in state["brokers"].collect()}
    assert brokers == {(b.broker_id, b.epoch, b.fenced) for b in image.brokers.values()}
    changed = diff(tables, Moment(middle), Moment(None))
    final, _ = _replayed(logs / f"node-{NODE}")
    before, after = _image_partitions(image), _image_partitions(final)
    expected = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    got = {(r["topic_id"], r["partition"]) for r in changed["partitions"].collect()}
    # the partition epoch is compared, so every changed partition shows (an ISR that shrank and
    # grew back too); unchanged ones do not.
    assert got == expected


def test_history_report_renders_in_a_browser(
    spark: SparkSession, cluster: tuple[Path, Path], tmp_path: Path
) -> None:
    _, out = cluster
    report = run_history_report(spark, str(out), str(tmp_path / "report"))
    assert report.counts["isr_changes"] > 0
    assert report.counts["leader_changes"] > 0
    assert report.counts["broker_unfence"] > 0
    causes = {
        r["cause"]
        for r in spark.read.parquet(str(tmp_path / "report/tables/leader_changes"))
        .select("cause")
        .distinct()
        .collect()
    }
    assert "fenced" in causes or "controlled shutdown" in causes, causes
    page = report.html.read_text()
    assert page.count("<img") == len(report.plots) and "leader changes" in page
    for plot in report.plots:
        assert plot.stat().st_size > 5_000, plot
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "Chromium is installed by scripts/test.sh (the page must render)"
    shot = tmp_path / "page.png"
    subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--screenshot={shot}",
            "--window-size=1200,2400",
            report.html.as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    assert _distinct_colours(shot) > 50  # text, plots and tables, not a blank page


def _distinct_colours(png: Path) -> int:
    """How many distinct pixels a PNG holds (a blank page holds one or two)."""
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, b""
    height = 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            _width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            chunks += body
        pos += 12 + length
    raw = zlib.decompress(chunks)
    stride = len(raw) // height
    seen: set[bytes] = set()
    for row in range(0, height, 7):
        line = raw[row * stride + 1 : (row + 1) * stride]
        for col in range(0, len(line) - 4, 4 * 13):
            seen.add(line[col : col + 3])
    return len(seen)
