"""``pykraft verify``'s report: one self-contained HTML file (plots embedded as PNG) and the
same figures as JSON, for an operator or an auditor (issue 49 item 5).

Theory of operation. ``pykraft.cli.verify`` runs the checks with a chosen budget and hands
their outcome here: the sweep (``SweepReport``: every safety invariant after every event,
the specification's transition rules as each transition happens, the heal phase's liveness
checks), and the trace files written for one seed per profile and walked again by the file
checker (``TraceCheck``). ``write_report`` draws three plots with matplotlib (Agg backend, no
display): runs and failures per profile, the share of simulated time without a leader, and
the faults injected; it writes ``report.html`` and ``verify.json`` in the output directory.
What the run did not check is said in the report, not left out.
"""

from __future__ import annotations

import base64
import html
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pykraft.sim.sweep import SweepReport

__all__ = ["TraceCheck", "write_report"]

NOT_CHECKED = (
    "The metadata operations of real clients through real brokers: their histories are "
    "checked for linearizability by the fault runs with Kafka brokers (pykraft dev faults "
    "run --brokers 3), not by this report.",
)


@dataclass(frozen=True, slots=True)
class TraceCheck:
    """One trace file walked by ``pykraft sim check-trace``'s rules."""

    profile: str
    seed: int
    path: str
    steps: int
    violation: str | None  # "rule: message", None when every step was allowed
    # The run's client appends as a history, checked by Porcupine (tools/linearize): its
    # answer ("Ok", "Illegal: <the failing operations>") and how many appends it held.
    appends: int = 0
    linearizability: str = ""


