"""The embedding application's side of the node (A3): appends batched per linger period, and
what waits for the high watermark (commit futures, commit-latency marks). The metadata
controller's commit callbacks are the listener's (``controller/log_listener.CommitWaiters``)."""

from __future__ import annotations

import asyncio
import collections
import heapq
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Final

__all__ = [
    "APPEND_BATCH_RECORDS_MAX",
    "COMMIT_MARKS_MAX",
    "COMMIT_WAITERS_MAX",
    "AppendLostError",
    "CommitTracker",
    "LingerBatch",
]

COMMIT_MARKS_MAX: Final = 100_000  # appended batches awaiting commit, for commit-latency
APPEND_BATCH_RECORDS_MAX: Final = 10_000  # records per linger batch before appending at once
COMMIT_WAITERS_MAX: Final = 100_000


class AppendLostError(Exception):
    """Records were appended but truncated by a new leader before they committed."""


@dataclass(slots=True)
class LingerBatch:
    """The append calls of one linger period, appended as one batch. Invariant:
    ``ends[i]`` is the count of ``values`` after call ``i`` added its records, so call
    ``i``'s last offset is the batch's base offset + ``ends[i]`` - 1."""

    values: list[bytes] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    done: list[asyncio.Future[int]] = field(default_factory=list)

    def add(self, values: Sequence[bytes], done: asyncio.Future[int]) -> int:
        """One call's records; returns the count of records in the batch now."""
        self.values.extend(values)
        count = len(self.values)
        self.ends.append(count)
        self.done.append(done)
        return count

    def appended(self, last_offset: int) -> None:
        """The batch was appended ending at ``last_offset``: tell each call its last offset."""
        before = last_offset - len(self.values)  # the base offset - 1
        for done, end in zip(self.done, self.ends, strict=True):
            if not done.done():  # the caller may have been cancelled
                done.set_result(before + end)

    def fail(self, error: BaseException) -> None:
        for done in self.done:
            if not done.done():
                done.set_exception(error)


class CommitTracker:
    """What waits for the high watermark: the application's commit futures per offset,
    resolved in offset order through a heap, and the (last offset, appended at ms) marks of
    leader batches for the commit latency. Invariant: ``_offsets`` is a heap of exactly the
    keys of ``_waiters``; each waiter carries the epoch its record was appended in."""

    __slots__ = ("_marks", "_offsets", "_waiters")

    def __init__(self) -> None:
        self._waiters: dict[int, tuple[int, list[asyncio.Future[None]]]] = {}
        self._offsets: list[int] = []
        self._marks: collections.deque[tuple[int, int]] = collections.deque(maxlen=COMMIT_MARKS_MAX)

    def mark(self, last_offset: int, appended_ms: int) -> None:
        self._marks.append((last_offset, appended_ms))

    def wait(
        self, loop: asyncio.AbstractEventLoop, offset: int, epoch: int
    ) -> asyncio.Future[None]:
        """A future resolved once ``offset`` (appended in ``epoch``) is below the HWM."""
        if len(self._waiters) >= COMMIT_WAITERS_MAX:
            raise RuntimeError(f"more than {COMMIT_WAITERS_MAX} offsets awaited")
        waiter: asyncio.Future[None] = loop.create_future()
        entry = self._waiters.get(offset)
        if entry is None:
            entry = self._waiters[offset] = (epoch, [])
            heapq.heappush(self._offsets, offset)
        entry[1].append(waiter)
        return waiter

    def committed_marks(self, high_watermark: int) -> Iterator[int]:
        """The append times (ms) of the marked batches now below ``high_watermark``."""
        marks = self._marks
        while marks and marks[0][0] < high_watermark:
            yield marks.popleft()[1]

    def resolve(self, high_watermark: int, check_epoch: Callable[[int, int], None]) -> None:
        """Resolve the waiters below ``high_watermark``; ``check_epoch(offset, epoch)`` raises
        :class:`AppendLostError` for a record a new leader truncated."""
        offsets = self._offsets
        while offsets and offsets[0] < high_watermark:
            offset = heapq.heappop(offsets)
            epoch, waiters = self._waiters.pop(offset)
            try:
                check_epoch(offset, epoch)
                error: BaseException | None = None
            except AppendLostError as e:
                error = e
            for waiter in waiters:
                if waiter.done():
                    continue
                if error is None:
                    waiter.set_result(None)
                else:
                    waiter.set_exception(error)

    def fail_all(self, error: Callable[[], BaseException]) -> None:
        """Fail every waiter, each with a new ``error()``."""
        for _, waiters in self._waiters.values():
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_exception(error())
        self._waiters.clear()
        self._offsets.clear()
