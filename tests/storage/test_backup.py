"""``pykraft metadata backup`` and ``restore`` on directories written by the real storage code
(issue 48 item 4): a backup holds every batch and snapshot the source held, byte for byte,
past the source's retention; a round after a truncated, rewritten tail cuts the backup back to
the log both share; a restore at an offset or a time holds exactly the state at that point,
written beyond what the backup went on to hold (epochs, producer ids, the offset)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from pykraft.backup.restore import Gaps, RestoreError, RestorePoint, plan_restore
from pykraft.backup.take import BackupError, backup_round, log_batches
from pykraft.cli.main import main
from pykraft.metadata.records import (
    BeginTransactionRecord,
    FeatureLevelRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    TopicRecord,
)
from pykraft.metadata.serde import decode_record, encode_record
from pykraft.metadata.versions import IBP_4_0_IV1
from pykraft.raft.types import OffsetAndEpoch
from pykraft.records import build_batch
from pykraft.storage.log import PARTITION_DIR_NAME, FileLog
from pykraft.storage.meta import MetaProperties, read_meta_properties, write_meta_properties
from pykraft.storage.quorum_state import FileQuorumStateStore
from pykraft.storage.snapshots import FileSnapshotStore, read_snapshot, write_snapshot

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"
TOPIC_A = uuid.UUID(int=0xA)
TOPIC_B = uuid.UUID(int=0xB)


def _source(root: Path, *, segment_bytes: int = 1 << 20) -> tuple[Path, FileLog]:
    log_dir = root / "controller"
    log_dir.mkdir()
    write_meta_properties(log_dir, MetaProperties(CLUSTER, 1, uuid.UUID(int=1)))
    return log_dir, FileLog.open(log_dir / PARTITION_DIR_NAME, segment_bytes=segment_bytes)


def _batch(log: FileLog, epoch: int, *records: object, ts: int = 0) -> None:
    values = [
        r if isinstance(r, bytes) else encode_record(r, 2 if isinstance(r, PartitionRecord) else 0)
        for r in records
    ]
    log.append(build_batch(log.end_offset, epoch, values or [b"x"], ts))
    log.flush()


def _written(root: Path, count: int) -> tuple[Path, FileLog]:
    """A source of ``count`` one-record epoch-1 batches ``r0``, ``r1``, ..."""
    source, log = _source(root)
    for i in range(count):
        _batch(log, 1, b"r%d" % i)
    return source, log


def new_controller(tmp_path: Path) -> tuple[Path, Path]:
    """An unformatted controller, node 7 of a dynamic quorum: its directory and properties."""
    new = tmp_path / "new"
    props = tmp_path / "new.properties"
    props.write_text(
        "process.roles=controller\nnode.id=7\ncontroller.listener.names=CONTROLLER\n"
        "listeners=CONTROLLER://127.0.0.1:9797\n"
        "controller.quorum.bootstrap.servers=127.0.0.1:9797\n"
        f"metadata.log.dir={new}\n"
    )
    return new, props


def _all(partition: Path) -> list[tuple[int, int, int, int]]:
    return [b.ref for b in log_batches(partition)]


def test_a_backup_keeps_every_batch_and_snapshot_past_the_sources_retention(
    tmp_path: Path,
) -> None:
    source, log = _source(tmp_path, segment_bytes=300)
    for i in range(20):
        _batch(log, 1, b"r%d" % i)
    target = tmp_path / "backup"
    first = backup_round(source, target, 1)
    src, dst = source / PARTITION_DIR_NAME, target / PARTITION_DIR_NAME
    assert first.batches == 20 and first.end_offset == 20
    assert _all(dst) == _all(src)
    assert read_meta_properties(target) == read_meta_properties(source)
    again = backup_round(source, target, 2)
    assert again.batches == 0 and again.end_offset == 20  # nothing new, nothing copied

    write_snapshot(
        FileSnapshotStore.open(src), OffsetAndEpoch(15, 1), [b"s"], timestamp_ms=0,
        last_contained_log_timestamp_ms=0,
    )  # fmt: skip
    log.delete_before(OffsetAndEpoch(15, 1))  # retention: the older segments go
    for i in range(5):
        _batch(log, 2, b"n%d" % i)
    third = backup_round(source, target, 3)
    assert third.batches == 5 and third.snapshots == ["00000000000000000015-0000000001.checkpoint"]
    kept = _all(dst)
    assert [b[0] for b in kept] == list(range(25))  # the whole history, offsets 0..24
    assert kept[15:] == _all(src)[-10:]
    rounds = json.loads((target / "backup.json").read_text())["rounds"]
    assert [r["batches"] for r in rounds] == [20, 0, 5]


def test_a_rewritten_tail_is_cut_back_to_the_log_both_share(tmp_path: Path) -> None:
    source, log = _written(tmp_path, 10)
    target = tmp_path / "backup"
    backup_round(source, target, 1)
    # The source was a deposed leader: its tail from offset 7 was never committed and a new
    # leader's epoch-2 batches replace it.
    log.truncate_to(7)
    for i in range(5):
        _batch(log, 2, b"new%d" % i)
    done = backup_round(source, target, 2)
    assert done.truncated_at == 7 and done.batches == 5 and done.end_offset == 12
    assert _all(target / PARTITION_DIR_NAME) == _all(source / PARTITION_DIR_NAME)


def test_a_tail_rewritten_shorter_is_cut_back_and_a_lagging_source_changes_nothing(
    tmp_path: Path,
) -> None:
    source, log = _written(tmp_path, 10)
    target = tmp_path / "backup"
    backup_round(source, target, 1)
    log.truncate_to(8)  # the new leader's log is shorter than the tail it replaces
    _batch(log, 2, b"new")
    done = backup_round(source, target, 2)
    assert (done.truncated_at, done.batches, done.end_offset) == (8, 1, 9)
    assert _all(target / PARTITION_DIR_NAME) == _all(source / PARTITION_DIR_NAME)
    # A source that is only behind (a lagging controller's copy of the same log) changes
    # nothing in the backup.
    (tmp_path / "lagging").mkdir()
    lagging, _ = _written(tmp_path / "lagging", 8)
    behind = backup_round(lagging, target, 3)
    assert (behind.truncated_at, behind.batches, behind.end_offset) == (None, 0, 9)


def test_a_torn_tail_is_left_for_the_next_round_and_another_cluster_is_refused(
    tmp_path: Path,
) -> None:
    source, _ = _written(tmp_path, 3)
    segment = sorted((source / PARTITION_DIR_NAME).glob("*.log"))[-1]
    whole = build_batch(3, 1, [b"late"], 0)
    with segment.open("ab") as f:
        f.write(whole[:20])  # a batch being written
    target = tmp_path / "backup"
    assert backup_round(source, target, 1).end_offset == 3
    with segment.open("ab") as f:
        f.write(whole[20:])
    assert backup_round(source, target, 2).batches == 1

    other = tmp_path / "other"
    other.mkdir()
    write_meta_properties(other, MetaProperties("AAAAAAAAAAAAAAAAAAAAAA", 1, uuid.UUID(int=9)))
    (other / PARTITION_DIR_NAME).mkdir()
    with pytest.raises(BackupError, match="backs up cluster"):
        backup_round(other, target, 3)


def _metadata_log(tmp_path: Path) -> tuple[Path, Path]:
    """A source whose history is known, one batch per segment: topic a (offsets 0-3), a
    point, then leader changes, topic b (7), producer ids and a transaction that never ends
    (9-10); backed up."""
    source, log = _source(tmp_path, segment_bytes=62)
    mv = FeatureLevelRecord("metadata.version", IBP_4_0_IV1)
    _batch(log, 3, mv, ts=1_000)
    _batch(log, 3, TopicRecord("a", TOPIC_A), ts=1_000)
    part = PartitionRecord(0, TOPIC_A, (1, 2), (1, 2), leader=1, leader_epoch=4, partition_epoch=6)
    _batch(log, 3, part, ProducerIdsRecord(1, 5, 2_000), ts=2_000)  # offsets 2-3
    for _ in range(3):  # after the point: three leader changes of a-0, more producer ids
        _batch(log, 4, PartitionChangeRecord(0, TOPIC_A, leader=2), ts=5_000)
    _batch(log, 4, TopicRecord("b", TOPIC_B), ProducerIdsRecord(1, 5, 9_000), ts=6_000)
    _batch(log, 4, BeginTransactionRecord("half"), TopicRecord("c", uuid.UUID(int=0xC)), ts=7_000)
    log.close(clean=True)
    FileQuorumStateStore(source / PARTITION_DIR_NAME).write(_state(9))
    target = tmp_path / "backup"
    backup_round(source, target, 1)
    return source, target


def _state(epoch: int) -> object:
    from pykraft.raft.types import ElectionState

    return ElectionState(epoch)


def test_a_restore_holds_the_state_at_the_point_beyond_what_the_backup_went_on_to(
    tmp_path: Path,
) -> None:
    _, backup = _metadata_log(tmp_path)
    gaps = Gaps(offset=100, epoch=10, producer_id=1_000)
    plan, values = plan_restore(backup, RestorePoint(offset=4), gaps)
    assert (plan.point, plan.point_time_ms, plan.base_snapshot) == (4, 2_000, None)
    assert plan.topics == 1 and plan.partitions == 1 and plan.metadata_version == IBP_4_0_IV1
    assert plan.backup_end == 11 and plan.snapshot_id == OffsetAndEpoch(111, 19)  # epoch 9 + 10
    records = [decode_record(v)[0] for v in values]
    assert [r.name for r in records if isinstance(r, TopicRecord)] == ["a"]
    (partition,) = [r for r in records if isinstance(r, PartitionRecord)]
    # At the point: leader 1, epochs 4/6; the backup went on to 7/9: restored as 17/19.
    assert (partition.leader, partition.leader_epoch, partition.partition_epoch) == (1, 17, 19)
    (ids,) = [r for r in records if isinstance(r, ProducerIdsRecord)]
    assert ids.next_producer_id == 10_000  # the newest the backup saw, 9,000, plus 1,000

    by_time, _ = plan_restore(backup, RestorePoint(time_ms=6_500), gaps)
    assert by_time.point == 9 and by_time.topics == 2
    at_end, _ = plan_restore(backup, RestorePoint(), gaps)
    assert at_end.topics == 2 and any("transaction" in w for w in at_end.warnings)
    with pytest.raises(RestoreError, match="nothing in the backup"):
        plan_restore(backup, RestorePoint(time_ms=10))


def test_restore_writes_a_new_controllers_directory_and_refuses_a_used_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, backup = _metadata_log(tmp_path)
    new, props = new_controller(tmp_path)
    assert main(["metadata", "restore", str(backup), "--dry-run", "--to-offset", "4"]) == 0
    assert "every record below offset 4" in capsys.readouterr().out and not new.exists()
    assert main(["metadata", "restore", str(backup), "-c", str(props), "--to-offset", "4"]) == 0
    meta = read_meta_properties(new)
    assert meta is not None and meta.cluster_id == CLUSTER and meta.node_id == 7
    store = FileSnapshotStore.open(new / PARTITION_DIR_NAME)
    (snapshot_id,) = store.snapshot_ids()
    assert snapshot_id == OffsetAndEpoch(11 + 1_000_000, 9 + 1_000)
    contents = read_snapshot(store, snapshot_id)
    assert contents.kraft_version == 0 and contents.voters is None  # a static quorum's backup
    state = FileQuorumStateStore(new / PARTITION_DIR_NAME).read()
    assert state is not None and state.epoch == snapshot_id.epoch
    assert main(["metadata", "restore", str(backup), "-c", str(props)]) == 1
    assert "not empty" in capsys.readouterr().err
