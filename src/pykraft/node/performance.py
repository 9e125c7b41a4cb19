"""The controller's periodic performance message (Kafka's ``EventPerformanceMonitor``, which
``QuorumController`` runs every ``controller.performance.sample.period.ms``): how many
controller events completed in the period, their average time and the slowest; an event over
``controller.performance.always.log.threshold.ms`` is logged at once. The texts are Kafka
4.4.0's. An event here is one request the controller handled (named by its API, as Kafka
names its events by operation) or one tick of the active controller's periodic work.

The same events feed Kafka's event-queue metrics (``QuorumControllerMetrics``): operations
started (EventQueueOperationsStartedCount) and timed out (EventQueueOperationsTimedOutCount),
heartbeats timed out (TimedOutBrokerHeartbeatCount), and two histograms,
ControllerEventManager's EventQueueTimeMs (received to started: a write waits while the node
flushes, a read not at all) and EventQueueProcessingTimeMs (started to done). Kafka's
histograms keep an exponentially decaying sample of 1028 values; :class:`Reservoir` keeps the
last 1028, from which the scrape takes the same percentiles.

A request waiting longer than its deadline is answered REQUEST_TIMED_OUT unprocessed, as
Kafka's event queue does (``request_fields.deadline_ms``: a BrokerHeartbeat two heartbeat
intervals after it arrived, a request with its own timeout after that), counted by
:meth:`EventPerformanceMonitor.expired`."""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, TypeVar

from pykraft.protocol import ApiKey

if TYPE_CHECKING:
    from pykraft.node.config import NodeConfig

__all__ = ["PERCENTILES", "EventPerformanceMonitor", "Reservoir", "event_name"]

log = logging.getLogger("pykraft.controller")

NS_PER_MS: Final = 1_000_000
T = TypeVar("T")
RESERVOIR_SIZE: Final = 1028  # yammer's ExponentiallyDecayingReservoir's
# The percentiles a yammer histogram's MBean has, as the exporter's quantile label.
PERCENTILES: Final = (("0.50", 0.5), ("0.75", 0.75), ("0.95", 0.95), ("0.98", 0.98))
PERCENTILES_HIGH: Final = (("0.99", 0.99), ("0.999", 0.999))


class Reservoir:
    """The last :data:`RESERVOIR_SIZE` values and how many were ever noted."""

    def __init__(self) -> None:
        self.count = 0
        self._values: collections.deque[float] = collections.deque(maxlen=RESERVOIR_SIZE)

    def note(self, value: float) -> None:
        self.count += 1
        self._values.append(value)

    def quantiles(self) -> list[tuple[str, float]]:
        """(label, value) per percentile, as yammer's Snapshot.getValue (0 when empty)."""
        ordered = sorted(self._values)
        out = []
        for label, q in PERCENTILES + PERCENTILES_HIGH:
            if not ordered:
                out.append((label, 0.0))
                continue
            pos = q * (len(ordered) + 1)
            if pos < 1:
                out.append((label, ordered[0]))
            elif pos >= len(ordered):
                out.append((label, ordered[-1]))
            else:
                low = ordered[int(pos) - 1]
                out.append((label, low + (pos - int(pos)) * (ordered[int(pos)] - low)))
        return out


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
        self.started = 0  # EventQueueOperationsStartedCount
        self.timed_out = 0  # EventQueueOperationsTimedOutCount
        self.timed_out_heartbeats = 0  # TimedOutBrokerHeartbeatCount
        self.queue_ms = Reservoir()  # EventQueueTimeMs
        self.processing_ms = Reservoir()  # EventQueueProcessingTimeMs
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

    def timed(self, name: str, event: Callable[[], T], received_ns: int | None = None) -> T:
        """Run ``event`` and observe how long it took (and, given when it was received
        (``time.monotonic_ns``), how long it waited)."""
        started = time.monotonic_ns()
        self.started += 1
        self.queue_ms.note(0.0 if received_ns is None else (started - received_ns) / NS_PER_MS)
        try:
            return event()
        finally:
            took = time.monotonic_ns() - started
            self.processing_ms.note(took / NS_PER_MS)
            self.observe(name, took)

    def expired(self, api_key: int, received_ns: int | None, deadline_ms: int | None) -> str | None:
        """Why a request received at ``received_ns`` is not to be run, its ``deadline_ms``
        having passed (counted); None: run it."""
        if received_ns is None or deadline_ms is None:
            return None
        waited_ms = (time.monotonic_ns() - received_ns) // NS_PER_MS
        if waited_ms <= deadline_ms:
            return None
        self.timed_out += 1
        if api_key == ApiKey.BROKER_HEARTBEAT:
            self.timed_out_heartbeats += 1
        return f"waited {waited_ms} ms to be processed, past its deadline of {deadline_ms} ms"

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
