"""The fault run's monitor: every 200 ms each node's raft metrics (state, leader, epoch, high
watermark), judged as they come: time without an agreed leader (a majority of voters naming
one leader in one epoch, whose high watermark moves), two leaders in one epoch, a high
watermark that went down within a process's life. ``run.py`` starts it with the cluster,
waits on it (a leader, convergence after the last heal) and reads its counts into the report.
"""

from __future__ import annotations

import collections
import concurrent.futures
import threading
import time
from collections.abc import Callable

from pykraft.faults.cluster import FaultCluster, Node
from pykraft.faults.kafka_quorum import DERIVED

__all__ = ["Monitor"]

_SAMPLE_S = 0.2
_STALL_S = 1.5  # a leader whose high watermark has not moved for this long is not leading


class Monitor:
    """Samples every node's raft metrics; see the module docstring for what it watches."""

    def __init__(self, cluster: FaultCluster) -> None:
        self.cluster = cluster
        self.majority = len(cluster.voters) // 2 + 1
        self.leader: tuple[int, int] | None = None  # (leader id, epoch) agreed, last sample
        self.samples: dict[int, dict[str, float]] = {}
        self.leaderless_ms: list[float] = []
        self.two_leaders: list[str] = []
        self.hwm_decreases: list[str] = []
        self.errors: list[str] = []
        self.sampled_at = 0.0
        self._leaders_by_epoch: dict[int, int] = {}
        self._progress: dict[tuple[int, int], tuple[float, float]] = {}  # -> (hwm, since)
        self._hwm: dict[tuple[int, int], float] = {}
        self._since: float | None = None  # start of the current leaderless window
        self._stop = threading.Event()
        self._pool = concurrent.futures.ThreadPoolExecutor(len(cluster.nodes))
        self._thread = threading.Thread(target=self._loop, name="monitor", daemon=True)
        self.lock = threading.Lock()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self._pool.shutdown(wait=False, cancel_futures=True)
        with self.lock:
            if self._since is not None:
                self.leaderless_ms.append((time.monotonic() - self._since) * 1000)
                self._since = None

    def _scrape(self, node: Node) -> dict[str, float] | None:
        if not node.running or node.paused:
            return None
        return node.scrape()

    def _loop(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self._sample()
            except Exception as e:  # the watch must go on; the run fails on it
                self.errors.append(f"monitor: {type(e).__name__}: {e}")
            self._stop.wait(max(0.0, _SAMPLE_S - (time.monotonic() - started)))

    def _sample(self) -> None:
        nodes = list(self.cluster.nodes.values())
        incarnations = {n.node_id: n.incarnation for n in nodes}
        results = list(self._pool.map(self._scrape, nodes))
        now = time.monotonic()
        with self.lock:
            # A node restarted while it was scraped may have answered from its new process:
            # that sample is dropped rather than judged as the old process's (keyed by the
            # incarnation read before the scrape).
            self.samples = {
                n.node_id: r
                for n, r in zip(nodes, results, strict=True)
                if r is not None and n.incarnation == incarnations[n.node_id]
            }
            self.sampled_at = now
            self._judge(now, incarnations)

    def _judge(self, now: float, incarnations: dict[int, int]) -> None:
        votes: collections.Counter[tuple[int, int]] = collections.Counter()
        for node_id, s in self.samples.items():
            s = {k: v for k, v in s.items() if v == v}  # NaN: no value yet
            epoch = int(s.get("current_epoch", -1))
            if s.get("state=leader"):
                seen = self._leaders_by_epoch.setdefault(epoch, node_id)
                if seen != node_id:
                    self.two_leaders.append(
                        f"epoch {epoch}: nodes {seen} and {node_id} both leader"
                    )
            if self.cluster.nodes[node_id].voter and s.get("current_leader", -1) >= 0:
                votes[(int(s["current_leader"]), epoch)] += 1
            hwm = s.get("high_watermark", -1)
            key = (node_id, incarnations[node_id])
            if hwm >= 0 and not s.get(DERIVED):
                last = self._hwm.get(key, -1)
                if hwm < last:
                    self.hwm_decreases.append(f"node {node_id}: {last:.0f} -> {hwm:.0f}")
                self._hwm[key] = max(hwm, last)
        agreed = [
            k for k, n in votes.items()
            if n >= self.majority and self.samples.get(k[0], {}).get("state=leader")
        ]  # fmt: skip
        # A leader counts while it commits: its high watermark moved lately (the controller
        # writes at least a NoOpRecord every 500 ms). A leader cut off from its majority is
        # still named by the others until their fetch timeout; it commits nothing.
        previous, self.leader = self.leader, None
        for key in agreed:
            hwm = self.samples[key[0]].get("high_watermark", -1)
            progress = self._progress.get(key)
            if progress is None or hwm > progress[0]:
                self._progress[key] = (hwm, now)
            if now - self._progress[key][1] <= _STALL_S:
                self.leader = key
        if self.leader is None and self._since is None:
            # Leaderless since the last commit of the leader it had (a stall is only seen
            # _STALL_S later).
            self._since = self._progress[previous][1] if previous in self._progress else now
        elif self.leader is not None and self._since is not None:
            self.leaderless_ms.append((now - self._since) * 1000)
            self._since = None

    def wait(self, predicate: Callable[[], object], timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self.lock:
                if predicate():
                    return True
            time.sleep(0.05)
        return False

    def converged(self, target: int) -> bool:
        """Every node is up, in the agreed leader's epoch, with a high watermark >= target."""
        if self.leader is None or len(self.samples) != len(self.cluster.nodes):
            return False
        epoch = self.leader[1]
        return all(
            s.get("high_watermark", -1) >= target and int(s.get("current_epoch", -1)) == epoch
            for s in self.samples.values()
        )

    def leader_high_watermark(self) -> int | None:
        if self.leader is None:
            return None
        value = self.samples.get(self.leader[0], {}).get("high_watermark", -1)
        return int(value) if value > 0 else None

    def start_windows(self) -> None:
        """Count leaderless time from now on (not the cluster's first election)."""
        with self.lock:
            self.leaderless_ms.clear()
            self._since = None if self.leader is not None else time.monotonic()