def write_report(
    out: Path, sweep: SweepReport, traces: Sequence[TraceCheck], budget: dict[str, Any]
) -> Path:
    """Write ``report.html`` and ``verify.json`` into ``out``; returns the HTML's path."""
    out.mkdir(parents=True, exist_ok=True)
    data = _as_json(sweep, traces, budget)
    (out / "verify.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    page = out / "report.html"
    page.write_text(_html(data, _plots(sweep)))
    return page


def _as_json(
    sweep: SweepReport, traces: Sequence[TraceCheck], budget: dict[str, Any]
) -> dict[str, Any]:
    profiles = {
        name: {
            "runs": s.runs,
            "failures": s.failures,
            "events": s.events,
            "leaderless_pct": 100.0 * s.leaderless_ms / max(s.sim_time_ms, 1),
            "faults": dict(sorted(s.faults.items())),
            "violations": dict(sorted(s.violations.items())),
        }
        for name, s in sorted(sweep.by_profile.items())
    }
    return {
        "ok": sweep.ok and all(t.violation is None and t.linearizability == "Ok" for t in traces),
        "budget": budget,
        "runs": sweep.runs,
        "events": sweep.events,
        "wall_s": round(sweep.wall_s, 1),
        "profiles": profiles,
        "failures": [
            {
                "profile": r.profile,
                "seed": r.seed,
                "invariant": r.violation.invariant if r.violation else None,
                "message": r.violation.message if r.violation else None,
                "reproduce": r.repro_command(),
            }
            for r in sweep.failures
        ],
        "traces": [
            {
                "profile": t.profile,
                "seed": t.seed,
                "path": t.path,
                "steps": t.steps,
                "violation": t.violation,
                "appends": t.appends,
                "linearizability": t.linearizability,
            }
            for t in traces
        ],
        "not_checked": list(NOT_CHECKED),
    }


def _plots(sweep: SweepReport) -> list[tuple[str, str]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = sorted(sweep.by_profile)
    stats = [sweep.by_profile[n] for n in names]
    figures: list[tuple[str, str]] = []

    def emit(title: str) -> None:
        buffer = io.BytesIO()
        plt.tight_layout()
        plt.savefig(buffer, format="png", dpi=90)
        plt.close()
        figures.append((title, base64.b64encode(buffer.getvalue()).decode()))

    plt.figure(figsize=(8, 3.2))
    plt.bar(names, [s.runs - s.failures for s in stats], label="passed")
    plt.bar(
        names,
        [s.failures for s in stats],
        bottom=[s.runs - s.failures for s in stats],
        label="failed",
        color="tab:red",
    )
    plt.xticks(rotation=30, ha="right")
    plt.ylabel("runs")
    plt.legend()
    emit("Runs per fault profile")
    plt.figure(figsize=(8, 3.2))
    plt.bar(names, [100.0 * s.leaderless_ms / max(s.sim_time_ms, 1) for s in stats])
    plt.xticks(rotation=30, ha="right")
    plt.ylabel("% of simulated time")
    emit("Time without a leader (faults injected on purpose)")
    kinds = sorted(
        {k for s in stats for k in s.faults if not k.startswith(("skipped_", "recovered"))}
    )
    plt.figure(figsize=(8, 3.6))
    bottom = [0] * len(names)
    for kind in kinds:
        counts = [s.faults.get(kind, 0) for s in stats]
        plt.bar(names, counts, bottom=bottom, label=kind)
        bottom = [b + c for b, c in zip(bottom, counts, strict=True)]
    plt.xticks(rotation=30, ha="right")
    plt.ylabel("faults injected")
    if kinds:
        plt.legend(fontsize=6, ncol=3)
    emit("Faults and operations injected")
    return figures


def _html(data: dict[str, Any], plots: list[tuple[str, str]]) -> str:
    esc = html.escape
    verdict = "PASSED" if data["ok"] else "FAILED"
    parts = [
        "<!doctype html><meta charset='utf-8'><title>pykraft verify</title>",
        "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}"
        ".bad{color:#b00}</style>",
        f"<h1>pykraft verify: {verdict}</h1>",
        f"<p>{data['runs']} simulator runs, {data['events']:,} events, "
        f"{len(data['failures'])} failures, in {data['wall_s']} s. Budget: "
        f"{esc(json.dumps(data['budget']))}.</p>",
        "<p>Each run checks every safety invariant after every event, walks every role "
        "transition through the KRaft specification's rules, and ends with the heal phase's "
        "liveness checks (docs/TLA-PROPERTIES.md), and checks its client appends' history "
        "for linearizability (appends-linearizable).</p>",
        "<h2>By fault profile</h2><table><tr><th>profile</th><th>runs</th><th>failures</th>"
        "<th>events</th><th>leaderless %</th><th>violations</th></tr>",
    ]
    for name, p in data["profiles"].items():
        cls = " class='bad'" if p["failures"] else ""
        parts.append(
            f"<tr{cls}><td>{esc(name)}</td><td>{p['runs']}</td><td>{p['failures']}</td>"
            f"<td>{p['events']:,}</td><td>{p['leaderless_pct']:.1f}</td>"
            f"<td>{esc(json.dumps(p['violations']))}</td></tr>"
        )
    parts.append("</table>")
    if data["failures"]:
        parts.append("<h2 class='bad'>Failures</h2><ul>")
        for f in data["failures"]:
            parts.append(
                f"<li><b>{esc(str(f['invariant']))}</b> ({esc(f['profile'])}, seed {f['seed']}): "
                f"{esc(str(f['message']))}<br><code>{esc(f['reproduce'])}</code></li>"
            )
        parts.append("</ul>")
    parts.append(
        "<h2>Trace files walked again; client append histories checked by Porcupine</h2><ul>"
    )
    for t in data["traces"]:
        result = "every step allowed" if t["violation"] is None else f"<b>{esc(t['violation'])}</b>"
        lin = t["linearizability"]
        lin = esc(lin) if lin == "Ok" else f"<b>{esc(lin)}</b>"
        parts.append(
            f"<li>{esc(t['profile'])} seed {t['seed']}: {t['steps']} transitions, {result} "
            f"(<code>{esc(t['path'])}</code>); {t['appends']} appends, linearizable: "
            f"{lin}</li>"
        )
    parts.append("</ul>")
    for title, png in plots:
        parts.append(
            f"<h2>{esc(title)}</h2><img alt='{esc(title)}' src='data:image/png;base64,{png}'>"
        )
    parts.append("<h2>Not checked by this run</h2><ul>")
    parts.extend(f"<li>{esc(line)}</li>" for line in data["not_checked"])
    parts.append("</ul>")
    return "\n".join(parts) + "\n"
