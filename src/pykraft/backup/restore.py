"""``pykraft metadata restore``: a new quorum's first controller from a backup, at a chosen
offset or time (issue 48 item 4).

Theory of operation. The restored state is the backup's newest snapshot at or before the
point and every whole batch after it up to the point, replayed into a metadata image
(``metadata/image.py``, the controller's own); a metadata transaction still open at the point
is left out, as Kafka's controllers drop one a leader did not finish. The image is written out
as one snapshot (``Image.iter_values``: the records at the versions its metadata.version
writes) in a new controller's directory, with the new controller as the only voter
(kraft.version 1) and ``meta.properties`` last (its presence means "formatted"). The quorum
then grows with ``add-controller`` as after a recovery.

Brokers that outlived the old quorum hold metadata beyond the point: a log, an epoch, leader
epochs and producer ids the restored state has not reached. The restored directory is made to
lie beyond all of it, so that every broker follows it rather than refusing it:

* the snapshot's offset is the backup's end plus ``offset_gap``: a broker's metadata log ends
  below it, so the controller sends it the snapshot, which replaces the broker's image
  (a broker whose log were ahead would be told to truncate below its high watermark, which
  Kafka's brokers refuse);
* its epoch is the newest the backup knew (batches, snapshots, ``quorum-state``) plus
  ``epoch_gap``: a broker ignores a leader of an epoch older than it knows;
* each partition's leader epoch and partition epoch become the newest the backup holds for it
  (at its end, not only at the point) plus ``epoch_gap``, so brokers take the restored
  leadership and ISR as new, and the next producer id the newest plus ``producer_id_gap``,
  so no producer id handed out after the point is handed out again.

A topic created after the point is not in the restored image. A broker started on the
restored quorum finds its partitions' logs unknown to the image and renames them
``*-stray`` (Kafka's stray partition detection), keeping the data for the operator. What a
broker left running through the restore would do with them is not what this was tested
with: stop the brokers, restore, start the controller, start the brokers
(docs/operations/disaster-recovery.md section 4).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from pykraft.backup.downgrade import write_at
from pykraft.backup.take import Located, log_batches
from pykraft.controller.brokers import register_broker_version
from pykraft.controller.partitions import partition_version
from pykraft.metadata.image import Image, ImageError
from pykraft.metadata.records import FeatureLevelRecord, PartitionRecord, ProducerIdsRecord
from pykraft.metadata.serde import (
    MetadataRecordError,
    decode_record,
    encode_record,
    record_type,
)
from pykraft.metadata.versions import METADATA_VERSION, MINIMUM_METADATA_VERSION
from pykraft.raft.types import NO_LEADER, ElectionState, OffsetAndEpoch
from pykraft.records import ControlRecordType, Record, decode_control, decode_records
from pykraft.records.control_records import KRaftVersionRecord
from pykraft.storage._files import StorageError, fsync_dir
from pykraft.storage.bootstrap import write_bootstrap_metadata
from pykraft.storage.format import StorageConfig, initial_voters
from pykraft.storage.log import PARTITION_DIR_NAME
from pykraft.storage.meta import MetaProperties, read_meta_properties, write_meta_properties
from pykraft.storage.quorum_state import FileQuorumStateStore, QuorumStateError
from pykraft.storage.snapshots import FileSnapshotStore, read_snapshot, write_snapshot

__all__ = ["Gaps", "RestoreError", "RestorePlan", "RestorePoint", "plan_restore", "write_restore"]

_PARTITION_RECORD: Final = PartitionRecord.API_KEY
_PRODUCER_IDS_RECORD: Final = ProducerIdsRecord.API_KEY


class RestoreError(StorageError):
    """The backup cannot be restored as asked (the message says why)."""


@dataclass(frozen=True)
class RestorePoint:
    """Restore every record below ``offset``, or every batch appended at or before
    ``time_ms``; neither: the backup's end."""

    offset: int | None = None
    time_ms: int | None = None


@dataclass(frozen=True)
class Gaps:
    """How far past the backup the restored quorum starts (see the module's docstring)."""

    offset: int = 1_000_000
    epoch: int = 1_000
    producer_id: int = 1_000_000


@dataclass
class RestorePlan:
    """What a restore writes, computed without writing (``--dry-run`` prints it)."""

    backup: Path
    cluster_id: str
    base_snapshot: OffsetAndEpoch | None  # the snapshot the replay starts from
    point: int  # every record below this offset is restored
    point_time_ms: int
    backup_end: int
    records_replayed: int = 0
    kraft_version: int = 0
    metadata_version: int = 0
    topics: int = 0
    partitions: int = 0
    features: dict[str, int] = field(default_factory=dict)
    snapshot_id: OffsetAndEpoch = field(default_factory=lambda: OffsetAndEpoch(0, 0))
    warnings: list[str] = field(default_factory=list)
    source_metadata_version: int | None = None  # a downgrade: the backup's own level
    losses: list[str] = field(default_factory=list)  # what the downgrade cannot keep

    def as_json(self) -> dict[str, object]:
        base = self.base_snapshot
        return {
            "backup": str(self.backup),
            "cluster_id": self.cluster_id,
            "base_snapshot": None if base is None else [base.offset, base.epoch],
            "point": self.point,
            "point_time_ms": self.point_time_ms,
            "backup_end": self.backup_end,
            "records_replayed": self.records_replayed,
            "kraft_version": self.kraft_version,
            "metadata_version": self.metadata_version,
            "topics": self.topics,
            "partitions": self.partitions,
            "snapshot": [self.snapshot_id.offset, self.snapshot_id.epoch],
            "warnings": list(self.warnings),
            "source_metadata_version": self.source_metadata_version,
            "losses": list(self.losses),
        }


