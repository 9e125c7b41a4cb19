"""The control records the core itself interprets (Kafka's KRaftControlRecordStateMachine):
kraft.version, the voter set, and pykraft's KIP-642 target voter set (D2, D3, E1).

Theory of operation. Each value has a ``LogHistory``: (offset, value) entries in offset order,
one per record that set it. The *latest* entry is in force whether committed or not (D2); a
truncation of the log drops the entries at or above the new end (``truncate``), which reverts
to the previous value; advancing the log start forgets entries that can no longer matter. A
snapshot's records count as written at ``snapshot end offset - 1``; the bootstrap checkpoint
``00000000000000000000-0000000000`` therefore sits at offset -1 (always committed).

``ControlState.next_offset`` is the first log offset not yet read. Invariant (kept by
``RaftCore``): it equals the log end offset after every input, so every append is shown to
``apply_batches`` exactly once (the core passes it the bytes it appended; nothing is re-read).

pykraft's target voter set record (KIP-642 has no Kafka record). It must not stop a Kafka
replica, which refuses control types it does not know, so it is a LeaderChangeMessage control
record (Kafka reads and ignores those) carrying the target in a tagged field of pykraft's
(``records._control``: tag 642, a VotersRecord of the target's voters, with directory ids,
endpoints and kraft.version ranges; an empty voter list clears the target). It travels in a
control batch of its own. Snapshots carry it after KRaftVersion and Voters while a
reassignment is in progress, so a leader elected after a log prefix was dropped still sees
the target. The type-1000 record earlier pykraft versions wrote is still read.
"""

from __future__ import annotations

import struct
from bisect import bisect_right
from collections.abc import Sequence
from typing import Generic, TypeVar

from pykraft.raft.interfaces import ReplicatedLog, SnapshotStore
from pykraft.raft.types import OffsetAndEpoch, ReplicaKey
from pykraft.raft.voters import VoterInfo, VoterSet
from pykraft.records import (
    BATCH_FIELDS,
    BATCH_HEADER_SIZE,
    BATCH_LENGTH_OVERHEAD,
    CONTROL_FLAG,
    ControlRecordType,
    CorruptRecordError,
    Record,
    VoterRecordEntry,
    build_batch,
    decode_control,
    decode_records,
    kraft_version_batch,
    original_of,
    read_header,
    target_of,
    target_voters_record,
    voters_batch,
)
from pykraft.records.control_records import KRaftVersionRecord, VotersRecord

T = TypeVar("T")

_KEY = struct.Struct(">hh")
_LEADER_CHANGE_KEY = _KEY.pack(0, ControlRecordType.LEADER_CHANGE)
_SNAPSHOT_CONTROL_BATCHES_MAX = 16  # header, kraft.version, voters, target: a bound, not a guess


class LogHistory(Generic[T]):
    """Values by the offset of the record that set them (Kafka's LogHistory).

    Invariant: offsets strictly increase along ``entries``.
    """

    __slots__ = ("entries",)

    def __init__(self) -> None:
        self.entries: list[tuple[int, T]] = []

    def add_at(self, offset: int, value: T) -> None:
        if self.entries and offset <= self.entries[-1][0]:
            return  # already read (a batch straddling the log start, or a re-read)
        self.entries.append((offset, value))

    def last_entry(self) -> tuple[int, T] | None:
        return self.entries[-1] if self.entries else None

    def value_at_or_before(self, offset: int) -> T | None:
        i = bisect_right([o for o, _ in self.entries], offset) - 1
        return self.entries[i][1] if i >= 0 else None

    def truncate_new_entries(self, end_offset: int) -> None:
        """Forget entries at or after ``end_offset`` (the log was truncated there)."""
        while self.entries and self.entries[-1][0] >= end_offset:
            self.entries.pop()

    def truncate_old_entries(self, start_offset: int) -> None:
        """Forget entries superseded before ``start_offset``; the one in force there stays."""
        keep = bisect_right([o for o, _ in self.entries], start_offset - 1) - 1
        if keep > 0:
            del self.entries[:keep]

    def clear(self) -> None:
        self.entries.clear()


def voter_set_from_entries(entries: Sequence[VoterRecordEntry]) -> VoterSet:
    return VoterSet(
        {
            e.voter_id: VoterInfo(e.key, e.endpoints, e.min_kraft_version, e.max_kraft_version)
            for e in entries
        }
    )


def voter_entries(voters: VoterSet) -> list[VoterRecordEntry]:
    return [
        VoterRecordEntry(
            i.key.id, i.key.directory_id, i.endpoints, i.min_kraft_version, i.max_kraft_version
        )
        for i in voters.voters.values()
    ]


def control_batch(base_offset: int, epoch: int, timestamp_ms: int, parts: Sequence[bytes]) -> bytes:
    """One control batch holding the records of several single-record control batches (so that
    e.g. KRaftVersion and Voters are written atomically, D10)."""
    records = [r for p in parts for r in decode_records(p)]
    return build_batch(
        base_offset,
        epoch,
        [r.value for r in records],
        timestamp_ms,
        keys=[r.key for r in records],
        control=True,
    )


