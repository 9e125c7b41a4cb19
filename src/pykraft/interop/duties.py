"""Kafka 4.4's two periodic elections on a real cluster, observed and timed the same way on
pykraft's controller and on Kafka's own (issue 46): ``tests/interop/test_duties_side_by_side.py``
asserts that both reach the same partition states, ``bench/bench_duties.py`` reports how long
each took as a ratio to Kafka's.

The cluster (``cluster``): one controller, three Kafka 4.4.0 brokers (100, 101, 102),
formatted at 4.4 (ELR on), the controller checking every ``CHECK_S`` seconds
(``leader.imbalance.check.interval.seconds`` and ``unclean.leader.election.interval.ms``) and
fencing a silent broker after ``SESSION_TIMEOUT_MS``. Nobody asks for an election in either
scenario: only the controller's timers elect.

* ``balance``: topic ``balance``, six partitions whose first replicas take turns. Broker 100
  stops cleanly (its leaderships move away) and starts again; timed from its start until
  every partition is led by its first replica again (electPreferred).
* ``unclean``: topic ``unclean``, replicas 100 and 101. 101 stops cleanly, 100 is killed
  (fenced: the partition is leaderless, 100 its only eligible replica), 101 comes back and
  may not lead. Then ``unclean.leader.election.enable=true`` on the topic; timed from the
  alter until 101 leads (electUnclean). 100 comes back and the partition ends whole, led by
  its first replica again.

The states are those a broker reports (DescribeTopicPartitions: leader, ISR, ELR).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from kafka import KafkaAdminClient

from pykraft.interop.cluster import LocalCluster, Server
from pykraft.interop.kafka import KafkaDist

__all__ = [
    "CHECK_S",
    "DutyRun",
    "State",
    "balance",
    "cluster",
    "partition_states",
    "run_both",
    "settle",
    "unclean",
]

CHECK_S: Final = 5
SESSION_TIMEOUT_MS: Final = 4_000
WAIT_S: Final = 120
BALANCE_ASSIGNMENT: Final = (
    "100:101:102,101:102:100,102:100:101,100:102:101,101:100:102,102:101:100"
)
State = tuple[int, frozenset[int], frozenset[int]]  # leader, ISR, ELR


@dataclass
class DutyRun:
    """What one cluster did: the states reached, in order, and the two timings (s)."""

    kind: str
    states: list[object] = field(default_factory=list)
    balance_s: float = 0.0
    unclean_s: float = 0.0
    # The controller's Prometheus series at the end ({name{labels}: value}), with exporter.
    series: dict[str, float] = field(default_factory=dict)


def cluster(
    dist: KafkaDist, base: Path, kind: str, extra: dict[str, object], *, exporter: bool = False
) -> LocalCluster:
    """The scenarios' cluster with a controller of ``kind`` (``extra``: more controller
    settings, the tests' short quorum timeouts for pykraft; ``exporter``: Kafka's controller
    with the Prometheus JMX exporter's agent)."""
    controller: dict[str, object] = {
        "leader.imbalance.check.interval.seconds": CHECK_S,
        "unclean.leader.election.interval.ms": CHECK_S * 1000,
        "broker.session.timeout.ms": SESSION_TIMEOUT_MS,
        **extra,
    }
    return LocalCluster(
        dist,
        base / kind,
        controllers=1,
        brokers=3,
        controller_kind=kind,
        controller_config=controller,
        broker_config={"broker.heartbeat.interval.ms": 500},
        release_version="4.4",
        exporter=exporter,
    )


