"""Workloads 1, 3 and 4 on a 3-voter pykraft cluster of ``kraft_node.py`` processes.

    .venv/bin/python bench/wl_kraft.py [--seconds S]     # a quick throughput sweep, JSON out

- ``run_throughput``: the appender load (``_load.py``) on the leader's process;
- ``run_failover``: steady load, SIGKILL the leader, time to the first commit of the new
  epoch (wall clock, measured by the surviving nodes), restart the victim, repeat;
- ``run_catchup``: stop a follower, load the leader for a while, restart the follower and
  time until its log end offset reaches the leader's.

Every function reaps its processes when it returns or raises (``Cluster``).
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

LEADER_WAIT_S = 60.0
KAFKA_DEFAULTS = {"election_timeout_ms": 1000, "fetch_timeout_ms": 2000}
TUNED = {"election_timeout_ms": 100, "fetch_timeout_ms": 200}


class KraftCluster:
    """Three voters, ids 1..3, each a ``kraft_node.py`` child with its own log dir."""

    def __init__(
        self,
        cluster: Cluster,
        *,
        timeouts: dict[str, int],
        steady_ms: int = 0,
        linger_ms: int = 25,
    ):
        self.cluster = cluster
        self.linger_ms = linger_ms
        self.ports = free_ports(3)
        self.timeouts = timeouts
        self.steady_ms = steady_ms
        self.nodes: dict[int, Child] = {}
        self.incarnation = {1: 0, 2: 0, 3: 0}

    def start(self, node_id: int) -> Child:
        self.incarnation[node_id] += 1
        argv = [sys.executable, "bench/kraft_node.py", "--id", str(node_id)]
        argv += ["--ports", ",".join(map(str, self.ports))]
        argv += ["--dir", str(self.cluster.workdir / f"node-{node_id}")]
        argv += ["--election-timeout-ms", str(self.timeouts["election_timeout_ms"])]
        argv += ["--fetch-timeout-ms", str(self.timeouts["fetch_timeout_ms"])]
        argv += ["--linger-ms", str(self.linger_ms)]
        if self.steady_ms:
            argv += ["--steady-ms", str(self.steady_ms)]
        child = self.cluster.spawn(f"kraft-{node_id}.{self.incarnation[node_id]}", argv)
        child.expect("started", timeout_s=60)
        self.nodes[node_id] = child
        return child

    def start_all(self) -> None:
        for node_id in (1, 2, 3):
            self.start(node_id)

    def status(self, node_id: int) -> dict[str, Any]:
        return self.nodes[node_id].request({"cmd": "status"}, "status", timeout_s=10)

    def wait_leader(self, timeout_s: float = LEADER_WAIT_S, *, all_agree: bool = True) -> int:
        """The id of the leader once every live node names it (bounded by time)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            statuses = {i: self.status(i) for i, c in self.nodes.items() if c.proc.poll() is None}
            leaders = [i for i, s in statuses.items() if s["role"] == "leader"]
            if len(leaders) == 1:
                lid, epoch = leaders[0], statuses[leaders[0]]["epoch"]
                agree = all(
                    s.get("leader_id") == lid and s.get("epoch") == epoch for s in statuses.values()
                )
                if agree or not all_agree:
                    return lid
            time.sleep(0.1)
        raise TimeoutError(f"no agreed leader within {timeout_s:.0f} s")


def run_throughput(
    workdir: Path,
    specs: Sequence[LoadSpec],
    *,
    linger_ms: int = 25,
    profile_last: Path | None = None,
    log: Any = print,
) -> list[dict[str, Any]]:
    """Each spec on the leader's process; ``profile_last``: run the last under pyinstrument."""
    system = f"pykraft-linger{linger_ms}"
    results: list[dict[str, Any]] = []
    with Cluster(workdir / system) as cluster:
        kc = KraftCluster(cluster, timeouts=KAFKA_DEFAULTS, linger_ms=linger_ms)
        kc.start_all()
        leader = kc.nodes[kc.wait_leader()]
        for n, spec in enumerate(specs):
            timeout = spec.warmup_s + spec.measure_s + 60
            cmd: dict[str, Any] = {"cmd": "load", "spec": spec.as_dict()}
            if profile_last is not None and n == len(specs) - 1:
                cmd["profile"] = str(profile_last)
            reply = leader.request(cmd, "load", timeout)
            result = reply["result"]
            result["system"] = system
            results.append(result)
            log(
                f"  {system:18s} {spec.record_bytes:6d} B K={spec.appenders:4d} "
                f"rate={spec.rate_rps or 'max'!s:>8s}: {result['records_per_s']:10,.0f} rec/s "
                f"p50 {result['p50_ms'] or 0:7.2f} ms p99 {result['p99_ms'] or 0:7.2f} ms "
                f"errors {result['errors']}"
            )
    return results


