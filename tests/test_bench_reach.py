"""bench/ as issue 45 item 8 asks: every benchmark reachable from ``bench/run_all.py``, and
``bench/REPORT.md`` generated from the result files in ``bench/results/`` alone, the written
analysis (``bench/ANALYSIS.md``) apart and never written by code."""

from __future__ import annotations

import ast
import importlib
import json
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


def bench_module(name: str) -> ModuleType:
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    return importlib.import_module(name)


def reached_from(start: str) -> set[str]:
    """The bench modules ``start`` imports or names as a file to run, transitively."""
    local = {path.stem for path in BENCH.glob("*.py")}
    seen = {start}
    todo = [start]
    while todo:
        tree = ast.parse((BENCH / f"{todo.pop()}.py").read_text())
        names: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                names.add(Path(node.value).name.removesuffix(".py"))  # "bench/x.py" runs x
        for name in (names & local) - seen:
            seen.add(name)
            todo.append(name)
    return seen


def test_every_benchmark_is_reachable_from_run_all() -> None:
    benchmarks = {
        path.stem
        for path in BENCH.glob("*.py")
        if path.stem.startswith(("bench_", "wl_")) or path.stem.endswith("_node")
    }
    assert benchmarks - reached_from("run_all") == set()
    scripts = bench_module("scripts")
    run_all = bench_module("run_all")
    for row in scripts.SCRIPTS:
        assert (BENCH / f"{row.script}.py").exists(), row.script
        assert row.phase in run_all.PHASES


def test_the_reach_check_sees_a_benchmark_left_out() -> None:
    assert "bench_authorizer" in reached_from("scripts")
    assert "bench_authorizer" not in reached_from("wl_kraft")


def test_report_md_is_what_the_result_files_give(tmp_path: Path) -> None:
    """The committed REPORT.md is exactly what the committed result files render to, and
    rendering writes REPORT.md and nothing else (ANALYSIS.md is not code's to write)."""
    report = bench_module("report")
    shutil.copytree(BENCH / "results", tmp_path / "results")
    path = report.write_published(tmp_path / "results", tmp_path)
    assert path == tmp_path / "REPORT.md"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["REPORT.md", "results"]
    assert path.read_text() == (BENCH / "REPORT.md").read_text()
    assert "ANALYSIS.md" in path.read_text()


@pytest.mark.parametrize("stdout", ["events/s = 12,345\n", ""])
def test_a_published_phase_shows_its_own_figures(tmp_path: Path, stdout: str) -> None:
    results_mod = bench_module("report_results")
    report = bench_module("report")
    results = {
        "machine": {"cpu_model": "test cpu", "nproc": 2},
        "started": 0,
        "quick": True,
        "elr": {"script": "bench_elr", "rc": 0, "stdout": stdout, "figures": [{"p99_ms": 7.25}]},
    }
    results_mod.save_result(tmp_path / "results", "elr", results)
    saved = json.loads((tmp_path / "results" / "elr.json").read_text())
    assert saved["result"] == results["elr"] and saved["phase"] == "elr"
    text = report.write_published(tmp_path / "results", tmp_path).read_text()
    assert "## elr" in text and "quick smoke run, on test cpu x 2" in text
    assert "| p99_ms |" in text and "| 7.25 |" in text
    assert ("events/s = 12,345" in text) == bool(stdout)
