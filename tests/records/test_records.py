from __future__ import annotations

import datetime
import io
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.records.readers import read_batch
from kio.records.schema import NewRecordBatch
from kio.records.schema import Record as KioRecord
from kio.records.writers import write_new_batch
from kio.static.primitive import TZAwareMicros, i8, i16, i32, i64

from pykraft.raft.types import Endpoint, ReplicaKey
from pykraft.records import (
    BATCH_HEADER_SIZE,
    ControlRecordType,
    CorruptRecordError,
    IncompleteBatch,
    VoterRecordEntry,
    build_batch,
    decode_control,
    decode_records,
    decode_values,
    iter_batches,
    kraft_version_batch,
    leader_change_batch,
    read_header,
    snapshot_footer_batch,
    snapshot_header_batch,
    valid_prefix,
    voters_batch,
    with_base_offset,
)

TS = 1_700_000_000_000

values_st = st.lists(st.one_of(st.none(), st.binary(max_size=300)), min_size=1, max_size=40)


@given(values=values_st, base=st.integers(0, 2**40), epoch=st.integers(0, 2**31 - 1))
def test_data_batch_round_trip(values: list[bytes | None], base: int, epoch: int) -> None:
    keys = [None if v is None else v[:3] for v in values]
    batch = build_batch(base, epoch, values, TS, keys=keys)
    header = read_header(batch)
    assert header.size == len(batch)
    assert header.base_offset == base
    assert header.epoch == epoch
    assert header.record_count == len(values)
    assert header.next_offset == base + len(values)
    assert not header.is_control
    records = decode_records(batch)
    assert [r.value for r in records] == values
    assert decode_values(batch) == values  # the values alone, as a snapshot's load reads them
    assert [r.key for r in records] == keys
    assert [r.offset for r in records] == list(range(base, base + len(values)))
    assert all(r.timestamp_ms == TS for r in records)


@given(values=values_st)
def test_our_bytes_parse_in_kio(values: list[bytes | None]) -> None:
    batch = build_batch(7, 3, values, TS)
    parsed, size = read_batch(batch, 0)
    assert size == len(batch)
    assert parsed.partition_leader_epoch == 3
    assert [r.value for r in parsed.records] == values
    assert [r.offset for r in parsed.records] == list(range(7, 7 + len(values)))


@settings(deadline=None, max_examples=60)
@given(
    shape=st.one_of(
        st.tuples(st.sampled_from([0, 1, 63, 64, 100, 127, 128, 1024, 70000]), st.integers(1, 40)),
        st.tuples(st.sampled_from([0, 100, 200]), st.integers(41, 300)),
        st.tuples(st.just(100), st.sampled_from([4097, 10_000])),
    ),
    fill=st.integers(0, 255),
)
def test_same_length_values_take_the_fast_path_with_identical_bytes(
    shape: tuple[int, int], fill: int
) -> None:
    # build_batch has a path for values of one length (no Python work per record); it must
    # write exactly what the general path writes (keys=[None...] forces the general path),
    # and kio must read it back.
    size, count = shape
    values = [bytes([(fill + i) % 256]) * size for i in range(count)]
    fast = build_batch(5, 2, values, TS)
    assert fast == build_batch(5, 2, values, TS, keys=[None] * count)
    parsed, _ = read_batch(fast, 0)
    assert [r.value for r in parsed.records] == values
    assert [r.offset for r in parsed.records] == list(range(5, 5 + count))


def test_kio_bytes_parse_here() -> None:
    ts = TZAwareMicros.parse(datetime.datetime.fromtimestamp(TS / 1000, tz=datetime.UTC))
    kio_records = tuple(
        KioRecord(
            attributes=i8(0),
            timestamp=ts,
            offset=i64(10 + i),
            key=b"k%d" % i,
            value=b"v" * i,
            headers=(),
        )
        for i in range(5)
    )
    out = io.BytesIO()
    write_new_batch(
        out,
        NewRecordBatch(
            producer_id=i64(-1),
            producer_epoch=i16(-1),
            partition_leader_epoch=i32(4),
            base_sequence=i32(-1),
            records=kio_records,
            attributes=i16(0),
        ),
    )
    raw = out.getvalue()
    ((header, pos),) = list(iter_batches(raw))
    assert pos == 0 and header.epoch == 4 and header.base_offset == 10
    records = decode_records(raw)
    assert [r.key for r in records] == [b"k%d" % i for i in range(5)]
    assert [r.value for r in records] == [b"v" * i for i in range(5)]
    assert [r.offset for r in records] == list(range(10, 15))


def test_every_bit_flip_after_the_crc_field_is_detected() -> None:
    batch = build_batch(0, 1, [b"hello", b"world"], TS)
    for pos in range(21, len(batch)):
        for bit in range(8):
            bad = bytearray(batch)
            bad[pos] ^= 1 << bit
            with pytest.raises(CorruptRecordError):
                list(iter_batches(bytes(bad)))
            assert valid_prefix(bytes(bad)) == ([], 0)


def test_crc_field_tamper_and_magic() -> None:
    batch = bytearray(build_batch(0, 1, [b"x"], TS))
    batch[17] ^= 0xFF
    with pytest.raises(CorruptRecordError, match="CRC"):
        decode_records(bytes(batch))
    with pytest.raises(CorruptRecordError, match="CRC"):
        decode_values(bytes(batch))
    batch[17] ^= 0xFF
    batch[16] = 1
    with pytest.raises(CorruptRecordError, match="magic"):
        read_header(bytes(batch))