def target_voters_batch(
    base_offset: int,
    epoch: int,
    timestamp_ms: int,
    target: VoterSet | None,
    *,
    leader_id: int,
    voters: VoterSet | None,
    original: VoterSet | None = None,
) -> bytes:
    """pykraft's target voter set record (see the module docstring); None clears it.
    ``leader_id`` and ``voters`` fill the LeaderChangeMessage it travels in (the writer and
    the voter set now; -1 and the snapshot's voters in a snapshot); ``original`` is the voter
    set the reassignment started from (what cancelling returns to)."""
    entries = voter_entries(target) if target is not None else []
    keys = voters.keys if voters is not None else ()
    start = voter_entries(original) if original is not None and target is not None else []
    value = target_voters_record(leader_id, keys, entries, start)
    return build_batch(
        base_offset, epoch, [value], timestamp_ms, keys=[_LEADER_CHANGE_KEY], control=True
    )


def bootstrap_batches(
    base_offset: int, epoch: int, timestamp_ms: int, kraft_version: int, voters: VoterSet
) -> bytes:
    """KRaftVersion + Voters in one control batch."""
    return control_batch(
        base_offset,
        epoch,
        timestamp_ms,
        [
            kraft_version_batch(0, epoch, timestamp_ms, kraft_version),
            voters_batch(0, epoch, timestamp_ms, voter_entries(voters)),
        ],
    )


