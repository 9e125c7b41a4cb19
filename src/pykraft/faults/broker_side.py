"""The Kafka brokers' side of a fault run (``pykraft dev faults run --brokers N``).

``run.py`` drives the controllers' side and calls this at its hooks:

- ``start``: the brokers started (in their namespaces, on their own tmpfs), ``RUNNING``
  within a minute; the workload's topics created; the workload (``kafka_workload.py``) and
  the watch (``broker_watch.py``) started;
- ``apply`` / ``heal`` for the broker kinds: ``broker-kill`` (kill -9, restarted at the
  heal), ``broker-pause`` (SIGSTOP/SIGCONT), ``broker-restart`` (SIGTERM: a controlled
  shutdown, then start), ``broker-disk`` (its log dir's filesystem filled; a broker that
  stopped on it is started again), ``fence`` (cut off from every controller, held past the
  session timeout: before the heal it must be fenced in the other brokers' eyes and lead
  nothing), ``isr`` (cut off from the other brokers only: the ISRs shrink). After each heal
  the time until the broker is listed alive again (unfenced) is measured;
- ``finish``: the workload stopped, every broker listed alive and every partition led again
  within ``converge_s``; the checks of ``kafka_check.py`` on what the clients were told; the
  brokers' final views kept for comparison with the controllers' log.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pykraft.faults.broker_watch import SAMPLE_S, BrokerView, BrokerWatch
from pykraft.faults.cluster import (
    BROKER_SESSION_TIMEOUT_MS,
    BROKER_STARTED,
    REPLICA_LAG_TIME_MAX_MS,
    FaultCluster,
)
from pykraft.faults.kafka_check import (
    KafkaVerdict,
    check_metadata_log,
    check_workload,
    compare_views,
)
from pykraft.faults.kafka_workload import ACKED_TOPIC, TX_PARTITIONS, TX_TOPIC, KafkaWorkload
from pykraft.faults.linearizable import check
from pykraft.faults.metadata_clients import CLIENTS, brokers_disagree, read_image
from pykraft.faults.net import Network
from pykraft.metadata.image import Image
from pykraft.node.metadata_files import load_image

__all__ = ["BROKER_KINDS", "BUSY", "MIN_HOLD_S", "BrokerSide", "pct"]

BROKER_PROCESS_KINDS = ("broker-kill", "broker-pause", "broker-restart", "broker-disk")
BROKER_NETWORK_KINDS = ("fence", "isr")
BROKER_KINDS = BROKER_PROCESS_KINDS + BROKER_NETWORK_KINDS
BUSY = -1  # a broker fault's target: the leader of the busiest partition when applied
# A fault's least hold beyond its drawn 2-6 s, for the kinds that only act after a timeout:
# ``fence`` past the controllers' broker session timeout, ``isr`` past the leaders'
# replica.lag.time.max.ms (cluster.py), so that the ISRs really shrink.
MIN_HOLD_S = {
    "fence": BROKER_SESSION_TIMEOUT_MS / 1000 + 2.0,
    "isr": REPLICA_LAG_TIME_MAX_MS / 1000 + 1.0,
}
UNFENCE_BOUND_S = 60.0
_START_S = 90.0
TOPICS = (ACKED_TOPIC, TX_TOPIC)
_LOG_DIRS_FAILED = "log directory has failed"  # Kafka, before it halts


@dataclass
class BrokerSide:
    cluster: FaultCluster
    network: Network | None
    rate: float
    seed: int = 0  # the run's: the metadata clients' choices
    workload: KafkaWorkload = field(init=False)
    watch: BrokerWatch = field(init=False)
    verdict: KafkaVerdict = field(default_factory=KafkaVerdict)
    unfence_ms: list[float] = field(default_factory=list)
    disk_stops: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    final_views: list[BrokerView] = field(default_factory=list)
    views_read_ns: tuple[int, int] | None = None  # when the views' offset was read (run.py)
    broker_notes: list[str] = field(default_factory=list)  # observed of Kafka's brokers
    _applied_at: float = 0.0

    def __post_init__(self) -> None:
        self.workload = KafkaWorkload(
            self.cluster.bootstrap_brokers(), rate=self.rate, seed=self.seed
        )
        self.watch = BrokerWatch(self.cluster, TOPICS)

    @property
    def ids(self) -> list[int]:
        return list(self.cluster.brokers)

    # -- start --------------------------------------------------------------------------------

    def start(self) -> None:
        for broker_id in self.ids:
            self.cluster.start(broker_id)
        deadline = time.monotonic() + _START_S
        for node in self.cluster.brokers.values():
            while BROKER_STARTED not in node.current_output():
                if not node.running:
                    raise RuntimeError(f"broker {node.node_id} exited:\n{node.tail()}")
                if time.monotonic() > deadline:
                    raise TimeoutError(f"broker {node.node_id} not started:\n{node.tail()}")
                time.sleep(0.2)
        self.watch.start()
        if not _wait(lambda: all(self.watch.alive_in_others(b, 0) for b in self.ids), 60):
            raise TimeoutError("the brokers do not all see each other")
        self.workload.create_topics(replication=min(3, len(self.ids)))
        if not _wait(self._all_led, 60):
            raise TimeoutError("the workload's topics have no leaders")
        self.workload.start()

    def _all_led(self) -> bool:
        """After the watch's next sample: every partition of the workload's topics is
        known and has a leader in the freshest answers."""
        time.sleep(SAMPLE_S + 0.1)
        fresh = self.watch.freshest()
        wanted = self.workload.partitions + TX_PARTITIONS
        return len(fresh) >= wanted and all(p.leader >= 0 for p in fresh.values())

    # -- faults -------------------------------------------------------------------------------

    def busy(self) -> int:
        """The leader of ``acked``'s partition 0 now (the first broker when none)."""
        view = self.watch.freshest().get((ACKED_TOPIC, 0))
        return view.leader if view is not None and view.leader > 0 else self.ids[0]

    def apply(self, kind: str, target: int) -> None:
        self._applied_at = time.monotonic()
        if kind == "broker-kill":
            self.cluster.kill(target)
        elif kind == "broker-pause":
            self.cluster.pause(target)
        elif kind == "broker-restart":
            self.cluster.stop(target)
            self.cluster.start(target)
        elif kind == "broker-disk":
            self.cluster.fill_disk(target)
        elif self.network is not None and kind == "fence":
            self.network.cut([target], list(self.cluster.nodes))
        elif self.network is not None and kind == "isr":
            self.network.cut([target], self.ids)

    def before_heal(self, kind: str, target: int) -> None:
        """A broker cut off from the controllers for longer than the session timeout is
        fenced and leads nothing (what the other brokers say)."""
        if kind != "fence":
            return
        since = self._applied_at + BROKER_SESSION_TIMEOUT_MS / 1000 + 1.0
        if not _wait(lambda: self.watch.fenced_in_others(target, since), 3.0):
            held = time.monotonic() - self._applied_at
            self.problems.append(
                f"broker {target}, cut off from the controllers for {held:.1f} s, not fenced "
                f"in the other brokers' answers"
            )
            return
        led = self.watch.led_by(target, since)
        if led:
            self.problems.append(
                f"broker {target} fenced yet still leads {led[:5]} in the brokers' answers"
            )

    def heal(self, kind: str, target: int) -> None:
        node = self.cluster.node(target)
        if kind == "broker-kill":
            self.cluster.start(target)
        elif kind == "broker-pause":
            self.cluster.resume(target)
        elif kind == "broker-disk":
            self.cluster.free_disk(target)
            # Kafka halts once its only log dir failed; that may take a moment.
            self.cluster.wait_exit(target, _LOG_DIRS_FAILED, 3.0)
            if node.running:
                self.disk_stops.append(f"broker {target} kept running on a full disk")
            else:
                self.disk_stops.append(f"broker {target} stopped on a full disk")
                self.cluster.start(target)
        elif self.network is not None and kind in BROKER_NETWORK_KINDS:
            self.network.heal()
        healed = time.monotonic()
        if _wait(lambda: self.watch.alive_in_others(target, healed), UNFENCE_BOUND_S):
            self.unfence_ms.append((time.monotonic() - healed) * 1000)
        else:
            self.problems.append(
                f"broker {target} not listed alive within {UNFENCE_BOUND_S:.0f} s of the heal"
            )

    # -- the end ------------------------------------------------------------------------------

    def stop_workload(self, timeout_s: float = 30.0) -> None:
        self.workload.stop(timeout_s)

    def finish(self, converge_s: float) -> None:
        """Every broker back, every partition led; the clients' checks; the final views."""
        now = time.monotonic()
        if not _wait(
            lambda: all(self.watch.alive_in_others(b, now) for b in self.ids) and self._all_led(),
            converge_s,
        ):
            self.problems.append(
                f"brokers not all alive with every partition led within {converge_s:.0f} s"
            )
            return
        check_workload(self.workload, self.verdict)
        running = [b for b in self.cluster.brokers.values() if b.running and not b.paused]
        disagree = brokers_disagree(running)
        if disagree:
            self.broker_notes.append(disagree)
        # The brokers' views, once they agree with each other (ISR changes may still land).
        agreed: list[BrokerView] = []

        def same() -> bool:
            time.sleep(0.6)
            since = time.monotonic() - 0.6
            with self.watch.lock:
                views = [v for v in self.watch.views.values() if v.at > since]
            if len(views) != len(self.ids):
                return False
            if any(v.partitions != views[0].partitions for v in views):
                return False
            agreed[:] = views
            return True

        if not _wait(same, converge_s):
            self.problems.append(f"the brokers' views did not agree within {converge_s:.0f} s")
        self.final_views = agreed

    def _check_history(self, image: Image | None, path: Path) -> None:
        """The metadata clients' history, with a read of every key from ``image`` (the
        committed image when the views were taken), checked for linearizability
        (``linearizable.check``)."""
        history, verdict = self.workload.history, self.verdict
        if image is not None and self.views_read_ns is not None:
            read_image(image, history, CLIENTS, *self.views_read_ns)
        answer = check(history.write(path))
        verdict.linearizability = answer.lines()[0]
        if answer.result == "Unknown":
            verdict.unchecked.append(f"{answer.lines()[0]} (the checker ran out of time)")
        elif not answer.ok:
            verdict.not_linearizable.extend(answer.lines()[1:])
            if answer.html is not None:
                verdict.not_linearizable.append(f"drawn in {answer.html}")

    def stop(self) -> None:
        self.watch.stop()
        for broker_id, code in self.cluster.stop_all(self.ids).items():
            if code not in (0, 143, None):
                self.problems.append(f"broker {broker_id} exited with {code} on SIGTERM")

    def check_log(self, metadata_log_dirs: dict[int, Path], views_offset: int | None) -> None:
        """The election rules over each controller's log (by node id); the final views
        against the image at the offset the controllers had reached when they were taken."""
        for node_id, directory in metadata_log_dirs.items():
            check_metadata_log(directory, label=f"node {node_id}", verdict=self.verdict)
        image = None
        if views_offset is not None:
            image = load_image(next(iter(metadata_log_dirs.values())), end_offset=views_offset)
        if self.final_views and image is not None:
            compare_views(image, self.final_views, TOPICS, self.verdict)
        self._check_history(image, self.cluster.work / "metadata-history.jsonl")

    @property
    def ok(self) -> bool:
        return self.verdict.ok and not self.problems and not self.watch.epochs_back

    def lines(self) -> list[str]:
        v, w = self.verdict, self.workload
        offline = sorted(self.watch.offline_ms)
        unfence = sorted(self.unfence_ms)
        lines = [
            f"kafka brokers: {len(self.ids)}; records acknowledged {v.acked}, read back "
            f"{v.read}, found at their offsets {v.checked}, lost {len(v.lost)}, duplicated "
            f"{len(v.duplicated)}, out of order {len(v.out_of_order)}",
            f"transactions: committed {len(w.tx_committed)} (checked {v.tx_checked}), "
            f"aborted {len(w.tx_aborted)}; group commits {len(w.commits)}; topic operations "
            f"{len(w.topic_ops)} ({len(v.recreated)} deleted topics re-created by a create "
            f"left unanswered); reassignments {dict(w.reassignments)}",
            f"client outcomes: {dict(sorted(w.outcomes.items()))}",
            f"metadata clients: {v.linearizability or 'not checked'}",
            f"leader changes in the metadata log: {v.leader_changes}; unsafe elections: "
            f"{len(v.elections)}; leader epochs gone back: {len(self.watch.epochs_back)}",
            f"partitions offline: {len(offline)} intervals, p50 {pct(offline, 0.5)} p99 "
            f"{pct(offline, 0.99)} max {pct(offline, 1.0)} ms",
            f"broker listed alive again after a heal: p50 {pct(unfence, 0.5)} max "
            f"{pct(unfence, 1.0)} ms ({len(unfence)} heals)",
        ]
        lines += [f"disk: {d}" for d in self.disk_stops]
        lines += [f"kafka brokers (not a failure of the run): {n}" for n in self.broker_notes]
        for name, items in v.problems():
            lines += [f"{name}: {item}" for item in items[:20]]
        lines += [f"EPOCH BACK: {e}" for e in self.watch.epochs_back[:20]]
        lines += [f"PROBLEM: {p}" for p in self.problems]
        return lines


def _wait(predicate: Callable[[], object], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def pct(values: list[float], q: float) -> str:
    """The ``q`` quantile of sorted ``values`` for a report line ("-" when none)."""
    if not values:
        return "-"
    return f"{values[min(len(values) - 1, int(q * len(values)))]:,.0f}"
