"""The history report names each leader change's cause truthfully (issue 48 item 4): a log
written here record by record, whose history is known, ingested with Spark; every leader
change gets the cause the records say -- a partition's first leader is its creation, not a
reassignment (the report named 59 of 275 changes "reassignment" on a local cluster that never
reassigned anything: every one the first leader of a new partition)."""

from __future__ import annotations

import uuid
from pathlib import Path

from pyspark.sql import SparkSession

from pykraft.metadata import records as r
from pykraft.metadata.serde import encode_record
from pykraft.pipeline.history import events, load_tables
from pykraft.pipeline.ingest import LogDir, run_ingest
from pykraft.records import build_batch

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
