from __future__ import annotations

import logging
import os
import signal
import threading
import uuid
from pathlib import Path

import pytest

import pykraft.storage.snapshots as snapshots_module
from pykraft.raft.types import ElectionState, Endpoint, OffsetAndEpoch, ReplicaKey
from pykraft.records import VoterRecordEntry, build_batch, iter_batches
from pykraft.storage import (
    CorruptSnapshotError,
    FileQuorumStateStore,
    FileSnapshotStore,
    MetaProperties,
    PositionOutOfRangeError,
    QuorumStateError,
    StorageError,
    kafka_to_uuid,
    random_uuid,
    read_meta_properties,
    read_snapshot,
    uuid_to_kafka,
    write_meta_properties,
    write_snapshot,
)
from pykraft.storage.snapshots import validate_snapshot, validate_snapshot_file

TS = 1_700_000_000_000
SID = OffsetAndEpoch(120, 4)


def make_snapshot(path: Path) -> FileSnapshotStore:
    store = FileSnapshotStore.open(path)
    voters = [VoterRecordEntry(1, uuid.uuid4(), (Endpoint("CONTROLLER", "h", 9093),))]
    write_snapshot(
        store,
        SID,
        [b"rec%d" % i for i in range(25)],
        timestamp_ms=TS,
        last_contained_log_timestamp_ms=TS - 1,
        kraft_version=1,
        voters=voters,
        batch_records_max=10,
    )
    return store


def test_snapshot_round_trip_and_ranges(tmp_path: Path) -> None:
    store = make_snapshot(tmp_path)
    assert store.latest() == SID
    contents = read_snapshot(FileSnapshotStore.open(tmp_path), SID)
    assert [r.value for r in contents.records] == [b"rec%d" % i for i in range(25)]
    assert contents.kraft_version == 1 and contents.voters is not None
    assert contents.voters[0].voter_id == 1
    assert contents.last_contained_log_timestamp_ms == TS - 1
    size = store.size(SID)
    assert size is not None
    whole = b"".join(store.read(SID, pos, 100) for pos in range(0, size, 100))
    assert whole == (tmp_path / "00000000000000000120-0000000004.checkpoint").read_bytes()
    assert store.read(SID, size, 100) == b""
    with pytest.raises(PositionOutOfRangeError):
        store.read(SID, size + 1, 100)
    assert store.size(OffsetAndEpoch(1, 1)) is None
    store.delete_before(OffsetAndEpoch(200, 5))
    assert store.latest() is None


def test_writer_refuses_snapshot_without_footer(tmp_path: Path) -> None:
    store = FileSnapshotStore.open(tmp_path)
    writer = store.create(SID)
    writer.append(build_batch(0, 4, [b"x"], TS))
    with pytest.raises(CorruptSnapshotError):
        writer.freeze()
    assert store.latest() is None
    assert list(tmp_path.iterdir()) == []