def partition_states(server: Server, topic: str) -> dict[int, tuple[State, tuple[int, ...]]]:
    """Each partition's state and replicas as ``server`` reports them; empty while the
    broker does not answer or does not know the topic."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            admin = KafkaAdminClient(bootstrap_servers=server.address, request_timeout_ms=5_000)
    except Exception:
        return {}
    try:
        described = admin.describe_topic_partitions([topic])
    except Exception:
        return {}
    finally:
        admin.close()
    (found,) = described["topics"]
    if found["error_code"] != 0:
        return {}
    return {
        p["partition_index"]: (
            (
                p["leader_id"],
                frozenset(p["isr_nodes"]),
                frozenset(p["eligible_leader_replicas"] or ()),
            ),
            tuple(p["replica_nodes"]),
        )
        for p in found["partitions"]
    }


def settle(server: Server, topic: str, holds: Callable[[State], bool], what: str) -> State:
    """Wait until partition 0 of ``topic`` as ``server`` reports it satisfies ``holds``;
    that state."""
    deadline = time.monotonic() + WAIT_S
    seen: State | None = None
    while time.monotonic() < deadline:
        got = partition_states(server, topic).get(0)
        seen = got[0] if got else None
        if seen is not None and holds(seen):
            return seen
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}: last seen {seen}")


def _until(holds: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not holds():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _create(dist: KafkaDist, local: LocalCluster, topic: str, assignment: str) -> None:
    """``kafka-topics --create`` of ``topic`` with its replicas named."""
    topics = ("topics", "--bootstrap-server", local.bootstrap, "--create", "--topic", topic)
    dist.run(*topics, "--replica-assignment", assignment)


def balance(dist: KafkaDist, local: LocalCluster, run: DutyRun) -> None:
    """The ``balance`` scenario (module docstring)."""
    b = {s.node_id: s for s in local.brokers}
    _create(dist, local, "balance", BALANCE_ASSIGNMENT)

    def led_by_first(ask: Server) -> bool:
        parts = partition_states(ask, "balance")
        return len(parts) == 6 and all(st[0] == reps[0] for st, reps in parts.values())

    _until(lambda: led_by_first(b[101]), "the topic led by its first replicas")
    assert b[100].stop() in (0, 143)
    _until(
        lambda: all(
            st[0] not in (-1, 100) for st, _ in partition_states(b[101], "balance").values()
        ),
        "100's leaderships moved",
    )
    run.states.append(sorted(st[0] for st, _ in partition_states(b[101], "balance").values()))
    started = time.monotonic()
    b[100].start()
    _until(lambda: led_by_first(b[101]), "every partition led by its first replica again")
    run.balance_s = time.monotonic() - started
    run.states.append("balanced")


def unclean(dist: KafkaDist, local: LocalCluster, run: DutyRun) -> None:
    """The ``unclean`` scenario (module docstring)."""
    b = {s.node_id: s for s in local.brokers}
    _create(dist, local, "unclean", "100:101")
    states = run.states
    whole: State = (100, frozenset({100, 101}), frozenset())
    states.append(settle(b[102], "unclean", whole.__eq__, "the topic whole"))
    assert b[101].stop() in (0, 143)
    states.append(settle(b[102], "unclean", lambda s: s[1] == {100}, "101 out of the ISR"))
    b[100].kill()  # fenced after the session timeout: leaderless
    states.append(settle(b[102], "unclean", lambda s: s[0] == -1, "the partition leaderless"))
    b[101].start()
    states.append(settle(b[101], "unclean", lambda s: s[0] == -1, "101 back, not leading"))
    dist.run(
        "configs",
        "--bootstrap-server",
        b[102].address,
        "--alter",
        "--entity-type",
        "topics",
        "--entity-name",
        "unclean",
        "--add-config",
        "unclean.leader.election.enable=true",
    )
    altered = time.monotonic()
    states.append(settle(b[101], "unclean", lambda s: s[0] == 101, "the unclean election"))
    run.unclean_s = time.monotonic() - altered
    b[100].start()
    states.append(settle(b[101], "unclean", whole.__eq__, "100 back, leading again"))


def run_both(
    dist: KafkaDist, base: Path, pykraft_extra: dict[str, object], *, series: bool = False
) -> list[DutyRun]:
    """Both scenarios on Kafka's controller (first: the reference), then on pykraft's; with
    ``series``, each controller's Prometheus series at the end (Kafka's through the JMX
    exporter's agent)."""
    runs = []
    for kind, extra in (("kafka", {}), ("pykraft", pykraft_extra)):
        local = cluster(dist, base, kind, extra, exporter=series)
        run = DutyRun(kind)
        try:
            local.start()
            balance(dist, local, run)
            unclean(dist, local, run)
            if series:
                run.series = local.controllers[0].scrape()
        finally:
            local.kill()
        runs.append(run)
    return runs
