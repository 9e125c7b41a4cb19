"""KRaft control records: control batches (attributes bit 5) whose records have Kafka's
control record key (int16 version 0, int16 type) and a value encoded by the codecs generated
from Kafka's own definitions (``records/schemas``, ``pykraft.records.control_records``):
LeaderChangeMessage, SnapshotHeaderRecord, SnapshotFooterRecord, KRaftVersionRecord,
VotersRecord.

Schema versions: Kafka writes and *reads* every control record at schema version 0
(``ControlRecordUtils`` in kafka-clients: a LeaderChangeMessage value of version 1, with
directory ids, stops every Kafka reader, found with ``kafka-dump-log``), so pykraft writes
version 0 and reads version 0, whatever the record's own ``Version`` field says. Tagged
fields a record carries and this code does not know are kept, not refused (Kafka does the
same), so a newer writer's additions never make a log unreadable.

pykraft's KIP-642 target voter set. Kafka has no record for it and refuses control types it
does not know (``RecordsIterator``: "Unknown control record type" stops the replica), so the
target rides in a record every Kafka reader accepts and ignores: a LeaderChangeMessage
(Kafka's KRaftControlRecordStateMachine, metadata loader and tools skip those) carrying
tagged field ``TARGET_VOTERS_TAG`` (642), whose value is a VotersRecord (v0) of the target's
voters; an empty voter list clears the target. Its LeaderId is the leader that wrote it
(-1 in a snapshot) and its Voters the voter set then, so it reads as what it is to a Kafka
tool. Logs of earlier pykraft versions hold the target as a control record of its own type,
1000 (``ControlRecordType.TARGET_VOTERS``); those are still read.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Final

from pykraft.records._batch import CorruptRecordError, Record, build_batch
from pykraft.records.control_records import (
    KRaftVersionRecord,
    LeaderChangeMessage,
    SnapshotFooterRecord,
    SnapshotHeaderRecord,
    VotersRecord,
)
from pykraft.records.control_records import leader_change_message as lcm
from pykraft.records.control_records import voters_record as vr
from pykraft.records.identity import Endpoint, ReplicaKey
from pykraft.schema.runtime import SchemaDecodeError

_CONTROL_KEY = struct.Struct(">hh")
_ZERO_UUID = uuid.UUID(int=0)
SCHEMA_VERSION: Final = 0  # the only one Kafka reads (see the module docstring)
TARGET_VOTERS_TAG: Final = 642  # KIP-642's number: pykraft's tag on a LeaderChangeMessage
TARGET_ORIGINAL_TAG: Final = 643  # the voter set the reassignment started from (to cancel)


class ControlRecordType(IntEnum):
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6
    # The KIP-642 target as earlier pykraft versions wrote it: a type of its own, whose value
    # is a VotersRecord. Read, never written (see the module docstring).
    TARGET_VOTERS = 1000


_SCHEMAS: Final[dict[ControlRecordType, type[Any]]] = {
    ControlRecordType.LEADER_CHANGE: LeaderChangeMessage,
    ControlRecordType.SNAPSHOT_HEADER: SnapshotHeaderRecord,
    ControlRecordType.SNAPSHOT_FOOTER: SnapshotFooterRecord,
    ControlRecordType.KRAFT_VERSION: KRaftVersionRecord,
    ControlRecordType.KRAFT_VOTERS: VotersRecord,
    ControlRecordType.TARGET_VOTERS: VotersRecord,
}


@dataclass(frozen=True, slots=True)
class VoterRecordEntry:
    """One voter of a VotersRecord (KIP-853)."""

    voter_id: int
    directory_id: uuid.UUID | None
    endpoints: tuple[Endpoint, ...]
    min_kraft_version: int = 0
    max_kraft_version: int = 1

    @property
    def key(self) -> ReplicaKey:
        return ReplicaKey(self.voter_id, self.directory_id)

    def to_record(self) -> vr.Voter:
        return vr.Voter(
            voter_id=self.voter_id,
            voter_directory_id=self.directory_id or _ZERO_UUID,
            endpoints=tuple(
                vr.Endpoint(name=e.name, host=e.host, port=e.port) for e in self.endpoints
            ),
            k_raft_version_feature=vr.KRaftVersionFeature(
                min_supported_version=self.min_kraft_version,
                max_supported_version=self.max_kraft_version,
            ),
        )

    @classmethod
    def from_record(cls, voter: vr.Voter) -> VoterRecordEntry:
        directory_id = voter.voter_directory_id
        return cls(
            voter_id=voter.voter_id,
            directory_id=None if directory_id == _ZERO_UUID else directory_id,
            endpoints=tuple(Endpoint(e.name, e.host, e.port) for e in voter.endpoints),
            min_kraft_version=voter.k_raft_version_feature.min_supported_version,
            max_kraft_version=voter.k_raft_version_feature.max_supported_version,
        )


def control_key(record_type: ControlRecordType) -> bytes:
    return _CONTROL_KEY.pack(0, int(record_type))


def _control_batch(
    base_offset: int,
    epoch: int,
    timestamp_ms: int,
    record_type: ControlRecordType,
    record: LeaderChangeMessage
    | SnapshotHeaderRecord
    | SnapshotFooterRecord
    | KRaftVersionRecord
    | VotersRecord,
) -> bytes:
    return build_batch(
        base_offset,
        epoch,
        [record.encode(SCHEMA_VERSION)],
        timestamp_ms,
        keys=[control_key(record_type)],
        control=True,
    )


def leader_change_batch(
    base_offset: int,
    epoch: int,
    timestamp_ms: int,
    leader_id: int,
    voters: Sequence[ReplicaKey],
    granting_voters: Sequence[ReplicaKey],
) -> bytes:
    """A LeaderChangeMessage (voter ids only: schema version 0, see the module docstring)."""
    return _control_batch(
        base_offset,
        epoch,
        timestamp_ms,
        ControlRecordType.LEADER_CHANGE,
        _leader_change(leader_id, voters, granting_voters),
    )


def _leader_change(
    leader_id: int,
    voters: Sequence[ReplicaKey],
    granting_voters: Sequence[ReplicaKey],
    *,
    tags: tuple[tuple[int, bytes], ...] = (),
) -> LeaderChangeMessage:
    return LeaderChangeMessage(
        version=0,
        leader_id=leader_id,
        voters=tuple(lcm.Voter(voter_id=k.id) for k in voters),
        granting_voters=tuple(lcm.Voter(voter_id=k.id) for k in granting_voters),
        unknown_tagged_fields=tags,
    )


def _voters_value(entries: Sequence[VoterRecordEntry]) -> bytes:
    record = VotersRecord(version=0, voters=tuple(v.to_record() for v in entries))
    return record.encode(SCHEMA_VERSION)


def target_voters_record(
    leader_id: int,
    voters: Sequence[ReplicaKey],
    target: Sequence[VoterRecordEntry],
    original: Sequence[VoterRecordEntry] = (),
) -> bytes:
    """The value of pykraft's KIP-642 target record: a LeaderChangeMessage (``leader_id``
    and ``voters`` as they are now) tagged with the target (empty: cleared) and the voter
    set the reassignment started from (what a cancel returns to). Its key is
    ``control_key(ControlRecordType.LEADER_CHANGE)``."""
    tags = [(TARGET_VOTERS_TAG, _voters_value(target))]
    if original:
        tags.append((TARGET_ORIGINAL_TAG, _voters_value(original)))
    message = _leader_change(leader_id, voters, (), tags=tuple(tags))
    return message.encode(SCHEMA_VERSION)


def target_of(record_type: ControlRecordType, message: object) -> list[VoterRecordEntry] | None:
    """The KIP-642 target a decoded control record carries (an empty list: cleared), or
    None when it carries none."""
    if record_type == ControlRecordType.TARGET_VOTERS:
        assert isinstance(message, VotersRecord)
        return [VoterRecordEntry.from_record(v) for v in message.voters]
    if not isinstance(message, LeaderChangeMessage):
        return None
    return _tagged_voters(message, TARGET_VOTERS_TAG)


def original_of(record_type: ControlRecordType, message: object) -> list[VoterRecordEntry] | None:
    """The voter set a KIP-642 target record says its reassignment started from."""
    if not isinstance(message, LeaderChangeMessage):
        return None
    return _tagged_voters(message, TARGET_ORIGINAL_TAG)


def _tagged_voters(message: LeaderChangeMessage, tag: int) -> list[VoterRecordEntry] | None:
    for found, value in message.unknown_tagged_fields:
        if found == tag:
            try:
                voters = VotersRecord.decode(value, SCHEMA_VERSION)
            except SchemaDecodeError as e:
                raise CorruptRecordError(f"bad KIP-642 tag {tag} in a LeaderChange: {e}") from None
            return [VoterRecordEntry.from_record(v) for v in voters.voters]
    return None


def snapshot_header_batch(
    base_offset: int, epoch: int, timestamp_ms: int, last_contained_log_timestamp_ms: int
) -> bytes:
    record = SnapshotHeaderRecord(
        version=0, last_contained_log_timestamp=last_contained_log_timestamp_ms
    )
    return _control_batch(
        base_offset, epoch, timestamp_ms, ControlRecordType.SNAPSHOT_HEADER, record
    )


def snapshot_footer_batch(base_offset: int, epoch: int, timestamp_ms: int) -> bytes:
    record = SnapshotFooterRecord(version=0)
    return _control_batch(
        base_offset, epoch, timestamp_ms, ControlRecordType.SNAPSHOT_FOOTER, record
    )


def kraft_version_batch(
    base_offset: int, epoch: int, timestamp_ms: int, kraft_version: int
) -> bytes:
    record = KRaftVersionRecord(version=0, k_raft_version=kraft_version)
    return _control_batch(base_offset, epoch, timestamp_ms, ControlRecordType.KRAFT_VERSION, record)


def voters_batch(
    base_offset: int, epoch: int, timestamp_ms: int, voters: Sequence[VoterRecordEntry]
) -> bytes:
    record = VotersRecord(version=0, voters=tuple(v.to_record() for v in voters))
    return _control_batch(base_offset, epoch, timestamp_ms, ControlRecordType.KRAFT_VOTERS, record)


def decode_control(record: Record) -> tuple[ControlRecordType, object]:
    """The type and decoded value of a control record (a generated record class from
    ``pykraft.records.control_records``); ``CorruptRecordError`` when the key or value is
    not one pykraft knows."""
    key, value = record.key, record.value
    if key is None or len(key) != _CONTROL_KEY.size or value is None or len(value) < 2:
        raise CorruptRecordError(f"not a control record at offset {record.offset}")
    key_version, type_code = _CONTROL_KEY.unpack(key)
    if key_version != 0:
        raise CorruptRecordError(f"control record key version {key_version}")
    try:
        record_type = ControlRecordType(type_code)
    except ValueError:
        raise CorruptRecordError(f"unknown control record type {type_code}") from None
    version = SCHEMA_VERSION
    if record_type == ControlRecordType.LEADER_CHANGE and value[:2] == b"\x00\x01":
        version = 1  # written by pykraft before 2026-11-23 (with directory ids); Kafka cannot
    try:
        message = _SCHEMAS[record_type].decode(value, version)
    except SchemaDecodeError as exc:
        raise CorruptRecordError(f"bad {record_type.name} value: {exc}") from exc
    return record_type, message
