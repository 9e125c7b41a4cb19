"""The controller's periodic performance message and its slow-event line, in Kafka 4.4.0's
words (``EventPerformanceMonitor``), on a real event loop."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from pykraft.node.config import NodeConfig
from pykraft.node.loop_lag import IdleRatio
from pykraft.node.performance import EventPerformanceMonitor, Reservoir, event_name
from pykraft.node.request_fields import deadline_ms
from pykraft.protocol import ApiKey

from .test_config import BASE


def test_the_message_counts_averages_and_names_the_slowest() -> None:
    monitor = EventPerformanceMonitor(60_000, 2_000)
    assert monitor.message() == (
        "In the last 60000 ms period, there were no controller events completed."
    )
    monitor.observe("createTopics", 3_000_000)
    monitor.observe("brokerHeartbeat", 1_000_000)
    assert monitor.message() == (
        "In the last 60000 ms period, 2 controller events were completed, which took an "
        "average of 2.00 ms each. The slowest event was createTopics, which took 3.00 ms."
    )


def test_an_event_over_the_threshold_is_logged_at_once(caplog: pytest.LogCaptureFixture) -> None:
    monitor = EventPerformanceMonitor(60_000, 2)
    with caplog.at_level(logging.INFO, logger="pykraft.controller"):
        monitor.observe("alterPartition", 1_500_000)
        monitor.observe("createTopics", 2_500_000)
    assert [r.getMessage() for r in caplog.records] == [
        "Exceptionally slow controller event createTopics took 2.50 ms."
    ]


def test_the_message_comes_every_period_and_starts_afresh(
    caplog: pytest.LogCaptureFixture,
) -> None:
    monitor = EventPerformanceMonitor(100, 2_000)

    async def scenario() -> None:
        monitor.start(asyncio.get_running_loop())
        assert monitor.timed("describeConfigs", lambda: 7) == 7
        await asyncio.sleep(0.25)
        monitor.stop()

    with caplog.at_level(logging.INFO, logger="pykraft.controller"):
        asyncio.run(scenario())
    messages = [r.getMessage() for r in caplog.records]
    assert messages[0].startswith("In the last 100 ms period, 1 controller events were")
    assert "The slowest event was describeConfigs" in messages[0]
    assert messages[1] == "In the last 100 ms period, there were no controller events completed."


def test_names_and_settings() -> None:
    assert event_name(ApiKey.CREATE_TOPICS) == "createTopics"
    assert event_name(ApiKey.ALTER_PARTITION_REASSIGNMENTS) == "alterPartitionReassignments"
    assert event_name(ApiKey.BROKER_HEARTBEAT) == "processBrokerHeartbeat"  # Kafka's name
    cfg = NodeConfig.from_properties(
        {
            **BASE,
            "controller.performance.sample.period.ms": "5000",
            "controller.performance.always.log.threshold.ms": "10",
        }
    )
    assert cfg.controller_performance_sample_period_ms == 5000
    assert cfg.controller_performance_always_log_threshold_ms == 10
    assert NodeConfig.from_properties(BASE).controller_performance_sample_period_ms == 60_000


def test_reservoir_percentiles_as_yammers_snapshot() -> None:
    reservoir = Reservoir()
    assert reservoir.quantiles()[0] == ("0.50", 0.0)
    for value in range(1, 101):  # 1..100 ms
        reservoir.note(float(value))
    got = dict(reservoir.quantiles())
    # yammer's Snapshot.getValue: position q * (n + 1), interpolated between neighbours.
    assert got["0.50"] == 50.5 and got["0.75"] == 75.75 and got["0.99"] == 99.99
    assert got["0.999"] == 100.0  # past the last position: the largest
    assert reservoir.count == 100
    for _ in range(2000):  # only the last 1028 values are kept; the count goes on
        reservoir.note(7.0)
    assert dict(reservoir.quantiles())["0.999"] == 7.0 and reservoir.count == 2100


def test_events_are_counted_with_their_queue_and_processing_times() -> None:
    monitor = EventPerformanceMonitor(60_000, 2_000)
    received = time.monotonic_ns() - 30_000_000  # waited 30 ms
    assert monitor.timed("createTopics", lambda: 5, received) == 5
    monitor.timed("describeCluster", lambda: None)  # a read: not queued
    assert monitor.started == 2
    queue = dict(monitor.queue_ms.quantiles())
    assert queue["0.999"] >= 30.0 and min(monitor.queue_ms._values) == 0.0
    assert monitor.processing_ms.count == 2


def test_a_request_past_its_deadline_is_refused_and_counted() -> None:
    monitor = EventPerformanceMonitor(60_000, 2_000)
    late = time.monotonic_ns() - 5_000 * 1_000_000  # received 5 s ago
    heartbeat = ApiKey.BROKER_HEARTBEAT
    assert deadline_ms(heartbeat, object(), 2_000) == 4_000  # two heartbeat intervals
    why = monitor.expired(heartbeat, late, 4_000)
    assert why is not None and why.endswith("past its deadline of 4000 ms"), why
    assert (monitor.timed_out, monitor.timed_out_heartbeats, monitor.started) == (1, 1, 0)
    assert monitor.expired(ApiKey.CREATE_TOPICS, time.monotonic_ns(), 4_000) is None
    assert monitor.expired(heartbeat, None, 4_000) is None  # not queued: no deadline
    assert monitor.timed_out == 1


class _Timed:
    timeout_ms = 1_500


def test_deadlines_are_kafkas() -> None:
    assert deadline_ms(ApiKey.CREATE_TOPICS, _Timed(), 2_000) == 1_500
    assert deadline_ms(ApiKey.BROKER_REGISTRATION, object(), 2_000) is None


def test_idle_ratio_is_the_share_off_a_core() -> None:
    idle = IdleRatio(window_s=60.0)
    assert idle.ratio() == 1.0
    idle.sample(0.0, 0)
    idle.sample(0.5, 10**9)  # within a second of the last: not kept
    idle.sample(10.0, 2 * 10**9)  # 2 s on a core in 10 s
    assert idle.ratio() == pytest.approx(0.8)
    for second in range(11, 200):
        idle.sample(float(second), 2 * 10**9)  # idle from then on
    assert idle.ratio() == 1.0  # the busy start left the window
