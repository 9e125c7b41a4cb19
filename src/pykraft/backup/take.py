"""``pykraft metadata backup``: keep a copy of a controller's metadata log that outlives the
controller and its retention (issue 48 item 4).

Theory of operation. The backup is itself a metadata log directory: ``meta.properties`` (the
source's), ``__cluster_metadata-0/`` with every snapshot the source ever had (``*.checkpoint``,
never deleted here) and the batches of its log in the backup's own segments, and the source's
``quorum-state`` (the newest epoch it knew). Each round (``backup_round``) reads the source as
it is on disk, while its controller runs, pykraft's or Kafka's:

* snapshots: every complete ``.checkpoint`` not yet kept is copied (through ``.part``, checked
  for framing and CRCs, fsynced, renamed); files being written (``.part``) and deleted ones
  are not complete snapshots and are left alone;
* log: the source's segments are scanned for their valid batches (a torn tail, a batch being
  written, ends the scan) and every batch after the backup's end is appended, byte for byte,
  to the backup's newest segment (a new one every ``segment_bytes``, or where the source's
  log resumes after a gap its retention left), then fsynced.

Raft's log matching decides what is the same log: two batches with the same base offset and
epoch hold the same records, and so does everything before them. A round goes on where the
last ended when the source still holds the backup's last batch unchanged. Otherwise the tail
the backup kept was never committed (a deposed leader's, truncated since): the backup is cut
back to the newest batch both still share and the source's batches are taken from there, so
what a backup holds below its end is always the source's log. The backup's segments are
independent of the source's, so a backup can move to another controller of the same cluster
(``meta.properties`` must name the same ``cluster.id``). Nothing is ever written to the source.

``backup.json`` records each round (what was copied, cut or skipped over); the files are the
truth, so a round that crashed is simply redone.
"""

from __future__ import annotations

import json
import mmap
import os
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Final

from pykraft.records import BatchHeader, valid_prefix
from pykraft.storage._files import StorageError, atomic_write, fsync_dir, fsync_file
from pykraft.storage.log import PARTITION_DIR_NAME
from pykraft.storage.meta import MetaProperties, read_meta_properties, write_meta_properties
from pykraft.storage.quorum_state import QUORUM_STATE_FILE
from pykraft.storage.segment import parse_segment_name, segment_name
from pykraft.storage.snapshots import validate_snapshot_file

__all__ = [
    "BACKUP_MANIFEST",
    "DEFAULT_SEGMENT_BYTES",
    "BackupError",
    "BackupRound",
    "Located",
    "backup_round",
    "log_batches",
]

BACKUP_MANIFEST: Final = "backup.json"
DEFAULT_SEGMENT_BYTES: Final = 16 * 1024 * 1024
_ROUNDS_KEPT: Final = 100


class BackupError(StorageError):
    """The source cannot be backed up into the target as it is (the message says why)."""


@dataclass(frozen=True, slots=True)
class Located:
    """One valid batch of a segment file: what log matching compares, and where it is."""

    base_offset: int
    next_offset: int
    epoch: int
    crc: int
    max_timestamp: int
    is_control: bool
    path: Path
    position: int
    size: int

    def read(self) -> bytes:
        with self.path.open("rb") as f:
            return os.pread(f.fileno(), self.size, self.position)

    @property
    def ref(self) -> tuple[int, int, int, int]:
        return (self.base_offset, self.next_offset, self.epoch, self.crc)


@dataclass
class BackupRound:
    """What one round did."""

    time_ms: int
    end_offset: int = 0  # the backup's log end after the round
    last_epoch: int = -1
    batches: int = 0
    bytes: int = 0
    snapshots: list[str] = field(default_factory=list)
    truncated_at: int | None = None  # a tail the source no longer holds, cut from here
    resumed_after_gap: int | None = None  # the source's log went on from here, after a gap


def segments(partition: Path) -> list[Path]:
    return sorted(partition.glob("*.log"), key=lambda p: p.name)


