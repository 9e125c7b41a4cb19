"""How long the node's event loop was held: a timer due every ``interval_s`` notes how late it
ran (the loop lag), the longest in the last minute and since the start.

Theory of operation. Everything the node does runs on one asyncio loop: the raft core's
timers, fetches and votes, the controller's requests, snapshots. A step that holds the loop
(a large request, a snapshot, a garbage collection of millions of objects) delays all of them;
a voter held past ``controller.quorum.fetch.timeout.ms`` is taken for dead. Kafka's controller
reports the same thing as the time events wait in its queue
(``kafka.controller:type=ControllerEventManager,name=EventQueueTimeMs``); pykraft's queue is
the loop, so the sampler measures how late a timer that should have run fires. A timer due at
``t`` that runs at ``t + lag`` saw the loop held for at least ``lag``; sampled every 10 ms, any
stall longer than that is seen. Exported as ``pykraft_event_loop_lag_max_ms`` (the last
minute's longest, as Kafka's ``-max`` metrics over their window) and
``pykraft_event_loop_lag_max_ever_ms``. Beside them ``pykraft_gc_frozen_objects``: a full
collection walks every object the collector tracks, and the controller keeps its image out of
its reach once loaded (``gc.freeze``), which this shows.
"""

from __future__ import annotations

import asyncio
import collections
import gc
import logging
import time
from typing import Final

__all__ = ["LoopLag"]

INTERVAL_S: Final = 0.01
WINDOW_S: Final = 60.0
PREFIX: Final = "pykraft_event_loop_"
WARN_MS: Final = 1000.0  # a stall this long gets a log line (a fetch timeout is 2 s)

log = logging.getLogger("pykraft.node")


class LoopLag:
    def __init__(self, interval_s: float = INTERVAL_S, window_s: float = WINDOW_S) -> None:
        self.interval_s = interval_s
        self.window_s = window_s
        self.max_ever_ms = 0.0
        # (time, lag ms) of each lag larger than every later one in the window: the window's
        # maximum is the first entry (a monotonic deque).
        self._peaks: collections.deque[tuple[float, float]] = collections.deque()
        self._handle: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._due = 0.0

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._arm(loop.time())

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _arm(self, now: float) -> None:
        assert self._loop is not None
        self._due = now + self.interval_s
        self._handle = self._loop.call_at(self._due, self._fired)

    def _fired(self) -> None:
        assert self._loop is not None
        now = self._loop.time()
        lag_ms = (now - self._due) * 1000
        if lag_ms >= WARN_MS:
            log.warning("the event loop was held for %.0f ms", lag_ms)
        self.note(lag_ms, time.monotonic())
        self._arm(now)

    def note(self, lag_ms: float, at: float) -> None:
        """One sample: ``lag_ms`` late at monotonic time ``at``."""
        lag_ms = max(0.0, lag_ms)
        self.max_ever_ms = max(self.max_ever_ms, lag_ms)
        peaks = self._peaks
        while peaks and peaks[-1][1] <= lag_ms:
            peaks.pop()
        peaks.append((at, lag_ms))

    def max_ms(self, now: float | None = None) -> float:
        """The longest lag in the last window."""
        now = time.monotonic() if now is None else now
        peaks = self._peaks
        while peaks and peaks[0][0] < now - self.window_s:
            peaks.popleft()
        return peaks[0][1] if peaks else 0.0

    def metrics(self) -> list[tuple[str, str, float]]:
        return [
            (
                PREFIX + "lag_max_ms",
                "the longest a 10 ms timer ran late in the last minute: the loop held (ms)",
                self.max_ms(),
            ),
            (
                PREFIX + "lag_max_ever_ms",
                "the longest a 10 ms timer ran late since the node started (ms)",
                self.max_ever_ms,
            ),
            (
                "pykraft_gc_frozen_objects",
                "objects kept out of the cyclic collector's full collections (the metadata "
                "image once loaded or replayed: gc.freeze)",
                float(gc.get_freeze_count()),
            ),
        ]
