"""The published result files (``bench/results/*.json``) and the report sections made from
them alone.

``run_all.py --publish`` saves each phase it ran as ``results/<phase>.json``: the phase's
figures with the machine and the run they come from (``save_result``). Scripts that write
their own figures (``bench_authorizer.py --out``, ``bench_balance.py --out``) may also be
saved there directly. ``report.write_published`` reads every file back: run_all's own
phases go through its section renderers, every other file through :func:`generic_section`,
which shows what the file holds (a table of its rows, its scalar figures, a script's output)
and nothing else. The written analysis lives in ``bench/ANALYSIS.md``, which no code writes.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

Json = Any  # a value read from a JSON file


def save_result(results_dir: Path, name: str, results: dict[str, Any]) -> Path:
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / f"{name}.json"
    saved = {
        "phase": name,
        "machine": results.get("machine"),
        "started": results.get("started"),
        "quick": bool(results.get("quick")),
        "result": results[name],
    }
    path.write_text(json.dumps(saved, indent=1) + "\n")
    return path


def load_results(results_dir: Path) -> dict[str, Json]:
    """Every result file, by its stem, in name order."""
    return {path.stem: json.loads(path.read_text()) for path in sorted(results_dir.glob("*.json"))}


def provenance(saved: Json) -> str:
    """Where a file saved by ``save_result`` comes from, in one line."""
    machine = saved.get("machine") or {}
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(saved.get("started") or 0))
    kind = "quick smoke run" if saved.get("quick") else "full run"
    return f"run {when}, {kind}, on {machine.get('cpu_model')} x {machine.get('nproc')}"


def _cell(value: Json) -> str:
    if isinstance(value, float):
        return f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, list) and all(isinstance(v, int | float | str) for v in value):
        if len(value) <= 10 or not all(isinstance(v, int | float) for v in value):
            return ", ".join(_cell(v) for v in value)
        return f"{_cell(min(value))}-{_cell(max(value))} ({len(value)} values)"
    if isinstance(value, dict | list):
        return f"({len(value)} items)"
    return "" if value is None else str(value).replace("|", "\\|")


def _flat(value: Json) -> bool:
    """A value that fits in one cell: a scalar or a list of scalars."""
    if isinstance(value, list):
        return all(not isinstance(v, dict | list) for v in value)
    return not isinstance(value, dict)


def _table(rows: list[dict[str, Json]]) -> list[str]:
    head: list[str] = []
    for row in rows:
        head += [key for key in row if key not in head]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_cell(row.get(key)) for key in head) + " |" for row in rows]
    return [*lines, ""]


def figures(value: Json, depth: int = 0) -> list[str]:
    """A JSON value as Markdown: rows as a table, scalars as a list, nested dicts in turn,
    a script's stdout verbatim."""
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return _table(value)
    if not isinstance(value, dict):
        return [f"- {_cell(value)}", ""]
    lines: list[str] = []
    scalars = {k: v for k, v in value.items() if _flat(v) and k != "stdout"}
    lines += [f"- {key}: {_cell(v)}" for key, v in scalars.items()]
    if scalars:
        lines.append("")
    if isinstance(value.get("stdout"), str):
        lines += ["```", value["stdout"].strip(), "```", ""]
    for key, inner in value.items():
        if not _flat(inner) and inner:
            lines += [f"{'#' * min(depth + 3, 6)} {key}", "", *figures(inner, depth + 1)]
    return lines


def generic_section(stem: str, saved: Json) -> list[str]:
    lines = [f"## {stem}", "", f"From `bench/results/{stem}.json`"]
    if isinstance(saved, dict) and "phase" in saved:
        lines[-1] += f" ({provenance(saved)})"
        body = saved.get("result")
    else:
        body = saved  # written by the script itself
    return [*lines, "", *figures(body)]
