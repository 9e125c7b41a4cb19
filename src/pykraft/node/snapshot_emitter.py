"""Writing the controller's metadata snapshots (Kafka's ``SnapshotEmitter``): when one is due
(``SnapshotPolicy``) and the image is exactly the committed state, the image's records are
generated a slice per turn of the event loop (``SnapshotGenerator``), each slice encoded and
framed as one batch of the snapshot file, so the loop goes on answering between them; then
the snapshot is sealed, made durable off the loop and published (``RaftNode.freeze_snapshot``).

The emitter sees the node through :class:`SnapshotNode` and the image through a callable
that answers the end offset a snapshot may have now (None while loading, while applied
records await their commit, or when nothing is new).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Final, Protocol

from pykraft.controller.snapshot_generator import SnapshotGenerator
from pykraft.metadata.image import Image
from pykraft.node.snapshot_policy import SnapshotPolicy
from pykraft.raft.snapshots import RaftSnapshotWriter
from pykraft.raft.types import OffsetAndEpoch

__all__ = ["SNAPSHOT_SLICE_RECORDS", "SnapshotEmitter", "SnapshotNode"]

log = logging.getLogger("pykraft.controller")

# Records per slice of a snapshot generated between other events (about 40 us each to build
# and encode: a slice holds the event loop for some 40 ms).
SNAPSHOT_SLICE_RECORDS: Final = 1000


class SnapshotNode(Protocol):
    """What the emitter uses of the node (``RaftNode``)."""

    def now_ms(self) -> int: ...

    def run(self, step: Callable[[], None]) -> None: ...

    def open_snapshot(self, end_offset: int | None = None) -> RaftSnapshotWriter: ...

    async def freeze_snapshot(self, writer: RaftSnapshotWriter) -> OffsetAndEpoch: ...


class SnapshotEmitter:
    """Invariant: at most one snapshot is written at a time (``policy.writing``)."""

    def __init__(
        self,
        node: SnapshotNode,
        policy: SnapshotPolicy,
        snapshot_end: Callable[[], tuple[Image, int] | None],
    ) -> None:
        self.node = node
        self.policy = policy
        self._snapshot_end = snapshot_end  # the image and the end a snapshot may have now
        self._task: asyncio.Future[None] | None = None
        self.stopped = False
        # Kafka's SnapshotEmitter metrics: the last snapshot's record bytes, and when it was
        # generated (until the first: when the host started, which sets it).
        self.latest_bytes = 0
        self.latest_ms = 0

    def request(self) -> None:
        """A snapshot as soon as the image is exactly the committed state (on demand:
        ``pykraft server`` calls this on SIGUSR1)."""
        self.policy.request()
        self.node.run(self.maybe_start)

    def maybe_start(self) -> None:
        now = self.node.now_ms()
        if self.stopped or not self.policy.due(now):
            return
        found = self._snapshot_end()
        if found is None:
            return
        image, end = found
        generator = SnapshotGenerator(image, end)
        self.policy.started(now)
        self._task = asyncio.ensure_future(self._write(generator))

    async def _write(self, generator: SnapshotGenerator) -> None:
        started = time.monotonic()
        end = generator.end
        writer: RaftSnapshotWriter | None = None
        written = 0
        try:
            writer = self.node.open_snapshot(end)
            while not generator.done and not self.stopped:
                values = generator.next_values(SNAPSHOT_SLICE_RECORDS)
                writer.append(values, self.node.now_ms())
                written += sum(map(len, values))
                await asyncio.sleep(0)
            if not generator.done:
                return  # stopped: the writer is aborted below
            sid = await self.node.freeze_snapshot(writer)
            self.latest_bytes, self.latest_ms = written, self.node.now_ms()
        except Exception as e:
            log.warning("metadata snapshot at %d not written: %s", end, e)
        else:
            log.info(
                "metadata snapshot written snapshot_id=%s records=%d in %.0f ms",
                sid,
                generator.count,
                (time.monotonic() - started) * 1000,
            )
        finally:
            if writer is not None:
                writer.abort()  # a no-op once frozen
            generator.close()
            self.policy.finished()
