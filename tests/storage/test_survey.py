"""``pykraft metadata-recovery survey`` over directories written by the real storage code: the
seed is the most up-to-date log by Raft's order (last epoch, then length), never the longest
alone; a torn tail and the voter set in force are reported; nothing on disk changes."""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path

import pytest

from pykraft.cli.main import main
from pykraft.raft.types import Endpoint
from pykraft.records import VoterRecordEntry, build_batch, voters_batch
from pykraft.storage.log import PARTITION_DIR_NAME, FileLog
from pykraft.storage.meta import MetaProperties, write_meta_properties
from pykraft.storage.survey import recommend, survey_directory

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"


def _controller(
    root: Path, node_id: int, epochs: list[tuple[int, int]], base_port: int = 9000
) -> Path:
    """A formatted directory whose log holds ``count`` one-record batches per (epoch, count),
    after a VotersRecord of voters 1-3 at offset 0."""
    log_dir = root / f"c{node_id}"
    log_dir.mkdir()
    write_meta_properties(log_dir, MetaProperties(CLUSTER, node_id, uuid.UUID(int=node_id)))
    voters = [
        VoterRecordEntry(i, uuid.UUID(int=i), (Endpoint("CONTROLLER", "127.0.0.1", base_port + i),))
        for i in (1, 2, 3)
    ]
    log = FileLog.open(log_dir / PARTITION_DIR_NAME)
    log.append(voters_batch(0, 1, 0, voters))
    offset = 1
    for epoch, count in epochs:
        for _ in range(count):
            log.append(build_batch(offset, epoch, [b"record"], 0))
            offset += 1
    log.flush()
    log.close(clean=True)
    return log_dir


def digest(root: Path) -> dict[str, str]:
    """Every file under ``root`` by its SHA-256 (to show a tool wrote nothing)."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_the_seed_is_the_highest_last_epoch_not_the_longest_log(tmp_path: Path) -> None:
    # Node 3 led epoch 2 and appended a long tail nobody acknowledged; nodes 1 and 2 went on
    # in epoch 3, where node 1 is ahead. Offset alone would pick node 3.
    dirs = [
        _controller(tmp_path, 1, [(1, 10), (3, 20)]),
        _controller(tmp_path, 2, [(1, 10), (3, 15)]),
        _controller(tmp_path, 3, [(1, 10), (2, 40)]),
    ]
    surveys = [survey_directory(d) for d in dirs]
    assert [(s.last_epoch, s.log_end_offset) for s in surveys] == [(3, 31), (3, 26), (2, 51)]
    advice = recommend(surveys)
    assert advice.seed is surveys[0]
    assert any("lower last epoch (2)" in r for r in advice.reasons)
    assert any("shorter log (26)" in r for r in advice.reasons)
    voters = surveys[0].voters
    assert voters is not None and [v.voter_id for v in voters] == [1, 2, 3]
    assert surveys[0].voters_offset == 0 and surveys[0].node_id == 1


def test_survey_reports_a_torn_tail_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one = _controller(tmp_path, 1, [(1, 5)])
    two = _controller(tmp_path, 2, [(1, 5)])
    segment = sorted((two / PARTITION_DIR_NAME).glob("*.log"))[-1]
    with segment.open("ab") as f:
        f.write(b"\x00\x00\x00\x00\x00\x00\x00\x06torn")  # a batch cut short by a crash
    before = digest(tmp_path)
    assert main(["metadata-recovery", "survey", "--json", str(one), str(two)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [d["torn_bytes"] for d in report["directories"]] == [0, 12]
    assert [d["log_end_offset"] for d in report["directories"]] == [6, 6]
    assert report["seed"] in (str(one), str(two))
    assert digest(tmp_path) == before  # the torn tail is still there: a start truncates it


def test_directories_of_two_clusters_are_not_compared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one = _controller(tmp_path, 1, [(1, 5)])
    other = tmp_path / "other"
    other.mkdir()
    write_meta_properties(other, MetaProperties("AAAAAAAAAAAAAAAAAAAAAA", 2, uuid.uuid4()))
    (other / PARTITION_DIR_NAME).mkdir()
    assert main(["metadata-recovery", "survey", str(one), str(other)]) == 1
    assert "different clusters" in capsys.readouterr().out