def _scan(path: Path) -> tuple[list[Located], int]:
    """The valid batches of one segment file and the length of its valid prefix."""
    if path.stat().st_size == 0:
        return [], 0
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        headers, valid = valid_prefix(data)
    return _locate(headers, path), valid


def _locate(headers: Sequence[BatchHeader], path: Path) -> list[Located]:
    found, pos = [], 0
    for h in headers:
        found.append(
            Located(
                h.base_offset,
                h.next_offset,
                h.epoch,
                h.crc,
                h.max_timestamp,
                h.is_control,
                path,
                pos,
                h.size,
            )
        )
        pos += h.size
    return found


def log_batches(partition: Path, since: int = 0) -> Iterator[Located]:
    """The log's valid batches in offset order, from the segment that may hold ``since``
    on; a segment with invalid data ends the log there (as a start's recovery would)."""
    files = segments(partition)
    first = 0
    for i, path in enumerate(files):
        if parse_segment_name(path) <= since:
            first = i
    for path in files[first:]:
        found, valid = _scan(path)
        yield from found
        if valid < path.stat().st_size:
            return


def backup_round(
    source: Path, target: Path, now_ms: int, *, segment_bytes: int = DEFAULT_SEGMENT_BYTES
) -> BackupRound:
    """Bring the backup ``target`` up to date with the metadata log directory ``source``."""
    meta = _check_same_cluster(source, target)
    src, dst = source / PARTITION_DIR_NAME, target / PARTITION_DIR_NAME
    if not src.is_dir():
        raise BackupError(f"{src}: missing (not a metadata log directory)")
    dst.mkdir(parents=True, exist_ok=True)
    if read_meta_properties(target) is None:
        write_meta_properties(target, meta)
    done = BackupRound(now_ms)
    done.snapshots = _copy_snapshots(src, dst)
    state, kept = src / QUORUM_STATE_FILE, dst / QUORUM_STATE_FILE
    if state.is_file() and (not kept.is_file() or kept.read_bytes() != state.read_bytes()):
        atomic_write(kept, state.read_bytes())
    ours = _cut_torn_tail(dst)
    pending = _pending(src, dst, ours, done)
    _append(dst, pending, segment_bytes, done)
    # The backup's last batch: the last one appended, else the last one it had (scanned
    # again only after a cut-back, which changed the segments).
    if pending:
        last: Located | None = pending[-1]
    elif done.truncated_at is None:
        last = ours[-1] if ours else None
    else:
        files = segments(dst)
        final = _scan(files[-1])[0] if files else []
        last = final[-1] if final else None
    if last is not None:
        done.end_offset, done.last_epoch = last.next_offset, last.epoch
    _record(target, source, done)
    return done


def _check_same_cluster(source: Path, target: Path) -> MetaProperties:
    try:
        meta = read_meta_properties(source)
    except StorageError as e:
        raise BackupError(f"{source}: {e}") from None
    if meta is None:
        raise BackupError(f"{source}: no meta.properties (not a formatted metadata log dir)")
    ours = read_meta_properties(target) if target.is_dir() else None
    if ours is not None and ours.cluster_id != meta.cluster_id:
        raise BackupError(
            f"{target} backs up cluster {ours.cluster_id}, not {meta.cluster_id} ({source})"
        )
    return meta


def _copy_snapshots(src: Path, dst: Path) -> list[str]:
    copied = []
    for path in sorted(src.glob("*.checkpoint")):
        kept = dst / path.name
        if kept.exists():
            continue
        part = dst / (path.name + ".part")
        try:
            shutil.copyfile(path, part)
        except FileNotFoundError:  # deleted by the source's retention meanwhile
            continue
        validate_snapshot_file(part, path.name)
        fsync_file(part)
        os.replace(part, kept)
        copied.append(path.name)
    if copied:
        fsync_dir(dst)
    return copied


def _cut_torn_tail(dst: Path) -> list[Located]:
    """The backup's newest segment's batches; what a crash left after them is cut."""
    files = segments(dst)
    if not files:
        return []
    found, valid = _scan(files[-1])
    if valid < files[-1].stat().st_size:
        os.truncate(files[-1], valid)
        fsync_file(files[-1])
    return found


