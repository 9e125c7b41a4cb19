"""One segment of the metadata log: a ``.log`` file of whole v2 batches and its sparse
``.index`` (8-byte entries: int32 offset relative to the segment base, int32 byte position,
one per ~4 KiB of batches), as Kafka lays them out. ``FileLog`` owns the list of segments."""

from __future__ import annotations

import array
import bisect
import os
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from pykraft.records import BATCH_HEADER_SIZE, BatchHeader, read_header
from pykraft.storage._files import StorageError

__all__ = [
    "INDEX_ENTRY",
    "INDEX_INTERVAL_BYTES",
    "Segment",
    "parse_segment_name",
    "segment_name",
]

INDEX_INTERVAL_BYTES: Final = 4096
INDEX_ENTRY: Final = struct.Struct(">ii")


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}.log"


@dataclass(slots=True)
class Segment:
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
            INDEX_ENTRY.pack(off - self.base_offset, pos)
            for off, pos in zip(
                self.index_offsets[start:], self.index_positions[start:], strict=True
            )
        )
        os.pwrite(self.index_fd, data, start * INDEX_ENTRY.size)
        self.index_entries_written = len(self.index_offsets)

    def load_trusted(self, upto: int) -> int | None:
        """Take the segment's batches below offset ``upto`` (a batch boundary, durable with
        the index entries below it) without scanning them: the ``.index`` entries at or below
        ``upto`` read back, then the few headers after the last one walked to ``upto``.
        Returns the byte position of ``upto``, where a scan goes on; None when the index or
        the walk does not check out (nothing kept: the caller scans the whole segment)."""
        size = os.fstat(self.fd).st_size
        raw = os.pread(self.index_fd, os.fstat(self.index_fd).st_size, 0)
        entries = array.array("i")
        entries.frombytes(raw[: len(raw) - len(raw) % INDEX_ENTRY.size])
        if sys.byteorder == "little":
            entries.byteswap()
        relative, positions = entries[0::2].tolist(), entries[1::2].tolist()
        # A sanity check as Kafka's (ascending, inside the file); the walk checks the rest.
        if positions != sorted(positions) or relative != sorted(relative):
            return None
        base = self.base_offset
        # Entries of batches below ``upto`` only: one *at* ``upto`` names a batch past the
        # trusted range (a crash may have torn it), and kept it would point past the end
        # of the file once that tail is dropped, failing the next open's check.
        keep = bisect.bisect_left(relative, upto - base)
        del relative[keep:], positions[keep:]
        if positions and not (positions[0] >= 0 and positions[-1] < size and relative[0] >= 0):
            return None
        position, expected = (positions[-1], base + relative[-1]) if positions else (0, base)
        since = 0
        try:
            while expected < upto and position < size:
                header = read_header(os.pread(self.fd, BATCH_HEADER_SIZE, position))
                if header.base_offset != expected or position + header.size > size:
                    return None
                expected = header.next_offset
                position += header.size
                since += header.size
        except ValueError:
            return None
        if expected != upto:
            return None
        self.index_offsets = [base + r for r in relative]
        self.index_positions = positions
        self.index_entries_written = keep
        self.size_bytes = position
        self.next_offset = upto
        self.bytes_since_index = since  # from the last entry's batch on, as ``note`` counts
        return position

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
        os.ftruncate(self.index_fd, self.index_entries_written * INDEX_ENTRY.size)
        self.size_bytes = position
        self.next_offset = offset
        self.uncached_to = min(self.uncached_to, position)
        self.bytes_since_index = INDEX_INTERVAL_BYTES  # index the next batch
        self.dirty = True


def parse_segment_name(path: Path) -> int:
    stem = path.stem
    if len(stem) != 20 or not stem.isdigit():
        raise StorageError(f"{path}: not a segment name (<20-digit base offset>.log)")
    return int(stem)
