"""The benchmark report's plots (matplotlib, Agg backend) and the row helpers its tables
share with them: each plot writes one PNG beside REPORT.md and returns its file name."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

Row = dict[str, Any]


def fmt(v: float | None, unit: str = "", digits: int = 0) -> str:
    if v is None:
        return "n/a"
    return f"{v:,.{digits}f}{unit}"


def closed_loop(rows: Iterable[Row], rpc: int | None = 1) -> list[Row]:
    """Closed-loop rows; with ``rpc``, only those with that many records per call."""
    return [
        r
        for r in rows
        if r.get("rate_rps") is None and (rpc is None or r.get("records_per_call", 1) == rpc)
    ]


def best_row(rows: Iterable[Row], key: str = "records_per_s") -> Row | None:
    rows = list(rows)
    return max(rows, key=lambda r: r[key]) if rows else None


def systems_of(rows: Iterable[Row]) -> list[str]:
    return sorted({r["system"] for r in rows})


# ------------------------------------------------------------------ plots


def _save(fig: Any, out: Path, name: str) -> str:
    """``fig`` written as ``out/name`` (PNG) and closed; its file name."""
    fig.tight_layout()
    fig.savefig(out / name, dpi=110)
    plt.close(fig)
    return name


def plot_throughput(rows: list[Row], size: int, out: Path) -> str:
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for system in systems_of(rows):
        pts = sorted(
            (r["appenders"], r["records_per_s"])
            for r in closed_loop(rows)
            if r["system"] == system and r["record_bytes"] == size
        )
        if pts:
            ax.plot(*zip(*pts, strict=True), marker="o", label=system)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("concurrent appenders K (closed loop: offered load grows with K)")
    ax.set_ylabel("committed records/s")
    ax.set_title(f"Throughput vs offered load, {size}-byte records, 3 voters")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, out, f"throughput-{size}B.png")


def plot_latency(rows: list[Row], size: int, out: Path) -> str:
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for system in systems_of(rows):
        pts = sorted(
            (r["appenders"], r["p50_ms"], r["p99_ms"], r["p999_ms"])
            for r in closed_loop(rows)
            if r["system"] == system and r["record_bytes"] == size and r["p50_ms"] is not None
        )
        if not pts:
            continue
        ks = [p[0] for p in pts]
        (line,) = ax.plot(ks, [p[1] for p in pts], marker="o", label=f"{system} p50")
        ax.plot(ks, [p[2] for p in pts], ls="--", color=line.get_color(), label=f"{system} p99")
        ax.plot(ks, [p[3] for p in pts], ls=":", color=line.get_color())
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("concurrent appenders K")
    ax.set_ylabel("commit latency, ms (solid p50, dashed p99, dotted p99.9)")
    ax.set_title(f"Commit latency (append call to commit callback), {size}-byte records")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    return _save(fig, out, f"latency-{size}B.png")


def plot_ratio(ratios: list[tuple[str, float]], out: Path) -> str:
    fig, ax = plt.subplots(figsize=(7, 4.2))
    labels = [r[0] for r in ratios]
    ax.bar(range(len(ratios)), [r[1] for r in ratios], color="tab:blue")
    ax.axhline(4.0, color="tab:red", ls="--", label="target 4x")
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xticks(range(len(ratios)), labels, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("pykraft / best PySyncObj (records/s)")
    ax.set_title("Throughput ratio at equal record size and concurrency")
    ax.legend()
    return _save(fig, out, "ratio.png")


def plot_failover(failovers: list[Row], out: Path) -> str:
    fig, ax = plt.subplots(figsize=(6, 4))
    data = [f["samples_ms"] for f in failovers]
    ax.boxplot(data, showfliers=True)
    for i, samples in enumerate(data, start=1):
        ax.scatter([i] * len(samples), samples, s=10, alpha=0.6)
    ax.set_xticks(range(1, len(failovers) + 1), [f["name"] for f in failovers])
    ax.set_ylabel("SIGKILL of leader -> first commit in new epoch, ms")
    ax.set_title("Failover")
    ax.grid(True, axis="y", alpha=0.3)
    return _save(fig, out, "failover.png")


def plot_kafka_anchor(points: list[Row], size: int, out: Path) -> str:
    """Committed records/s and p99 against the offered rate, Kafka's TestRaftServer beside
    pykraft, one record size."""
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    for system, color in (("kafka", "tab:orange"), ("pykraft", "tab:blue")):
        rows = sorted(
            (
                r
                for r in points
                if r["system"] == system and r["record_bytes"] == size and "error" not in r
            ),
            key=lambda r: r["offered_rps"],
        )
        offered = [r["offered_rps"] for r in rows]
        a1.plot(offered, [r["records_per_s"] for r in rows], "o-", color=color, label=system)
        a2.plot(offered, [r["p99_ms"] for r in rows], "o-", color=color, label=f"{system} p99")
        a2.plot(offered, [r["p75_ms"] for r in rows], "x--", color=color, label=f"{system} p75")
    lim = max((r["offered_rps"] for r in points if r["record_bytes"] == size), default=1)
    a1.plot([0, lim], [0, lim], color="grey", lw=0.8, ls=":", label="offered")
    a1.set_xlabel("offered records/s")
    a1.set_ylabel("committed records/s")
    a2.set_xlabel("offered records/s")
    a2.set_ylabel("commit latency, ms (Kafka's histogram stops at 250)")
    for ax in (a1, a2):
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"pykraft vs Kafka's raft (TestRaftServer), {size} B records, 3 voters, fsync")
    return _save(fig, out, f"kafka-anchor-{size}.png")


# The scale curves (issue 30): (row key, axis label, how a row's value is read).
SCALE_PANELS: tuple[tuple[str, str], ...] = (
    ("ready_s", "ready: spawn -> CreateTopics (s)"),
    ("standby_catchup_s", "empty standby caught up (s)"),
    ("bytes_per_partition", "bytes per partition"),
    ("create_partitions_per_s", "CreateTopics (partitions/s)"),
    ("failover_s", "kill -9 active -> CreateTopics (s)"),
    ("restart_image_s", "restart -> image at the high watermark (s)"),
    ("snapshot_write_s", "snapshot write (s)"),
    ("broker_start_s", "a Kafka broker started -> RUNNING (s)"),
)


def scale_value(row: Row, key: str) -> float | None:
    """A scale row's value for one panel: lists by their median; bytes per partition as
    pykraft's RSS and Kafka's heap after a full GC."""
    if key == "bytes_per_partition":
        key = (
            "heap_bytes_per_partition"
            if "heap_bytes_per_partition" in row
            else ("rss_bytes_per_partition")
        )
    value = row.get(key)
    if isinstance(value, list):
        value = sorted(value)[len(value) // 2] if value else None
    return None if value is None else float(value)


def plot_scale(rows: list[Row], out: Path) -> str:
    """The cost curves against the partition count, pykraft beside Kafka's controllers."""
    fig, axes = plt.subplots(2, 4, figsize=(16, 6.5))
    for ax, (key, label) in zip(axes.flat, SCALE_PANELS, strict=True):
        for system, color in (("pykraft", "tab:blue"), ("kafka", "tab:orange")):
            pts = sorted(
                (r["partitions"], v)
                for r in rows
                if r["controllers"] == system
                and "error" not in r
                and (v := scale_value(r, key)) is not None
            )
            if pts:
                name = (
                    system
                    if key != "bytes_per_partition"
                    else ("pykraft (RSS)" if system == "pykraft" else "Kafka (heap after GC)")
                )
                ax.plot(*zip(*pts, strict=True), marker="o", color=color, label=name)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("partitions (RF 3)")
        ax.set_title(label, fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("Controller cost curves: pykraft vs Apache Kafka 4.3.1's controllers")
    return _save(fig, out, "scale-curves.png")


def plot_heartbeats(rows: list[Row], out: Path) -> str:
    """Heartbeat latency and the active controller's CPU against the broker count."""
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    for system, color in (("pykraft", "tab:blue"), ("kafka", "tab:orange")):
        pts = sorted(
            (r["brokers"], r["p50_ms"], r["p99_ms"], r["controller_cpu_pct"])
            for r in rows
            if r["controllers"] == system and "error" not in r and r.get("p99_ms") is not None
        )
        if not pts:
            continue
        xs = [p[0] for p in pts]
        a1.plot(xs, [p[2] for p in pts], marker="o", color=color, label=f"{system} p99")
        a1.plot(xs, [p[1] for p in pts], ls="--", color=color, label=f"{system} p50")
        a2.plot(xs, [p[3] for p in pts], marker="o", color=color, label=system)
    for ax in (a1, a2):
        ax.set_xscale("log")
        ax.set_xlabel("brokers (simulated, a heartbeat every 2 s each)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    a1.set_yscale("log")
    a1.set_ylabel("heartbeat latency, ms")
    a1.set_title("BrokerHeartbeat round trip")
    a2.set_ylabel("active controller CPU, % of a core")
    a2.set_title("Active controller CPU")
    return _save(fig, out, "scale-heartbeats.png")
