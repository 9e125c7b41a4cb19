"""``FileLog``: the metadata log as Kafka-style segment files.

Theory of operation. The partition directory ``__cluster_metadata-0`` holds segments
``<base offset:020d>.log`` (raw v2 batches back to back) with a sparse ``.index`` beside each
(8-byte entries: int32 offset relative to the segment base, int32 byte position, one entry
per ~4 KiB of batches). Appends go straight to the tail segment's file descriptor with
``os.write``, so they are readable at once with ``os.pread``; ``flush`` makes them durable
with one ``fsync`` (plus a directory fsync when segments were created or deleted since the
last flush). A segment rolls when the next batch would take it past ``segment_bytes``.

Recovery (``open``), as Kafka's log manager does it. Three files in the partition directory
say how much of the log is known good (Kafka's names and formats; Kafka keeps the first and
the last in the log directory, for all its partitions at once, but here the partition is the
only thing the log owns, and two logs may share a parent):
- ``recovery-point-offset-checkpoint`` (version 0, one entry ``<topic> <partition> <offset>``):
  every segment wholly below that offset was fsynced, with its ``.index``, before the file was
  written;
- ``leader-epoch-checkpoint`` (version 0, count, ``<epoch> <start offset>`` lines): the epoch
  cache as it was then, written just before;
- ``control-batch-checkpoint`` (pykraft's own, same layout, one offset per line): the base
  offsets of the control batches below the point, so that the core rebuilds the voter set at
  startup from those batches alone (``control_batch_offsets``) instead of reading the log;
- ``.kafka_cleanshutdown`` (``{"version":0,"brokerEpoch":-1}``): written by a clean ``close``
  after a flush and a checkpoint at the end offset; deleted by ``open``.
After a clean shutdown nothing is scanned: each segment's ``.index`` is read back and checked
by walking the few batch headers after its last entry (which must end exactly at the file's
size and at the next segment's base offset). After a crash the segments below the recovery
point are trusted the same way and only the later ones are scanned with
``records.valid_prefix`` (framing, CRC, dense offsets), which rebuilds their index and epochs.
A segment whose index does not check out is scanned too. A torn or corrupt tail is truncated to
the last valid batch and the loss is logged; segments after a corrupt one are deleted (their
offsets would no longer be dense). ``flush`` moves the recovery point to the tail segment's
base once the segments before it are durable (so it is rewritten once per segment roll, not
per flush); ``truncate_to`` and ``reset_to_snapshot`` lower it first when they rewrite offsets
below it. Without the files (a log written before they existed) everything is scanned.

Log start offset: kept in ``log-start-offset`` (text ``<offset> <snapshot epoch>``, written
tmp + fsync + rename) by ``delete_before`` and ``reset_to_snapshot``; it is written *before*
any segment is deleted, so a crash in between leaves segments that open() deletes again.

Page cache (drop-behind): after each ``flush`` the log asks the kernel to drop its cached
pages older than the last ``cache_keep_bytes`` (64 MiB; ``None`` keeps everything) with
``posix_fadvise(DONTNEED)``, at least 8 MiB at a time. They are clean by then (fsynced), so
this is only a cache hint; reads of older data (a lagging follower's catch-up, a reopen's scan)
come from the disk, and a ``read`` wholly in the dropped part drops its pages again after it
and asks the kernel to read the next range of the same size ahead (``WILLNEED``). Why: writing into new page cache costs first-touch page faults, and on a VM
whose free memory was handed back to the host that is slow (~300-450 MB/s measured here vs
~3.5 GB/s into recycled pages): a catching-up follower's writes were half its time.

The epoch cache (Kafka's leader-epoch-checkpoint, kept in memory only) lists
``(epoch, start offset)`` for every epoch in the log, so ``end_offset_for_epoch`` and
``last_fetched_epoch`` never touch the disk.
"""

from __future__ import annotations

import bisect
import logging
import os
from pathlib import Path

from pykraft.raft.types import OffsetAndEpoch
from pykraft.records import (
    BATCH_HEADER_SIZE,
    CONTROL_FLAG,
    BatchHeader,
    BatchSpan,
    read_header,
    scan_batches,
    valid_prefix,
)
from pykraft.storage import checkpoints as ck
from pykraft.storage._files import StorageError, fsync_dir
from pykraft.storage.segment import (
    INDEX_ENTRY,
    Segment,
    parse_segment_name,
    segment_name,
)

