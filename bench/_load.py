"""The appender load shared by every system: K concurrent appenders, optionally paced.

Each appender has at most one append call outstanding. Unpaced (``rate_rps`` None) it
issues the next call as soon as the previous one commits: a closed loop whose offered load
grows with K until the system saturates. Paced, appender ``i`` issues its calls on a fixed
schedule of ``rate_rps / K`` records per second (each call carrying ``records_per_call``
records); when a commit takes longer than the interval it falls behind, so the achieved rate
is the offered rate only below saturation. Latency is measured from the append call to the
commit callback (what the issue asks for), not from the scheduled time.

Only calls issued after ``warmup_s`` and committed before the end of the window count.
Two drivers share this accounting: ``ThreadLoad`` (callbacks from another thread, as
PySyncObj gives them) and ``AsyncLoad`` (coroutines, for the pykraft embedding API).
"""

from __future__ import annotations

import asyncio
import collections
import heapq
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from _common import summarize_latencies_ms

DRAIN_MAX_S = 5.0
TICK_S = 0.0005  # the paced load's ticker period


@dataclass(frozen=True, slots=True)
class LoadSpec:
    record_bytes: int
    appenders: int
    records_per_call: int = 1
    rate_rps: float | None = None  # offered records/s over all appenders; None = closed loop
    # One paced caller of RaftNode.schedule_append (Kafka's scheduleAppend, as
    # TestRaftServer's workload thread calls it) instead of ``appenders`` coroutines.
    schedule: bool = False
    warmup_s: float = 1.0
    measure_s: float = 5.0

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LoadSpec:
        return cls(**{k: d[k] for k in cls.__slots__ if k in d})

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}


@dataclass(slots=True)
class _Tally:
    spec: LoadSpec
    t_warm: float = 0.0
    t_end: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    records: int = 0
    errors: int = 0
    calls: int = 0

    def done(self, t_call: float, t_done: float, ok: bool) -> None:
        if not ok:
            self.errors += 1
            return
        if t_call >= self.t_warm and t_done <= self.t_end:
            self.latencies_ms.append((t_done - t_call) * 1000)
            self.records += self.spec.records_per_call

    def result(self) -> dict[str, Any]:
        window = self.t_end - self.t_warm
        rps = self.records / window
        out: dict[str, Any] = dict(self.spec.as_dict())
        out.update(
            committed_records=self.records,
            records_per_s=rps,
            mb_per_s=rps * self.spec.record_bytes / 1e6,
            errors=self.errors,
            calls=self.calls,
            window_s=window,
        )
        out.update(summarize_latencies_ms(self.latencies_ms))
        return out


def _interval_s(spec: LoadSpec) -> float | None:
    if spec.rate_rps is None:
        return None
    return spec.appenders * spec.records_per_call / spec.rate_rps


class ThreadLoad:
    """Drive ``issue(values, on_done)``, where ``on_done(ok)`` may run on any thread."""

    def __init__(self, issue: Callable[[list[bytes], Callable[[bool], None]], None]):
        self._issue = issue
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)

    def run(self, spec: LoadSpec) -> dict[str, Any]:
        values = [b"x" * spec.record_bytes] * spec.records_per_call
        interval = _interval_s(spec)
        tally = _Tally(spec)
        start = time.perf_counter()
        tally.t_warm = start + spec.warmup_s
        tally.t_end = tally.t_warm + spec.measure_s
        outstanding = [0]
        due: list[tuple[float, int]] = []  # heap of (due time, appender) for paced calls

        def call(appender: int) -> None:
            t_call = time.perf_counter()
            with self._lock:
                outstanding[0] += 1
                tally.calls += 1

            def on_done(ok: bool) -> None:
                t_done = time.perf_counter()
                with self._lock:
                    outstanding[0] -= 1
                    tally.done(t_call, t_done, ok)
                    if t_done >= tally.t_end:
                        self._wake.notify_all()
                        return
                    if interval is not None or not ok:
                        # Paced, or failed (e.g. a full queue): the pacer reissues it, so a
                        # callback that fails synchronously cannot recurse without bound.
                        nxt = t_done + 0.01 if not ok else max(t_done, t_call + (interval or 0))
                        heapq.heappush(due, (nxt, appender))
                        self._wake.notify_all()
                        return
                call(appender)

            self._issue(values, on_done)

        for i in range(spec.appenders):
            if interval is None:
                call(i)
            else:
                with self._lock:
                    heapq.heappush(due, (start + interval * i / spec.appenders, i))
        # Pacer: issue due calls until the window closes; bounded by time.
        while True:
            now = time.perf_counter()
            if now >= tally.t_end:
                break
            ready: list[int] = []
            with self._lock:
                while due and due[0][0] <= now:
                    ready.append(heapq.heappop(due)[1])
                if not ready:
                    wait = min(tally.t_end, due[0][0] if due else tally.t_end) - now
                    self._wake.wait(timeout=max(0.0, min(wait, 0.05)))
            for appender in ready:
                call(appender)
        drain_end = time.perf_counter() + DRAIN_MAX_S
        with self._lock:
            while outstanding[0] and time.perf_counter() < drain_end:
                self._wake.wait(timeout=0.05)
            result = tally.result()
            result["undrained_calls"] = outstanding[0]
        return result


