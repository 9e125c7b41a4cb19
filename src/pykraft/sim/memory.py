"""In-memory storage for the simulator and the core's tests.

Implements the core's storage protocols (``pykraft.raft.interfaces``) over Python lists and
dicts, with the crash semantics the simulator needs:

* ``MemoryLog.crash()`` drops every batch at or after ``flushed_offset`` (what was not fsynced);
  truncations, ``delete_before`` and ``reset_to_snapshot`` are durable at once (a file log
  truncates / deletes segments immediately).
* ``MemoryQuorumStateStore.write`` is durable when it returns, so ``crash()`` keeps it.
* ``MemorySnapshotStore.crash()`` loses every writer not yet frozen; frozen snapshots survive.
* ``wipe()`` on each loses everything (the disk was replaced).

Speed matters (the simulator targets tens of thousands of events per second): batches are kept
as raw bytes with their base offset, next offset and epoch cached at append time, so nothing is
re-parsed; offset lookups are binary searches.
"""

from __future__ import annotations

from bisect import bisect_right

from pykraft.raft.interfaces import SnapshotWriter
from pykraft.raft.types import ElectionState, OffsetAndEpoch
from pykraft.records import CONTROL_FLAG, iter_batches, scan_batches


class MemoryLog:
    """A ``ReplicatedLog`` over a list of raw v2 batches.

    Invariants: ``start_offset <= flushed_offset <= end_offset``; ``_bases``, ``_nexts``,
    ``_epochs`` and ``_batches`` have one entry per batch, ``_nexts[i] == _bases[i + 1]``
    (dense offsets) and ``_epochs`` never decreases. ``_epoch_starts`` lists, for each epoch
    present in the log, ``(epoch, first offset)`` in log order.
    """

    __slots__ = (
        "_bases",
        "_batches",
        "_epoch_starts",
        "_epochs",
        "_nexts",
        "_start_epoch",
        "end_offset",
        "flushed_offset",
        "start_offset",
        "truncations",
    )

    def __init__(self) -> None:
        self._batches: list[bytes] = []
        self._bases: list[int] = []
        self._nexts: list[int] = []
        self._epochs: list[int] = []
        self._epoch_starts: list[tuple[int, int]] = []
        # The protocol's three offsets are plain attributes, not properties: the core and
        # the invariant checker read them several times per simulated event. Only this
        # class writes them.
        self.start_offset = 0
        self._start_epoch = 0  # epoch of the snapshot the log starts at (0 when none)
        self.end_offset = 0
        self.flushed_offset = 0
        # Bumped by every truncation or reset: until it moves, a batch held below
        # ``flushed_offset`` stays held (the invariant checker relies on it).
        self.truncations = 0

    # -- ReplicatedLog ------------------------------------------------------------------

    def last_fetched_epoch(self) -> int:
        return self._epochs[-1] if self._epochs else self._start_epoch

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        starts = self._epoch_starts
        # Largest epoch <= ``epoch`` present in the log.
        i = bisect_right(starts, (epoch, self.end_offset + 1)) - 1
        if i < 0:
            return OffsetAndEpoch(self.start_offset, self._start_epoch)
        end = starts[i + 1][1] if i + 1 < len(starts) else self.end_offset
        return OffsetAndEpoch(end, starts[i][0])

    def epoch_at(self, offset: int) -> int | None:
        i = self._index_of(offset)
        return None if i is None else self._epochs[i]

    def append(self, batches: bytes) -> int:
        spans = scan_batches(batches, verify_crc=True)  # every check before any change
        expected = self.end_offset
        last_epoch = self.last_fetched_epoch()
        for _pos, _size, base, nxt, epoch, _attributes in spans:
            if base != expected:
                raise ValueError(f"batch base offset {base} != expected {expected}")
            if epoch < last_epoch:
                raise ValueError(f"batch epoch {epoch} below the log's {last_epoch}")
            expected = nxt
            last_epoch = epoch
        whole = len(spans) == 1 and type(batches) is bytes  # kept as is: no copy
        epochs = self._epochs
        for pos, size, base, nxt, epoch, _attributes in spans:
            if not epochs or epochs[-1] != epoch:
                self._epoch_starts.append((epoch, base))
            self._bases.append(base)
            self._nexts.append(nxt)
            epochs.append(epoch)
            self._batches.append(batches if whole else bytes(batches[pos : pos + size]))
        self.end_offset = expected
        return expected

    def control_batch_offsets(self) -> list[int]:
        # Attributes: the int16 at bytes 21-22 of the header; the control flag in the low byte.
        return [
            base
            for base, raw in zip(self._bases, self._batches, strict=True)
            if raw[22] & CONTROL_FLAG
        ]

    def read(self, offset: int, max_bytes: int) -> bytes:
        i = self._index_of(offset)
        if i is None:
            return b""
        # Batches [i, j) fit (the first one always); no copy of the list's tail.
        batches = self._batches
        size = len(batches[i])
        j = i + 1
        count = len(batches)
        while j < count and size + len(batches[j]) <= max_bytes:
            size += len(batches[j])
            j += 1
        return batches[i] if j == i + 1 else b"".join(batches[i:j])

    def truncate_to(self, offset: int) -> None:
        assert offset >= self.start_offset, (offset, self.start_offset)
        # At the start offset everything goes, including a batch straddling it.
        i = 0 if offset == self.start_offset else bisect_right(self._bases, offset - 1)
        # Above the start, ``offset`` must be a batch boundary (or at/after the end).
        assert i == 0 or self._nexts[i - 1] == offset or offset >= self.end_offset, offset
        self.truncations += 1
        del self._batches[i:], self._bases[i:], self._nexts[i:], self._epochs[i:]
        self.end_offset = min(self.end_offset, max(offset, self.start_offset))
        while self._epoch_starts and self._epoch_starts[-1][1] >= self.end_offset:
            self._epoch_starts.pop()
        self.flushed_offset = min(self.flushed_offset, self.end_offset)

    def flush(self) -> None:
        self.flushed_offset = self.end_offset

    def delete_before(self, snapshot_id: OffsetAndEpoch) -> None:
        offset = snapshot_id.offset
        if offset <= self.start_offset:
            return
        assert offset <= self.end_offset, (snapshot_id, self.end_offset)
        # Keep the batch that straddles ``offset``: reads at the start offset return it whole.
        i = bisect_right(self._nexts, offset)
        del self._batches[:i], self._bases[:i], self._nexts[:i], self._epochs[:i]
        self.start_offset = offset
        self._start_epoch = snapshot_id.epoch
        self.flushed_offset = max(self.flushed_offset, offset)
        # Keep the epochs whose range [start, next epoch's start) still reaches ``offset``.
        starts = self._epoch_starts
        kept = [
            (epoch, max(first, offset))
            for k, (epoch, first) in enumerate(starts)
            if k + 1 == len(starts) or starts[k + 1][1] > offset
        ]
        self._epoch_starts = kept if self._epochs else []

    def reset_to_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        self._reset(snapshot_id.offset, snapshot_id.epoch)

    # -- simulator hooks ----------------------------------------------------------------

    def crash(self) -> None:
        """Lose everything that was not flushed."""
        self.truncate_to(self.flushed_offset)

    def wipe(self) -> None:
        """The disk was replaced: lose everything."""
        self._reset(0, 0)

    def batches(self) -> list[tuple[int, int, int, bytes]]:
        """``(base offset, next offset, epoch, raw bytes)`` for every batch (invariant checks)."""
        return list(zip(self._bases, self._nexts, self._epochs, self._batches, strict=True))

    # -- internals ----------------------------------------------------------------------

    def _reset(self, offset: int, epoch: int) -> None:
        self.truncations += 1
        self._batches.clear()
        self._bases.clear()
        self._nexts.clear()
        self._epochs.clear()
        self._epoch_starts.clear()
        self.start_offset = self.end_offset = self.flushed_offset = offset
        self._start_epoch = epoch

    def _index_of(self, offset: int) -> int | None:
        if offset < self.start_offset or offset >= self.end_offset:
            return None
        i = bisect_right(self._bases, offset) - 1
        return i if i >= 0 else None


