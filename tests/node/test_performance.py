"""The controller's periodic performance message and its slow-event line, in Kafka 4.4.0's
words (``EventPerformanceMonitor``), on a real event loop."""

from __future__ import annotations

import asyncio
import logging

import pytest

from pykraft.node.config import NodeConfig
from pykraft.node.performance import EventPerformanceMonitor, event_name
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