def test_truncated_batches() -> None:
    batch = build_batch(0, 1, [b"a" * 50, b"b"], TS)
    for cut in range(1, len(batch)):
        with pytest.raises(IncompleteBatch):
            list(iter_batches(batch[:cut]))
        assert valid_prefix(batch[:cut]) == ([], 0)
    with pytest.raises(IncompleteBatch):
        read_header(batch[: BATCH_HEADER_SIZE - 1])


def test_valid_prefix_stops_at_gap_and_keeps_earlier_batches() -> None:
    a = build_batch(0, 1, [b"a"] * 3, TS)
    b = build_batch(3, 1, [b"b"], TS)
    gap = build_batch(10, 1, [b"c"], TS)
    headers, size = valid_prefix(a + b + gap)
    assert [h.base_offset for h in headers] == [0, 3]
    assert size == len(a) + len(b)


def test_with_base_offset_keeps_crc_valid() -> None:
    batch = build_batch(0, 2, [b"a", b"b"], TS)
    moved = with_base_offset(batch, 100)
    assert read_header(moved).base_offset == 100
    assert [r.offset for r in decode_records(moved)] == [100, 101]


def _single_control(batch: bytes) -> tuple[ControlRecordType, object]:
    header = read_header(batch)
    assert header.is_control
    (record,) = decode_records(batch)
    parsed, _ = read_batch(batch, 0)  # kio agrees on the framing
    assert parsed.attributes & 0x20
    return decode_control(record)


def test_control_batches_round_trip() -> None:
    d1, d2 = uuid.uuid4(), uuid.uuid4()
    kind, msg = _single_control(
        leader_change_batch(
            5, 2, TS, 1, [ReplicaKey(1, d1), ReplicaKey(2, d2)], [ReplicaKey(1, d1)]
        )
    )
    assert kind is ControlRecordType.LEADER_CHANGE
    assert msg.leader_id == 1  # type: ignore[attr-defined]
    # Version 0 even with directory ids: the only version Kafka reads (records/_control.py).
    assert msg.version == 0  # type: ignore[attr-defined]
    assert [v.voter_id for v in msg.voters] == [1, 2]  # type: ignore[attr-defined]

    kind, msg = _single_control(leader_change_batch(5, 2, TS, 3, [ReplicaKey(3)], []))
    assert kind is ControlRecordType.LEADER_CHANGE
    assert msg.version == 0 and [v.voter_id for v in msg.voters] == [3]  # type: ignore[attr-defined]

    kind, msg = _single_control(snapshot_header_batch(0, 0, TS, TS - 5))
    assert kind is ControlRecordType.SNAPSHOT_HEADER
    assert msg.last_contained_log_timestamp == TS - 5  # type: ignore[attr-defined]

    kind, msg = _single_control(snapshot_footer_batch(9, 0, TS))
    assert kind is ControlRecordType.SNAPSHOT_FOOTER

    kind, msg = _single_control(kraft_version_batch(1, 0, TS, 1))
    assert kind is ControlRecordType.KRAFT_VERSION
    assert msg.k_raft_version == 1  # type: ignore[attr-defined]

    entries = [
        VoterRecordEntry(1, d1, (Endpoint("CONTROLLER", "localhost", 9093),)),
        VoterRecordEntry(2, None, (Endpoint("CONTROLLER", "h2", 9094),), 0, 0),
    ]
    kind, msg = _single_control(voters_batch(2, 0, TS, entries))
    assert kind is ControlRecordType.KRAFT_VOTERS
    assert [VoterRecordEntry.from_record(v) for v in msg.voters] == entries  # type: ignore[attr-defined]


def test_decode_control_refuses_data_records() -> None:
    (record,) = decode_records(build_batch(0, 0, [b"xx"], TS, keys=[b"abcd"]))
    with pytest.raises(CorruptRecordError):
        decode_control(record)


def test_target_voters_record_is_a_leader_change_every_reader_accepts() -> None:
    # pykraft's KIP-642 target record must be readable by every reader (storage.inspect,
    # read_snapshot, the pipeline, Kafka's replicas): a LeaderChangeMessage v0 whose tagged
    # field 642 holds the target.
    from pykraft.raft.control import target_voters_batch, voter_set_from_entries
    from pykraft.records import (
        TARGET_VOTERS_TAG,
        ControlRecordType,
        VoterRecordEntry,
        decode_control,
        decode_records,
        target_of,
    )

    entries = [VoterRecordEntry(voter_id=i, directory_id=None, endpoints=()) for i in (4, 5, 6)]
    voters = voter_set_from_entries(entries[:1])
    batch = target_voters_batch(
        7, 3, 1_000, voter_set_from_entries(entries), leader_id=4, voters=voters
    )
    (record,) = decode_records(batch)
    kind, message = decode_control(record)
    assert kind is ControlRecordType.LEADER_CHANGE
    assert message.version == 0 and message.leader_id == 4  # type: ignore[attr-defined]
    assert [t for t, _ in message.unknown_tagged_fields] == [TARGET_VOTERS_TAG]  # type: ignore[attr-defined]
    target = target_of(kind, message)
    assert target is not None and [v.voter_id for v in target] == [4, 5, 6]
    # A plain LeaderChange carries no target.
    plain = decode_records(leader_change_batch(0, 1, TS, 1, [ReplicaKey(1)], []))[0]
    assert target_of(*decode_control(plain)) is None
