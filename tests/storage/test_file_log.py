from __future__ import annotations

import logging
import struct
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykraft.raft.types import OffsetAndEpoch
from pykraft.records import build_batch, iter_batches, leader_change_batch, read_header
from pykraft.storage import FileLog, OffsetOutOfRangeError, StorageError

TS = 1_700_000_000_000


def fill(log: FileLog, epochs: list[int], records_per_batch: int = 3) -> list[bytes]:
    batches = []
    for epoch in epochs:
        batch = build_batch(
            log.end_offset, epoch, [b"v%d" % log.end_offset] * records_per_batch, TS
        )
        log.append(batch)
        batches.append(batch)
    return batches


def read_all(log: FileLog, max_bytes: int = 1 << 20) -> bytes:
    out, offset = [], log.start_offset
    while offset < log.end_offset:
        data = log.read(offset, max_bytes)
        assert data
        for header, _ in iter_batches(data):
            offset = header.next_offset
        out.append(data)
    return b"".join(out)


def test_append_read_roll_reopen(tmp_path: Path) -> None:
    log = FileLog.open(tmp_path, segment_bytes=1000)
    batches = fill(log, [1] * 20 + [2] * 20)
    assert log.end_offset == 120 and log.flushed_offset == 0
    assert read_all(log) == b"".join(batches)  # readable before flush
    log.flush()
    assert log.flushed_offset == 120
    assert len(log.segments()) > 3
    assert all(size <= 1000 for _, _, size in log.segments())
    # A read from the middle of a batch starts at that batch; a small max_bytes still
    # returns one whole batch.
    data = log.read(31, 1)
    assert data == batches[10]
    assert log.read(120, 100) == b""
    with pytest.raises(OffsetOutOfRangeError):
        log.read(121, 100)
    log.close()
    log = FileLog.open(tmp_path, segment_bytes=1000)
    assert log.end_offset == 120
    assert read_all(log, 500) == b"".join(batches)
    assert log.epochs() == [(1, 0), (2, 60)]
    log.close()


def test_append_rejects_bad_input_without_change(tmp_path: Path) -> None:
    log = FileLog.open(tmp_path)
    fill(log, [2])
    with pytest.raises(ValueError):
        log.append(build_batch(5, 2, [b"x"], TS))  # gap
    with pytest.raises(ValueError):
        log.append(build_batch(3, 1, [b"x"], TS))  # epoch goes back
    bad = bytearray(build_batch(3, 2, [b"x"], TS))
    bad[-1] ^= 1
    with pytest.raises(ValueError):
        log.append(bytes(bad))
    good = build_batch(3, 2, [b"y"], TS)
    with pytest.raises(ValueError):
        log.append(good + good)  # second batch not dense
    assert log.end_offset == 3
    log.close()


def test_epoch_queries(tmp_path: Path) -> None:
    log = FileLog.open(tmp_path, segment_bytes=500)
    assert log.last_fetched_epoch() == 0
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(0, 0)
    fill(log, [1, 1, 3, 3, 5])  # epochs 1: [0,6), 3: [6,12), 5: [12,15)
    assert log.last_fetched_epoch() == 5
    assert log.end_offset_for_epoch(1) == OffsetAndEpoch(6, 1)
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(6, 1)
    assert log.end_offset_for_epoch(4) == OffsetAndEpoch(12, 3)
    assert log.end_offset_for_epoch(5) == OffsetAndEpoch(15, 5)
    assert log.end_offset_for_epoch(9) == OffsetAndEpoch(15, 5)
    assert log.end_offset_for_epoch(0) == OffsetAndEpoch(0, 0)
    assert [log.epoch_at(o) for o in (0, 5, 6, 14, 15)] == [1, 1, 3, 5, None]
    log.delete_before(OffsetAndEpoch(7, 3))
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(7, 3)  # before everything held
    assert log.epoch_at(6) is None and log.epoch_at(7) == 3
    log.close()


