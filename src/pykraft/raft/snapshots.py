"""The application's side of a snapshot (B11, A3).

``RaftCore.create_snapshot`` hands out a ``RaftSnapshotWriter``: it frames the application's
records with a SnapshotHeader batch (offset 0) and, on ``freeze``, a SnapshotFooter batch, then
publishes the snapshot through the store and tells the core, whose retention policy decides
whether the log start offset advances (``ReplicatedLog.delete_before``).

A node with a large snapshot splits ``freeze`` in three: ``seal`` (the footer), then
``make_durable`` (the store's fsync and CRC check, which touch only the snapshot's own file
and may run on another thread), then ``freeze`` (publish and tell the core, back on the
node's own thread).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pykraft.raft.interfaces import SnapshotWriter
from pykraft.raft.types import OffsetAndEpoch
from pykraft.records import (
    build_batch,
    read_header,
    snapshot_footer_batch,
    snapshot_header_batch,
    with_base_offset,
)


class RaftSnapshotWriter:
    """Writes one snapshot. Invariant: ``_next_offset`` is the offset of the next record in
    the snapshot file (the header batch holds offset 0)."""

    __slots__ = (
        "_clock_offset_ms",
        "_closed",
        "_next_offset",
        "_on_frozen",
        "_sealed",
        "_writer",
        "snapshot_id",
    )

    def __init__(
        self,
        writer: SnapshotWriter,
        snapshot_id: OffsetAndEpoch,
        now_ms: int,
        on_frozen: Callable[[OffsetAndEpoch], None],
        control_batches: Sequence[bytes] = (),
        clock_offset_ms: int = 0,
    ) -> None:
        self.snapshot_id = snapshot_id
        self._writer = writer
        self._on_frozen = on_frozen
        self._closed = False
        self._sealed = False
        self._clock_offset_ms = clock_offset_ms  # RaftConfig.clock_offset_ms
        # last_contained_log_timestamp: the core does not track record timestamps; now
        # is an upper bound of it.
        now = now_ms + clock_offset_ms
        writer.append(snapshot_header_batch(0, snapshot_id.epoch, now, now))
        self._next_offset = 1
        # KRaftVersion, Voters (kraft.version >= 1) and pykraft's target voter set follow
        # the header (B11, E1), renumbered to their place in the file.
        for batch in control_batches:
            writer.append(with_base_offset(batch, self._next_offset))
            self._next_offset = read_header(batch).record_count + self._next_offset

    def append(self, values: Sequence[bytes], now_ms: int = 0) -> None:
        """Append one batch of application records."""
        if self._closed or self._sealed:
            raise ValueError("snapshot writer is closed")
        if not values:
            return
        timestamp_ms = now_ms + self._clock_offset_ms
        self._writer.append(
            build_batch(self._next_offset, self.snapshot_id.epoch, values, timestamp_ms)
        )
        self._next_offset += len(values)

    def seal(self, now_ms: int = 0) -> None:
        """Write the footer: no record may follow (``freeze`` seals if this was not called)."""
        if self._closed or self._sealed:
            raise ValueError("snapshot writer is closed")
        timestamp_ms = now_ms + self._clock_offset_ms
        self._writer.append(
            snapshot_footer_batch(self._next_offset, self.snapshot_id.epoch, timestamp_ms)
        )
        self._sealed = True

    def make_durable(self) -> None:
        """The store's fsync and check of the sealed snapshot (may run on another thread:
        it touches only the snapshot's file, not the core)."""
        if self._closed or not self._sealed:
            raise ValueError("snapshot writer is not sealed")
        self._writer.make_durable()

    def freeze(self, now_ms: int = 0) -> None:
        """Write the footer (unless sealed), make the snapshot durable and visible, then let
        the core apply its retention policy (advance the log start)."""
        if self._closed:
            raise ValueError("snapshot writer is closed")
        if not self._sealed:
            self.seal(now_ms)
        self._writer.freeze()
        self._closed = True
        self._on_frozen(self.snapshot_id)

    def abort(self) -> None:
        if not self._closed:
            self._closed = True
            self._writer.abort()
