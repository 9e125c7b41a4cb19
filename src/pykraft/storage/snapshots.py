"""``FileSnapshotStore``: ``<end offset:020d>-<epoch:010d>.checkpoint`` files.

A snapshot is a sequence of v2 batches with dense offsets from 0: a SnapshotHeader control
batch first, the application's records (and KRaftVersion / Voters control records), a
SnapshotFooter control batch last. Writers fill ``<name>-<unique>.checkpoint.part``, checking
each batch as it is appended (``SnapshotCheck``); ``freeze`` fsyncs it, finishes the check
(nothing cut short, header first, footer last), renames it into place and fsyncs the directory.

An append does not touch the file itself: the bytes go to one thread (``snapshot-io``) that
writes them in order and starts their writeback. The caller is a node's event loop (a
snapshot generated in slices, or one fetched from the leader in chunks), and with other
processes writing to the same disk a write or a writeback advice there blocked it for 100 ms
and more (three writers of 123 MB each: up to 360 ms in one ``posix_fadvise``). The check
stays with the caller, so a bad batch is known at once; an I/O error on the thread is raised
by the next append or by ``make_durable``, which waits for every queued write first.
Files are validated as a stream (``validate_snapshot_file``: chunks of at most 8 MiB, or one
batch when a batch is bigger), so a snapshot of any size costs bounded memory.
A snapshot that fails validation (framing, CRC, header, footer) is refused: ``open`` logs
it and leaves it out of the store; it is never served or loaded. Stale ``.part`` files
(a crash mid-write) are deleted when the node that owns the directory opens it
(``open(owner=True)``), never by a tool reading a live node's directory.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from pykraft.raft.types import OffsetAndEpoch
from pykraft.records import (
    BATCH_FIELDS,
    BATCH_HEADER_SIZE,
    BATCH_LENGTH_OVERHEAD,
    ControlRecordType,
    CorruptRecordError,
    Record,
    VoterRecordEntry,
    build_batch,
    decode_control,
    decode_records,
    iter_batches,
    kraft_version_batch,
    read_header,
    scan_batches,
    snapshot_footer_batch,
    snapshot_header_batch,
    voters_batch,
)
from pykraft.records.control_records import (
    KRaftVersionRecord,
    SnapshotHeaderRecord,
    VotersRecord,
)
from pykraft.storage._files import fsync_dir

log = logging.getLogger(__name__)

_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
BOOTSTRAP_SNAPSHOT_ID = OffsetAndEpoch(0, 0)


class CorruptSnapshotError(ValueError):
    """A snapshot whose bytes are not a valid checkpoint; names the file."""


class SnapshotNotFoundError(KeyError):
    """No such snapshot (Kafka's SNAPSHOT_NOT_FOUND)."""


class PositionOutOfRangeError(ValueError):
    """A read past the end of a snapshot (Kafka's POSITION_OUT_OF_RANGE)."""


def snapshot_file_name(snapshot_id: OffsetAndEpoch) -> str:
    return f"{snapshot_id.offset:020d}-{snapshot_id.epoch:010d}.checkpoint"


def validate_snapshot(data: bytes, name: str) -> None:
    """Raise ``CorruptSnapshotError`` unless ``data`` is a whole, valid snapshot."""
    try:
        batches = list(iter_batches(data))
        if not batches:
            raise CorruptSnapshotError(f"{name}: empty snapshot")
        expected = 0
        for header, _ in batches:
            if header.base_offset != expected:
                raise CorruptSnapshotError(
                    f"{name}: batch at {header.base_offset}, expected {expected}"
                )
            expected = header.next_offset
        first_header, first_pos = batches[0]
        last_header, last_pos = batches[-1]
        first = decode_records(data[first_pos : first_pos + first_header.size])
        last = decode_records(data[last_pos : last_pos + last_header.size])
        if (
            not first_header.is_control
            or decode_control(first[0])[0] is not ControlRecordType.SNAPSHOT_HEADER
        ):
            raise CorruptSnapshotError(f"{name}: does not start with a SnapshotHeader")
        if (
            not last_header.is_control
            or decode_control(last[-1])[0] is not ControlRecordType.SNAPSHOT_FOOTER
        ):
            raise CorruptSnapshotError(f"{name}: does not end with a SnapshotFooter")
    except CorruptSnapshotError:
        raise
    except CorruptRecordError as exc:
        raise CorruptSnapshotError(f"{name}: {exc}") from exc


_VALIDATE_CHUNK_BYTES = 8 * 1024 * 1024


def validate_snapshot_file(path: Path, name: str | None = None) -> None:
    """``validate_snapshot`` of the file at ``path``, read in chunks: the same checks
    (framing, CRC, dense offsets from 0, SnapshotHeader first, SnapshotFooter last)."""
    name = str(path) if name is None else name
    check = SnapshotCheck(name)
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        pos = 0
        while pos < size:
            chunk = os.pread(fd, min(max(_VALIDATE_CHUNK_BYTES, check.wanted), size - pos), pos)
            if not chunk:
                break
            check.feed(chunk)
            pos += len(chunk)
    finally:
        os.close(fd)
    check.finish()


_FADVISE_DONTNEED: Final[int | None] = getattr(os, "POSIX_FADV_DONTNEED", None)  # Linux


def _start_writeback(fd: int, offset: int, length: int) -> None:
    """Start writing the bytes just appended to the disk, without waiting (Linux: an advice
    not to keep *dirty* pages starts their writeback; clean pages stay cached, and these are
    not clean yet). Without it a snapshot's every page stays dirty until the final fsync,
    which then wrote the whole file at once: 45-60 ms for a fetched 123 MB snapshot on the
    standby's event loop (the install), and appends of 8 MB chunks stalled up to 110 ms on
    the kernel's dirty-page throttling; with it the fsync found 1-6 ms left and appends took
    4 ms at most (measured on this machine)."""
    if _FADVISE_DONTNEED is not None and length:
        os.posix_fadvise(fd, offset, length, _FADVISE_DONTNEED)


class SnapshotCheck:
    """``validate_snapshot`` as the bytes arrive (from the file, or as a writer appends
    them): each whole batch checked (framing, CRC, dense offsets from 0) when its last byte
    is fed, only the unfinished batch buffered; ``finish`` checks nothing is left over and
    the SnapshotHeader first and SnapshotFooter last. Raises ``CorruptSnapshotError``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._pending = bytearray()  # the start of a batch not yet whole
        self._fed = 0  # bytes fed before ``_pending``
        self._expected = 0  # the next batch's base offset
        self._first: bytes | None = None
        self._last = b""

    @property
    def wanted(self) -> int:
        """Bytes the unfinished batch still needs, when its length is known (else 0)."""
        if len(self._pending) < BATCH_FIELDS.size:
            return 0
        size = BATCH_LENGTH_OVERHEAD + int(BATCH_FIELDS.unpack_from(self._pending, 0)[1])
        return max(0, size - len(self._pending))

    def feed(self, data: bytes | memoryview) -> None:
        pending = self._pending
        pending += data
        try:
            with memoryview(pending) as mv:
                cut = 0  # whole batches in pending[:cut]
                while cut + BATCH_FIELDS.size <= len(mv):
                    size = BATCH_LENGTH_OVERHEAD + BATCH_FIELDS.unpack_from(mv, cut)[1]
                    if size < BATCH_HEADER_SIZE:
                        read_header(bytes(mv[cut : cut + BATCH_HEADER_SIZE]))  # says what
                        raise CorruptRecordError(f"batch of {size} bytes")
                    if cut + size > len(mv):
                        break
                    cut += size
                if cut:
                    spans = scan_batches(mv[:cut])
                    for position, size, base, next_offset, _epoch, _attrs in spans:
                        if base != self._expected:
                            raise CorruptSnapshotError(
                                f"{self.name}: batch at {base}, expected {self._expected}"
                            )
                        self._expected = next_offset
                        if self._first is None:
                            self._first = bytes(mv[position : position + size])
                    position, size = spans[-1][0], spans[-1][1]
                    self._last = bytes(mv[position : position + size])
        except CorruptRecordError as exc:
            raise CorruptSnapshotError(f"{self.name}: {exc}") from exc
        if cut:
            del pending[:cut]
            self._fed += cut

    def finish(self) -> None:
        if self._pending:
            raise CorruptSnapshotError(
                f"{self.name}: a batch at position {self._fed} is cut short "
                f"({len(self._pending)} bytes left)"
            )
        if self._first is None:
            raise CorruptSnapshotError(f"{self.name}: empty snapshot")
        _check_framing(self._first, self._last, self.name)


def _check_framing(first: bytes, last: bytes, name: str) -> None:
    """The first batch starts with a SnapshotHeader, the last ends with a SnapshotFooter."""
    try:
        first_header, last_header = read_header(first), read_header(last)
        if (
            not first_header.is_control
            or decode_control(decode_records(first)[0])[0] is not ControlRecordType.SNAPSHOT_HEADER
        ):
            raise CorruptSnapshotError(f"{name}: does not start with a SnapshotHeader")
        if (
            not last_header.is_control
            or decode_control(decode_records(last)[-1])[0] is not ControlRecordType.SNAPSHOT_FOOTER
        ):
            raise CorruptSnapshotError(f"{name}: does not end with a SnapshotFooter")
    except CorruptSnapshotError:
        raise
    except CorruptRecordError as exc:
        raise CorruptSnapshotError(f"{name}: {exc}") from exc


# Bytes a writer may have queued for the thread before an append waits for them (a disk slower
# than a snapshot's generation costs the loop a wait, not the process the whole snapshot).
MAX_QUEUED_BYTES: Final = 64 * 2**20

_io_lock = threading.Lock()
_io: ThreadPoolExecutor | None = None


def _forget_io_in_child() -> None:
    # A forked child has no copy of the thread: it starts its own when it first writes.
    global _io, _io_lock
    _io, _io_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_io_in_child)


def _io_executor() -> ThreadPoolExecutor:
    """The one thread that writes every snapshot file of the process (FIFO: a writer's
    appends land in order)."""
    global _io
    with _io_lock:
        if _io is None:
            _io = ThreadPoolExecutor(max_workers=1, thread_name_prefix="snapshot-io")
        return _io


class FileSnapshotWriter:
    """Writes one ``<name>-<unique>.checkpoint.part`` file; implements ``SnapshotWriter``.
    Appends are written by the ``snapshot-io`` thread (the module's docstring)."""

    def __init__(self, store: FileSnapshotStore, snapshot_id: OffsetAndEpoch) -> None:
        self._store = store
        self._id = snapshot_id
        self.path = store.dir / snapshot_file_name(snapshot_id)
        # A name of its own (as Kafka's temporary snapshot files): a snapshot written over
        # several turns of a node's event loop never shares its file with another writer of
        # the same id (one fetched from the leader meanwhile).
        fd, part = tempfile.mkstemp(
            suffix=".checkpoint.part", prefix=self.path.stem + "-", dir=store.dir
        )
        self.part_path = Path(part)
        self._fd: int | None = fd
        self._durable = False
        self._written = 0  # bytes appended
        # The bytes are checked as they are appended (a snapshot fetched from the leader
        # arrives in chunks over many turns of the loop): when the last one arrives only the
        # fsync and the rename are left (reading 123 MB back to check them held a standby's
        # loop some 80 ms at a million partitions).
        self._check = SnapshotCheck(self.part_path.name)
        self._refused: CorruptSnapshotError | None = None  # the first bad batch appended
        self._queued: Future[None] | None = None  # the last write handed to the thread
        self._failed: OSError | None = None  # the first write that failed there
        self._landed = 0  # bytes the thread has written (only it sets this)

    @property
    def snapshot_id(self) -> OffsetAndEpoch:
        return self._id

    def append(self, data: bytes) -> None:
        """Append raw bytes (whole batches, or chunks of a fetched snapshot): checked here,
        written by the ``snapshot-io`` thread."""
        fd = self._fd
        assert fd is not None, "writer already frozen or aborted"
        if self._failed is not None:
            raise self._failed
        if not isinstance(data, bytes):
            data = bytes(data)  # the thread writes it later: a view's buffer may be reused
        if self._written - self._landed > MAX_QUEUED_BYTES:
            self._drain()
        start = self._written
        self._written += len(data)
        self._queued = _io_executor().submit(self._write, fd, data, start)
        if self._refused is None:
            try:
                self._check.feed(data)
            except CorruptSnapshotError as e:
                self._refused = e  # raised by make_durable

    def _write(self, fd: int, data: bytes, start: int) -> None:
        """On the ``snapshot-io`` thread: write at the end, start the writeback."""
        try:
            if self._failed is None:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                _start_writeback(fd, start, len(data))
        except OSError as e:
            self._failed = e
        finally:
            self._landed = start + len(data)

    def _drain(self) -> None:
        """Wait for every append handed to the thread; raise the first write's error."""
        if self._queued is not None:
            self._queued.result()
            self._queued = None
        if self._failed is not None:
            raise self._failed

    def make_durable(self) -> None:
        """Wait for the queued writes, fsync, validate, rename into place: safe on another
        thread (only this writer's files are touched; the store learns of the snapshot in
        ``freeze``)."""
        if self._durable:
            return
        assert self._fd is not None, "writer already frozen or aborted"
        fd, self._fd = self._fd, None
        try:
            self._drain()
            os.fsync(fd)
        except OSError:
            self.part_path.unlink(missing_ok=True)
            raise
        finally:
            os.close(fd)
        try:
            if self._refused is not None:
                raise self._refused
            self._check.finish()
        except CorruptSnapshotError:
            self.part_path.unlink(missing_ok=True)
            raise
        os.replace(self.part_path, self.path)
        fsync_dir(self._store.dir)
        self._durable = True

    def freeze(self) -> None:
        self.make_durable()
        self._store._add(self._id)

    def abort(self) -> None:
        """Drop the file. The close and the unlink queue behind its writes, so the loop does
        not wait for them and no write meets a closed descriptor."""
        fd, self._fd = self._fd, None
        if fd is None:
            self.part_path.unlink(missing_ok=True)
            return
        self._queued = None
        _io_executor().submit(_discard, fd, self.part_path)


def _discard(fd: int, path: Path) -> None:
    os.close(fd)
    path.unlink(missing_ok=True)


def _unlink_all(paths: Sequence[Path], directory: Path) -> None:
    for path in paths:
        path.unlink(missing_ok=True)
    fsync_dir(directory)


class FileSnapshotStore:
    """Implements ``SnapshotStore`` over the partition directory."""

    def __init__(self, partition_dir: Path) -> None:
        """Use ``FileSnapshotStore.open``."""
        self.dir = partition_dir
        self._ids: list[OffsetAndEpoch] = []  # valid snapshots, ascending
        self.refused: list[Path] = []  # snapshots found invalid on open

    @classmethod
    def open(cls, partition_dir: Path, *, owner: bool = False) -> FileSnapshotStore:
        """The valid snapshots in ``partition_dir``. ``owner``: the node that writes there
        opens it (at start), and unfinished ``.part`` files are left from a crash and
        deleted; a tool reading a live node's directory leaves them alone (they are that
        node's snapshots being written)."""
        partition_dir.mkdir(parents=True, exist_ok=True)
        self = cls(partition_dir)
        for part in partition_dir.glob("*.checkpoint.part") if owner else ():
            log.warning("deleting unfinished snapshot %s", part)
            part.unlink()
        for path in sorted(partition_dir.glob("*.checkpoint")):
            match = _NAME.match(path.name)
            if match is None:
                log.error("ignoring %s: not a snapshot name", path)
                continue
            try:
                validate_snapshot_file(path)
            except CorruptSnapshotError as exc:
                log.error("refusing corrupt snapshot: %s", exc)
                self.refused.append(path)
                continue
            self._ids.append(OffsetAndEpoch(int(match[1]), int(match[2])))
        self._ids.sort()
        return self

    def _add(self, snapshot_id: OffsetAndEpoch) -> None:
        if snapshot_id not in self._ids:
            self._ids.append(snapshot_id)
            self._ids.sort()

    def snapshot_ids(self) -> list[OffsetAndEpoch]:
        return list(self._ids)

    def path(self, snapshot_id: OffsetAndEpoch) -> Path:
        if snapshot_id not in self._ids:
            raise SnapshotNotFoundError(snapshot_id)
        return self.dir / snapshot_file_name(snapshot_id)

    def latest(self) -> OffsetAndEpoch | None:
        return self._ids[-1] if self._ids else None

    def earliest(self) -> OffsetAndEpoch | None:
        return self._ids[0] if self._ids else None

    def size(self, snapshot_id: OffsetAndEpoch) -> int | None:
        if snapshot_id not in self._ids:
            return None
        return (self.dir / snapshot_file_name(snapshot_id)).stat().st_size

    def last_contained_timestamp_ms(self, snapshot_id: OffsetAndEpoch) -> int:
        """The SnapshotHeader's LastContainedLogTimestamp (the append time of the last
        record the snapshot holds), from its first batch alone: what
        metadata.max.retention.ms ages (Kafka's ``readSnapshotTimestamp``)."""
        path = self.path(snapshot_id)
        fd = os.open(path, os.O_RDONLY)
        try:
            head = os.pread(fd, BATCH_HEADER_SIZE, 0)
            size = read_header(head, 0).size
            batch = os.pread(fd, size, 0)
        finally:
            os.close(fd)
        for record in decode_records(batch):
            kind, entity = decode_control(record)
            if kind is ControlRecordType.SNAPSHOT_HEADER:
                assert isinstance(entity, SnapshotHeaderRecord)
                return int(entity.last_contained_log_timestamp)
        raise CorruptSnapshotError(f"{path}: no SnapshotHeader in the first batch")

    def read(self, snapshot_id: OffsetAndEpoch, position: int, max_bytes: int) -> bytes:
        path = self.path(snapshot_id)
        size = path.stat().st_size
        if not 0 <= position <= size:
            raise PositionOutOfRangeError(f"position {position} outside a {size}-byte snapshot")
        with path.open("rb") as f:
            return os.pread(f.fileno(), max(0, min(max_bytes, size - position)), position)

    def create(self, snapshot_id: OffsetAndEpoch) -> FileSnapshotWriter:
        return FileSnapshotWriter(self, snapshot_id)

    def delete_before(self, snapshot_id: OffsetAndEpoch) -> None:
        """Forget the snapshots older than ``snapshot_id`` at once; their files are removed
        on the snapshot thread, after what it was writing (a 120 MB file's unlink and the
        directory's fsync held the loop 139 ms at a million partitions). A crash before
        then leaves an older snapshot beside the newer one, which the next start ignores and
        the next snapshot deletes, as Kafka's controllers delete theirs asynchronously."""
        doomed = [i for i in self._ids if i < snapshot_id]
        for old in doomed:
            self._ids.remove(old)
        if doomed:
            paths = [self.dir / snapshot_file_name(old) for old in doomed]
            _io_executor().submit(_unlink_all, paths, self.dir)


# ---------------------------------------------------------------------------------------
# Writing and reading whole snapshots


def write_snapshot(
    store: FileSnapshotStore,
    snapshot_id: OffsetAndEpoch,
    values: Sequence[bytes],
    *,
    timestamp_ms: int,
    last_contained_log_timestamp_ms: int,
    kraft_version: int | None = None,
    voters: Sequence[VoterRecordEntry] | None = None,
    batch_records_max: int = 1000,
) -> None:
    """Write a complete snapshot: header, KRaftVersion and Voters (when given), the
    application's ``values`` in batches, footer."""
    assert batch_records_max > 0
    epoch = snapshot_id.epoch
    parts = [snapshot_header_batch(0, epoch, timestamp_ms, last_contained_log_timestamp_ms)]
    offset = 1
    if kraft_version is not None:
        parts.append(kraft_version_batch(offset, epoch, timestamp_ms, kraft_version))
        offset += 1
    if voters is not None:
        parts.append(voters_batch(offset, epoch, timestamp_ms, voters))
        offset += 1
    for i in range(0, len(values), batch_records_max):
        chunk = values[i : i + batch_records_max]
        parts.append(build_batch(offset, epoch, chunk, timestamp_ms))
        offset += len(chunk)
    parts.append(snapshot_footer_batch(offset, epoch, timestamp_ms))
    writer = store.create(snapshot_id)
    try:
        writer.append(b"".join(parts))
        writer.freeze()
    except BaseException:
        writer.abort()
        raise


@dataclass(frozen=True, slots=True)
class SnapshotContents:
    """A snapshot decoded for the application."""

    snapshot_id: OffsetAndEpoch
    last_contained_log_timestamp_ms: int
    kraft_version: int | None
    voters: tuple[VoterRecordEntry, ...] | None
    records: tuple[Record, ...]  # the application's (non-control) records
    control: tuple[tuple[ControlRecordType, object], ...]  # every control record, in order


def read_snapshot(store: FileSnapshotStore, snapshot_id: OffsetAndEpoch) -> SnapshotContents:
    """Decode a snapshot (validated again: data is checked after reading it back)."""
    path = store.path(snapshot_id)
    return decode_snapshot(snapshot_id, path.read_bytes(), str(path))


def decode_snapshot(snapshot_id: OffsetAndEpoch, data: bytes, name: str) -> SnapshotContents:
    """A snapshot's bytes, validated, decoded for the application (``name`` for errors)."""
    validate_snapshot(data, name)
    records: list[Record] = []
    control: list[tuple[ControlRecordType, object]] = []
    for header, pos in iter_batches(data):
        decoded = decode_records(data[pos : pos + header.size])
        if header.is_control:
            control.extend(decode_control(r) for r in decoded)
        else:
            records.extend(decoded)
    last_ts = 0
    kraft_version: int | None = None
    voters: tuple[VoterRecordEntry, ...] | None = None
    for kind, entity in control:
        if kind is ControlRecordType.SNAPSHOT_HEADER:
            assert isinstance(entity, SnapshotHeaderRecord)
            last_ts = entity.last_contained_log_timestamp
        elif kind is ControlRecordType.KRAFT_VERSION:
            assert isinstance(entity, KRaftVersionRecord)
            kraft_version = int(entity.k_raft_version)
        elif kind is ControlRecordType.KRAFT_VOTERS:
            assert isinstance(entity, VotersRecord)
            voters = tuple(VoterRecordEntry.from_record(v) for v in entity.voters)
    return SnapshotContents(
        snapshot_id, last_ts, kraft_version, voters, tuple(records), tuple(control)
    )