def test_truncate_across_segments(tmp_path: Path) -> None:
    log = FileLog.open(tmp_path, segment_bytes=400)
    batches = fill(log, [1] * 10 + [2] * 10)
    log.flush()
    log.truncate_to(33)
    assert log.end_offset == 33 and log.flushed_offset == 33
    assert log.epochs() == [(1, 0), (2, 30)]
    assert read_all(log) == b"".join(batches[:11])
    log.truncate_to(30)
    assert log.epochs() == [(1, 0)] and log.last_fetched_epoch() == 1
    fill(log, [4])
    log.flush()
    log.close()
    log = FileLog.open(tmp_path, segment_bytes=400)
    assert log.end_offset == 33 and log.epochs() == [(1, 0), (4, 30)]
    log.truncate_to(0)
    assert log.end_offset == 0 and log.segments() == [(0, 0, 0)]
    log.close()


def test_delete_before_and_reset_survive_restart(tmp_path: Path) -> None:
    log = FileLog.open(tmp_path, segment_bytes=400)
    batches = fill(log, [1] * 30)
    log.flush()
    log.delete_before(OffsetAndEpoch(45, 1))
    assert log.start_offset == 45
    assert log.segments()[0][0] <= 45 < log.segments()[0][1]
    with pytest.raises(OffsetOutOfRangeError):
        log.read(44, 100)
    assert read_header(log.read(45, 1)).base_offset == 45
    log.close()
    log = FileLog.open(tmp_path, segment_bytes=400)
    assert log.start_offset == 45 and log.end_offset == 90
    assert read_all(log) == b"".join(batches[15:])
    log.reset_to_snapshot(OffsetAndEpoch(1000, 7))
    assert (log.start_offset, log.end_offset, log.last_fetched_epoch()) == (1000, 1000, 7)
    log.append(leader_change_batch(1000, 8, TS, 1, [], []))
    log.flush()
    log.close()
    log = FileLog.open(tmp_path, segment_bytes=400)
    assert (log.start_offset, log.end_offset, log.epochs()) == (1000, 1001, [(8, 1000)])
    assert sorted(p.name for p in tmp_path.glob("*.log")) == ["00000000000000001000.log"]
    log.close()


