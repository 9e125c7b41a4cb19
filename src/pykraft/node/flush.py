"""Where the node's log flush runs: inline on the loop while flushes are fast, on the single
``pykraft-fsync`` thread while they are slow (what the driver does around each: its module
docstring).

A fast fsync runs inline: handing it to a thread costs two thread switches and, on a busy
process, waits for the GIL on both sides (0.1-0.8 ms each measured on a loaded 2-core
machine, more than the fsync). Inputs arriving meanwhile wait in the socket buffers and are
stepped after it: group commit. Slow flushes (a moving average over ``FLUSH_INLINE_MAX_MS``)
go to the ``pykraft-fsync`` thread, so that the loop keeps accepting connections and
answering DescribeQuorum and scrapes while the disk works; the core is frozen meanwhile.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from typing import Final

from pykraft.node.performance import Reservoir
from pykraft.storage import FileLog

__all__ = ["FLUSH_AVERAGE_WEIGHT", "FLUSH_INLINE_MAX_MS", "Flusher"]

# Flushes run inline while they average under this; slower ones go to the fsync thread.
FLUSH_INLINE_MAX_MS: Final = 4.0
FLUSH_AVERAGE_WEIGHT: Final = 0.2  # of the latest flush in the moving average


class Flusher:
    """Times every flush; ``in_thread`` says where the next one should run."""

    __slots__ = ("_executor", "average_ms", "times_ms")

    def __init__(self) -> None:
        self._executor = concurrent.futures.ThreadPoolExecutor(
            1, thread_name_prefix="pykraft-fsync"
        )
        self.average_ms = 0.0  # moving average of flush durations
        self.times_ms = Reservoir()  # every flush (Kafka's LogFlushRateAndTimeMs)

    @property
    def in_thread(self) -> bool:
        """A fast fsync costs less than the two thread switches around it (and the waits for
        the GIL on a busy process); a slow one would stall the loop."""
        return self.average_ms >= FLUSH_INLINE_MAX_MS

    def flush(self, log: FileLog) -> None:
        """Flush ``log`` here and now (raises what ``FileLog.flush`` raises)."""
        started = time.perf_counter()
        log.flush()
        elapsed_ms = (time.perf_counter() - started) * 1000
        self.average_ms += (elapsed_ms - self.average_ms) * FLUSH_AVERAGE_WEIGHT
        self.times_ms.note(elapsed_ms)

    def submit(self, loop: asyncio.AbstractEventLoop, log: FileLog) -> asyncio.Future[None]:
        """Flush ``log`` on the fsync thread; the caller must not touch it until done."""
        return loop.run_in_executor(self._executor, self.flush, log)

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True)
