"""Workloads 1, 3 and 4 on a 3-voter pykraft cluster of ``kraft_node.py`` processes.

    .venv/bin/python bench/wl_kraft.py [--seconds S]     # a quick throughput sweep, JSON out
    .venv/bin/python bench/wl_kraft.py --catchup new-voter --log-mib 1024 --snapshot-mib 256
    .venv/bin/python bench/wl_kraft.py --catchup follower --seconds 30

- ``run_throughput``: the appender load (``_load.py``) on the leader's process;
- ``run_failover``: steady load, SIGKILL the leader, time to the first commit of the new
  epoch (wall clock, measured by the surviving nodes), restart the victim, repeat;
- ``run_catchup``: stop a follower, load the leader for a while, restart the follower and
  time until its log end offset reaches the leader's;
- ``run_catchup_new_voter``: a leader with a big log whose start offset is past a snapshot;
  a new controller with an empty directory starts as an observer and asks AddRaftVoter for
  itself; time until its log end offset reaches the leader's (it fetches the snapshot first,
  then the log) and until AddRaftVoter is answered.

Catch-up rates are bytes received (the follower's log and snapshot files grew by them) over
seconds, from the process spawn (process start included) and from the first fetched bytes
the node saw (``first_data_t`` in its status: process start, storage open and leader
discovery excluded).

Every function reaps its processes when it returns or raises (``Cluster``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _common import Child, Cluster, free_ports, install_reaper
from _load import LoadSpec

LEADER_WAIT_S = 60.0
CATCHUP_WAIT_S = 600.0
ADDED_WAIT_S = 60.0
FILL_WAIT_S = 600.0
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
        voters: int = 3,
        spares: int = 0,
        dynamic: bool = False,
    ):
        """``voters`` initial voters (ids 1..voters); ``spares`` more ids for controllers
        that join later (``dynamic``: KIP-853 voters, see ``kraft_node.py --dynamic``)."""
        self.cluster = cluster
        self.linger_ms = linger_ms
        self.voters = voters
        self.dynamic = dynamic
        self.ports = free_ports(voters + spares)
        self.timeouts = timeouts
        self.steady_ms = steady_ms
        self.nodes: dict[int, Child] = {}
        self.incarnation = {i: 0 for i in range(1, voters + spares + 1)}
        self.last_started: dict[str, Any] = {}  # the last ``started`` message

    def node_dir(self, node_id: int) -> Path:
        return self.cluster.workdir / f"node-{node_id}"

    def start(self, node_id: int) -> Child:
        self.incarnation[node_id] += 1
        argv = [sys.executable, "bench/kraft_node.py", "--id", str(node_id)]
        argv += ["--ports", ",".join(map(str, self.ports[: self.voters]))]
        argv += ["--port", str(self.ports[node_id - 1])]
        argv += ["--dir", str(self.node_dir(node_id))]
        if self.dynamic:
            argv.append("--dynamic")
        argv += ["--election-timeout-ms", str(self.timeouts["election_timeout_ms"])]
        argv += ["--fetch-timeout-ms", str(self.timeouts["fetch_timeout_ms"])]
        argv += ["--linger-ms", str(self.linger_ms)]
        if self.steady_ms:
            argv += ["--steady-ms", str(self.steady_ms)]
        child = self.cluster.spawn(f"kraft-{node_id}.{self.incarnation[node_id]}", argv)
        self.last_started = child.expect("started", timeout_s=60)
        self.nodes[node_id] = child
        return child

    def start_all(self) -> None:
        for node_id in range(1, self.voters + 1):
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


def data_bytes(node_dir: Path) -> int:
    """Bytes of log segments and snapshots in a node's directory (not the bootstrap
    checkpoint ``0-0`` a formatted directory holds)."""
    total = 0
    for path in node_dir.rglob("*"):
        if path.suffix == ".log" or (
            path.name.endswith(".checkpoint") and not path.name.startswith("0" * 20 + "-")
        ):
            total += path.stat().st_size
    return total


def _tails(base: Path, what: str, lines: int = 8) -> str:
    """``what`` plus the last lines of each node's log under ``base`` (which is deleted)."""
    parts = [what]
    for path in sorted(base.glob("kraft-*.log")):
        tail = path.read_text(errors="replace").splitlines()[-lines:]
        parts.append(f"{path.name}: " + " | ".join(tail))
    return "; ".join(parts)


def _wait_offset(
    kc: KraftCluster, node_id: int, target: int, timeout_s: float
) -> tuple[float | None, dict[str, Any]]:
    """Poll ``node_id`` every 20 ms until its log end offset is ``target`` or more; the
    wall-clock time it was seen there (None on timeout) and its last status."""
    deadline = time.monotonic() + timeout_s
    st: dict[str, Any] = {}
    while time.monotonic() < deadline:
        st = kc.status(node_id)
        if st.get("log_end_offset", -1) >= target:
            return time.time(), st
        time.sleep(0.02)
    return None, st


