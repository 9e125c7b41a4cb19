"""Bad input to the metadata pipeline (issue 31, part 5): one clear line on stderr and a
non-zero exit, never a Python or JVM traceback -- a missing path, a directory that is not a
metadata log, a torn segment, a corrupt snapshot, tables that are not ingest's."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pykraft.cli.main import main
from pykraft.metadata import records as r
from pykraft.metadata.serde import encode_record
from pykraft.pipeline.history import load_tables
from pykraft.pipeline.metadata_state import Moment, state_as_of
from pykraft.records import build_batch
from tests.node.procs import cli

from .logfiles import write_snapshot

SPARK_TIMEOUT_S = 300  # a JVM start and a Spark job, on a loaded two-core CI machine


def spark_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return cli(*args, timeout_s=SPARK_TIMEOUT_S)


def _no_trace(stderr: str) -> None:
    assert "Traceback" not in stderr and "Py4J" not in stderr and "at org.apache" not in stderr


def _node(root: Path, node: int) -> Path:
    log_dir = root / f"n{node}"
    part = log_dir / "__cluster_metadata-0"
    part.mkdir(parents=True)
    (log_dir / "meta.properties").write_text(
        f"version=1\ncluster.id=bad-input\nnode.id={node}\ndirectory.id=AAAAAAAAAAAAAAAAAAAAAA\n"
    )
    values = [encode_record(r.TopicRecord(name="t", topic_id=__import__("uuid").UUID(int=9)), 0)]
    (part / "00000000000000000000.log").write_bytes(build_batch(0, 1, values, 1))
    return log_dir


def test_a_missing_path_and_a_directory_that_is_not_a_log(tmp_path: Path) -> None:
    missing = spark_cli(
        "pipeline",
        "ingest",
        "--master",
        "local[1]",
        "--log-dir",
        str(tmp_path / "nope"),
        "--out",
        str(tmp_path / "o"),
    )
    assert missing.returncode == 2
    assert "no such directory" in missing.stderr
    _no_trace(missing.stderr)
    (tmp_path / "plain").mkdir()
    plain = spark_cli(
        "pipeline",
        "ingest",
        "--master",
        "local[1]",
        "--log-dir",
        str(tmp_path / "plain"),
        "--out",
        str(tmp_path / "o"),
    )
    assert plain.returncode == 2 and "not a metadata log directory" in plain.stderr
    _no_trace(plain.stderr)
    tables = spark_cli(
        "pipeline",
        "report",
        "--master",
        "local[1]",
        "--metadata",
        str(tmp_path / "plain"),
        "--out",
        str(tmp_path / "r"),
    )
    assert (
        tables.returncode == 2 and "is not the output of `pykraft pipeline ingest`" in tables.stderr
    )
    _no_trace(tables.stderr)
    at = spark_cli(
        "pipeline",
        "state",
        "--master",
        "local[1]",
        "--metadata",
        str(tmp_path),
        "--at",
        "yesterday",
        "--out",
        str(tmp_path / "s"),
    )
    assert at.returncode == 2 and "not an offset or a time" in at.stderr
    _no_trace(at.stderr)


def test_a_torn_segment_and_a_corrupt_snapshot(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log_dir = _node(tmp_path, 1)
    part = log_dir / "__cluster_metadata-0"
    segment = part / "00000000000000000000.log"
    segment.write_bytes(segment.read_bytes() + b"\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00")  # torn
    snapshot = write_snapshot(log_dir, 1, 1, [encode_record(r.NoOpRecord(), 0)])
    data = bytearray(snapshot.read_bytes())
    data[-20] ^= 0xFF  # a flipped byte: its batch fails the CRC
    snapshot.write_bytes(bytes(data))
    # The program's own code, in this process: its session is the module's (getOrCreate), so
    # no second JVM starts (one took 2 minutes of a loaded CI machine). The other tests here
    # run the program as a process; they are answered before Spark starts.
    code = main(["pipeline", "ingest", "--log-dir", str(log_dir), "--out", str(tmp_path / "o")])
    stderr = capsys.readouterr().err
    assert code == 2, stderr
    assert "00000000000000000000.log: stopped at position" in stderr
    assert "checkpoint: a batch fails its CRC" in stderr
    assert "2 file(s) not read to their end" in stderr
    _no_trace(stderr)
    # What could be read was written: the topic is in the tables (read in the test session's
    # Spark, as `pykraft pipeline state` reads them: another Spark start adds nothing here).
    state = state_as_of(load_tables(spark, str(tmp_path / "o")), Moment.parse(None))
    assert [r.name for r in state["topics"].collect()] == ["t"]