def run_failover(
    workdir: Path, *, name: str, timeouts: dict[str, int], repetitions: int, log: Any = print
) -> dict[str, Any]:
    """SIGKILL the leader ``repetitions`` times; seconds from kill to first new-epoch commit."""
    samples_ms: list[float] = []
    failures = 0
    with Cluster(workdir / f"kraft-failover-{name}") as cluster:
        kc = KraftCluster(cluster, timeouts=timeouts, steady_ms=5)
        kc.start_all()
        for rep in range(repetitions):
            lid = kc.wait_leader()
            old_epoch = kc.status(lid)["epoch"]
            time.sleep(0.5)  # steady load in the current epoch
            survivors = [c for i, c in kc.nodes.items() if i != lid]
            t_kill = time.time()
            kc.nodes[lid].kill()
            kc.nodes[lid].proc.wait(timeout=10)
            try:
                t_commit = _first_commit_after(survivors, old_epoch, timeout_s=60)
                samples_ms.append((t_commit - t_kill) * 1000)
                log(f"  failover {name} #{rep + 1}: {samples_ms[-1]:7.0f} ms")
            except TimeoutError:
                failures += 1
                log(f"  failover {name} #{rep + 1}: no commit within 60 s")
            kc.start(lid)  # same dir: it rejoins as a follower
    ordered = sorted(samples_ms)
    return {
        "name": name,
        "timeouts": timeouts,
        "samples_ms": samples_ms,
        "p50_ms": ordered[(len(ordered) - 1) // 2] if ordered else None,
        "max_ms": ordered[-1] if ordered else None,
        "failures": failures,
    }


def _first_commit_after(nodes: Sequence[Child], old_epoch: int, timeout_s: float) -> float:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for node in nodes:
            try:
                msg = node.expect("first_commit", timeout_s=0.05)
            except TimeoutError:
                continue
            if msg["epoch"] > old_epoch:
                return float(msg["t"])
    raise TimeoutError


def run_catchup(
    workdir: Path, *, down_s: float, spec: LoadSpec, log: Any = print
) -> dict[str, Any]:
    """Stop a follower, load the leader for ``down_s``, restart it, time its catch-up."""
    with Cluster(workdir / "kraft-catchup") as cluster:
        kc = KraftCluster(cluster, timeouts=KAFKA_DEFAULTS)
        kc.start_all()
        lid = kc.wait_leader()
        follower = next(i for i in (1, 2, 3) if i != lid)
        kc.nodes[follower].kill()
        kc.nodes[follower].proc.wait(timeout=10)
        load_spec = LoadSpec(**{**spec.as_dict(), "warmup_s": 0.0, "measure_s": down_s})
        kc.nodes[lid].request({"cmd": "load", "spec": load_spec.as_dict()}, "load", down_s + 60)
        target = kc.status(lid)["log_end_offset"]
        t0 = time.monotonic()
        kc.start(follower)
        start_offset = kc.status(follower)["log_end_offset"]
        deadline = t0 + 600
        reached = None
        while time.monotonic() < deadline:
            st = kc.status(follower)
            if st["log_end_offset"] >= target:
                reached = time.monotonic()
                break
            time.sleep(0.02)
        leader_dir = cluster.workdir / f"node-{lid}"
        log_bytes = sum(f.stat().st_size for f in leader_dir.rglob("*.log"))
    if reached is None:
        return {"name": "follower-down", "error": "did not catch up within 600 s"}
    elapsed = reached - t0
    records_behind = target - start_offset
    bytes_behind = log_bytes * records_behind / max(target, 1)
    result = {
        "name": f"follower down {down_s:.0f} s",
        "records_behind": records_behind,
        "bytes_behind": bytes_behind,
        "seconds": elapsed,
        "mb_per_s": bytes_behind / elapsed / 1e6,
        "includes_process_start": True,
    }
    log(
        f"  catch-up after {down_s:.0f} s down: {records_behind:,} records "
        f"({bytes_behind / 1e6:.1f} MB) in {elapsed:.2f} s = {result['mb_per_s']:.1f} MB/s"
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--linger-ms", type=int, default=25)
    args = parser.parse_args()
    install_reaper()
    specs = [LoadSpec(100, k, warmup_s=0.5, measure_s=args.seconds) for k in (1, 16, 256, 1024)]
    with tempfile.TemporaryDirectory(prefix="bench-kraft-") as tmp:
        results = run_throughput(
            Path(tmp), specs, linger_ms=args.linger_ms, log=lambda s: print(s, file=sys.stderr)
        )
    json.dump(results, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