class ControlState:
    """kraft.version, voter set and target voter set, each with its history by offset."""

    __slots__ = (
        "next_offset",
        "original_history",
        "static_voters",
        "target_history",
        "version_history",
        "voter_history",
    )

    def __init__(self, static_voters: VoterSet) -> None:
        self.static_voters = static_voters  # kraft.version 0: controller.quorum.voters
        self.voter_history: LogHistory[VoterSet] = LogHistory()
        self.version_history: LogHistory[int] = LogHistory()
        self.target_history: LogHistory[VoterSet | None] = LogHistory()
        # The voter set the reassignment in force started from (KIP-455's "original
        # replicas": what a cancel returns to); set together with the target.
        self.original_history: LogHistory[VoterSet | None] = LogHistory()
        self.next_offset = 0

    # -- the values in force --------------------------------------------------------------

    @property
    def kraft_version(self) -> int:
        entry = self.version_history.last_entry()
        return 0 if entry is None else entry[1]

    @property
    def voters(self) -> VoterSet:
        """The latest voter set, committed or not (D2). At kraft.version 1 with no Voters
        record yet (``format --no-initial-controllers``) the set is unknown: empty."""
        entry = self.voter_history.last_entry()
        if entry is not None:
            return entry[1]
        return VoterSet({}) if self.kraft_version >= 1 else self.static_voters

    def committed_voters(self, high_watermark: int) -> VoterSet:
        """The voter set in force at ``high_watermark - 1``: the latest committed one as far
        as this replica knows (its high watermark may lag)."""
        voters = self.voter_history.value_at_or_before(high_watermark - 1)
        if voters is not None:
            return voters
        version = self.version_history.value_at_or_before(high_watermark - 1)
        return self.static_voters if not version else VoterSet({})

    @property
    def voters_offset(self) -> int | None:
        """Offset of the record that set the voter set in force (-1: the bootstrap checkpoint;
        None: static)."""
        entry = self.voter_history.last_entry()
        return None if entry is None else entry[0]

    @property
    def target(self) -> tuple[int, VoterSet] | None:
        """(offset, target voter set) of the reassignment in force, if any."""
        entry = self.target_history.last_entry()
        if entry is None or entry[1] is None:
            return None
        return entry[0], entry[1]

    @property
    def original(self) -> VoterSet | None:
        """The voter set the reassignment in force started from (None when unknown: a target
        written by an earlier pykraft)."""
        return self.original_history.value_at_or_before(self.next_offset) if self.target else None

    # -- reading ------------------------------------------------------------------------------

    def load(self, log: ReplicatedLog, snapshots: SnapshotStore) -> None:
        """Rebuild from the latest snapshot and the whole log (startup, snapshot install)."""
        for history in (
            self.voter_history,
            self.version_history,
            self.target_history,
            self.original_history,
        ):
            history.clear()
        sid = snapshots.latest()
        if sid is not None:
            self._read_snapshot(snapshots, sid)
        # From the latest snapshot's end when the log reaches back further (a log kept
        # within metadata.max.retention.*: Kafka's maybeLoadSnapshot then maybeLoadLog).
        self.next_offset = max(log.start_offset, 0 if sid is None else sid.offset)
        # Only the control batches hold what is read here: the log lists them (Kafka reads
        # the whole log at startup; this keeps a restart on a big log from doing so).
        # ``apply_batches`` skips what lies below ``next_offset``.
        for offset in log.control_batch_offsets():
            self.apply_batches(log.read(max(offset, log.start_offset), 1))
        self.next_offset = log.end_offset

    def apply_batches(self, raw: bytes) -> None:
        """Read the control records of batches just appended (or read back)."""
        # The bytes were just checked by the log (framing, headers, CRC): read only the
        # fields needed here, no second validation (this runs for every append and fetch).
        pos = 0
        end = len(raw)
        while pos < end:
            base, length, _epoch, _magic, _crc, attributes, delta = BATCH_FIELDS.unpack_from(
                raw, pos
            )
            size = BATCH_LENGTH_OVERHEAD + length
            if size < BATCH_HEADER_SIZE:  # never loop on bytes that did not come from a log
                raise CorruptRecordError(f"batch length {length} at position {pos}")
            next_offset = base + delta + 1
            if next_offset > self.next_offset:
                if attributes & CONTROL_FLAG:
                    for record in decode_records(raw[pos : pos + size]):
                        if record.offset >= self.next_offset:
                            self._apply(record, record.offset)
                self.next_offset = next_offset
            pos += size

    def truncate(self, end_offset: int) -> None:
        """The log was truncated to ``end_offset``: revert what was read above it."""
        for history in (
            self.voter_history,
            self.version_history,
            self.target_history,
            self.original_history,
        ):
            history.truncate_new_entries(end_offset)
        self.next_offset = min(self.next_offset, end_offset)

    def forget_before(self, start_offset: int) -> None:
        for history in (
            self.voter_history,
            self.version_history,
            self.target_history,
            self.original_history,
        ):
            history.truncate_old_entries(start_offset)

    def snapshot_batches(self, end_offset: int, epoch: int, timestamp_ms: int) -> list[bytes]:
        """Control batches a snapshot ending at ``end_offset`` starts with, after its header
        (B11): KRaftVersion and Voters at kraft.version >= 1, then the target if any. Base
        offsets are placeholders: the snapshot writer renumbers them."""
        version = self.version_history.value_at_or_before(end_offset - 1)
        if not version:
            return []
        voters = self.voter_history.value_at_or_before(end_offset - 1)
        parts = [kraft_version_batch(0, epoch, timestamp_ms, version)]
        if voters is not None:
            parts.append(voters_batch(0, epoch, timestamp_ms, voter_entries(voters)))
        out = [control_batch(0, epoch, timestamp_ms, parts)]
        target = self.target_history.value_at_or_before(end_offset - 1)
        if target is not None:
            original = self.original_history.value_at_or_before(end_offset - 1)
            out.append(
                target_voters_batch(
                    0, epoch, timestamp_ms, target, leader_id=-1, voters=voters, original=original
                )
            )
        return out

    # -- internals ----------------------------------------------------------------------------

    def _read_snapshot(self, snapshots: SnapshotStore, sid: OffsetAndEpoch) -> None:
        """The leading control batches of a snapshot (header, kraft.version, voters, target),
        read batch by batch: the application's records are never read here."""
        size = snapshots.size(sid) or 0
        position = 0
        for _ in range(_SNAPSHOT_CONTROL_BATCHES_MAX):
            if position + BATCH_HEADER_SIZE > size:
                return
            header = read_header(snapshots.read(sid, position, BATCH_HEADER_SIZE))
            if not header.is_control:
                return
            batch = snapshots.read(sid, position, header.size)
            for record in decode_records(batch):
                self._apply(record, sid.offset - 1)
            position += header.size

    def _apply(self, record: Record, offset: int) -> None:
        key = record.key
        if key is None or len(key) != _KEY.size:
            return
        _version, type_code = _KEY.unpack(key)
        if type_code == ControlRecordType.KRAFT_VERSION:
            _, message = decode_control(record)
            assert isinstance(message, KRaftVersionRecord)
            self.version_history.add_at(offset, message.k_raft_version)
        elif type_code == ControlRecordType.KRAFT_VOTERS:
            _, message = decode_control(record)
            assert isinstance(message, VotersRecord)
            entries = [VoterRecordEntry.from_record(v) for v in message.voters]
            self.voter_history.add_at(offset, voter_set_from_entries(entries))
        elif type_code in (ControlRecordType.LEADER_CHANGE, ControlRecordType.TARGET_VOTERS):
            record_type, message = decode_control(record)
            target = target_of(record_type, message)
            if target is not None:
                self.target_history.add_at(offset, voter_set_from_entries(target) or None)
                original = original_of(record_type, message) if target else None
                self.original_history.add_at(
                    offset, voter_set_from_entries(original) if original else None
                )
        # Snapshot header/footer and unknown types: nothing for us (Kafka refuses unknown
        # control types; pykraft writes none).


def same_members(a: VoterSet, b: VoterSet) -> bool:
    return set(a.keys) == set(b.keys)


def has_key(voters: VoterSet, key: ReplicaKey) -> bool:
    """``key`` is in ``voters`` exactly (same id and directory id)."""
    info = voters.voters.get(key.id)
    return info is not None and info.key == key