def test_recovery_truncates_torn_or_corrupt_last_batch_at_every_byte(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    base = tmp_path / "base"
    log = FileLog.open(base)
    batches = fill(log, [1, 1, 2])
    log.flush()
    log.close()
    segment = (base / "00000000000000000000.log").read_bytes()
    good = len(segment) - len(batches[-1])
    damaged: list[bytes] = [segment[:cut] for cut in range(good, len(segment))]
    for pos in range(good, len(segment)):
        if 12 <= pos - good < 16:
            continue  # partition_leader_epoch is not covered by the CRC (Kafka's format)
        flipped = bytearray(segment)
        flipped[pos] ^= 0x10
        damaged.append(bytes(flipped))
    caplog.set_level(logging.WARNING)
    for i, data in enumerate(damaged):
        d = tmp_path / f"d{i}"
        d.mkdir()
        (d / "00000000000000000000.log").write_bytes(data)
        log = FileLog.open(d)
        assert log.end_offset == 6, i
        assert read_all(log) == b"".join(batches[:2]), i
        assert log.epochs() == [(1, 0)]
        log.close()
        assert (d / "00000000000000000000.log").stat().st_size == good
    assert "dropping" in caplog.text


def test_recovery_deletes_segments_after_a_corrupt_one(tmp_path: Path) -> None:
    log = FileLog.open(tmp_path, segment_bytes=300)
    fill(log, [1] * 12)
    log.flush()
    segments = log.segments()
    log.close()  # small: below the recovery-point interval, so all is scanned at open
    second = tmp_path / f"{segments[1][0]:020d}.log"
    data = bytearray(second.read_bytes())
    data[-1] ^= 0xFF
    second.write_bytes(bytes(data))
    log = FileLog.open(tmp_path, segment_bytes=300)
    assert log.end_offset < segments[1][1]
    assert log.end_offset >= segments[1][0]
    assert len(log.segments()) == 2
    log.close()


def test_a_torn_tail_after_a_truncation_leaves_no_index_entry_past_the_file(
    tmp_path: Path,
) -> None:
    """The model test's counterexample (found by Hypothesis, kept here since CI starts without
    its database): a clean close at offset 2, a truncation to 1, a batch appended at 1 and a
    crash that tears it. The open that drops the torn batch kept the index entry *at* its
    recovery point (the torn batch's), which pointed past the file's new end: the next open
    distrusted the index, scanned the segment and noted its control batch twice."""

    def reopen() -> FileLog:
        return FileLog.open(tmp_path, segment_bytes=250, checkpoint_interval_bytes=200)

    log = reopen()
    for _ in range(2):
        log.append(leader_change_batch(log.end_offset, 0, TS, 1, [], []))
    log.close(clean=True)
    log = reopen()
    log.truncate_to(1)
    torn = leader_change_batch(1, 0, TS, 1, [], [])
    log.append(torn)
    log.close()  # a crash: no checkpoint of the new end
    segment = tmp_path / f"{0:020d}.log"
    with open(segment, "r+b") as f:
        f.truncate(segment.stat().st_size - 1)  # the last batch torn by one byte
    log = reopen()
    assert log.end_offset == 1 and log.control_batch_offsets() == [0]
    log.close(clean=True)
    log = reopen()
    try:
        assert log.scanned_bytes == 0  # the index checked out: nothing scanned
        assert log.control_batch_offsets() == [0]
        assert log.end_offset == 1
    finally:
        log.close()


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    ops=st.lists(
        st.one_of(
            st.tuples(st.just("append"), st.integers(1, 5), st.integers(0, 2)),
            st.tuples(st.just("truncate"), st.integers(0, 100), st.just(0)),
            st.tuples(st.just("reopen"), st.just(0), st.just(0)),
            st.tuples(st.just("flush"), st.just(0), st.just(0)),
            # A kill -9 and a power loss: bytes after the last flush may be lost from the
            # tail segment at any point (``a`` picks how many survive).
            st.tuples(st.just("crash"), st.integers(0, 1000), st.just(0)),
        ),
        max_size=30,
    )
)
def test_matches_a_list_model(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, int, int]]
) -> None:
    path = tmp_path_factory.mktemp("model")
    log = FileLog.open(path, segment_bytes=250, checkpoint_interval_bytes=200)
    model: list[bytes] = []  # batches
    flushed = 0  # batches of the model known durable
    epoch = 0
    try:
        for op, a, b in ops:
            if op == "append":
                epoch += b
                batch = (
                    build_batch(log.end_offset, epoch, [b"r"] * a, TS)
                    if a > 1
                    else leader_change_batch(log.end_offset, epoch, TS, 1, [], [])
                )
                log.append(batch)
                model.append(batch)
            elif op == "truncate" and model:
                keep = a % (len(model) + 1)
                model = model[:keep]
                offset = read_header(model[-1]).next_offset if model else 0
                log.truncate_to(offset)
                epoch = read_header(model[-1]).epoch if model else 0
                flushed = min(flushed, len(model))
            elif op == "flush":
                log.flush()
                flushed = len(model)
            elif op == "reopen":
                log.close(clean=True)
                log = FileLog.open(path, segment_bytes=250, checkpoint_interval_bytes=200)
                assert log.scanned_bytes == 0
                flushed = len(model)
            elif op == "crash":
                tail = log.segments()[-1]
                log.close()
                durable = sum(len(m) for m in model[:flushed])
                segment = path / f"{tail[0]:020d}.log"
                held = sum(len(m) for m in model if read_header(m).base_offset >= tail[0])
                keep = max(held - (a % (sum(len(m) for m in model) - durable + 1)), 0)
                with open(segment, "r+b") as f:
                    f.truncate(max(keep, durable - (sum(len(m) for m in model) - held)))
                log = FileLog.open(path, segment_bytes=250, checkpoint_interval_bytes=200)
                survived = [m for m in model if read_header(m).next_offset <= log.end_offset]
                assert len(survived) >= flushed
                model = survived
                flushed = len(model)
                epoch = read_header(model[-1]).epoch if model else 0
            assert read_all(log) == b"".join(model)
            assert log.last_fetched_epoch() == (read_header(model[-1]).epoch if model else 0)
            epochs: list[tuple[int, int]] = []
            for m in model:
                header = read_header(m)
                if not epochs or header.epoch > epochs[-1][0]:
                    epochs.append((header.epoch, header.base_offset))
            assert log.epochs() == epochs
            controls = [
                read_header(m).base_offset for m in model if read_header(m).attributes & 0x20
            ]
            assert log.control_batch_offsets() == controls
    finally:
        log.close()


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    sizes=st.lists(st.integers(1, 20), min_size=1, max_size=200),
    value_bytes=st.sampled_from([1, 50, 700]),
    max_bytes=st.integers(1, 8_000),
    segment_bytes=st.sampled_from([4_000, 30_000, 1 << 20]),
    data=st.data(),
)
def test_read_returns_the_longest_whole_batch_prefix(
    tmp_path_factory: pytest.TempPathFactory,
    sizes: list[int],
    value_bytes: int,
    max_bytes: int,
    segment_bytes: int,
    data: st.DataObject,
) -> None:
    """``read`` answers from the batch holding ``offset`` the most whole batches of its
    segment that fit in ``max_bytes`` (at least one), before and after a reopen (which
    rebuilds the sparse index)."""
    path = tmp_path_factory.mktemp("log")
    log = FileLog.open(path, segment_bytes=segment_bytes)
    batches = []
    for count in sizes:
        batch = build_batch(log.end_offset, 1, [b"x" * value_bytes] * count, TS)
        log.append(batch)
        batches.append(batch)
    starts = [read_header(b).base_offset for b in batches]
    segment_of = {}
    for base, next_offset, _size in log.segments():
        for i, start in enumerate(starts):
            if base <= start < next_offset:
                segment_of[i] = base
    offset = data.draw(st.integers(0, log.end_offset - 1))
    for _ in range(2):
        first = max(i for i, start in enumerate(starts) if start <= offset)
        expected = batches[first]
        for j in range(first + 1, len(batches)):
            if segment_of[j] != segment_of[first] or len(expected) + len(batches[j]) > max_bytes:
                break
            expected += batches[j]
        assert log.read(offset, max_bytes) == expected
        log.close()
        log = FileLog.open(path, segment_bytes=segment_bytes)
    log.close()


