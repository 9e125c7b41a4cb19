"""``FileLog``: the metadata log as Kafka-style segment files.

Theory of operation. The partition directory ``__cluster_metadata-0`` holds segments
``<base offset:020d>.log`` (raw v2 batches back to back) with a sparse ``.index`` beside each
(8-byte entries: int32 offset relative to the segment base, int32 byte position, one entry
per ~4 KiB of batches). Appends go straight to the tail segment's file descriptor with
``os.write``, so they are readable at once with ``os.pread``; ``flush`` makes them durable
with one ``fsync`` (plus a directory fsync when segments were created or deleted since the
last flush). A segment rolls when the next batch would take it past ``segment_bytes``.

Recovery (``open``): every segment is scanned with ``records.valid_prefix`` (framing, CRC,
dense offsets), which also rebuilds the offset index and the epoch cache. A torn or corrupt
tail is truncated to the last valid batch and the loss is logged; segments after a corrupt
one are deleted (their offsets would no longer be dense). Scanning everything costs one
sequential read at open, which is cheap for a metadata log and needs no recovery-point file.

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
import struct
from dataclasses import dataclass, field
from pathlib import Path

from pykraft.raft.types import OffsetAndEpoch
from pykraft.records import BATCH_HEADER_SIZE, BatchHeader, read_header, scan_batches, valid_prefix
from pykraft.storage._files import StorageError, atomic_write, fsync_dir

log = logging.getLogger(__name__)

PARTITION_DIR_NAME = "__cluster_metadata-0"
DEFAULT_SEGMENT_BYTES = 1024 * 1024 * 1024  # metadata.log.segment.bytes
INDEX_INTERVAL_BYTES = 4096
LOG_START_FILE = "log-start-offset"
_INDEX_ENTRY = struct.Struct(">ii")
_SCAN_CHUNK_BYTES = 8 * 1024 * 1024
DEFAULT_CACHE_KEEP_BYTES = 64 * 1024 * 1024
_DROP_MIN_BYTES = 8 * 1024 * 1024
_FADV_DONTNEED: int | None = getattr(os, "POSIX_FADV_DONTNEED", None)
_FADV_WILLNEED: int | None = getattr(os, "POSIX_FADV_WILLNEED", None)


class OffsetOutOfRangeError(ValueError):
    """A read outside ``[start_offset, end_offset]``."""


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}.log"


@dataclass(slots=True)
class _Segment:
    """One ``.log`` file. Invariant: ``base_offset <= next_offset``; the file holds exactly
    ``size_bytes`` of whole batches covering offsets ``[base_offset, next_offset)``."""

    base_offset: int
    path: Path
    fd: int
    index_fd: int
    size_bytes: int = 0
    next_offset: int = 0
    # Sparse index: base offsets of some batches and their byte positions (ascending).
    index_offsets: list[int] = field(default_factory=list)
    index_positions: list[int] = field(default_factory=list)
    bytes_since_index: int = 0
    index_entries_written: int = 0
    dirty: bool = False  # holds bytes (or a truncation) not yet fsynced
    uncached_to: int = 0  # pages below this position were dropped from the page cache

    def close(self) -> None:
        os.close(self.fd)
        os.close(self.index_fd)

    def note_batch(self, header: BatchHeader, position: int) -> None:
        """Account for a batch at ``position`` (index entry every ~4 KiB)."""
        self.note(header.base_offset, header.size, header.next_offset, position)

    def note(self, base_offset: int, size: int, next_offset: int, position: int) -> None:
        """``note_batch`` from the header's fields (the append path has no BatchHeader)."""
        if self.bytes_since_index >= INDEX_INTERVAL_BYTES:
            self.index_offsets.append(base_offset)
            self.index_positions.append(position)
            self.bytes_since_index = 0
        self.bytes_since_index += size
        self.next_offset = next_offset

    def write_index(self) -> None:
        """Append index entries not yet in the ``.index`` file (not fsynced: rebuilt on
        open)."""
        start = self.index_entries_written
        if start == len(self.index_offsets):
            return
        data = b"".join(
            _INDEX_ENTRY.pack(off - self.base_offset, pos)
            for off, pos in zip(
                self.index_offsets[start:], self.index_positions[start:], strict=True
            )
        )
        os.pwrite(self.index_fd, data, start * _INDEX_ENTRY.size)
        self.index_entries_written = len(self.index_offsets)

    def locate(self, offset: int) -> tuple[int, BatchHeader | None]:
        """Byte position and header of the batch holding ``offset`` (the end of the
        segment and None when ``offset == next_offset``)."""
        assert self.base_offset <= offset <= self.next_offset, (offset, self.base_offset)
        if offset == self.next_offset:
            return self.size_bytes, None
        i = bisect.bisect_right(self.index_offsets, offset) - 1
        position = self.index_positions[i] if i >= 0 else 0
        while position < self.size_bytes:
            header = read_header(os.pread(self.fd, BATCH_HEADER_SIZE, position))
            if header.next_offset > offset:
                return position, header
            position += header.size
        raise AssertionError(f"offset {offset} not found in {self.path}")

    def batch_end_before(self, limit: int, minimum: int) -> int:
        """The last batch boundary at or below ``limit`` (``minimum``, a batch boundary, when
        none is above it): the nearest index entry below ``limit``, then headers forward
        (fewer than ~4 KiB of batches lie between two index entries)."""
        i = bisect.bisect_right(self.index_positions, limit) - 1
        position = max(self.index_positions[i], minimum) if i >= 0 else minimum
        while position < self.size_bytes:
            size = read_header(os.pread(self.fd, BATCH_HEADER_SIZE, position)).size
            if position + size > limit:
                break
            position += size
        return position

    def truncate(self, position: int, offset: int) -> None:
        i = bisect.bisect_left(self.index_positions, position)
        del self.index_offsets[i:]
        del self.index_positions[i:]
        self.index_entries_written = min(self.index_entries_written, i)
        os.ftruncate(self.fd, position)
        os.ftruncate(self.index_fd, self.index_entries_written * _INDEX_ENTRY.size)
        self.size_bytes = position
        self.next_offset = offset
        self.uncached_to = min(self.uncached_to, position)
        self.bytes_since_index = INDEX_INTERVAL_BYTES  # index the next batch
        self.dirty = True