@dataclass
class _Backup:
    """The backup's files, read once."""

    path: Path
    cluster_id: str
    store: FileSnapshotStore
    batches: list[Located]
    max_epoch: int

    @property
    def end(self) -> int:
        snapshots = self.store.snapshot_ids()
        ends = [b.next_offset for b in self.batches[-1:]] + [s.offset for s in snapshots[-1:]]
        return max(ends, default=0)


def _open(backup: Path) -> _Backup:
    try:
        meta = read_meta_properties(backup)
    except StorageError as e:
        raise RestoreError(f"{backup}: {e}") from None
    if meta is None:
        raise RestoreError(f"{backup}: no meta.properties (not a backup)")
    partition = backup / PARTITION_DIR_NAME
    store = FileSnapshotStore.open(partition)
    batches = list(log_batches(partition))
    epochs = [b.epoch for b in batches] + [s.epoch for s in store.snapshot_ids()]
    try:
        state = FileQuorumStateStore(partition).read()
    except QuorumStateError:
        state = None
    if state is not None:
        epochs.append(state.epoch)
    return _Backup(backup, meta.cluster_id, store, batches, max(epochs, default=0))


def _point(backup: _Backup, point: RestorePoint) -> tuple[int, int]:
    """(offset, time) of the newest batch end (or snapshot) the point allows."""
    candidates = [
        (s.offset, backup.store.last_contained_timestamp_ms(s)) for s in backup.store.snapshot_ids()
    ]
    candidates += [(b.next_offset, b.max_timestamp) for b in backup.batches]
    allowed = [
        c
        for c in candidates
        if (point.offset is None or c[0] <= point.offset)
        and (point.time_ms is None or c[1] <= point.time_ms)
    ]
    if not allowed:
        raise RestoreError(f"{backup.path}: nothing in the backup is at or before the point")
    return max(allowed)


def plan_restore(
    backup_dir: Path,
    point: RestorePoint = RestorePoint(),
    gaps: Gaps = Gaps(),
    metadata_version: int | None = None,
) -> tuple[RestorePlan, list[bytes]]:
    """The plan and the restored snapshot's record values; nothing is written.
    ``metadata_version``: write the restored state at this lower level (``downgrade.py``)."""
    backup = _open(backup_dir)
    offset, time_ms = _point(backup, point)
    bases = [s for s in backup.store.snapshot_ids() if s.offset <= offset]
    plan = RestorePlan(
        backup_dir, backup.cluster_id, bases[-1] if bases else None, offset, time_ms, backup.end
    )
    image = Image()
    start = _load_base(backup, plan, image)
    _replay(backup, plan, image, start, offset)
    if image.in_transaction:
        plan.warnings.append(
            f"a metadata transaction open at offset {offset} is left out (it never ended there)"
        )
    values = _values_at(image, plan, metadata_version)
    plan.topics, plan.partitions = len(image.topics), sum(1 for _ in image.all_partitions())
    _replay(backup, plan, image, offset, backup.end, count=False)  # how far the backup went
    values = _beyond(values, image, gaps)
    plan.snapshot_id = OffsetAndEpoch(backup.end + gaps.offset, backup.max_epoch + gaps.epoch)
    return plan, values


def _values_at(image: Image, plan: RestorePlan, target: int | None) -> list[bytes]:
    """The image's records at its own metadata.version, or written down to ``target``
    (what that loses in ``plan.losses``); the plan's level and features set."""
    mv = image.metadata_version or MINIMUM_METADATA_VERSION.level
    if target is None or target == mv:
        values = list(image.iter_values(partition_version(mv), register_broker_version(mv)))
        plan.metadata_version, plan.features = mv, dict(image.features)
        plan.features.setdefault(METADATA_VERSION, mv)
        return values
    if target > mv:
        raise RestoreError(
            f"the backup is at metadata.version {mv}: a restore only goes down; restore at "
            "its level and upgrade with kafka-features (or pykraft features) once it runs"
        )
    values, plan.losses = write_at(image, target)
    plan.metadata_version, plan.source_metadata_version = target, mv
    plan.features = {}
    for value in values:
        if record_type(value)[0] == FeatureLevelRecord.API_KEY:
            record, _ = decode_record(value)
            assert isinstance(record, FeatureLevelRecord)
            plan.features[record.name] = record.feature_level
    return values