def _pending(src: Path, dst: Path, ours: list[Located], done: BackupRound) -> list[Located]:
    """The source's batches to append; the backup cut back first where they diverge."""
    if not ours:
        older = segments(dst)[:-1]
        if older:  # the newest backup segment is empty: go on from the one before
            ours, _ = _scan(older[-1])
    if not ours:
        return list(log_batches(src))
    last = ours[-1]
    theirs = list(log_batches(src, last.base_offset))
    for i, batch in enumerate(theirs):
        if batch.base_offset == last.base_offset:
            if batch.ref == last.ref:
                return theirs[i + 1 :]
            break
        if batch.base_offset > last.base_offset:
            if batch.base_offset >= last.next_offset and i == 0:
                done.resumed_after_gap = batch.base_offset
                return theirs  # the source's log starts after ours ends
            break
    else:
        # The source's log ends before ours: behind (nothing new) if its last batch is ours
        # too, else its tail was rewritten shorter than what the backup kept.
        if not theirs or _backup_batch_at(dst, theirs[-1].base_offset) == theirs[-1].ref:
            return []
    return _diverged(src, dst, done)


def _backup_batch_at(dst: Path, base_offset: int) -> tuple[int, int, int, int] | None:
    """The backup's batch that starts at ``base_offset`` (log matching's key), if any."""
    for batch in log_batches(dst, base_offset):
        if batch.base_offset == base_offset:
            return batch.ref
        if batch.base_offset > base_offset:
            break
    return None


def _diverged(src: Path, dst: Path, done: BackupRound) -> list[Located]:
    """Cut the backup back to the newest batch the source holds unchanged (log matching:
    everything before it is the same too) and take the source's batches after it."""
    theirs = list(log_batches(src))
    by_base = {b.base_offset: b.ref for b in theirs}
    first = theirs[0].base_offset if theirs else 0
    cut = first
    for ours in reversed(list(log_batches(dst))):
        if by_base.get(ours.base_offset) == ours.ref:
            cut = ours.next_offset
            break
        if ours.base_offset < first:
            cut = ours.next_offset  # below the source's log: nothing to compare with
            break
    _truncate(dst, cut)
    done.truncated_at = cut
    return [b for b in theirs if b.base_offset >= cut]


def _truncate(dst: Path, offset: int) -> None:
    """Remove every batch of the backup at or after ``offset``."""
    for path in reversed(segments(dst)):
        if parse_segment_name(path) >= offset:
            path.unlink()
            continue
        found, _ = _scan(path)
        keep = sum(b.size for b in found if b.next_offset <= offset)
        os.truncate(path, keep)
        fsync_file(path)
        break
    fsync_dir(dst)


def _append(dst: Path, batches: Sequence[Located], segment_bytes: int, done: BackupRound) -> None:
    files = segments(dst)
    current = files[-1] if files else None
    end = None
    if current is not None:
        found, _ = _scan(current)
        end = found[-1].next_offset if found else parse_segment_name(current)
    written: set[Path] = set()
    for batch in batches:
        if current is None or batch.base_offset != end or current.stat().st_size >= segment_bytes:
            current = dst / segment_name(batch.base_offset)
        with current.open("ab") as out:
            out.write(batch.read())
        written.add(current)
        end = batch.next_offset
        done.batches += 1
        done.bytes += batch.size
    for path in written:
        fsync_file(path)
    if written:
        fsync_dir(dst)


def _record(target: Path, source: Path, done: BackupRound) -> None:
    manifest = target / BACKUP_MANIFEST
    rounds: list[dict[str, object]] = []
    if manifest.is_file():
        try:
            rounds = list(json.loads(manifest.read_text()).get("rounds", []))
        except (ValueError, AttributeError):
            rounds = []  # a damaged manifest is only history: start it again
    rounds = [*rounds, {"source": str(source), **asdict(done)}][-_ROUNDS_KEPT:]
    atomic_write(manifest, json.dumps({"rounds": rounds}, indent=1).encode())
