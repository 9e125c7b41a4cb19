"""Kafka's ``raft-metrics`` group (SPEC I3) on the node's Prometheus endpoint (``metrics.port``).

Naming. Kafka publishes these as JMX attributes of ``kafka.server:type=raft-metrics``; Kafka
users scrape them with the Prometheus JMX exporter, whose commonly deployed rules (Strimzi's;
``interop/kafka-jmx-exporter/controller-metrics.yml`` writes the same convention) name each
``kafka_server_raftmetrics_`` + the attribute with dashes as underscores; the ``-max``
attributes are typed counters there, so the exporter serves them with ``_total``; the string
``current-state`` is one series with a ``current_state`` label. pykraft serves the same names,
so dashboards and alerts written for Kafka's controllers read pykraft's unchanged
(``tests/interop/test_duties_side_by_side.py`` compares the two against Kafka 4.4.0's
controller with the agent). Rates and latencies are, as in Kafka, averages over a sliding
window (``metrics.sample.window.ms`` x ``metrics.num.samples`` = 2 x 30 s).

====================================  ====================================================
Kafka ``raft-metrics`` attribute      Prometheus series
====================================  ====================================================
current-state                         ``kafka_server_raftmetrics_current_state{current_state=
                                      "leader"}`` 1 (leader, candidate, prospective,
                                      prospective-voted, unattached, unattached-voted,
                                      follower, observer, resigned)
current-leader / -epoch / -vote       ``kafka_server_raftmetrics_current_leader`` (-1: none),
                                      ``_current_epoch``, ``_current_vote`` (-1: none)
high-watermark / log-end-offset /     ``kafka_server_raftmetrics_high_watermark``,
log-end-epoch                         ``_log_end_offset``, ``_log_end_epoch``
commit-latency-avg / -max             ``kafka_server_raftmetrics_commit_latency_avg`` /
                                      ``_commit_latency_max_total`` (ms)
election-latency-avg / -max           ``kafka_server_raftmetrics_election_latency_avg`` /
                                      ``_election_latency_max_total`` (ms)
append-records-rate, fetch-records-   ``kafka_server_raftmetrics_append_records_rate``,
rate                                  ``_fetch_records_rate`` (records/s)
number-of-voters / -observers         ``kafka_server_raftmetrics_number_of_voters``,
                                      ``_number_of_observers`` (the leader's DescribeQuorum)
number-unknown-voter-connections      ``kafka_server_raftmetrics_number_unknown_voter_
                                      connections``
uncommitted-voter-change              ``kafka_server_raftmetrics_uncommitted_voter_change``
IgnoredStaticVoters (KafkaController) ``kafka_controller_kafkacontroller_ignoredstaticvoters``
====================================  ====================================================

pykraft's own, which Kafka does not publish, under ``pykraft_raft_``: ``append_records_total``
and ``fetch_records_total`` (the counts behind the rates), ``number_of_offline_voters``,
``pending_add_voter``, ``pending_remove_voter`` (seed 003) and ``is_observer``.

Where the values come from: the gauges are read off the core when Prometheus scrapes;
latencies and record counts are recorded by the driver (:class:`RaftMetrics`).
``uncommitted-voter-change`` is 1 from the moment a leader takes a voter change on (also
while AddRaftVoter waits for the new voter to catch up) until its VotersRecord commits;
``pending-add-voter`` / ``pending-remove-voter`` say which. ``ignored-static-voters`` is 1
when ``controller.quorum.voters`` is configured but kraft.version is 1 or more (the voter set
comes from the log: it is safe to remove the setting). Commit latency
is measured at the leader from the moment a batch of application records is appended to the
moment the high watermark passes it; election latency from the start of an election
(entering Prospective or Candidate) to the moment a leader is known. A voter is *offline*
when the leader has not had a Fetch from it within ``controller.quorum.fetch.timeout.ms``
(only the leader knows; elsewhere 0).

Threading: the endpoint serves HTTP from its own threads (``node/endpoint.py``); a scrape hops
onto the node's event loop (``on_loop.call_on_loop``) to take one consistent snapshot, so the
core is only ever read from the loop's thread. The registry is node-local, never the global one.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from pykraft.net.answer import AuthenticationStats
from pykraft.node.on_loop import LoopTimeout, call_on_loop
from pykraft.raft.api import RaftApi
from pykraft.raft.describe import active_observers
from pykraft.raft.roles import Leader
from pykraft.records import CorruptRecordError, iter_batches

__all__ = [
    "Extra",
    "RaftMetrics",
    "Snapshot",
    "record_count",
    "registry_of",
    "snapshot_of",
]

Extra = tuple[str, str, float] | Metric  # a plain gauge, or a whole family
PREFIX: Final = "kafka_server_raftmetrics_"
EXTRA_PREFIX: Final = "pykraft_raft_"
WINDOW_MS: Final = 60_000  # Kafka: 2 samples x metrics.sample.window.ms (30 s)
SAMPLES_MAX: Final = 10_000  # latency samples kept per window (bound)
SCRAPE_TIMEOUT_S: Final = 2.0


def current_state(core: RaftApi) -> str:
    """Kafka's current-state string for the core's role."""
    role = core.role
    if role in ("unattached", "prospective") and core.voted_key is not None:
        return f"{role}-voted"
    if core.is_observer and role in ("follower", "unattached"):
        return "observer"
    return role


class _Window:
    """Timestamped samples kept for ``WINDOW_MS``. Invariant: at most ``SAMPLES_MAX``
    samples, oldest first."""

    def __init__(self) -> None:
        self._samples: collections.deque[tuple[int, float]] = collections.deque(maxlen=SAMPLES_MAX)

    def record(self, now_ms: int, value: float) -> None:
        self._samples.append((now_ms, value))

    def _trim(self, now_ms: int) -> None:
        while self._samples and self._samples[0][0] <= now_ms - WINDOW_MS:
            self._samples.popleft()

    def avg_max(self, now_ms: int) -> tuple[float, float]:
        """(average, maximum) over the window; NaN when empty (Kafka reports NaN too)."""
        self._trim(now_ms)
        if not self._samples:
            return float("nan"), float("nan")
        values = [v for _, v in self._samples]
        return sum(values) / len(values), max(values)

    def rate(self, now_ms: int, elapsed_ms: int) -> float:
        """Sum of the window's values per second, over min(window, time since start)."""
        self._trim(now_ms)
        span_ms = max(1, min(WINDOW_MS, elapsed_ms))
        return sum(v for _, v in self._samples) * 1000 / span_ms


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Every value of the group at one instant."""

    state: str
    leader: int
    epoch: int
    vote: int
    high_watermark: int
    log_end_offset: int
    commit_latency: tuple[float, float]
    election_latency: tuple[float, float]
    append_records_rate: float
    append_records_total: int
    fetch_records_rate: float
    fetch_records_total: int
    voters: int
    observers: int
    uncommitted_voter_change: int
    offline_voters: int
    log_end_epoch: int = 0
    pending_add_voter: int = 0
    pending_remove_voter: int = 0
    is_observer: int = 0
    ignored_static_voters: int = 0
    unknown_voter_connections: int = 0
    # The application's own (the metadata controller's): gauges as (name, help, value), and
    # families with labels or counters.
    extra: tuple[Extra, ...] = ()


class RaftMetrics:
    """What the driver records (latencies, record counts); read by :func:`snapshot_of`."""

    def __init__(self, now_ms: int, fetch_timeout_ms: int) -> None:
        self.started_ms = now_ms
        self.fetch_timeout_ms = fetch_timeout_ms
        self.commit_latency = _Window()
        self.election_latency = _Window()
        self.append_records = _Window()
        self.fetch_records = _Window()
        self.append_records_total = 0
        self.fetch_records_total = 0
        self.election_started_ms: int | None = None  # None when no election is running

    def on_append(self, now_ms: int, records: int) -> None:
        self.append_records.record(now_ms, records)
        self.append_records_total += records

    def on_fetch(self, now_ms: int, records: int) -> None:
        if records:
            self.fetch_records.record(now_ms, records)
            self.fetch_records_total += records

    def on_commit(self, now_ms: int, appended_ms: int) -> None:
        self.commit_latency.record(now_ms, now_ms - appended_ms)

    def on_role(self, now_ms: int, new_role: str, leader_known: bool) -> None:
        if new_role in ("prospective", "candidate"):
            if self.election_started_ms is None:
                self.election_started_ms = now_ms
        elif leader_known and self.election_started_ms is not None:
            self.election_latency.record(now_ms, now_ms - self.election_started_ms)
            self.election_started_ms = None


def snapshot_of(
    core: RaftApi, metrics: RaftMetrics, now_ms: int, *, static_voters: bool = False
) -> Snapshot:
    """Read the group off the core (call on the loop thread)."""
    role = core.state
    observers = offline = 0
    if isinstance(role, Leader):
        # As DescribeQuorum: a leader removing itself (D5) lists itself as an observer.
        observers = len(active_observers(role, now_ms)) + int(core.is_observer)
        offline = sum(
            1
            for p in role.progress.voters.values()
            if p.last_fetch_ms < 0 or now_ms - p.last_fetch_ms > metrics.fetch_timeout_ms
        )
    ids = [key.id for key in core.voters.keys]
    voted = core.voted_key
    change = core.voter_change
    elapsed = now_ms - metrics.started_ms
    return Snapshot(
        state=current_state(core),
        leader=core.leader_id,
        epoch=core.epoch,
        vote=voted.id if voted is not None else -1,
        high_watermark=core.high_watermark,
        log_end_offset=core.log.end_offset,
        commit_latency=metrics.commit_latency.avg_max(now_ms),
        election_latency=metrics.election_latency.avg_max(now_ms),
        append_records_rate=metrics.append_records.rate(now_ms, elapsed),
        append_records_total=metrics.append_records_total,
        fetch_records_rate=metrics.fetch_records.rate(now_ms, elapsed),
        fetch_records_total=metrics.fetch_records_total,
        voters=len(ids),
        observers=observers,
        uncommitted_voter_change=int(core.uncommitted_voter_change or change is not None),
        offline_voters=offline,
        log_end_epoch=core.log.last_fetched_epoch(),
        pending_add_voter=int(change is not None and change.operation == "add_voter"),
        pending_remove_voter=int(change is not None and change.operation == "remove_voter"),
        is_observer=int(core.is_observer),
        ignored_static_voters=int(static_voters and core.kraft_version >= 1),
        unknown_voter_connections=sum(
            1
            for vid, info in core.voters.voters.items()
            if vid != core.local_key.id and not info.endpoints
        ),
    )


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(PREFIX + name, doc, value=value)


def _extra(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(EXTRA_PREFIX + name, doc, value=value)


def families(s: Snapshot) -> list[Metric]:
    """The Prometheus metric families of one snapshot."""
    extra: list[Metric] = [
        GaugeMetricFamily(e[0], e[1], value=e[2]) if isinstance(e, tuple) else e for e in s.extra
    ]
    return _raft_families(s) + _pykraft_families(s) + extra


def _raft_families(s: Snapshot) -> list[Metric]:
    """Kafka's raft-metrics as the exporter names them (module docstring)."""
    state = GaugeMetricFamily(
        PREFIX + "current_state", "current-state: the replica's state", labels=["current_state"]
    )
    state.add_metric([s.state], 1.0)
    return [
        state,
        _gauge("current_leader", "current-leader: the leader's id, -1 if unknown", s.leader),
        _gauge("current_epoch", "current-epoch: the quorum's epoch", s.epoch),
        _gauge("current_vote", "current-vote: the voted replica id, -1 if none", s.vote),
        _gauge(
            "high_watermark", "high-watermark: first offset not known committed", s.high_watermark
        ),
        _gauge("log_end_offset", "log-end-offset", s.log_end_offset),
        _gauge("log_end_epoch", "log-end-epoch: the epoch of the last batch", s.log_end_epoch),
        _gauge("commit_latency_avg", "commit-latency-avg (ms)", s.commit_latency[0]),
        CounterMetricFamily(
            PREFIX + "commit_latency_max", "commit-latency-max (ms)", value=s.commit_latency[1]
        ),
        _gauge("election_latency_avg", "election-latency-avg (ms)", s.election_latency[0]),
        CounterMetricFamily(
            PREFIX + "election_latency_max",
            "election-latency-max (ms)",
            value=s.election_latency[1],
        ),
        _gauge("append_records_rate", "append-records-rate (records/s)", s.append_records_rate),
        _gauge("fetch_records_rate", "fetch-records-rate (records/s)", s.fetch_records_rate),
        _gauge("number_of_voters", "number-of-voters", s.voters),
        _gauge("number_of_observers", "number-of-observers (known by the leader)", s.observers),
        _gauge(
            "number_unknown_voter_connections",
            "number-unknown-voter-connections: voters whose endpoint this replica lacks",
            s.unknown_voter_connections,
        ),
        _gauge(
            "uncommitted_voter_change",
            "uncommitted-voter-change (0 or 1)",
            s.uncommitted_voter_change,
        ),
    ]