def test_drop_behind_keeps_only_the_tail_cached_and_reads_stay_right(tmp_path: Path) -> None:
    """After a flush the pages older than ``cache_keep_bytes`` are dropped (a cache hint:
    reads, truncation and reopen see the same bytes)."""
    log = FileLog.open(tmp_path, segment_bytes=3 << 20, cache_keep_bytes=1 << 20)
    batches = []
    for i in range(120):
        batch = build_batch(log.end_offset, 1, [b"%d" % i * 50_000], TS)
        log.append(batch)
        batches.append(batch)
        if i % 10 == 9:
            log.flush()
    segments = log._segments
    assert len(segments) > 2
    # Whole older segments dropped; the tail segment keeps its last MiB (or less than the
    # 8 MiB step: nothing dropped there yet).
    assert all(s.uncached_to == s.size_bytes for s in segments[:-2])
    assert segments[-1].uncached_to <= segments[-1].size_bytes
    assert read_all(log, 300_000) == b"".join(batches)
    log.truncate_to(read_header(batches[30]).base_offset)
    assert all(s.uncached_to <= s.size_bytes for s in log._segments)
    log.flush()
    assert read_all(log) == b"".join(batches[:30])
    log.close()
    log = FileLog.open(tmp_path, segment_bytes=3 << 20, cache_keep_bytes=None)
    assert read_all(log) == b"".join(batches[:30])
    log.close()


