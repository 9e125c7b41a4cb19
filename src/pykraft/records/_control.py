"""KRaft control records: control batches (attributes bit 5) holding one record whose key
is Kafka's control record key (int16 version 0, int16 type) and whose value is a kio
entity (LeaderChangeMessage, SnapshotHeaderRecord, ...). Every value starts with its own
int16 ``version`` field, which selects the schema version when decoding.
"""

from __future__ import annotations

import io
import struct
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from kio.schema.k_raft_version_record.v0.data import KRaftVersionRecord
from kio.schema.leader_change_message.v0 import data as lcm_v0
from kio.schema.leader_change_message.v1 import data as lcm_v1
from kio.schema.snapshot_footer_record.v0.data import SnapshotFooterRecord
from kio.schema.snapshot_header_record.v0.data import SnapshotHeaderRecord
from kio.schema.voters_record.v0 import data as voters_v0
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i16, i32, i64, u16

from pykraft.raft.types import Endpoint, ReplicaKey
from pykraft.records._batch import CorruptRecordError, Record, build_batch

_CONTROL_KEY = struct.Struct(">hh")
_ZERO_UUID = uuid.UUID(int=0)


class ControlRecordType(IntEnum):
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6
    # pykraft's own: the KIP-642 target voter set (Kafka has no record for it). Its value is
    # encoded exactly like a VotersRecord v0; an empty voter list clears the target. Far from
    # Kafka's numbers so that a future Kafka type never collides; readers that do not know it
    # skip it, as Kafka does for unknown control types.
    TARGET_VOTERS = 1000


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

    def to_kio(self) -> voters_v0.Voter:
        return voters_v0.Voter(
            voter_id=i32(self.voter_id),  # type: ignore[arg-type]
            voter_directory_id=self.directory_id or _ZERO_UUID,
            endpoints=tuple(
                voters_v0.Endpoint(name=e.name, host=e.host, port=u16(e.port))
                for e in self.endpoints
            ),
            k_raft_version_feature=voters_v0.KRaftVersionFeature(
                min_supported_version=i16(self.min_kraft_version),
                max_supported_version=i16(self.max_kraft_version),
            ),
        )

    @classmethod
    def from_kio(cls, voter: voters_v0.Voter) -> VoterRecordEntry:
        directory_id = voter.voter_directory_id
        return cls(
            voter_id=int(voter.voter_id),
            directory_id=None if directory_id in (None, _ZERO_UUID) else directory_id,
            endpoints=tuple(Endpoint(e.name, e.host, int(e.port)) for e in voter.endpoints),
            min_kraft_version=int(voter.k_raft_version_feature.min_supported_version),
            max_kraft_version=int(voter.k_raft_version_feature.max_supported_version),
        )


def control_key(record_type: ControlRecordType) -> bytes:
    return _CONTROL_KEY.pack(0, int(record_type))


def _encode(entity: Any) -> bytes:
    out = io.BytesIO()
    entity_writer(type(entity))(out, entity)
    return out.getvalue()


def _control_batch(
    base_offset: int, epoch: int, timestamp_ms: int, record_type: ControlRecordType, entity: Any
) -> bytes:
    return build_batch(
        base_offset,
        epoch,
        [_encode(entity)],
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
    """A LeaderChangeMessage at version 0 (voter ids only), as Kafka writes it.

    The schema has a version 1 with each voter's directory id, but Kafka (4.3's
    ``ControlRecordUtils.deserializeLeaderChangeMessage``) always *reads* the value at
    version 0: a version-1 value makes every Kafka replica, ``kafka-dump-log`` and
    ``kafka-metadata-shell`` fail on the batch (found with Kafka's dump tool,
    ``tests/interop``). The directory ids are in the VotersRecord anyway."""
    message = lcm_v0.LeaderChangeMessage(
        version=i16(0),
        leader_id=i32(leader_id),  # type: ignore[arg-type]
        voters=tuple(lcm_v0.Voter(voter_id=i32(k.id)) for k in voters),
        granting_voters=tuple(lcm_v0.Voter(voter_id=i32(k.id)) for k in granting_voters),
    )
    return _control_batch(
        base_offset, epoch, timestamp_ms, ControlRecordType.LEADER_CHANGE, message
    )


def snapshot_header_batch(
    base_offset: int, epoch: int, timestamp_ms: int, last_contained_log_timestamp_ms: int
) -> bytes:
    record = SnapshotHeaderRecord(
        version=i16(0), last_contained_log_timestamp=i64(last_contained_log_timestamp_ms)
    )
    return _control_batch(
        base_offset, epoch, timestamp_ms, ControlRecordType.SNAPSHOT_HEADER, record
    )


def snapshot_footer_batch(base_offset: int, epoch: int, timestamp_ms: int) -> bytes:
    record = SnapshotFooterRecord(version=i16(0))
    return _control_batch(
        base_offset, epoch, timestamp_ms, ControlRecordType.SNAPSHOT_FOOTER, record
    )


def kraft_version_batch(
    base_offset: int, epoch: int, timestamp_ms: int, kraft_version: int
) -> bytes:
    record = KRaftVersionRecord(version=i16(0), k_raft_version=i16(kraft_version))
    return _control_batch(base_offset, epoch, timestamp_ms, ControlRecordType.KRAFT_VERSION, record)


def voters_batch(
    base_offset: int, epoch: int, timestamp_ms: int, voters: Sequence[VoterRecordEntry]
) -> bytes:
    record = voters_v0.VotersRecord(version=i16(0), voters=tuple(v.to_kio() for v in voters))
    return _control_batch(base_offset, epoch, timestamp_ms, ControlRecordType.KRAFT_VOTERS, record)


# (type, value version) -> kio entity class
_SCHEMAS: dict[tuple[int, int], type[Any]] = {
    (ControlRecordType.LEADER_CHANGE, 0): lcm_v0.LeaderChangeMessage,
    (ControlRecordType.LEADER_CHANGE, 1): lcm_v1.LeaderChangeMessage,
    (ControlRecordType.SNAPSHOT_HEADER, 0): SnapshotHeaderRecord,
    (ControlRecordType.SNAPSHOT_FOOTER, 0): SnapshotFooterRecord,
    (ControlRecordType.KRAFT_VERSION, 0): KRaftVersionRecord,
    (ControlRecordType.KRAFT_VOTERS, 0): voters_v0.VotersRecord,
    (ControlRecordType.TARGET_VOTERS, 0): voters_v0.VotersRecord,
}


def decode_control(record: Record) -> tuple[ControlRecordType, object]:
    """The type and kio entity of a control record; ``CorruptRecordError`` when the key or
    value is not one pykraft knows."""
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
    (value_version,) = struct.unpack_from(">h", value)
    schema = _SCHEMAS.get((record_type, value_version))
    if schema is None:
        raise CorruptRecordError(f"{record_type.name} version {value_version} is not supported")
    reader: Callable[[bytes, int], tuple[object, int]] = entity_reader(schema)
    try:
        entity, size = reader(value, 0)
    except Exception as exc:  # kio raises several types on truncated or garbled input
        raise CorruptRecordError(f"bad {record_type.name} value: {exc}") from exc
    if size != len(value):
        raise CorruptRecordError(f"{len(value) - size} trailing bytes after {record_type.name}")
    return record_type, entity
