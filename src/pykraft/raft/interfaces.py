"""What the consensus core needs from the outside world, as Protocols.

The core does no I/O. It is handed these objects and calls them synchronously:

* ``ReplicatedLog`` -- the metadata log. Appends and truncations take effect in memory at
  once (readable immediately) but are *not durable* until ``flush``. The core never calls
  ``flush`` itself: it asks for it in ``Ready.must_flush`` and the driver flushes (one fsync
  per Ready, which is how appends are batched) and reports back with
  ``RaftCore.on_flushed``. A crash loses everything after ``flushed_offset``. Messages that
  depend on the flush are listed apart (``Ready.messages_after_flush``).
  Implementations: ``pykraft.storage.log.FileLog`` (segments + fsync) and
  ``pykraft.sim.memory.MemoryLog`` (simulator).
* ``QuorumStateStore`` -- the ``quorum-state`` file. ``write`` is durable when it returns
  (tmp + fsync + rename), so "persist before acting" is simply "call write first".
* ``SnapshotStore`` -- ``<end offset>-<epoch>.checkpoint`` files.
* ``RandomSource`` -- a seeded ``random.Random`` (or anything with the same two methods);
  the core imports no ``random``.

``Ready`` is what the core hands back to its driver after every input; the driver performs it
in field order (see its docstring).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kio.schema.errors import ErrorCode

from pykraft.raft.messages import Outbound
from pykraft.raft.types import ElectionState, OffsetAndEpoch


class RandomSource(Protocol):
    def random(self) -> float: ...

    def randrange(self, start: int, stop: int, /) -> int: ...


class ReplicatedLog(Protocol):
    """The metadata log as a sequence of Kafka v2 record batches with dense offsets.

    Invariants: ``start_offset <= flushed_offset <= end_offset``; every batch carries the
    leader epoch that wrote it; epochs never decrease along the log.
    """

    @property
    def start_offset(self) -> int:
        """First offset still held in the log (the latest snapshot's end offset, or 0)."""
        ...

    @property
    def end_offset(self) -> int:
        """The log end offset (LEO), including unflushed batches."""
        ...

    @property
    def flushed_offset(self) -> int:
        """First offset not yet known durable."""
        ...

    def last_fetched_epoch(self) -> int:
        """Epoch of the last batch; if the log is empty, the epoch of the snapshot at
        ``start_offset`` (0 when there is none)."""
        ...

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        """Kafka's ``endOffsetForEpoch``: the largest epoch <= ``epoch`` present in the log
        and the end offset (exclusive) of that epoch's batches. Used to answer a Fetch with
        DivergingEpoch. For an epoch before everything held, returns the start offset and
        the snapshot's epoch."""
        ...

    def epoch_at(self, offset: int) -> int | None:
        """Epoch of the batch holding ``offset``; None if not in the log."""
        ...

    def control_batch_offsets(self) -> Sequence[int]:
        """Base offsets of the control batches held, ascending (a batch that straddles
        ``start_offset`` may be among them). The voter set and kraft.version are rebuilt
        from these at startup, so a restart need not read the whole log."""
        ...

    def append(self, batches: bytes) -> int:
        """Append one or more whole v2 batches (raw bytes). The first batch's base offset
        must equal ``end_offset`` and offsets must be dense; CRCs are checked. Returns the
        new end offset. Raises ``ValueError`` on bad input without changing the log."""
        ...

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches starting with the one that holds ``offset``, up to ``max_bytes``
        (at least one batch if any, as Kafka does). Empty at ``end_offset``."""
        ...

    def truncate_to(self, offset: int) -> None:
        """Drop every batch at or after ``offset`` (``offset`` must be a batch boundary
        >= the high watermark the caller has seen; asserting is fine)."""
        ...

    def flush(self) -> None:
        """Make everything below ``end_offset`` durable (one fsync). Driver-only."""
        ...

    def delete_before(self, snapshot_id: OffsetAndEpoch) -> None:
        """Advance the log start offset to ``snapshot_id.offset`` once that snapshot is
        durable: whole segments below it may be deleted."""
        ...

    def reset_to_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        """Discard the whole log and restart it empty at ``snapshot_id.offset`` (a follower
        that installed a fetched snapshot)."""
        ...


class QuorumStateStore(Protocol):
    def read(self) -> ElectionState | None: ...

    def write(
        self, state: ElectionState, *, kraft_version: int = 1, voter_ids: tuple[int, ...] = ()
    ) -> None:
        """Durable when it returns. ``kraft_version`` picks the format (Kafka writes
        data_version 0, with the voter ids, at kraft.version 0, so that an older binary can
        read it; 1 otherwise)."""
        ...

    def was_voter(self) -> bool:
        """Whether this directory's replica key was ever in a committed voter set (kept
        apart from the quorum state, whose format is Kafka's; see ``remember_voter``)."""
        ...

    def remember_voter(self) -> None:
        """Record, durably when it returns, that this directory's replica key has been in a
        committed voter set: an auto-joining controller that was removed never adds itself
        back (KAFKA-19850), across restarts and snapshots that no longer show it."""
        ...


class SnapshotWriter(Protocol):
    @property
    def snapshot_id(self) -> OffsetAndEpoch: ...

    def append(self, data: bytes) -> None: ...

    def make_durable(self) -> None:
        """Optional first half of ``freeze``: fsync, validate and rename ``.part`` away,
        touching nothing but this writer's own files, so that a node may run it off its
        event loop (a large snapshot's fsync and CRC check take seconds); ``freeze`` then
        only publishes. No further ``append`` after it."""
        ...

    def freeze(self) -> None:
        """Validate, fsync and publish the snapshot (rename ``.part`` away); after
        ``make_durable``, publish only."""
        ...

    def abort(self) -> None: ...


class SnapshotStore(Protocol):
    def latest(self) -> OffsetAndEpoch | None: ...

    def earliest(self) -> OffsetAndEpoch | None:
        """The oldest snapshot kept (the one at the log start once the log was cut)."""
        ...

    def size(self, snapshot_id: OffsetAndEpoch) -> int | None:
        """Size in bytes, or None when there is no such snapshot."""
        ...

    def read(self, snapshot_id: OffsetAndEpoch, position: int, max_bytes: int) -> bytes: ...

    def create(self, snapshot_id: OffsetAndEpoch) -> SnapshotWriter: ...

    def delete_before(self, snapshot_id: OffsetAndEpoch) -> None:
        """Delete snapshots older than ``snapshot_id``."""
        ...


@dataclass(frozen=True, slots=True)
class LeaderAndEpoch:
    leader_id: int  # NO_LEADER when unknown
    epoch: int


@dataclass(slots=True)
class Ready:
    """What the driver must do after an input, in this order:

    1. ``messages``: send them at once (in order per destination), before or while the flush
       of step 2 runs. None of them lets a peer count an offset this replica could lose: the
       leader's Fetch responses carry records it may not have flushed yet, which is safe
       because a leader counts its *own* offset toward the high watermark only once flushed
       (B13); a leader that crashes and loses an unflushed tail comes back resigned, and its
       log is reconciled by DivergingEpoch like any other divergent suffix.
    2. ``must_flush``: flush the log (one fsync), then call ``RaftCore.on_flushed(now_ms)``.
    3. ``messages_after_flush``: send them only once step 2 completed (empty when
       ``must_flush`` is False). These tell a peer our log end offset as something it may
       rely on: a follower's Fetch (its fetch offset counts toward the leader's high
       watermark, so it must be durable) and a candidate's Vote requests (its last offset),
       and whatever follows one of them to the same destination (order per destination is
       kept across the two lists).
    4. ``snapshot_to_make_durable``: a snapshot fetched from the leader has all its bytes:
       call its ``make_durable`` (fsync and final check; it touches only its own file, so it
       may run on another thread, as long as no other input reaches the core meanwhile),
       then ``RaftCore.on_snapshot_durable(writer, valid, now_ms)`` with ``valid`` False if
       ``make_durable`` refused the bytes (``ValueError``). The core sends no Fetch until
       then; the next ``Ready`` reports ``snapshot_loaded``.
    5. ``snapshot_loaded``: the log was reset to this fetched snapshot; the application
       must reload its state from it before applying later batches.
    6. ``high_watermark``: when not None, the new high watermark; the application may apply
       every batch below it (read them with ``ReplicatedLog.read``).
    7. ``leader_change``: tell the application (Kafka's ``handleLeaderChange``).
    8. ``next_deadline_ms``: call ``poll`` again no later than this.
    9. ``completed``: admin operations started through ``RaftCore`` methods (``add_voter``,
       ``remove_voter``, ``update_kraft_version``, ``set_target_voters``) that finished; each
       is reported once, after the change it made committed (or with its error).

    A driver that flushes first and then sends ``messages`` followed by
    ``messages_after_flush`` is also correct, only slower: the leader's fsync and its
    followers' then run in series instead of overlapping.
    """

    must_flush: bool = False
    messages: Sequence[Outbound] = field(default_factory=list)
    messages_after_flush: Sequence[Outbound] = field(default_factory=list)
    snapshot_loaded: OffsetAndEpoch | None = None
    snapshot_to_make_durable: SnapshotWriter | None = None
    high_watermark: int | None = None
    leader_change: LeaderAndEpoch | None = None
    next_deadline_ms: int = 0
    completed: Sequence[OperationResult] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class OperationResult:
    """The outcome of an admin operation started through a ``RaftCore`` method."""

    op_id: int  # what the method returned
    operation: str  # "add_voter" | "remove_voter" | "update_kraft_version" | "set_target_voters"
    error: ErrorCode
    message: str | None = None
