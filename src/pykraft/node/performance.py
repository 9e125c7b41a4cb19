"""The controller's periodic performance message (Kafka's ``EventPerformanceMonitor``, which
``QuorumController`` runs every ``controller.performance.sample.period.ms``): how many
controller events completed in the period, their average time and the slowest; an event over
``controller.performance.always.log.threshold.ms`` is logged at once. The texts are Kafka
4.4.0's. An event here is one request the controller handled (named by its API, as Kafka
names its events by operation) or one tick of the active controller's periodic work."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, TypeVar

from pykraft.protocol import ApiKey

if TYPE_CHECKING:
    from pykraft.node.config import NodeConfig

__all__ = ["EventPerformanceMonitor", "event_name"]

log = logging.getLogger("pykraft.controller")

NS_PER_MS: Final = 1_000_000
T = TypeVar("T")


# Where Kafka's QuorumController names the event otherwise than the API (its operations).
_KAFKA_NAMES: Final = {
    ApiKey.BROKER_HEARTBEAT: "processBrokerHeartbeat",
    ApiKey.BROKER_REGISTRATION: "registerBroker",
    ApiKey.ALTER_CONFIGS: "legacyAlterConfigs",
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: "alterUserScramCredentials",
}


def event_name(api_key: int) -> str:
    """``ApiKey.CREATE_TOPICS`` -> ``createTopics``: Kafka's QuorumController's event name."""
    if api_key in _KAFKA_NAMES:
        return _KAFKA_NAMES[ApiKey(api_key)]
    head, *rest = ApiKey(api_key).name.lower().split("_")
    return head + "".join(word.capitalize() for word in rest)


def _ms(ns: int) -> str:
    """Nanoseconds as Kafka's ``#0.00`` milliseconds."""
    return f"{ns / NS_PER_MS:.2f}"


class EventPerformanceMonitor:
    """Invariant: the figures cover the events since the last message (``reset``)."""

    def __init__(self, period_ms: int, always_log_threshold_ms: int) -> None:
        self.period_ms = period_ms
        self.threshold_ns = always_log_threshold_ms * NS_PER_MS
        self._timer: asyncio.TimerHandle | None = None
        self.reset()

    @classmethod
    def of(cls, config: NodeConfig) -> EventPerformanceMonitor:
        """From ``controller.performance.sample.period.ms`` and ``.always.log.threshold.ms``."""
        return cls(
            config.controller_performance_sample_period_ms,
            config.controller_performance_always_log_threshold_ms,
        )

    def reset(self) -> None:
        self.count = 0
        self.total_ns = 0
        self.slowest: tuple[str, int] | None = None

    def observe(self, name: str, duration_ns: int) -> None:
        self.count += 1
        self.total_ns += duration_ns
        if self.slowest is None or duration_ns > self.slowest[1]:
            self.slowest = (name, duration_ns)
        if duration_ns >= self.threshold_ns:
            log.info("Exceptionally slow controller event %s took %s ms.", name, _ms(duration_ns))

    def timed(self, name: str, event: Callable[[], T]) -> T:
        """Run ``event`` and observe how long it took."""
        started = time.monotonic_ns()
        try:
            return event()
        finally:
            self.observe(name, time.monotonic_ns() - started)

    def message(self) -> str:
        head = f"In the last {self.period_ms} ms period, "
        if self.slowest is None:
            return head + "there were no controller events completed."
        name, slowest = self.slowest
        average = _ms(self.total_ns // self.count)
        return (
            f"{head}{self.count} controller events were completed, which took an average of "
            f"{average} ms each. The slowest event was {name}, which took {_ms(slowest)} ms."
        )

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = loop.call_later(self.period_ms / 1000, self._generate, loop)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _generate(self, loop: asyncio.AbstractEventLoop) -> None:
        log.info("%s", self.message())
        self.reset()
        self.start(loop)