class MemoryQuorumStateStore:
    """A ``QuorumStateStore``; ``write`` is durable at once, so a crash keeps it."""

    __slots__ = ("_state", "_was_voter", "writes")

    def __init__(self) -> None:
        self._state: ElectionState | None = None
        self._was_voter = False
        self.writes = 0  # number of writes, for tests that count fsyncs

    def read(self) -> ElectionState | None:
        return self._state

    def write(
        self, state: ElectionState, *, kraft_version: int = 1, voter_ids: tuple[int, ...] = ()
    ) -> None:
        self._state = state
        self.writes += 1

    def was_voter(self) -> bool:
        return self._was_voter

    def remember_voter(self) -> None:
        self._was_voter = True

    def crash(self) -> None:
        """Nothing to lose: every write was durable."""

    def wipe(self) -> None:
        self._state = None
        self._was_voter = False


def make_durable_at_once(writer: SnapshotWriter) -> bool:
    """A fetched snapshot's durable step done at once, as the simulator and the core's
    scenario tests do it (the node runs it on a thread): True once ``make_durable`` returned,
    False when the writer refused the bytes (a ValueError: the core drops them and fetches
    again). The caller hands the answer to ``RaftCore.on_snapshot_durable``."""
    try:
        writer.make_durable()
    except ValueError:
        return False
    return True


