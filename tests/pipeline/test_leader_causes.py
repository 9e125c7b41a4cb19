"""The history report names each leader change's cause truthfully (issue 48 item 4): a log
written here record by record, whose history is known, ingested with Spark; every leader
change gets the cause the records say -- a partition's first leader is its creation, not a
reassignment (the report named 59 of 275 changes "reassignment" on a local cluster that never
reassigned anything: every one the first leader of a new partition)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pykraft.backup.restore import Gaps, RestorePoint, plan_restore, write_restore
from pykraft.backup.take import backup_round
from pykraft.metadata import records as r
from pykraft.metadata.serde import encode_record
from pykraft.pipeline.history import events, load_tables
from pykraft.pipeline.history_rows import RESTORE_EPOCH_JUMP
from pykraft.pipeline.ingest import LogDir, run_ingest
from pykraft.records import build_batch

from ..storage.test_backup import _metadata_log
from .logfiles import T0_MS, write_node

TOPIC = uuid.UUID(int=7)
NO_CHANGE = -2  # PartitionChangeRecord's leader when the leader does not change


def _change(partition: int, **fields: object) -> r.PartitionChangeRecord:
    return r.PartitionChangeRecord(partition_id=partition, topic_id=TOPIC, **fields)  # type: ignore[arg-type]


def _created(partition: int, replicas: list[int]) -> r.PartitionRecord:
    return r.PartitionRecord(
        partition_id=partition,
        topic_id=TOPIC,
        replicas=tuple(replicas),
        isr=tuple(replicas),
        leader=replicas[0],
        leader_epoch=0,
        partition_epoch=0,
    )


# (records of one batch, the causes of the leader changes it writes, by partition)
HISTORY: list[tuple[list[object], dict[int, str]]] = [
    ([r.FeatureLevelRecord(name="metadata.version", feature_level=27)], {}),
    (
        [r.TopicRecord(name="t", topic_id=TOPIC), _created(0, [1, 2, 3]), _created(1, [2, 3, 1])],
        {0: "creation", 1: "creation"},
    ),
    ([_change(0, leader=2)], {0: "election"}),
    ([_change(0, leader=1)], {0: "preferred leader"}),
    (
        [
            r.BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=5, fenced=1),
            _change(0, leader=2, isr=(2, 3)),
        ],
        {0: "fenced"},
    ),
    ([_change(1, leader=-1, isr=(), eligible_leader_replicas=(3,))], {1: "went offline"}),
    ([_change(1, leader=3, isr=(3,), eligible_leader_replicas=())], {1: "ELR election"}),
    ([_change(1, leader=-1, isr=())], {1: "went offline"}),
    ([_change(1, leader=2, isr=(2,), leader_recovery_state=1)], {1: "unclean election"}),
    ([_change(1, leader=NO_CHANGE, isr=(2, 3), leader_recovery_state=0)], {}),
    ([_change(0, replicas=(4, 2, 3), isr=(2, 3, 4), leader=4)], {0: "reassignment"}),
    ([_change(1, leader=-1, isr=())], {1: "went offline"}),
    ([_change(1, leader=3, isr=(3,))], {1: "election (was offline)"}),
]


def test_each_leader_change_gets_the_cause_its_records_say(
    spark: SparkSession, tmp_path: Path
) -> None:
    batches, expected, offset = [], {}, 0
    for number, (records, causes) in enumerate(HISTORY):
        values = [
            encode_record(rec, 2 if isinstance(rec, r.PartitionChangeRecord) else 0)
            for rec in records
        ]
        batches.append(build_batch(offset, 1, values, T0_MS + number))
        for index, rec in enumerate(records):
            partition = getattr(rec, "partition_id", None)
            if partition in causes:
                expected[(offset + index, partition)] = causes[partition]
        offset += len(records)
    log = write_node(tmp_path / "logs", 1, batches)
    run_ingest(spark, [LogDir(str(log))], str(tmp_path / "tables"), {1: offset})
    found = events(load_tables(spark, str(tmp_path / "tables")), 1)["leader_changes"]
    got = {(row["offset"], row["partition"]): row["cause"] for row in found.collect()}
    assert got == expected


@dataclass(frozen=True)
class _Listener:
    name: str
    host: str
    port: int


@dataclass(frozen=True)
class _RestoredController:  # what write_restore reads of a server's config
    metadata_log_dir: Path
    node_id: int = 1
    process_roles: tuple[str, ...] = ("controller",)
    listeners: tuple[_Listener, ...] = (_Listener("CONTROLLER", "localhost", 9093),)
    controller_listener_names: tuple[str, ...] = ("CONTROLLER",)
    quorum_voters: tuple[object, ...] = ()


@pytest.mark.parametrize(("epoch_gap", "cause"), [(1_000, "recovery"), (10, "log gap")])
def test_a_restore_read_through_its_backup_is_a_recovery(
    spark: SparkSession, tmp_path: Path, epoch_gap: int, cause: str
) -> None:
    """A backup (a-0 led by 1 at offset 4, then by 2), restored at offset 4 and kept on the
    restored quorum: read from the backup, the history crosses the restore, and a-0's leader
    going back to 1 is the recovery's -- or, with an epoch gap too small to tell a restore,
    a gap in the log's -- not an election."""
    assert Gaps().epoch == RESTORE_EPOCH_JUMP  # the restore's default is what tells it
    _, backup = _metadata_log(tmp_path)
    plan, values = plan_restore(backup, RestorePoint(offset=4), Gaps(epoch=epoch_gap))
    restored = tmp_path / "restored"
    write_restore(plan, values, _RestoredController(restored), now_ms=T0_MS)
    assert len(backup_round(restored, backup, 2).snapshots) == 1  # no log yet: the snapshot
    run_ingest(spark, [LogDir(str(backup))], str(tmp_path / "tables"))
    found = events(load_tables(spark, str(tmp_path / "tables")), 1)["leader_changes"]
    changes = [
        (r["offset"], r["previous_leader"], r["leader"], r["cause"]) for r in found.collect()
    ]
    assert changes == [
        (2, None, 1, "creation"),
        (4, 1, 2, "election"),
        (plan.snapshot_id.offset - 1, 2, 1, cause),
    ]
