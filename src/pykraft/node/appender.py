"""The embedding application's appends on a running node (A3): Kafka's ``RaftClient.append``
and ``scheduleAppend``, batched per ``controller.quorum.append.linger.ms`` (or at once past
``APPEND_BATCH_RECORDS_MAX`` records), and what waits for them to commit.

:class:`Appender` sees the node through :class:`AppendHost`: the core, whether the node is
stopping or flushing (an append during a thread flush is deferred behind it: the log is
never written while it is flushed), how to step the core now or later, and the epoch the log
holds at an offset (a record truncated by a new leader raises ``AppendLostError``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Protocol

from pykraft.node.appends import (
    APPEND_BATCH_RECORDS_MAX,
    AppendLostError,
    CommitTracker,
    LingerBatch,
)
from pykraft.node.metrics import RaftMetrics
from pykraft.raft.api import RaftApi
from pykraft.raft.config import NotLeaderError
from pykraft.raft.roles import Leader
from pykraft.storage import StorageError

__all__ = ["AppendHost", "Appender"]


class AppendHost(Protocol):
    """What the appender uses of the node (``RaftNode``)."""

    @property
    def core(self) -> RaftApi | None: ...

    @property
    def metrics(self) -> RaftMetrics | None: ...

    @property
    def stopping(self) -> bool: ...

    @property
    def flushing(self) -> bool:
        """A flush runs on the fsync thread: the core is frozen until it completes."""
        ...

    def now_ms(self) -> int: ...

    def defer(self, step: Callable[[], None]) -> None:
        """Run ``step`` when the running flush completes."""
        ...

    def step_now(self, step: Callable[[], None]) -> None:
        """Run ``step`` on the core, then perform what the core has to do."""
        ...

    def epoch_at(self, offset: int) -> int | None: ...


class Appender:
    """Invariant: at most one linger timer; ``_deferred`` is True while ``_append_pending``
    waits behind a flush (queued once)."""

    def __init__(self, host: AppendHost, loop: asyncio.AbstractEventLoop, linger_ms: int) -> None:
        self.host = host
        self._loop = loop
        self._linger_ms = linger_ms
        self._linger: asyncio.TimerHandle | None = None
        self._deferred = False
        self._batch = LingerBatch()
        self._commits = CommitTracker()

    async def append(self, values: Sequence[bytes]) -> int:
        """See ``RaftNode.append``."""
        core = self.host.core
        if core is None or self.host.stopping:
            raise ConnectionError("node is not running")
        if not values:
            raise ValueError("append needs at least one record")
        if not isinstance(core.state, Leader):
            raise NotLeaderError(core.leader_id, core.epoch)
        # One future per call (a shared one would be cancelled with any one caller), but no
        # other per-call object: the linger batch keeps flat lists.
        done: asyncio.Future[int] = self._loop.create_future()
        if self._batch.add(values, done) >= APPEND_BATCH_RECORDS_MAX:
            self.flush()
        else:
            self._arm()
        return await done

    def schedule_append(self, values: Sequence[bytes]) -> int:
        """See ``RaftNode.schedule_append``."""
        core = self.host.core
        if core is None or self.host.stopping:
            raise ConnectionError("node is not running")
        last = core.schedule_append(values)
        if core.scheduled_count + len(self._batch.values) >= APPEND_BATCH_RECORDS_MAX:
            self.flush()
        else:
            self._arm()
        return last

    def _arm(self) -> None:
        if self._linger is None:
            self._linger = self._loop.call_later(self._linger_ms / 1000, self.flush)

    def stop(self, error: BaseException) -> None:
        """The node stops: the linger timer off, every append and commit waiter failed."""
        if self._linger is not None:
            self._linger.cancel()
            self._linger = None
        self.fail_appends(error)
        self._commits.fail_all(lambda: error)

    def fail_appends(self, error: BaseException) -> None:
        batch, self._batch = self._batch, LingerBatch()
        batch.fail(error)

    def flush(self) -> None:
        """Append the linger batch (and the scheduled records) now, or after the flush."""
        if self._linger is not None:
            self._linger.cancel()
            self._linger = None
        host = self.host
        core = host.core
        if core is None or host.stopping or not (self._batch.values or core.scheduled_count):
            return
        if host.flushing:
            # Appended after the running flush, together with whatever else arrives (queued
            # once: calls past the batch limit during a flush all end here).
            if not self._deferred:
                self._deferred = True
                host.defer(self._append_pending)
            return
        host.step_now(self._append_pending)

    def _append_pending(self) -> None:
        self._deferred = False
        host = self.host
        core = host.core
        if core is None or host.stopping:
            return
        batch, self._batch = self._batch, LingerBatch()
        now = host.now_ms()
        scheduled = core.scheduled_count
        try:
            # The scheduled records first: they were promised the offsets after the log end.
            last: int | None = core.drain_scheduled(now) if scheduled else None
            if batch.values:
                last = core.append(batch.values, now)
        except NotLeaderError as e:
            batch.fail(e)
            return
        except (OSError, StorageError) as e:
            batch.fail(ConnectionError(f"metadata log write failed: {e}"))
            raise
        if last is None:
            return
        if host.metrics is not None:
            host.metrics.on_append(now, scheduled + len(batch.values))
        self._commits.mark(last, now)
        if batch.values:
            batch.appended(last)

    async def wait_committed(self, offset: int, epoch: int | None = None) -> None:
        """See ``RaftNode.wait_committed``."""
        core = self.host.core
        assert core is not None
        if epoch is None:
            epoch = core.epoch
        if offset < core.high_watermark:
            self._check_epoch(offset, epoch)
            return
        await self._commits.wait(self._loop, offset, epoch)

    def _check_epoch(self, offset: int, epoch: int) -> None:
        held = self.host.epoch_at(offset)
        if held is not None and held != epoch:
            raise AppendLostError(f"offset {offset} holds epoch {held}, not {epoch}")

    def committed(self, high_watermark: int) -> None:
        """The high watermark moved: commit latencies measured, waiters resolved."""
        now = self.host.now_ms()
        metrics = self.host.metrics
        for appended_ms in self._commits.committed_marks(high_watermark):
            if metrics is not None:
                metrics.on_commit(now, appended_ms)
        self._commits.resolve(high_watermark, self._check_epoch)