class MemorySnapshotWriter:
    """A snapshot being written; published to its store by ``freeze``."""

    __slots__ = ("_buf", "_done", "_snapshot_id", "_store")

    def __init__(self, store: MemorySnapshotStore, snapshot_id: OffsetAndEpoch) -> None:
        self._store = store
        self._snapshot_id = snapshot_id
        self._buf = bytearray()
        self._done = False  # frozen, aborted, or lost in a crash

    @property
    def snapshot_id(self) -> OffsetAndEpoch:
        return self._snapshot_id

    def append(self, data: bytes) -> None:
        if self._done:
            raise ValueError("snapshot writer is closed")
        self._buf += data

    def make_durable(self) -> None:
        """Nothing to do off the loop in memory: ``freeze`` does it all."""

    def freeze(self) -> None:
        if self._done:
            raise ValueError("snapshot writer is closed")
        data = bytes(self._buf)
        for _ in iter_batches(data, verify_crc=True):  # validate before publishing
            pass
        self._done = True
        self._store._publish(self._snapshot_id, data)

    def abort(self) -> None:
        self._done = True
        self._store._open.discard(self)

    def _lose(self) -> None:
        self._done = True


class MemorySnapshotStore:
    """A ``SnapshotStore``: frozen snapshots survive a crash, writers in progress do not."""

    __slots__ = ("_open", "_snapshots")

    def __init__(self) -> None:
        self._snapshots: dict[OffsetAndEpoch, bytes] = {}
        self._open: set[MemorySnapshotWriter] = set()

    def latest(self) -> OffsetAndEpoch | None:
        return max(self._snapshots) if self._snapshots else None

    def earliest(self) -> OffsetAndEpoch | None:
        return min(self._snapshots) if self._snapshots else None

    def size(self, snapshot_id: OffsetAndEpoch) -> int | None:
        data = self._snapshots.get(snapshot_id)
        return None if data is None else len(data)

    def read(self, snapshot_id: OffsetAndEpoch, position: int, max_bytes: int) -> bytes:
        return self._snapshots[snapshot_id][position : position + max_bytes]

    def create(self, snapshot_id: OffsetAndEpoch) -> MemorySnapshotWriter:
        writer = MemorySnapshotWriter(self, snapshot_id)
        self._open.add(writer)
        return writer

    def delete_before(self, snapshot_id: OffsetAndEpoch) -> None:
        for sid in [s for s in self._snapshots if s < snapshot_id]:
            del self._snapshots[sid]

    def crash(self) -> None:
        for writer in self._open:
            writer._lose()
        self._open.clear()

    def wipe(self) -> None:
        self.crash()
        self._snapshots.clear()

    def _publish(self, snapshot_id: OffsetAndEpoch, data: bytes) -> None:
        self._snapshots[snapshot_id] = data
        self._open = {w for w in self._open if not w._done}
