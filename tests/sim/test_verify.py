"""``pykraft verify`` (issue 49 item 5): the sweep and the trace-file checks with a budget,
written as an HTML report with plots and as JSON; exit 1 with the reproducing command when a
check fails (a planted core bug, in process: ``--jobs 1`` runs the sweep here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pykraft.cli.main import main
from pykraft.raft import roles, state


def _verify(out: Path, profiles: str) -> int:
    args = ["verify", "--seeds-per-profile", "1", "--events", "1500", "--jobs", "1"]
    return main([*args, "--first-seed", "1", "--profile", profiles, "--out", str(out)])


def test_a_clean_run_writes_the_report(tmp_path: Path) -> None:
    assert _verify(tmp_path, "none,crashes,majority-loss") == 0
    data = json.loads((tmp_path / "verify.json").read_text())
    assert data["ok"] and data["runs"] == 3 and not data["failures"]
    assert set(data["profiles"]) == {"none", "crashes", "majority-loss"}
    assert all(t["steps"] > 0 and t["violation"] is None for t in data["traces"])
    # Each traced run's client appends, checked by Porcupine as well.
    assert all(t["appends"] > 0 and t["linearizability"] == "Ok" for t in data["traces"])
    page = (tmp_path / "report.html").read_text()
    assert "pykraft verify: PASSED" in page and page.count("data:image/png;base64,") == 3
    assert "Not checked by this run" in page and "fault runs with Kafka brokers" in page


class _Bumped(roles.Prospective):
    __slots__ = ()

    def __init__(self, epoch, *args, **kwargs):  # type: ignore[no-untyped-def]
        super().__init__(epoch + 1, *args, **kwargs)


def test_a_planted_bug_fails_the_run_with_its_reproduction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(state, "Prospective", _Bumped)  # tests/plants/prospective_bumps_epoch
    for targets in state.TRANSITIONS.values():
        if "prospective" in targets:
            monkeypatch.setitem(targets, "prospective", targets["prospective"] | {state.NEXT})
    assert _verify(tmp_path, "none") == 1
    data = json.loads((tmp_path / "verify.json").read_text())
    assert [f["invariant"] for f in data["failures"]] == ["spec:prospective-keeps-epoch"]
    assert data["failures"][0]["reproduce"].startswith("pykraft dev sim run --seed 1 ")
    assert data["traces"][0]["violation"].startswith("spec:prospective-keeps-epoch: trace line")
    assert "pykraft verify: FAILED" in (tmp_path / "report.html").read_text()