def test_damaged_snapshot_is_refused_on_open(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    make_snapshot(tmp_path / "src")
    data = (tmp_path / "src" / "00000000000000000120-0000000004.checkpoint").read_bytes()
    name = "00000000000000000120-0000000004.checkpoint"
    caplog.set_level(logging.ERROR)
    # partition_leader_epoch (bytes 12..15 of each batch) is outside the CRC in Kafka's
    # format, so a flip there leaves a valid snapshot; every other damage is refused.
    epoch_bytes = {pos + k for _, pos in iter_batches(data) for k in range(12, 16)}
    variants = [data[:cut] for cut in range(0, len(data))]
    for pos in range(len(data)):
        if pos not in epoch_bytes:
            flipped = bytearray(data)
            flipped[pos] ^= 0x04
            variants.append(bytes(flipped))
    d = tmp_path / "v"
    d.mkdir()
    for variant in variants:
        (d / name).write_bytes(variant)
        (d / (name + ".part")).write_bytes(b"stale")
        FileSnapshotStore.open(d)  # a tool: a live node's snapshot in progress stays
        assert (d / (name + ".part")).read_bytes() == b"stale"
        store = FileSnapshotStore.open(d, owner=True)
        assert not (d / (name + ".part")).exists()
        assert store.latest() is None
        assert store.refused == [d / name]
    assert "refusing corrupt snapshot" in caplog.text


def test_quorum_state_round_trip_and_kafka_format(tmp_path: Path) -> None:
    store = FileQuorumStateStore(tmp_path)
    assert store.read() is None
    dir_id = uuid.uuid4()
    for state in (
        ElectionState(epoch=5, leader_id=2, voted_key=None),
        ElectionState(epoch=6, voted_key=ReplicaKey(3, dir_id)),
        ElectionState(epoch=7, leader_id=3, voted_key=ReplicaKey(3)),
    ):
        store.write(state)
        assert FileQuorumStateStore(tmp_path).read() == state
    text = (tmp_path / "quorum-state").read_text()
    assert text == (
        '{"leaderId":3,"leaderEpoch":7,"votedId":3,'
        '"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}'
    )
    (tmp_path / "quorum-state").write_text(
        '{"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,'
        '"currentVoters":[],"data_version":0}'
    )
    assert store.read() == ElectionState(epoch=2, leader_id=1)


def test_quorum_state_at_kraft_version_0_is_data_version_0(tmp_path: Path) -> None:
    """As Kafka (KRaftVersion.quorumStateVersion): a binary from before KIP-853 can read it."""
    store = FileQuorumStateStore(tmp_path)
    state = ElectionState(epoch=4, leader_id=2, voted_key=ReplicaKey(2))
    store.write(state, kraft_version=0, voter_ids=(1, 2, 3))
    assert (tmp_path / "quorum-state").read_text() == (
        '{"clusterId":"","leaderId":2,"leaderEpoch":4,"votedId":2,"appliedOffset":0,'
        '"currentVoters":[{"voterId":1},{"voterId":2},{"voterId":3}],"data_version":0}'
    )
    assert store.read() == state


@pytest.mark.parametrize("cut", [1, 10, 30, 60])
def test_torn_quorum_state_is_a_clear_error(tmp_path: Path, cut: int) -> None:
    store = FileQuorumStateStore(tmp_path)
    store.write(ElectionState(epoch=9, voted_key=ReplicaKey(1, uuid.uuid4())))
    text = (tmp_path / "quorum-state").read_bytes()
    (tmp_path / "quorum-state").write_bytes(text[:cut])
    with pytest.raises(QuorumStateError, match="quorum-state"):
        store.read()


def test_meta_properties_without_directory_id_gets_one_on_start(tmp_path: Path) -> None:
    """D1: a meta.properties from before KIP-858 (no directory.id): a starting node assigns
    one and writes it; other readers refuse it with a clear error."""
    (tmp_path / "meta.properties").write_text(
        "#\ncluster.id=MkU3OEVBNTcwNTJENDM2Qg\nnode.id=3\nversion=1\n"
    )
    with pytest.raises(StorageError, match=r"directory\.id is missing"):
        read_meta_properties(tmp_path)
    meta = read_meta_properties(tmp_path, assign_directory_id=True)
    assert meta is not None and meta.node_id == 3
    assert read_meta_properties(tmp_path) == meta  # persisted, and kept from now on


def test_meta_properties_round_trip(tmp_path: Path) -> None:
    assert read_meta_properties(tmp_path) is None
    meta = MetaProperties("MkU3OEVBNTcwNTJENDM2Qg", 3, random_uuid())
    write_meta_properties(tmp_path, meta)
    assert read_meta_properties(tmp_path) == meta
    text = (tmp_path / "meta.properties").read_text()
    assert "version=1" in text and f"directory.id={uuid_to_kafka(meta.directory_id)}" in text
    value = uuid.uuid4()
    assert kafka_to_uuid(uuid_to_kafka(value)) == value and len(uuid_to_kafka(value)) == 22


@pytest.mark.parametrize("chunk", [61, 100, 1 << 20])
def test_streamed_validation_agrees_with_whole_buffer_validation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    """``validate_snapshot_file`` reads in chunks (here also smaller than one batch): it
    accepts and refuses exactly what ``validate_snapshot`` does on the whole bytes."""
    monkeypatch.setattr(snapshots_module, "_VALIDATE_CHUNK_BYTES", chunk)
    make_snapshot(tmp_path / "src")
    name = "00000000000000000120-0000000004.checkpoint"
    data = (tmp_path / "src" / name).read_bytes()
    variants = [data] + [data[:cut] for cut in range(0, len(data), 7)]
    for pos in range(0, len(data), 3):
        flipped = bytearray(data)
        flipped[pos] ^= 0x40
        variants.append(bytes(flipped))
    path = tmp_path / name
    for variant in variants:
        path.write_bytes(variant)
        try:
            validate_snapshot(variant, name)
            whole_ok = True
        except CorruptSnapshotError:
            whole_ok = False
        try:
            validate_snapshot_file(path, name)
            streamed_ok = True
        except CorruptSnapshotError as exc:
            assert name in str(exc)
            streamed_ok = False
        assert streamed_ok == whole_ok, (len(variant), variant == data)
    path.write_bytes(data)
    validate_snapshot_file(path)


@pytest.mark.parametrize("chunk", [1, 61, 1 << 20])
def test_a_snapshot_written_in_chunks_is_checked_as_it_arrives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    """A fetched snapshot arrives in chunks: the writer checks each batch as its last byte
    arrives, so ``make_durable`` reads nothing back (at a million partitions that read held
    a standby's loop ~80 ms); a corrupt byte is still refused, and its file removed."""
    make_snapshot(tmp_path / "src")
    name = "00000000000000000120-0000000004.checkpoint"
    data = (tmp_path / "src" / name).read_bytes()

    def never(*_: object) -> None:
        raise AssertionError("read back")

    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0x40
    for variant, ok in ((data, True), (bytes(flipped), False), (data[:-3], False)):
        store = FileSnapshotStore.open(tmp_path / f"dst-{ok}-{len(variant)}")
        writer = store.create(SID)
        for pos in range(0, len(variant), chunk):
            writer.append(variant[pos : pos + chunk])
        if ok:
            monkeypatch.setattr(snapshots_module, "validate_snapshot_file", never)
            writer.freeze()
            monkeypatch.undo()
            assert store.latest() == SID and store.path(SID).read_bytes() == data
        else:
            with pytest.raises(CorruptSnapshotError):
                writer.freeze()
            assert store.latest() is None and not writer.part_path.exists()


def test_appends_leave_the_file_to_the_snapshot_io_thread(tmp_path: Path) -> None:
    """The caller (a node's event loop) never writes the file: with the ``snapshot-io``
    thread held, appends return and nothing is on disk yet; ``make_durable`` waits for every
    queued write, in order. An abort queues its close and unlink behind the writes."""
    make_snapshot(tmp_path / "src")
    data = (tmp_path / "src" / "00000000000000000120-0000000004.checkpoint").read_bytes()
    store = FileSnapshotStore.open(tmp_path / "dst")
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        held.set()
        release.wait(10)

    snapshots_module._io_executor().submit(hold)
    assert held.wait(10)
    writer = store.create(SID)
    dropped = store.create(OffsetAndEpoch(130, 4))
    for pos in range(0, len(data), 7):
        writer.append(memoryview(data)[pos : pos + 7])  # a view: copied before it is queued
        dropped.append(data[pos : pos + 7])
    dropped.abort()
    assert writer.part_path.stat().st_size == 0  # nothing written while the thread is held
    assert dropped.part_path.exists()
    release.set()
    writer.freeze()
    assert store.latest() == SID and store.path(SID).read_bytes() == data
    snapshots_module._io_executor().submit(lambda: None).result(10)
    assert not dropped.part_path.exists()


def test_a_failed_write_is_raised_and_the_file_dropped(tmp_path: Path) -> None:
    store = FileSnapshotStore.open(tmp_path / "store")
    writer = store.create(SID)
    # The writer's descriptor made read-only under it: the thread's write fails (EBADF).
    (tmp_path / "ro").write_bytes(b"")
    ro = os.open(tmp_path / "ro", os.O_RDONLY)
    assert writer._fd is not None
    os.dup2(ro, writer._fd)
    os.close(ro)
    writer.append(build_batch(0, 4, [b"x"], TS))
    with pytest.raises(OSError):
        writer.make_durable()
    assert store.latest() is None and not writer.part_path.exists()


def test_a_forked_child_writes_snapshots_with_a_thread_of_its_own(tmp_path: Path) -> None:
    make_snapshot(tmp_path / "parent")  # the parent's snapshot-io thread is running
    pid = os.fork()
    if pid == 0:  # the child: a write must not wait for the parent's thread (not copied)
        code = 1
        signal.alarm(20)  # a write that waits forever fails the test instead of hanging it
        try:
            make_snapshot(tmp_path / "child")
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert FileSnapshotStore.open(tmp_path / "child").latest() == SID
