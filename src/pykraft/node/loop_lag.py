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
``pykraft_event_loop_lag_max_ever_ms``. A full collection walks every object the collector
tracks, and the controller keeps its image out of its reach once loaded (``gc.freeze``), which
its ``pykraft_gc_image_frozen`` shows (``controller_host.py``; not a count of the frozen
objects: ``gc.get_freeze_count`` walks them all, 100 ms per 5 million, the loop held).

A late timer is not always the node's doing: on a machine with fewer cores than busy processes
the loop's thread waits for a core too. Linux counts that wait per thread (the second field of
``/proc/self/task/<tid>/schedstat``, time runnable but not running), so each sample also reads
it and subtracts what the interval spent waiting for a core: ``pykraft_event_loop_held_max_ms``
and ``..._held_max_ever_ms`` are the lag the node caused (its callbacks, the collector, a
blocking call, another of its threads holding the GIL). Where the kernel does not keep the
counter the held figures are the lag itself.

The figures say how long, not what. With ``pykraft.event.loop.stall.stack.ms`` set, a
watchdog thread looks every half of that interval at when the next sample was due; once the
loop is that late it logs the stack of the loop's thread (``sys._current_frames``), once per
stall. It needs the GIL to look: a stall inside compiled code that never returns to the
interpreter is reported when it does, with the stack then. Off by default (a thread that
wakes on a timer); the million-partition benchmark turns it on to say what held a loop.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import sys
import threading
import time
import traceback
from typing import Final

__all__ = ["IdleRatio", "LoopLag", "WindowMax"]

INTERVAL_S: Final = 0.01
WINDOW_S: Final = 60.0
PREFIX: Final = "pykraft_event_loop_"
WARN_MS: Final = 1000.0  # a stall this long gets a log line (a fetch timeout is 2 s)

log = logging.getLogger("pykraft.node")


class WindowMax:
    """The largest value noted in the last ``window_s`` seconds, and since the start."""

    def __init__(self, window_s: float) -> None:
        self.window_s = window_s
        self.max_ever = 0.0
        # (time, value) of each value larger than every later one in the window: the window's
        # maximum is the first entry (a monotonic deque).
        self._peaks: collections.deque[tuple[float, float]] = collections.deque()

    def note(self, value: float, at: float) -> None:
        value = max(0.0, value)
        self.max_ever = max(self.max_ever, value)
        peaks = self._peaks
        while peaks and peaks[-1][1] <= value:
            peaks.pop()
        peaks.append((at, value))

    def max(self, now: float) -> float:
        peaks = self._peaks
        while peaks and peaks[0][0] < now - self.window_s:
            peaks.popleft()
        return peaks[0][1] if peaks else 0.0


class IdleRatio:
    """The share of the last ``window_s`` seconds the loop's thread spent off a core
    (waiting for work or for I/O): 1 less its CPU time (``time.thread_time_ns``, read on
    the loop's thread) over the wall time between two samples about ``window_s`` apart.
    Kafka's ``AvgIdleRatio`` of its controller's event thread and metadata loader and the
    raft client's ``poll-idle-ratio-avg`` are this figure for their own threads; pykraft's
    loop is all three."""

    def __init__(self, window_s: float, every_s: float = 1.0) -> None:
        self.window_s = window_s
        self.every_s = every_s
        self._samples: collections.deque[tuple[float, int]] = collections.deque()
        self._first: tuple[float, int] | None = None  # the first sample (idle since then)

    def idle_ns(self) -> int:
        """The thread's time off a core since the first sample, to the last one."""
        if self._first is None or not self._samples:
            return 0
        (t0, c0), (t1, c1) = self._first, self._samples[-1]
        return max(0, int((t1 - t0) * 1e9) - (c1 - c0))

    def sample(self, at: float, cpu_ns: int) -> None:
        """Note the thread's CPU time at monotonic ``at`` (kept once per ``every_s``)."""
        samples = self._samples
        if samples and at - samples[-1][0] < self.every_s:
            return
        samples.append((at, cpu_ns))
        if self._first is None:
            self._first = (at, cpu_ns)
        while len(samples) > 2 and at - samples[1][0] >= self.window_s:
            samples.popleft()

    def ratio(self) -> float:
        """Idle share over the kept samples (1.0 before there are two)."""
        samples = self._samples
        if len(samples) < 2:
            return 1.0
        (t0, c0), (t1, c1) = samples[0], samples[-1]
        busy = (c1 - c0) / 1e9 / (t1 - t0)
        return min(1.0, max(0.0, 1.0 - busy))