def _rates(
    name: str, received: int, t_spawn: float, t_started: float, st: dict[str, Any], t_reach: float
) -> dict[str, Any]:
    first = st.get("first_data_t") or t_started
    incl, excl = t_reach - t_spawn, t_reach - first
    return {
        "name": name,
        "bytes": received,
        "seconds": incl,
        "mb_per_s": received / incl / 1e6,
        "includes_process_start": True,
        "seconds_from_first_data": excl,
        "mb_per_s_from_first_data": received / max(excl, 1e-6) / 1e6,
        "process_start_s": t_started - t_spawn,
        "first_data_after_start_s": first - t_started,
    }


def run_catchup(
    workdir: Path,
    *,
    down_s: float,
    spec: LoadSpec,
    profile_dir: Path | None = None,
    log: Any = print,
) -> dict[str, Any]:
    """Stop a follower, load the leader for ``down_s``, restart it, time its catch-up
    (``profile_dir``: a pyinstrument profile of the follower while it catches up)."""
    name = f"follower down {down_s:.0f} s"
    base = workdir / "kraft-catchup"
    try:
        with Cluster(base) as cluster:
            kc = KraftCluster(cluster, timeouts=KAFKA_DEFAULTS)
            kc.start_all()
            lid = kc.wait_leader()
            follower = next(i for i in (1, 2, 3) if i != lid)
            kc.nodes[follower].kill()
            kc.nodes[follower].proc.wait(timeout=10)
            load_spec = LoadSpec(**{**spec.as_dict(), "warmup_s": 0.0, "measure_s": down_s})
            kc.nodes[lid].request({"cmd": "load", "spec": load_spec.as_dict()}, "load", down_s + 60)
            target = kc.status(lid)["log_end_offset"]
            bytes_before = data_bytes(kc.node_dir(follower))
            t_spawn = time.time()
            child = kc.start(follower)
            t_started = float(kc.last_started.get("t", t_spawn))
            if profile_dir is not None:
                child.send({"cmd": "profile_start"})
            start_offset = kc.status(follower)["log_end_offset"]
            t_reach, st = _wait_offset(kc, follower, target, CATCHUP_WAIT_S)
            received = data_bytes(kc.node_dir(follower)) - bytes_before
            if profile_dir is not None:
                path = profile_dir / "profile-catchup-follower.txt"
                child.request({"cmd": "profile_stop", "path": str(path)}, "profiled", 60)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    if t_reach is None:
        return {"name": name, "error": f"did not catch up within {CATCHUP_WAIT_S:.0f} s"}
    result = _rates(name, received, t_spawn, t_started, st, t_reach)
    result["records_behind"] = target - start_offset
    result["bytes_behind"] = received
    log(
        f"  catch-up after {down_s:.0f} s down: {result['records_behind']:,} records "
        f"({received / 1e6:.1f} MB) in {result['seconds']:.2f} s = {result['mb_per_s']:.1f} MB/s "
        f"(from the first fetched bytes: {result['seconds_from_first_data']:.2f} s = "
        f"{result['mb_per_s_from_first_data']:.1f} MB/s; process start "
        f"{result['process_start_s']:.2f} s)"
    )
    return result


