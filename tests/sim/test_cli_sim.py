"""`pykraft sim run / sweep / profiles`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pykraft.cli.main import main

PROFILE_NAMES = (
    "none",
    "lossy",
    "partitions",
    "crashes",
    "disk",
    "reconfig",
    "membership",
    "upgrade",
    "chaos",
)


def test_run_prints_a_summary(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sim", "run", "--seed", "3", "--events", "2000", "--profile", "crashes"])
    out = capsys.readouterr().out
    assert code == 0, out
    for word in ("elections", "max epoch", "committed records", "faults injected", "invariants"):
        assert word in out
    assert "result: OK" in out


def test_run_writes_a_jsonl_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "trace.jsonl"
    code = main(["sim", "run", "--seed", "4", "--events", "1000", "--trace", str(trace)])
    assert code == 0, capsys.readouterr().out
    lines = trace.read_text().splitlines()
    assert len(lines) > 1000
    first = json.loads(lines[0])
    assert first == {"t": 0, "i": 0, "node": None, "kind": "phase", "phase": "faults"}
    assert json.loads(lines[-1])["kind"] == "phase"


def test_run_no_pre_vote_and_observers(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "sim",
            "run",
            "--seed",
            "5",
            "--events",
            "1500",
            "--voters",
            "5",
            "--observers",
            "2",
            "--no-pre-vote",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "voters 5  observers 2  pre-vote off" in out


def test_sweep_reports_per_profile(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "sim",
            "sweep",
            "--seeds",
            "0..4",
            "--profile",
            "none,crashes",
            "--jobs",
            "1",
            "--events",
            "1000",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.startswith("8 runs, 0 failures")
    assert "crashes" in out and "none" in out


def test_bad_profile_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim", "run", "--seed", "1", "--profile", "nope"]) == 2
    assert "unknown fault profile" in capsys.readouterr().err
    assert main(["sim", "sweep", "--seeds", "5..1"]) == 2


def test_profiles_lists_every_profile(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim", "profiles"]) == 0
    out = capsys.readouterr().out
    for name in PROFILE_NAMES:
        assert name in out


def test_default_sweep_profiles_are_all_profiles() -> None:
    from pykraft.cli.sim import _DEFAULT_PROFILES
    from pykraft.sim import PROFILES

    assert _DEFAULT_PROFILES.split(",") == list(PROFILES)
