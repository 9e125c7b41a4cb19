"""The report job: sweep and ingest tables -> ``report.md`` with PNG plots.

Spark reduces the tables to a few hundred rows (the per-profile aggregates, the distinct
leader changes); matplotlib (Agg backend, no display) draws them. The report is written to a
local directory: plots are files a reader opens next to the markdown.

Plots:
* ``leaderless.png``: p50 / p99 of per-run time without a leader, by fault profile.
* ``epochs_prevote.png``: epochs per simulated hour with and without Pre-Vote, by profile
  (KIP-996's effect: disrupted followers no longer bump the epoch), when the sweep ran both.
* ``leader_changes.png``: epoch and leader of every LeaderChange record over log offsets.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pykraft.pipeline.session import join_path

LEADER_CHANGES_PLOTTED_MAX = 100_000


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_leaderless(profiles: Sequence[dict[str, Any]], path: Path) -> None:
    rows = [p for p in profiles if p["pre_vote"]] or list(profiles)
    names = [p["profile"] for p in rows]
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    xs = range(len(names))
    ax.bar([x - 0.2 for x in xs], [p["leaderless_ms_p50"] or 0 for p in rows], 0.4, label="p50")
    ax.bar([x + 0.2 for x in xs], [p["leaderless_ms_p99"] or 0 for p in rows], 0.4, label="p99")
    ax.set_xticks(list(xs), names)
    ax.set_ylabel("time without a leader per run (ms)")
    ax.set_title("Time without a leader by fault profile")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_epochs_prevote(profiles: Sequence[dict[str, Any]], path: Path) -> bool:
    """False (no plot) unless some profile ran both with and without Pre-Vote."""
    by = {(p["profile"], p["pre_vote"]): p["epochs_per_hour"] for p in profiles}
    names = sorted({name for name, _ in by if (name, True) in by and (name, False) in by})
    if not names:
        return False
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    xs = range(len(names))
    ax.bar([x - 0.2 for x in xs], [by[(n, True)] for n in names], 0.4, label="Pre-Vote on")
    ax.bar([x + 0.2 for x in xs], [by[(n, False)] for n in names], 0.4, label="Pre-Vote off")
    ax.set_xticks(list(xs), names)
    ax.set_ylabel("epochs per simulated hour")
    ax.set_title("Epoch growth with and without Pre-Vote (KIP-996)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def plot_leader_changes(changes: Sequence[tuple[int, int, int]], path: Path) -> None:
    """``changes``: distinct (offset, epoch, leader id)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    for leader in sorted({c[2] for c in changes}):
        pts = [c for c in changes if c[2] == leader]
        ax.step(
            [c[0] for c in pts], [c[1] for c in pts], "o", where="post", label=f"leader {leader}"
        )
    ax.set_xlabel("log offset")
    ax.set_ylabel("epoch")
    ax.set_title("Leader changes over the log")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return lines


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def sweep_section(spark: SparkSession, sweep: str, out: Path) -> list[str]:
    rows = spark.read.parquet(join_path(sweep, "profiles")).orderBy(
        "profile", F.col("pre_vote").desc()
    )
    profiles = [r.asDict(recursive=True) for r in rows.collect()]
    lines = ["## Simulation sweep", ""]
    lines += _table(
        [
            "profile",
            "pre-vote",
            "runs",
            "violations",
            "elections/h",
            "epochs/h",
            "leaderless p50 ms",
            "p99 ms",
            "time to elect p50 ms",
            "p99 ms",
        ],
        [
            (
                p["profile"],
                "on" if p["pre_vote"] else "off",
                p["runs"],
                p["violations"],
                p["elections_per_hour"],
                p["epochs_per_hour"],
                p["leaderless_ms_p50"],
                p["leaderless_ms_p99"],
                p["time_to_elect_ms_p50"],
                p["time_to_elect_ms_p99"],
            )
            for p in profiles
        ],
    )
    total = sum(p["violations"] for p in profiles)
    lines += ["", f"Invariant violations: {total}" + (" (none)" if total == 0 else "")]
    for p in profiles:
        for v in p["violation_seeds"] or []:
            lines.append(f"- {p['profile']}: seed {v['seed']} broke {v['violation_invariant']}")
    if profiles:
        plot_leaderless(profiles, out / "leaderless.png")
        lines += ["", "![time without a leader](leaderless.png)"]
        if plot_epochs_prevote(profiles, out / "epochs_prevote.png"):
            lines += ["", "![epochs per hour with and without Pre-Vote](epochs_prevote.png)"]
    return [*lines, ""]


def ingest_section(spark: SparkSession, ingest: str, out: Path) -> list[str]:
    committed = spark.read.parquet(join_path(ingest, "committed")).orderBy("node").collect()
    batches = (
        spark.read.parquet(join_path(ingest, "batches"))
        .groupBy("node")
        .agg(
            F.count("*").alias("batches"),
            F.sum("size_bytes").alias("bytes"),
            F.sum(F.col("is_control").cast("int")).alias("control"),
            F.sum((~F.col("crc_ok")).cast("int")).alias("bad_crc"),
        )
    )
    per_node = {r.node: r for r in batches.collect()}
    lines = ["## Ingested logs", ""]
    lines += _table(
        ["node", "log start", "log end", "committed below", "rule", "batches", "bytes", "bad CRC"],
        [
            (
                c.node,
                c.log_start_offset,
                c.log_end_offset,
                c.committed_offset,
                c.source,
                getattr(per_node.get(c.node), "batches", 0),
                getattr(per_node.get(c.node), "bytes", 0),
                getattr(per_node.get(c.node), "bad_crc", 0),
            )
            for c in committed
        ],
    )
    changes = [
        (int(r.offset), int(r.epoch), int(r.leader_id))
        for r in spark.read.parquet(join_path(ingest, "leader_changes"))
        .where(F.col("source") == "segment")
        .select("offset", "epoch", "leader_id")
        .distinct()
        .orderBy("offset")
        .limit(LEADER_CHANGES_PLOTTED_MAX)
        .collect()
    ]
    lines += ["", f"Leader changes in the logs: {len(changes)}"]
    if changes:
        plot_leader_changes(changes, out / "leader_changes.png")
        lines += ["", "![leader changes over offsets](leader_changes.png)"]
    return [*lines, ""]


def run_report(spark: SparkSession, *, sweep: str | None, ingest: str | None, out: str) -> Path:
    """Write ``out/report.md`` (and its PNGs); returns the markdown's path."""
    directory = Path(out)
    directory.mkdir(parents=True, exist_ok=True)
    lines = ["# pykraft pipeline report", ""]
    if sweep:
        lines += [f"Sweep: `{sweep}`", "", *sweep_section(spark, sweep, directory)]
    if ingest:
        lines += [f"Ingest: `{ingest}`", "", *ingest_section(spark, ingest, directory)]
    path = directory / "report.md"
    tmp = directory / f".report.md.{os.getpid()}"
    tmp.write_text("\n".join(lines))
    tmp.replace(path)
    return path