log = logging.getLogger(__name__)

PARTITION_DIR_NAME = "__cluster_metadata-0"
DEFAULT_SEGMENT_BYTES = 1024 * 1024 * 1024  # metadata.log.segment.bytes
# The recovery point moves at a flush once this much was appended since it last moved: what a
# kill -9 leaves to scan is at most this plus what was not flushed.
DEFAULT_CHECKPOINT_INTERVAL_BYTES = 16 * 1024 * 1024
_SCAN_CHUNK_BYTES = 8 * 1024 * 1024
DEFAULT_CACHE_KEEP_BYTES = 64 * 1024 * 1024
_DROP_MIN_BYTES = 8 * 1024 * 1024
_FADV_DONTNEED: int | None = getattr(os, "POSIX_FADV_DONTNEED", None)
_FADV_WILLNEED: int | None = getattr(os, "POSIX_FADV_WILLNEED", None)


class OffsetOutOfRangeError(ValueError):
    """A read outside ``[start_offset, end_offset]``."""


class FileLog:
    """A ``ReplicatedLog`` on segment files. Not thread-safe: one owner calls it."""

    def __init__(
        self,
        partition_dir: Path,
        *,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        cache_keep_bytes: int | None = DEFAULT_CACHE_KEEP_BYTES,
        checkpoint_interval_bytes: int = DEFAULT_CHECKPOINT_INTERVAL_BYTES,
    ) -> None:
        """Use ``FileLog.open``."""
        if not BATCH_HEADER_SIZE < segment_bytes <= 2**31 - 1:
            raise ValueError(f"segment_bytes {segment_bytes} outside (61, 2**31)")
        self.dir = partition_dir
        self.segment_bytes = segment_bytes
        self.cache_keep_bytes = cache_keep_bytes
        self._segments: list[Segment] = []
        self._start_offset = 0
        self._start_epoch = 0  # epoch of the snapshot at the start offset (0 when none)
        self._flushed_offset = 0
        # Epoch cache. Invariant: epochs strictly increase, starts strictly increase,
        # _epoch_starts[0] == start_offset when non-empty, every start < end_offset.
        self._epochs: list[int] = []
        self._epoch_starts: list[int] = []
        # Base offsets of the control batches held (ascending), for control_batch_offsets.
        self._control: list[int] = []
        self._dir_dirty = False
        self.checkpoint_interval_bytes = checkpoint_interval_bytes
        self._recovery_point = 0  # as last written to RECOVERY_POINT_FILE
        self._unchecked_bytes = 0  # appended since the recovery point was last written
        self.scanned_bytes = 0  # by open (the rest was trusted)
        self._failed: OSError | None = None  # a write failed: unusable until reopened

    # ------------------------------------------------------------------ open / close

    @classmethod
    def open(
        cls,
        partition_dir: Path,
        *,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        cache_keep_bytes: int | None = DEFAULT_CACHE_KEEP_BYTES,
        checkpoint_interval_bytes: int = DEFAULT_CHECKPOINT_INTERVAL_BYTES,
    ) -> FileLog:
        """Open (creating if needed) the log in ``partition_dir``, recovering its tail."""
        partition_dir.mkdir(parents=True, exist_ok=True)
        self = cls(
            partition_dir,
            segment_bytes=segment_bytes,
            cache_keep_bytes=cache_keep_bytes,
            checkpoint_interval_bytes=checkpoint_interval_bytes,
        )
        self._start_offset, self._start_epoch = ck.read_log_start(self.dir)
        clean = (self.dir / ck.CLEAN_SHUTDOWN_FILE).exists()
        recovery_point = self._load_checkpoints()
        paths = sorted(partition_dir.glob("*.log"), key=lambda p: p.name)
        self._load_segments(paths, recovery_point)
        self._drop_below_start()
        if self._epoch_starts:
            self._epoch_starts[0] = max(self._epoch_starts[0], self._start_offset)
        # Entries wholly below the start offset go (the last one before it is clamped).
        self._trim_epochs_before(self._start_offset)
        self._trim_control()
        self._flushed_offset = self.end_offset
        self._recovery_point = recovery_point
        if recovery_point > self.end_offset:  # files went missing: claim no more than we hold
            self._checkpoint(self.end_offset)
        log.info(
            "%s: opened offsets %d..%d after %s shutdown, %d bytes after the recovery point "
            "%d scanned",
            partition_dir,
            self._start_offset,
            self.end_offset,
            "a clean" if clean else ("an unclean" if paths else "no earlier"),
            self.scanned_bytes,
            recovery_point,
        )
        if clean:  # the files change from now on: the marker says they did not
            (self.dir / ck.CLEAN_SHUTDOWN_FILE).unlink()
            self._dir_dirty = True
        if self._dir_dirty:
            fsync_dir(self.dir)
            self._dir_dirty = False
        return self

    def _drop_below_start(self) -> None:
        """Segments wholly below the log start offset (a crash inside delete_before or
        reset_to_snapshot) are deleted; a gap after the start offset is an error."""
        while self._segments and self._segments[0].next_offset <= self._start_offset:
            if len(self._segments) == 1 and self._segments[0].base_offset == self._start_offset:
                break
            self._drop_segment(self._segments.pop(0))
        if not self._segments:
            self._segments.append(self._open_segment(self._start_offset, create=True))
        first = self._segments[0].base_offset
        if first > self._start_offset:
            raise StorageError(
                f"{self.dir}: first segment starts at {first}, after the log start "
                f"offset {self._start_offset}: offsets in between are missing"
            )

    def _load_checkpoints(self) -> int:
        """The recovery point, with the epochs and control batches below it taken from
        their checkpoints; 0 (scan everything) unless all three are readable."""
        recovery_point = ck.read_recovery_point(self.dir)
        epochs = ck.read_epoch_checkpoint(self.dir) if recovery_point else None
        if epochs is None:
            recovery_point = 0  # nothing is known good without the epochs below it
        control = ck.read_control_checkpoint(self.dir) if epochs is not None else None
        if control is None:
            recovery_point, epochs = 0, None
        for epoch, start in epochs or ():
            if start < recovery_point:
                self._note_epoch(epoch, start)
        self._control = [offset for offset in control or () if offset < recovery_point]
        return recovery_point

    def _load_segments(self, paths: list[Path], recovery_point: int) -> None:
        """Open the segments in offset order: trusted up to the recovery point (their index
        read back and checked), scanned after it; a segment that does not continue the log
        is deleted."""
        bases = [parse_segment_name(path) for path in paths]
        for i, base in enumerate(bases):
            expected = self._segments[-1].next_offset if self._segments else None
            if expected is not None and base != expected:
                log.error(
                    "segment %s starts at %d but the log ends at %d: deleting it",
                    paths[i].name,
                    base,
                    expected,
                )
                self._delete_segment_files(paths[i])
                continue
            segment = self._open_segment(base, create=False)
            next_base = bases[i + 1] if i + 1 < len(bases) else None
            # Trusted up to the recovery point (after a clean shutdown, the end offset).
            upto = recovery_point if next_base is None else min(next_base, recovery_point)
            if upto > base and segment.load_trusted(upto) is None:
                log.warning("%s: index does not check out: scanning it", paths[i].name)
                segment = self._reopen_segment(segment)
                # The scan notes its control batches again: those the checkpoint gave go.
                del self._control[bisect.bisect_left(self._control, base) :]
            self._recover_segment(segment)
            self._segments.append(segment)

    def close(self, *, clean: bool = False) -> None:
        """Close the files. ``clean``: flush first and leave the checkpoints and the
        clean-shutdown marker, so that the next ``open`` scans nothing (a node's orderly stop;
        a reader of someone else's log must not claim that)."""
        if clean and self._segments:
            self.flush()
            for segment in self._segments:
                os.fsync(segment.index_fd)
            self._checkpoint(self.end_offset)
            ck.write_clean_shutdown(self.dir)
        for segment in self._segments:
            segment.write_index()
            segment.close()
        self._segments = []

    def __enter__(self) -> FileLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _checkpoint(self, recovery_point: int) -> None:
        """Record ``recovery_point`` (``checkpoints.write_checkpoints``)."""
        epochs = list(zip(self._epochs, self._epoch_starts, strict=True))
        ck.write_checkpoints(self.dir, recovery_point, epochs, self._control)
        self._recovery_point = recovery_point
        self._unchecked_bytes = 0

    def _open_segment(self, base_offset: int, *, create: bool) -> Segment:
        path = self.dir / segment_name(base_offset)
        flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0)
        fd = os.open(path, flags, 0o644)
        index_fd = os.open(path.with_suffix(".index"), os.O_RDWR | os.O_CREAT, 0o644)
        if create:
            os.ftruncate(index_fd, 0)
            self._dir_dirty = True
        return Segment(base_offset, path, fd, index_fd, next_offset=base_offset)

    def _reopen_segment(self, segment: Segment) -> Segment:
        """The segment as just opened, nothing loaded (after a failed ``load_trusted``)."""
        segment.close()
        return self._open_segment(segment.base_offset, create=False)

    def _recover_segment(self, segment: Segment) -> None:
        """Scan a segment from where ``load_trusted`` left it (its start when not called):
        rebuild its index and epochs, truncate a corrupt or torn tail."""
        file_size = os.fstat(segment.fd).st_size
        position = segment.size_bytes
        self.scanned_bytes += file_size - position
        while position < file_size:
            chunk = os.pread(segment.fd, min(_SCAN_CHUNK_BYTES, file_size - position), position)
            headers, valid_bytes = valid_prefix(chunk)
            if headers and headers[0].base_offset != segment.next_offset:
                headers, valid_bytes = [], 0
            for header in headers:
                segment.note_batch(header, position)
                self._note_batch(header)
                position += header.size
            if position >= file_size:
                break
            if valid_bytes == 0:
                # The batch at `position` may simply be bigger than the chunk.
                try:
                    header = read_header(chunk)
                except ValueError:
                    break
                if header.size <= len(chunk) or position + header.size > file_size:
                    break
                big = os.pread(segment.fd, header.size, position)
                headers, valid_bytes = valid_prefix(big)
                if not headers or headers[0].base_offset != segment.next_offset:
                    break
                segment.note_batch(headers[0], position)
                self._note_batch(header)
                position += header.size
        segment.size_bytes = position
        if position < file_size:
            log.warning(
                "%s: dropping %d bytes after offset %d (position %d of %d): torn or corrupt batch",
                segment.path,
                file_size - position,
                segment.next_offset,
                position,
                file_size,
            )
            os.ftruncate(segment.fd, position)
            os.fsync(segment.fd)
        os.ftruncate(segment.index_fd, segment.index_entries_written * INDEX_ENTRY.size)
        segment.write_index()

    def _trim_control(self) -> None:
        """Control batches in segments no longer held go (a straddling one stays)."""
        del self._control[: bisect.bisect_left(self._control, self._segments[0].base_offset)]

    def _note_batch(self, header: BatchHeader) -> None:
        self._note_epoch(header.epoch, header.base_offset)
        if header.attributes & CONTROL_FLAG:
            self._control.append(header.base_offset)

    def _note_epoch(self, epoch: int, base_offset: int) -> None:
        if not self._epochs or epoch > self._epochs[-1]:
            self._epochs.append(epoch)
            self._epoch_starts.append(base_offset)

    def _trim_epochs_before(self, offset: int) -> None:
        i = bisect.bisect_right(self._epoch_starts, offset) - 1
        if i > 0:
            del self._epochs[:i]
            del self._epoch_starts[:i]
        if self._epoch_starts and self._epoch_starts[0] < offset:
            self._epoch_starts[0] = offset
        if self._epoch_starts and self._epoch_starts[0] >= self.end_offset:
            self._epochs, self._epoch_starts = [], []

    # ------------------------------------------------------------------ ReplicatedLog

    @property
    def start_offset(self) -> int:
        return self._start_offset

    @property
    def end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def flushed_offset(self) -> int:
        return self._flushed_offset

    def last_fetched_epoch(self) -> int:
        return self._epochs[-1] if self._epochs else self._start_epoch

    def control_batch_offsets(self) -> list[int]:
        return list(self._control)

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        if not self._epochs or epoch >= self._epochs[-1]:
            return OffsetAndEpoch(self.end_offset, self.last_fetched_epoch())
        i = bisect.bisect_right(self._epochs, epoch) - 1
        if i < 0:
            return OffsetAndEpoch(self._start_offset, self._start_epoch)
        return OffsetAndEpoch(self._epoch_starts[i + 1], self._epochs[i])

    def epoch_at(self, offset: int) -> int | None:
        if not self._start_offset <= offset < self.end_offset or not self._epochs:
            return None
        i = bisect.bisect_right(self._epoch_starts, offset) - 1
        return self._epochs[i] if i >= 0 else None

    def append(self, batches: bytes) -> int:
        spans = scan_batches(batches)  # CRC and framing; raises ValueError
        if not spans:
            raise ValueError("append of no batches")
        # One pass checks the offsets and epochs (all before any write) and plans where each
        # batch goes; the writes follow.
        expected, last_epoch = self.end_offset, self.last_fetched_epoch()
        for _position, _size, base, next_offset, epoch, _attributes in spans:
            if base != expected:
                raise ValueError(f"batch at offset {base}, expected {expected}")
            if epoch < last_epoch:
                raise ValueError(f"batch epoch {epoch} below the log's {last_epoch}")
            expected, last_epoch = next_offset, epoch
        if self._failed is not None:
            raise StorageError(f"{self.dir}: an earlier write failed ({self._failed}): reopen")
        try:
            self._append_spans(batches, spans)
        except OSError as e:
            # The files may now hold part of a batch and this object's offsets no longer
            # match them: only a reopen (which truncates a torn tail) may go on.
            self._failed = e
            raise
        self._unchecked_bytes += len(batches)
        return self.end_offset

    def _append_spans(self, batches: bytes, spans: list[BatchSpan]) -> None:
        view = memoryview(batches)
        segment = self._segments[-1]
        segment_bytes = self.segment_bytes
        chunk_start = 0
        for position, size, base, next_offset, epoch, attributes in spans:
            if segment.size_bytes > 0 and segment.size_bytes + size > segment_bytes:
                self._write(segment, view[chunk_start:position])
                chunk_start = position
                segment = self._roll(base)
            segment.note(base, size, next_offset, segment.size_bytes + (position - chunk_start))
            self._note_epoch(epoch, base)
            if attributes & CONTROL_FLAG:
                self._control.append(base)
        self._write(segment, view[chunk_start:])

    def _write(self, segment: Segment, data: memoryview) -> None:
        while data:
            written = os.pwrite(segment.fd, data, segment.size_bytes)
            segment.size_bytes += written
            data = data[written:]
        segment.dirty = True

    def _roll(self, base_offset: int) -> Segment:
        segment = self._open_segment(base_offset, create=True)
        self._segments.append(segment)
        return segment

    def read(self, offset: int, max_bytes: int) -> bytes:
        if not self._start_offset <= offset <= self.end_offset:
            raise OffsetOutOfRangeError(
                f"offset {offset} outside [{self._start_offset}, {self.end_offset}]"
            )
        if offset == self.end_offset:
            return b""
        i = bisect.bisect_right([s.base_offset for s in self._segments], offset) - 1
        segment = self._segments[i]
        position, header = segment.locate(offset)
        assert header is not None
        # Whole batches only, at least the first: the end is found from the sparse index and
        # a few headers, then read once (no read-then-cut copy of a big fetch).
        limit = position + max(max_bytes, header.size)
        end = (
            segment.size_bytes
            if limit >= segment.size_bytes
            else segment.batch_end_before(limit, position + header.size)
        )
        data = os.pread(segment.fd, end - position, position)
        if end <= segment.uncached_to and _FADV_DONTNEED is not None:
            # Behind the cached tail (a catch-up read): not kept either, so the next read
            # reuses these pages (see the module docstring); and the next read of this size
            # is started now, so the disk works while this answer travels and the follower
            # appends and flushes.
            os.posix_fadvise(segment.fd, position, end - position, _FADV_DONTNEED)
            ahead = min(end - position, segment.uncached_to - end)
            if ahead > 0 and _FADV_WILLNEED is not None:
                os.posix_fadvise(segment.fd, end, ahead, _FADV_WILLNEED)
        return data

    def truncate_to(self, offset: int) -> None:
        assert self._start_offset <= offset <= self.end_offset, (offset, self.end_offset)
        if offset == self.end_offset:
            return
        if offset < self._recovery_point:
            i = bisect.bisect_left(self._epoch_starts, offset)
            del self._epochs[i:]
            del self._epoch_starts[i:]
            del self._control[bisect.bisect_left(self._control, offset) :]
            self._checkpoint(offset)  # before any byte below the old point changes
        while len(self._segments) > 1 and self._segments[-1].base_offset >= offset:
            self._drop_segment(self._segments.pop())
        segment = self._segments[-1]
        if segment.next_offset != offset:
            position, header = segment.locate(offset)
            assert header is not None and header.base_offset == offset, "not a batch boundary"
            segment.truncate(position, offset)
        i = bisect.bisect_left(self._epoch_starts, offset)
        del self._epochs[i:]
        del self._epoch_starts[i:]
        del self._control[bisect.bisect_left(self._control, offset) :]
        self._flushed_offset = min(self._flushed_offset, offset)

    def flush(self) -> None:
        if self._failed is not None:
            raise StorageError(f"{self.dir}: an earlier write failed ({self._failed}): reopen")
        for segment in self._segments:
            if segment.dirty:
                segment.write_index()
                os.fsync(segment.fd)
                segment.dirty = False
        if self._dir_dirty:
            fsync_dir(self.dir)
            self._dir_dirty = False
        self._flushed_offset = self.end_offset
        if (
            self._unchecked_bytes >= self.checkpoint_interval_bytes
            and self.end_offset > self._recovery_point
        ):
            # The indexes of what the new point covers are made durable first.
            for segment in self._segments:
                if segment.next_offset > self._recovery_point:
                    segment.write_index()
                    os.fsync(segment.index_fd)
            self._checkpoint(self.end_offset)
        self._drop_behind()

    def _drop_behind(self) -> None:
        """Drop cached pages older than the last ``cache_keep_bytes`` (all flushed, so clean;
        see the module docstring)."""
        keep = self.cache_keep_bytes
        if keep is None or _FADV_DONTNEED is None:
            return
        for segment in reversed(self._segments):
            size = segment.size_bytes
            if keep >= size:
                keep -= size
                continue
            upto, keep = size - keep, 0
            if upto - segment.uncached_to >= _DROP_MIN_BYTES or (
                segment is not self._segments[-1] and upto > segment.uncached_to
            ):
                os.posix_fadvise(
                    segment.fd, segment.uncached_to, upto - segment.uncached_to, _FADV_DONTNEED
                )
                segment.uncached_to = upto

    def bytes_kept_from(self, offset: int) -> int:
        """The bytes of the segments ``delete_before`` at ``offset`` would keep (the whole
        log at or below the start offset): what metadata.max.retention.bytes counts."""
        segments = self._segments
        first = 0
        while first + 1 < len(segments) and segments[first + 1].base_offset <= offset:
            first += 1
        return sum(segment.size_bytes for segment in segments[first:])

    def delete_before(self, snapshot_id: OffsetAndEpoch) -> None:
        if snapshot_id.offset <= self._start_offset:
            return
        if snapshot_id.offset > self.end_offset:
            self.reset_to_snapshot(snapshot_id)
            return
        ck.write_log_start(self.dir, snapshot_id)
        self._start_offset, self._start_epoch = snapshot_id.offset, snapshot_id.epoch
        while len(self._segments) > 1 and self._segments[1].base_offset <= snapshot_id.offset:
            self._drop_segment(self._segments.pop(0))
        self._trim_epochs_before(snapshot_id.offset)
        self._trim_control()
        self._flushed_offset = max(self._flushed_offset, self._start_offset)

    def reset_to_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        self._epochs, self._epoch_starts, self._control = [], [], []
        self._checkpoint(0)  # nothing of the old files is to be trusted any more
        ck.write_log_start(self.dir, snapshot_id)
        for segment in self._segments:
            self._drop_segment(segment)
        self._segments = [self._open_segment(snapshot_id.offset, create=True)]
        self._start_offset, self._start_epoch = snapshot_id.offset, snapshot_id.epoch
        self._epochs, self._epoch_starts = [], []
        self._flushed_offset = snapshot_id.offset
        fsync_dir(self.dir)  # the new empty segment and the deletions, before we report
        self._dir_dirty = False

    # ------------------------------------------------------------------ inspection

    def segments(self) -> list[tuple[int, int, int]]:
        """(base offset, next offset, size in bytes) of each segment."""
        return [(s.base_offset, s.next_offset, s.size_bytes) for s in self._segments]

    def epochs(self) -> list[tuple[int, int]]:
        """The epoch cache: (epoch, start offset) pairs."""
        return list(zip(self._epochs, self._epoch_starts, strict=True))

    def _drop_segment(self, segment: Segment) -> None:
        segment.close()
        self._delete_segment_files(segment.path)

    def _delete_segment_files(self, path: Path) -> None:
        path.unlink(missing_ok=True)
        path.with_suffix(".index").unlink(missing_ok=True)
        self._dir_dirty = True