def _pykraft_families(s: Snapshot) -> list[Metric]:
    """pykraft's own quorum figures, which Kafka does not publish."""
    return [
        CounterMetricFamily(
            EXTRA_PREFIX + "append_records",
            "records appended by the leader",
            value=s.append_records_total,
        ),
        CounterMetricFamily(
            EXTRA_PREFIX + "fetch_records",
            "records fetched from the leader",
            value=s.fetch_records_total,
        ),
        _extra(
            "number_of_offline_voters",
            "voters that have not fetched within the fetch timeout (known by the leader)",
            s.offline_voters,
        ),
        _extra("pending_add_voter", "an AddRaftVoter in progress (0 or 1)", s.pending_add_voter),
        _extra(
            "pending_remove_voter", "a RemoveRaftVoter in progress (0 or 1)", s.pending_remove_voter
        ),
        _extra("is_observer", "1 if this controller is not a voter", s.is_observer),
        GaugeMetricFamily(
            "kafka_controller_kafkacontroller_ignoredstaticvoters",
            "IgnoredStaticVoters: controller.quorum.voters is set but unused (kraft.version 1)",
            value=s.ignored_static_voters,
        ),
    ]


class _Collector:
    """The group, read on the node's loop at each scrape (an empty scrape when the loop does
    not answer within ``SCRAPE_TIMEOUT_S``)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, take: Callable[[], Snapshot | None]):
        self._loop = loop
        self._take = take

    def collect(self) -> Iterable[Metric]:
        try:
            snapshot = call_on_loop(self._loop, self._take, SCRAPE_TIMEOUT_S)
        except LoopTimeout:
            return []  # the loop is gone or stuck: an empty scrape, not a hang
        return families(snapshot) if snapshot is not None else []


def registry_of(
    loop: asyncio.AbstractEventLoop, take: Callable[[], Snapshot | None]
) -> CollectorRegistry:
    """A node-local registry whose collector reads ``take()`` on ``loop``, with the process's
    own series (``process_cpu_seconds_total``, ``process_resident_memory_bytes``,
    ``process_open_fds``, ...: what the JMX exporter's agent serves for a JVM too)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(loop, take))
    ProcessCollector(registry=registry)
    return registry


def record_count(records: bytes) -> int:
    """Records in the batches of a Fetch response (for fetch-records-rate)."""
    count = 0
    try:
        for header, _ in iter_batches(records, verify_crc=False):
            count += header.record_count
    except (CorruptRecordError, ValueError):
        pass  # the core validates and rejects; the metric counts what it could read
    return count


SOCKET_SERVER_PREFIX: Final = "kafka_server_socket_server_metrics_"


def authentication_metrics(stats: AuthenticationStats) -> list[tuple[str, str, float]]:
    """Kafka's socket-server-metrics of the controller listener (Selector's names)."""
    return [
        (
            SOCKET_SERVER_PREFIX + "successful_authentication_total",
            "connections authenticated (TLS or SASL)",
            float(stats.successful_authentication_total),
        ),
        (
            SOCKET_SERVER_PREFIX + "failed_authentication_total",
            "TLS handshakes and SASL authentications that failed",
            float(stats.failed_authentication_total),
        ),
        (
            SOCKET_SERVER_PREFIX + "successful_authentication_no_reauth_total",
            "authentications of clients that cannot re-authenticate (KIP-368)",
            float(stats.successful_authentication_no_reauth_total),
        ),
        (
            SOCKET_SERVER_PREFIX + "successful_reauthentication_total",
            "re-authentications that succeeded (KIP-368)",
            float(stats.successful_reauthentication_total),
        ),
        (
            SOCKET_SERVER_PREFIX + "failed_reauthentication_total",
            "re-authentications that failed (KIP-368)",
            float(stats.failed_reauthentication_total),
        ),
        (
            SOCKET_SERVER_PREFIX + "expired_connections_killed_count",
            "connections closed because their session expired without re-authentication",
            float(stats.expired_connections_killed_count),
        ),
    ]