def test_clean_restart_scans_nothing_and_a_crash_scans_after_the_recovery_point(
    tmp_path: Path,
) -> None:
    part = tmp_path / "__cluster_metadata-0"
    log = FileLog.open(part, segment_bytes=1000, checkpoint_interval_bytes=2000)
    batches = fill(log, [1] * 20 + [2] * 20 + [3] * 20)
    log.flush()
    segments = log.segments()
    assert len(segments) >= 4
    log.close(clean=True)
    assert (part / ".kafka_cleanshutdown").exists()
    assert (part / "recovery-point-offset-checkpoint").read_text() == (
        "0\n1\n__cluster_metadata 0 180\n"
    )
    assert (part / "leader-epoch-checkpoint").read_text() == "0\n3\n1 0\n2 60\n3 120\n"
    log = FileLog.open(part, segment_bytes=1000, checkpoint_interval_bytes=2000)
    assert log.scanned_bytes == 0
    assert not (part / ".kafka_cleanshutdown").exists()  # until the next clean close
    assert (log.segments(), log.epochs()) == (segments, [(1, 0), (2, 60), (3, 120)])
    assert read_all(log, 300) == b"".join(batches)
    more: list[bytes] = []
    for _ in range(10):  # appends after a trusted open index as before
        more += fill(log, [4] * 3)
        log.flush()  # the recovery point moves every ~2,000 bytes
    point = int((part / "recovery-point-offset-checkpoint").read_text().split()[-1])
    assert 180 < point < 270
    unflushed = fill(log, [5] * 4)
    log.close()  # as kill -9 leaves it: no marker
    log = FileLog.open(part, segment_bytes=1000, checkpoint_interval_bytes=2000)
    after_point = sum(len(b) for b in more + unflushed if read_header(b).base_offset >= point)
    assert log.scanned_bytes == after_point  # the tail after the point, not the log
    assert read_all(log, 700) == b"".join(batches + more + unflushed)
    assert log.epochs() == [(1, 0), (2, 60), (3, 120), (4, 180), (5, 270)]
    tail_base = log.segments()[-1][0]
    assert log.read(tail_base, 1) == (batches + more + unflushed)[tail_base // 3]
    log.close()


def test_a_damaged_index_or_checkpoint_falls_back_to_a_scan(tmp_path: Path) -> None:
    log = FileLog.open(tmp_path / "p", segment_bytes=1000)
    batches = fill(log, [1] * 25 + [5] * 25, records_per_batch=1)
    log.close(clean=True)
    second = sorted((tmp_path / "p").glob("*.log"))[1]
    index = second.with_suffix(".index")
    index.write_bytes(index.read_bytes() + struct.pack(">ii", 1, 10**6))  # past the end
    log = FileLog.open(tmp_path / "p", segment_bytes=1000)
    assert log.scanned_bytes == second.stat().st_size
    assert read_all(log, 400) == b"".join(batches)
    log.close(clean=True)
    (tmp_path / "p" / "leader-epoch-checkpoint").write_text("0\n7\n1 0\n")  # cut short
    log = FileLog.open(tmp_path / "p", segment_bytes=1000)
    assert log.scanned_bytes == sum(size for _, _, size in log.segments())
    assert log.epochs() == [(1, 0), (5, 25)]
    log.close()


def test_rewriting_below_the_recovery_point_is_never_trusted(tmp_path: Path) -> None:
    """A truncation below the recovery point lowers it before any byte changes, so the
    rewritten part is scanned after a crash (here the rewrite is torn: half of it reached
    the disk)."""
    log = FileLog.open(tmp_path / "p", segment_bytes=300, checkpoint_interval_bytes=0)
    fill(log, [1] * 30)
    log.flush()
    assert len(log.segments()) > 3
    log.truncate_to(30)
    kept = read_all(log)
    fill(log, [2] * 20)  # not flushed
    tail = log.segments()[-1]
    log.close()
    path = tmp_path / "p" / f"{tail[0]:020d}.log"
    path.write_bytes(path.read_bytes()[: tail[2] // 2 + 1])
    log = FileLog.open(tmp_path / "p", segment_bytes=300)
    assert log.end_offset < 90
    data = read_all(log)
    assert data[: len(kept)] == kept
    assert log.epochs()[0] == (1, 0)
    assert all(h.epoch == 2 for h, _ in iter_batches(data[len(kept) :]))
    log.close()


def test_a_full_disk_fails_the_append_and_a_reopen_keeps_the_flushed_log(tmp_path: Path) -> None:
    """A real full filesystem (a 1 MiB tmpfs; needs root, as CI has): the append that hits it
    raises, the log refuses use after it, and once space is freed a reopen holds every
    flushed batch (a torn tail is truncated)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)], check=True)
    try:
        log = FileLog.open(disk / "p")
        kept = fill(log, [1] * 20)
        log.flush()
        filler = disk / "filler"
        with open(filler, "wb", buffering=0) as f, pytest.raises(OSError):
            while True:
                f.write(b"\0" * 4096)
        big = build_batch(log.end_offset, 1, [b"x" * 1000] * 50, TS)
        with pytest.raises(OSError):
            log.append(big)
        with pytest.raises(StorageError):
            log.append(build_batch(log.end_offset, 1, [b"y"], TS))
        log.close()
        filler.unlink()
        log = FileLog.open(disk / "p")
        assert read_all(log) == b"".join(kept)
        log.append(big)  # writable again
        log.close()
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