def _load_base(backup: _Backup, plan: RestorePlan, image: Image) -> int:
    """Replay the base snapshot; the offset the log replay starts at."""
    base = plan.base_snapshot
    if base is None:
        first = backup.batches[0].base_offset if backup.batches else 0
        if first != 0:
            raise RestoreError(
                f"{backup.path}: no snapshot at or before the point and no log before {first}"
            )
        return 0
    contents = read_snapshot(backup.store, base)
    plan.kraft_version = contents.kraft_version or 0
    for record in contents.records:
        _apply(image, plan, record.value, base.offset - 1)
    return base.offset


def _replay(
    backup: _Backup, plan: RestorePlan, image: Image, start: int, end: int, *, count: bool = True
) -> None:
    """Replay the backup's batches from ``start`` up to ``end`` (batches wholly inside)."""
    expected = start
    for batch in backup.batches:
        if batch.next_offset <= start or batch.next_offset > end:
            continue
        if batch.base_offset > expected:
            raise RestoreError(
                f"{backup.path}: offsets {expected}..{batch.base_offset - 1} are in no "
                "segment and no snapshot of the backup"
            )
        for record, is_control in _records(batch):
            if record.offset < start:
                continue
            if is_control:
                if not count:
                    continue
                kind, message = decode_control(record)
                if kind is ControlRecordType.KRAFT_VERSION and isinstance(
                    message, KRaftVersionRecord
                ):
                    plan.kraft_version = int(message.k_raft_version)
                continue
            _apply(image, plan if count else None, record.value, record.offset)
        expected = batch.next_offset


def _records(batch: Located) -> Iterator[tuple[Record, bool]]:
    for record in decode_records(batch.read()):
        yield record, batch.is_control


def _apply(image: Image, plan: RestorePlan | None, value: bytes | None, offset: int) -> None:
    """Replay one record; one the image refuses is a warning, not the end of the restore."""
    if value is None:
        return
    try:
        record, version = decode_record(value)
        image.replay(record, version, offset, value)
    except (MetadataRecordError, ImageError) as e:
        if plan is not None:
            plan.warnings.append(f"offset {offset}: {e}")
        return
    if plan is not None:
        plan.records_replayed += 1


def _beyond(values: list[bytes], end: Image, gaps: Gaps) -> list[bytes]:
    """The restored records with every partition's epochs and the next producer id past
    what the backup's end held (``end``: the image replayed to it)."""
    out = []
    for value in values:
        api_key = record_type(value)[0]
        if api_key == _PARTITION_RECORD:
            record, version = decode_record(value)
            assert isinstance(record, PartitionRecord)
            now = end.partition(record.topic_id, record.partition_id)
            leader_epoch = max(record.leader_epoch, now.leader_epoch if now else 0)
            partition_epoch = max(record.partition_epoch, now.partition_epoch if now else 0)
            record = dataclasses.replace(
                record,
                leader_epoch=leader_epoch + gaps.epoch,
                partition_epoch=partition_epoch + gaps.epoch,
            )
            value = encode_record(record, version)
        elif api_key == _PRODUCER_IDS_RECORD:
            record, version = decode_record(value)
            assert isinstance(record, ProducerIdsRecord)
            newest = max(record.next_producer_id, end.next_producer_id)
            value = encode_record(
                dataclasses.replace(record, next_producer_id=newest + gaps.producer_id), version
            )
        out.append(value)
    return out


def write_restore(
    plan: RestorePlan, values: list[bytes], config: StorageConfig, now_ms: int
) -> MetaProperties:
    """Write the restored controller's directory (``config.metadata_log_dir``, which must be
    empty): the snapshot, ``quorum-state``, the bootstrap metadata, ``meta.properties`` last."""
    log_dir = config.metadata_log_dir
    if log_dir.exists() and any(log_dir.iterdir()):
        raise RestoreError(f"{log_dir}: not empty (restore makes a new controller's directory)")
    static = bool(config.quorum_voters)
    if plan.kraft_version >= 1 and static:
        raise RestoreError(
            "the backup's quorum is dynamic (kraft.version 1): the restored controller must "
            "not set controller.quorum.voters (set controller.quorum.bootstrap.servers)"
        )
    directory_id, voters = initial_voters(config, not static, None)
    partition = log_dir / PARTITION_DIR_NAME
    partition.mkdir(parents=True)
    write_snapshot(
        FileSnapshotStore.open(partition, owner=True),
        plan.snapshot_id,
        values,
        timestamp_ms=now_ms,
        last_contained_log_timestamp_ms=plan.point_time_ms,
        kraft_version=plan.kraft_version,
        voters=voters if plan.kraft_version >= 1 else None,
    )
    voter_ids = tuple(int(getattr(v, "id", -1)) for v in config.quorum_voters)
    FileQuorumStateStore(partition).write(
        ElectionState(plan.snapshot_id.epoch, NO_LEADER, None),
        kraft_version=plan.kraft_version,
        voter_ids=voter_ids,
    )
    write_bootstrap_metadata(log_dir, {k: v for k, v in plan.features.items() if v > 0})
    fsync_dir(partition)
    fsync_dir(log_dir)
    meta = MetaProperties(plan.cluster_id, config.node_id, directory_id)
    write_meta_properties(log_dir, meta)
    return meta