class LoopLag:
    def __init__(self, interval_s: float = INTERVAL_S, window_s: float = WINDOW_S) -> None:
        self.interval_s = interval_s
        self.lag = WindowMax(window_s)  # how late the timer ran, ms
        self.held = WindowMax(window_s)  # the same less the thread's wait for a core, ms
        self.idle = IdleRatio(window_s)  # the loop thread's share of time off a core
        self._handle: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._due = 0.0
        self._schedstat: int | None = None  # the loop thread's /proc schedstat, kept open
        self._waited_ns = 0
        self._ran_ns = 0
        self._watchdog: threading.Thread | None = None
        self._watching = threading.Event()  # set: the watchdog stops

    @property
    def max_ever_ms(self) -> float:
        return self.lag.max_ever

    def start(self, loop: asyncio.AbstractEventLoop, *, stall_stack_ms: int = 0) -> None:
        """Sample ``loop`` (run on this thread); with ``stall_stack_ms`` > 0, log the loop
        thread's stack whenever it is held that long."""
        self._loop = loop
        path = f"/proc/self/task/{threading.get_native_id()}/schedstat"
        try:
            self._schedstat = os.open(path, os.O_RDONLY)
        except OSError:
            self._schedstat = None
        self._ran_ns, self._waited_ns = self._schedstat_ns() or (0, 0)
        self._arm(loop.time())
        if stall_stack_ms > 0:
            self._watching.clear()
            self._watchdog = threading.Thread(
                target=self._watch,
                args=(threading.get_ident(), stall_stack_ms / 1000),
                name="pykraft-loop-watchdog",
                daemon=True,
            )
            self._watchdog.start()

    def _watch(self, thread_id: int, stall_s: float) -> None:
        """The watchdog thread: the loop thread's stack, once per stall of ``stall_s``."""
        reported = -1.0  # the due time of the sample whose stall was reported
        while not self._watching.wait(stall_s / 2):
            due = self._due
            late_s = time.monotonic() - due  # asyncio's and uvloop's clocks: CLOCK_MONOTONIC
            if late_s < stall_s or due == reported:
                continue
            frame = sys._current_frames().get(thread_id)
            if frame is None:
                return
            reported = due
            stat = self._schedstat_ns()
            waited_ms = float("nan") if stat is None else (stat[1] - self._waited_ns) / 1e6
            stack = "".join(traceback.format_stack(frame))
            log.warning(
                "the event loop is %.0f ms late (%.0f ms of it waiting for a core); "
                "its thread is at:\n%s",
                late_s * 1000,
                waited_ms,
                stack.rstrip(),
            )

    def stop(self) -> None:
        if self._watchdog is not None:
            self._watching.set()
            self._watchdog.join()
            self._watchdog = None
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if self._schedstat is not None:
            os.close(self._schedstat)
            self._schedstat = None

    def _schedstat_ns(self) -> tuple[int, int] | None:
        """How long the loop's thread has run on a core and waited for one since it started
        (None: unknown)."""
        if self._schedstat is None:
            return None
        try:
            ran, waited = os.pread(self._schedstat, 96, 0).split()[:2]
            return int(ran), int(waited)
        except (OSError, ValueError):
            return None

    def _arm(self, now: float) -> None:
        assert self._loop is not None
        self._due = now + self.interval_s
        self._handle = self._loop.call_at(self._due, self._fired)

    def _fired(self) -> None:
        assert self._loop is not None
        now = self._loop.time()
        lag_ms = (now - self._due) * 1000
        stat = self._schedstat_ns()
        held_ms = lag_ms
        ran_ms = float("nan")
        if stat is not None:
            held_ms -= (stat[1] - self._waited_ns) / 1e6
            ran_ms = (stat[0] - self._ran_ns) / 1e6
            self._ran_ns, self._waited_ns = stat
        if held_ms >= WARN_MS:
            log.warning(
                "the event loop was held for %.0f ms (%.0f ms of it on a core)", held_ms, ran_ms
            )
        at = time.monotonic()
        self.note(lag_ms, at, held_ms)
        self.idle.sample(at, time.thread_time_ns())
        self._arm(now)

    def note(self, lag_ms: float, at: float, held_ms: float | None = None) -> None:
        """One sample: ``lag_ms`` late at monotonic time ``at``, ``held_ms`` of it the node's
        own (all of it if not given)."""
        self.lag.note(lag_ms, at)
        self.held.note(lag_ms if held_ms is None else held_ms, at)

    def max_ms(self, now: float | None = None) -> float:
        """The longest lag in the last window."""
        return self.lag.max(time.monotonic() if now is None else now)

    def metrics(self) -> list[tuple[str, str, float]]:
        now = time.monotonic()
        return [
            (
                "kafka_server_raftmetrics_poll_idle_ratio_avg",
                "poll-idle-ratio-avg: the share of the last minute the loop's thread, which "
                "polls the quorum, was off a core",
                self.idle.ratio(),
            ),
            (
                PREFIX + "lag_max_ms",
                "the longest a 10 ms timer ran late in the last minute (ms)",
                self.lag.max(now),
            ),
            (
                PREFIX + "lag_max_ever_ms",
                "the longest a 10 ms timer ran late since the node started (ms)",
                self.lag.max_ever,
            ),
            (
                PREFIX + "held_max_ms",
                "the longest lag in the last minute less the time the loop's thread waited for "
                "a core: the loop held by the node (ms)",
                self.held.max(now),
            ),
            (
                PREFIX + "held_max_ever_ms",
                "the longest lag since the node started less the time the loop's thread waited "
                "for a core (ms)",
                self.held.max_ever,
            ),
        ]