def run_catchup_new_voter(
    workdir: Path,
    *,
    log_bytes: int,
    snapshot_bytes: int,
    voters: int = 1,
    record_bytes: int = 10240,
    records_per_call: int = 100,
    profile_dir: Path | None = None,
    log: Any = print,
) -> dict[str, Any]:
    """Workload 4, new voter: ``voters`` dynamic (KIP-853) voters; the leader writes a little,
    takes a snapshot of ``snapshot_bytes`` synthetic records at its high watermark (its log
    start moves there), then appends ``log_bytes`` more (``records_per_call`` records of
    ``record_bytes`` per call, linger 0). A new controller with an empty directory starts as
    an observer and sends AddRaftVoter for itself at once (the leader waits until it has
    caught up, then commits the new voter set). Timed until its log end offset reaches the
    leader's, and until AddRaftVoter is answered. ``profile_dir``: pyinstrument profiles of
    the new voter and the leader during the catch-up go there."""
    new_id = voters + 1
    name = (
        f"new voter ({log_bytes / 2**20:.0f} MiB log + {snapshot_bytes / 2**20:.0f} MiB snapshot)"
    )
    base = workdir / "kraft-catchup-new-voter"
    setup: dict[str, Any] = {}
    try:
        with Cluster(base) as cluster:
            kc = KraftCluster(
                cluster, timeouts=KAFKA_DEFAULTS, linger_ms=0, voters=voters, spares=1, dynamic=True
            )
            kc.start_all()
            leader = kc.nodes[kc.wait_leader()]
            fill = {
                "cmd": "fill",
                "record_bytes": record_bytes,
                "records_per_call": records_per_call,
                "appenders": 4,
                "timeout_s": FILL_WAIT_S,
            }
            leader.request({**fill, "target_bytes": 1}, "filled", FILL_WAIT_S + 60)
            snap = leader.request({"cmd": "snapshot", "bytes": snapshot_bytes}, "snapshotted", 600)
            filled = leader.request({**fill, "target_bytes": log_bytes}, "filled", FILL_WAIT_S + 60)
            if not filled["reached"]:
                raise TimeoutError(f"the leader's log did not reach {log_bytes} B: {filled}")
            leader_id = kc.wait_leader()
            target = kc.status(leader_id)["log_end_offset"]
            setup = {
                "snapshot": snap,
                "fill": filled,
                "leader_id": leader_id,
                "leader_log_end_offset": target,
            }
            log(
                f"  built: snapshot {snap['size'] / 1e6:.0f} MB at offset {snap['offset']} "
                f"({snap['seconds']:.1f} s), log {filled['log_bytes'] / 1e6:.0f} MB to offset "
                f"{target} in {filled['seconds']:.1f} s "
                f"({filled['log_bytes'] / filled['seconds'] / 1e6:.0f} MB/s)"
            )
            t_spawn = time.time()
            child = kc.start(new_id)
            t_started = float(kc.last_started.get("t", t_spawn))
            if profile_dir is not None:
                child.send({"cmd": "profile_start"})
            child.send({"cmd": "add_self", "timeout_s": CATCHUP_WAIT_S})
            t_snap = None
            deadline = time.monotonic() + CATCHUP_WAIT_S
            t_reach = None
            st: dict[str, Any] = {}
            while time.monotonic() < deadline:
                st = kc.status(new_id)
                if t_snap is None and st.get("log_start_offset", 0) > 0:
                    t_snap = time.time()
                if st.get("log_end_offset", -1) >= target:
                    t_reach = time.time()
                    break
                time.sleep(0.02)
            received = data_bytes(kc.node_dir(new_id))
            if profile_dir is not None:
                for who, node in (("new-voter", child),):
                    path = profile_dir / f"profile-catchup-{who}.txt"
                    node.request({"cmd": "profile_stop", "path": str(path)}, "profiled", 60)
            added = None
            if t_reach is not None:
                try:
                    added = child.expect("added", timeout_s=ADDED_WAIT_S)
                except TimeoutError:
                    added = {
                        "t": time.time(),
                        "error": _tails(base, f"no answer in {ADDED_WAIT_S:.0f} s"),
                    }
            voter_ids = kc.status(new_id).get("voter_ids") if added else None
    finally:
        shutil.rmtree(base, ignore_errors=True)
    if t_reach is None:
        return {"name": name, "error": f"did not catch up within {CATCHUP_WAIT_S:.0f} s", **setup}
    result = _rates(name, received, t_spawn, t_started, st, t_reach)
    result.update(setup)
    result["snapshot_installed_s"] = (t_snap - t_spawn) if t_snap is not None else None
    assert added is not None
    result["add_voter_error"] = added["error"]
    result["add_voter_s"] = added["t"] - t_spawn
    result["voters_after"] = voter_ids
    log(
        f"  new voter: {received / 1e6:.0f} MB (snapshot {snap['size'] / 1e6:.0f} MB + log) "
        f"in {result['seconds']:.2f} s = {result['mb_per_s']:.1f} MB/s incl. process start "
        f"({result['process_start_s']:.2f} s); from the first fetched bytes "
        f"{result['seconds_from_first_data']:.2f} s = {result['mb_per_s_from_first_data']:.1f} "
        f"MB/s; snapshot installed at {result['snapshot_installed_s'] or 0:.2f} s; "
        f"AddRaftVoter answered at {result['add_voter_s']:.2f} s "
        f"({added['error'] or 'ok'}), voters {voter_ids}"
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--linger-ms", type=int, default=25)
    parser.add_argument(
        "--catchup",
        choices=("follower", "new-voter"),
        help="run one catch-up case instead of the throughput sweep",
    )
    parser.add_argument("--log-mib", type=int, default=64, help="new-voter log size")
    parser.add_argument("--snapshot-mib", type=int, default=16, help="new-voter snapshot size")
    parser.add_argument(
        "--profile-dir", type=Path, help="pyinstrument profiles of the catching-up node"
    )
    args = parser.parse_args()
    install_reaper()

    def say(line: str) -> None:
        print(line, file=sys.stderr)

    with tempfile.TemporaryDirectory(prefix="bench-kraft-") as tmp:
        out: Any
        if args.catchup == "follower":
            spec = LoadSpec(1024, 256, warmup_s=0.0, measure_s=args.seconds)
            out = run_catchup(
                Path(tmp), down_s=args.seconds, spec=spec, profile_dir=args.profile_dir, log=say
            )
        elif args.catchup == "new-voter":
            out = run_catchup_new_voter(
                Path(tmp),
                log_bytes=args.log_mib << 20,
                snapshot_bytes=args.snapshot_mib << 20,
                profile_dir=args.profile_dir,
                log=say,
            )
        else:
            specs = [
                LoadSpec(100, k, warmup_s=0.5, measure_s=args.seconds) for k in (1, 16, 256, 1024)
            ]
            out = run_throughput(Path(tmp), specs, linger_ms=args.linger_ms, log=say)
    json.dump(out, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