class AsyncLoad:
    """Drive ``await append(values)``, which returns once the records are committed."""

    def __init__(self, append: Callable[[list[bytes]], Awaitable[object]]):
        self._append = append

    async def run(self, spec: LoadSpec) -> dict[str, Any]:
        values = [b"x" * spec.record_bytes] * spec.records_per_call
        interval = _interval_s(spec)
        tally = _Tally(spec)
        start = time.perf_counter()
        tally.t_warm = start + spec.warmup_s
        tally.t_end = tally.t_warm + spec.measure_s

        # Paced: one ticker releases calls at the offered rate and idle appenders take them.
        # (A sleep per call per appender cost the leader's loop so much CPU that 1024 paced
        # appenders delivered only ~80% of half the closed-loop peak.) A call's latency
        # starts when it is issued; the report shows whether the rate was delivered.
        tokens = asyncio.Semaphore(0)

        async def ticker(rate: float) -> None:
            released = 0
            while True:
                await asyncio.sleep(TICK_S)
                due = int((time.perf_counter() - start) * rate)
                for _ in range(due - released):
                    tokens.release()
                released = due

        tick = None
        if interval is not None and spec.rate_rps:
            tick = asyncio.create_task(ticker(spec.rate_rps / spec.records_per_call))

        async def appender(i: int) -> None:
            while True:
                now = time.perf_counter()
                if now >= tally.t_end:
                    return
                if tick is not None:
                    await tokens.acquire()
                t_call = time.perf_counter()
                tally.calls += 1
                try:
                    await self._append(values)
                    ok = True
                except Exception:
                    ok = False
                    await asyncio.sleep(0.01)  # e.g. NotLeader: do not spin
                tally.done(t_call, time.perf_counter(), ok)

        tasks = [asyncio.create_task(appender(i)) for i in range(spec.appenders)]
        window = spec.warmup_s + spec.measure_s
        done, pending = await asyncio.wait(tasks, timeout=window + DRAIN_MAX_S)
        for task in pending:
            task.cancel()
        if tick is not None:
            tick.cancel()
        for task in done:
            if task.exception() is not None:
                tally.errors += 1
        result = tally.result()
        result["undrained_calls"] = len(pending)
        return result


class ScheduleLoad:
    """Kafka's ``TestRaftServer`` workload: one paced caller of ``schedule(values) -> last
    offset`` (``RaftNode.schedule_append``), open loop, one record per call; a record's
    latency runs from its call to the first ``on_commit(high_watermark)`` past its offset.
    Needs ``rate_rps``; ``appenders`` is ignored."""

    def __init__(self, schedule: Callable[[list[bytes]], int]):
        self._schedule = schedule
        self._pending: collections.deque[tuple[int, float]] = collections.deque()
        self._tally: _Tally | None = None

    def on_commit(self, high_watermark: int) -> None:
        tally = self._tally
        pending = self._pending
        if tally is None or not pending:
            return
        now = time.perf_counter()
        while pending and pending[0][0] < high_watermark:
            tally.done(pending.popleft()[1], now, True)

    async def run(self, spec: LoadSpec) -> dict[str, Any]:
        assert spec.rate_rps, "a scheduled load is paced"
        values = [b"x" * spec.record_bytes] * spec.records_per_call
        tally = self._tally = _Tally(spec)
        self._pending.clear()
        start = time.perf_counter()
        tally.t_warm = start + spec.warmup_s
        tally.t_end = tally.t_warm + spec.measure_s
        calls_per_s = spec.rate_rps / spec.records_per_call
        issued = 0
        schedule = self._schedule
        pending = self._pending
        while True:
            await asyncio.sleep(TICK_S)
            now = time.perf_counter()
            if now >= tally.t_end:
                break
            due = int((now - start) * calls_per_s)
            for _ in range(due - issued):
                tally.calls += 1
                try:
                    pending.append((schedule(values), now))
                except Exception:
                    tally.errors += 1
            issued = due
        drain_end = time.perf_counter() + DRAIN_MAX_S
        while pending and pending[0][1] < tally.t_end and time.perf_counter() < drain_end:
            await asyncio.sleep(0.01)
        self._tally = None
        result = tally.result()
        result["undrained_calls"] = len(pending)
        return result
