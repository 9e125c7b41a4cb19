"""Workload 2: the appender load on a 3-process PySyncObj cluster (with and without journal).

    .venv/bin/python bench/wl_syncobj.py [--journal] [--seconds S]   # one quick sweep, JSON out

``run_syncobj`` is what ``run_all.py`` calls: it starts three ``syncobj_node.py`` processes
on 127.0.0.1, waits for a leader, runs every ``LoadSpec`` on the leader (the appenders live
in the leader's process, as pykraft's do) and reaps the processes, on errors too.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _common import Child, Cluster, free_ports, install_reaper
from _load import LoadSpec

LEADER_WAIT_S = 30.0


def wait_leader(nodes: Sequence[Child], timeout_s: float = LEADER_WAIT_S) -> Child:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for node in nodes:
            status = node.request({"cmd": "status"}, "status", timeout_s=10)
            if status["leader"] and status["ready"]:
                return node
        time.sleep(0.2)
    raise TimeoutError(f"no PySyncObj leader within {timeout_s:.0f} s")


def run_syncobj(
    workdir: Path,
    specs: Sequence[LoadSpec],
    *,
    journal: bool,
    batch: bool = True,
    log: Any = print,
) -> list[dict[str, Any]]:
    variant = "pysyncobj-" + ("journal" if journal else "memory") + ("" if batch else "-nobatch")
    ports = free_ports(3)
    results: list[dict[str, Any]] = []
    with Cluster(workdir / variant) as cluster:
        nodes = []
        for i, port in enumerate(ports):
            partners = ",".join(str(p) for p in ports if p != port)
            argv = [sys.executable, "bench/syncobj_node.py", "--port", str(port)]
            argv += ["--partners", partners, "--batch", str(int(batch))]
            if journal:
                argv += ["--journal", str(cluster.workdir / f"journal-{i}.bin")]
            nodes.append(cluster.spawn(f"{variant}-{i}", argv))
        for node in nodes:
            node.expect("started", timeout_s=30)
        leader = wait_leader(nodes)
        for spec in specs:
            timeout = spec.warmup_s + spec.measure_s + 30
            result = leader.request({"cmd": "load", "spec": spec.as_dict()}, "load", timeout)[
                "result"
            ]
            result["system"] = variant
            results.append(result)
            log(
                f"  {variant:18s} {spec.record_bytes:6d} B K={spec.appenders:4d} "
                f"rate={spec.rate_rps or 'max'!s:>8s}: {result['records_per_s']:10,.0f} rec/s "
                f"p50 {result['p50_ms'] or 0:7.2f} ms p99 {result['p99_ms'] or 0:7.2f} ms"
            )
        for node in nodes:
            node.send({"cmd": "quit"})
    return results


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--journal", action="store_true")
    parser.add_argument("--no-batch", action="store_true")
    parser.add_argument("--seconds", type=float, default=2.0)
    args = parser.parse_args()
    install_reaper()
    specs = [LoadSpec(100, k, warmup_s=0.5, measure_s=args.seconds) for k in (1, 16, 256, 1024)]
    with tempfile.TemporaryDirectory(prefix="bench-syncobj-") as tmp:
        results = run_syncobj(
            Path(tmp), specs, journal=args.journal, batch=not args.no_batch, log=_stderr
        )
    json.dump(results, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