class FileLog:
    """A ``ReplicatedLog`` on segment files. Not thread-safe: one owner calls it."""

    def __init__(
        self,
        partition_dir: Path,
        *,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        cache_keep_bytes: int | None = DEFAULT_CACHE_KEEP_BYTES,
    ) -> None:
        """Use ``FileLog.open``."""
        if not BATCH_HEADER_SIZE < segment_bytes <= 2**31 - 1:
            raise ValueError(f"segment_bytes {segment_bytes} outside (61, 2**31)")
        self.dir = partition_dir
        self.segment_bytes = segment_bytes
        self.cache_keep_bytes = cache_keep_bytes
        self._segments: list[_Segment] = []
        self._start_offset = 0
        self._start_epoch = 0  # epoch of the snapshot at the start offset (0 when none)
        self._flushed_offset = 0
        # Epoch cache. Invariant: epochs strictly increase, starts strictly increase,
        # _epoch_starts[0] == start_offset when non-empty, every start < end_offset.
        self._epochs: list[int] = []
        self._epoch_starts: list[int] = []
        self._dir_dirty = False

    # ------------------------------------------------------------------ open / close

    @classmethod
    def open(
        cls,
        partition_dir: Path,
        *,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        cache_keep_bytes: int | None = DEFAULT_CACHE_KEEP_BYTES,
    ) -> FileLog:
        """Open (creating if needed) the log in ``partition_dir``, recovering its tail."""
        partition_dir.mkdir(parents=True, exist_ok=True)
        self = cls(partition_dir, segment_bytes=segment_bytes, cache_keep_bytes=cache_keep_bytes)
        self._start_offset, self._start_epoch = self._read_log_start()
        paths = sorted(partition_dir.glob("*.log"), key=lambda p: p.name)
        for path in paths:
            base = _parse_segment_name(path)
            expected = self._segments[-1].next_offset if self._segments else None
            if expected is not None and base != expected:
                log.error(
                    "segment %s starts at %d but the log ends at %d: deleting it",
                    path.name,
                    base,
                    expected,
                )
                self._delete_segment_files(path)
                continue
            segment = self._open_segment(base, create=False)
            self._recover_segment(segment)
            self._segments.append(segment)
        # Segments wholly below the log start offset (a crash inside delete_before or
        # reset_to_snapshot) are deleted now.
        while self._segments and self._segments[0].next_offset <= self._start_offset:
            if len(self._segments) == 1 and self._segments[0].base_offset == self._start_offset:
                break
            self._drop_segment(self._segments.pop(0))
        if not self._segments:
            self._segments.append(self._open_segment(self._start_offset, create=True))
        first = self._segments[0].base_offset
        if first > self._start_offset:
            raise StorageError(
                f"{partition_dir}: first segment starts at {first}, after the log start "
                f"offset {self._start_offset}: offsets in between are missing"
            )
        self._rebuild_epoch_cache()
        self._flushed_offset = self.end_offset
        if self._dir_dirty:
            fsync_dir(self.dir)
            self._dir_dirty = False
        return self

    def close(self) -> None:
        for segment in self._segments:
            segment.write_index()
            segment.close()
        self._segments = []

    def __enter__(self) -> FileLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read_log_start(self) -> tuple[int, int]:
        path = self.dir / LOG_START_FILE
        try:
            text = path.read_text()
        except FileNotFoundError:
            return 0, 0
        try:
            offset_text, epoch_text = text.split()
            offset, epoch = int(offset_text), int(epoch_text)
        except ValueError:
            raise StorageError(f"{path}: unparsable log start offset {text!r}") from None
        if offset < 0 or epoch < 0:
            raise StorageError(f"{path}: negative log start offset or epoch {text!r}")
        return offset, epoch

    def _write_log_start(self, snapshot_id: OffsetAndEpoch) -> None:
        atomic_write(
            self.dir / LOG_START_FILE, f"{snapshot_id.offset} {snapshot_id.epoch}\n".encode()
        )

    def _open_segment(self, base_offset: int, *, create: bool) -> _Segment:
        path = self.dir / segment_name(base_offset)
        flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0)
        fd = os.open(path, flags, 0o644)
        index_fd = os.open(path.with_suffix(".index"), os.O_RDWR | os.O_CREAT, 0o644)
        if create:
            os.ftruncate(index_fd, 0)
            self._dir_dirty = True
        return _Segment(base_offset, path, fd, index_fd, next_offset=base_offset)

    def _recover_segment(self, segment: _Segment) -> None:
        """Scan a segment, rebuild its index, truncate a corrupt or torn tail."""
        file_size = os.fstat(segment.fd).st_size
        position = 0
        while position < file_size:
            chunk = os.pread(segment.fd, min(_SCAN_CHUNK_BYTES, file_size - position), position)
            headers, valid_bytes = valid_prefix(chunk)
            if headers and headers[0].base_offset != segment.next_offset:
                headers, valid_bytes = [], 0
            for header in headers:
                segment.note_batch(header, position)
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
        os.ftruncate(segment.index_fd, 0)
        segment.index_entries_written = 0
        segment.write_index()

    def _rebuild_epoch_cache(self) -> None:
        self._epochs, self._epoch_starts = [], []
        for segment in self._segments:
            position = 0
            while position < segment.size_bytes:
                header = read_header(os.pread(segment.fd, BATCH_HEADER_SIZE, position))
                self._note_epoch(header.epoch, header.base_offset)
                position += header.size
        if self._epoch_starts:
            self._epoch_starts[0] = max(self._epoch_starts[0], self._start_offset)
        # Entries wholly below the start offset go (the last one before it is clamped).
        self._trim_epochs_before(self._start_offset)

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
        view = memoryview(batches)
        segment = self._segments[-1]
        segment_bytes = self.segment_bytes
        chunk_start = 0
        for position, size, base, next_offset, epoch, _attributes in spans:
            if segment.size_bytes > 0 and segment.size_bytes + size > segment_bytes:
                self._write(segment, view[chunk_start:position])
                chunk_start = position
                segment = self._roll(base)
            segment.note(base, size, next_offset, segment.size_bytes + (position - chunk_start))
            self._note_epoch(epoch, base)
        self._write(segment, view[chunk_start:])
        return self.end_offset

    def _write(self, segment: _Segment, data: memoryview) -> None:
        while data:
            written = os.pwrite(segment.fd, data, segment.size_bytes)
            segment.size_bytes += written
            data = data[written:]
        segment.dirty = True

    def _roll(self, base_offset: int) -> _Segment:
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
        self._flushed_offset = min(self._flushed_offset, offset)

    def flush(self) -> None:
        for segment in self._segments:
            if segment.dirty:
                segment.write_index()
                os.fsync(segment.fd)
                segment.dirty = False
        if self._dir_dirty:
            fsync_dir(self.dir)
            self._dir_dirty = False
        self._flushed_offset = self.end_offset
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

    def delete_before(self, snapshot_id: OffsetAndEpoch) -> None:
        if snapshot_id.offset <= self._start_offset:
            return
        if snapshot_id.offset > self.end_offset:
            self.reset_to_snapshot(snapshot_id)
            return
        self._write_log_start(snapshot_id)
        self._start_offset, self._start_epoch = snapshot_id.offset, snapshot_id.epoch
        while len(self._segments) > 1 and self._segments[1].base_offset <= snapshot_id.offset:
            self._drop_segment(self._segments.pop(0))
        self._trim_epochs_before(snapshot_id.offset)
        self._flushed_offset = max(self._flushed_offset, self._start_offset)

    def reset_to_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        self._write_log_start(snapshot_id)
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

    def _drop_segment(self, segment: _Segment) -> None:
        segment.close()
        self._delete_segment_files(segment.path)

    def _delete_segment_files(self, path: Path) -> None:
        path.unlink(missing_ok=True)
        path.with_suffix(".index").unlink(missing_ok=True)
        self._dir_dirty = True


def _parse_segment_name(path: Path) -> int:
    stem = path.stem
    if len(stem) != 20 or not stem.isdigit():
        raise StorageError(f"{path}: not a segment name (<20-digit base offset>.log)")
    return int(stem)
