"""Kafka's controller metrics (JMX ``kafka.controller:type=KafkaController,name=X``), exported
as ``kafka_controller_kafkacontroller_`` + X in snake case, computed from the controller's
image and the migration's state (SPEC G5: ZkMigrationState, ZkWriteBehindLag)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from pykraft.controller.quorum_controller import QuorumController

__all__ = [
    "PREFIX",
    "MigrationFigures",
    "controller_metrics",
    "metric_name",
    "zk_write_behind_lag",
]

PREFIX: Final = "kafka_controller_kafkacontroller_"


@dataclass(frozen=True)
class MigrationFigures:
    """What the metrics read of a KIP-866 migration (``MigrationHost.figures``)."""

    zk_written_offset: int | None  # the last offset written to ZooKeeper; None unless dual write
    snapshot_write_ms: float  # the last full reconciliation (ZkWriteSnapshotTimeMs)
    delta_write_ms: float  # the last dual write (ZkWriteDeltaTimeMs)


def metric_name(jmx_name: str) -> str:
    """``ZkWriteBehindLag`` -> ``kafka_controller_kafkacontroller_zk_write_behind_lag``."""
    snake = "".join(
        f"_{c.lower()}" if c.isupper() and i else c.lower() for i, c in enumerate(jmx_name)
    )
    return PREFIX + snake


def zk_write_behind_lag(
    controller: QuorumController, committed_offset: int, zk_written_offset: int | None
) -> int:
    """The offset of the last committed change minus the last one written to ZooKeeper
    (``zk_written_offset``, None unless in dual write); 0 on inactive controllers and before
    dual write, as Kafka."""
    if zk_written_offset is None:
        return 0
    last = min(controller.image.last_change_offset, committed_offset)
    return max(0, int(last) - int(zk_written_offset))


def controller_metrics(
    controller: QuorumController,
    committed_offset: int,
    metadata_errors: int,
    migration: MigrationFigures | None,
) -> list[tuple[str, str, float]]:
    """(name, help, value) of every controller metric now."""
    zk_written = None if migration is None else migration.zk_written_offset
    image = controller.image
    topics = image.topics_image
    brokers = list(image.brokers.values())
    values = [
        ("ActiveControllerCount", "1 on the active controller", float(controller.active)),
        ("GlobalTopicCount", "topics in the metadata image", len(image.topics)),
        ("GlobalPartitionCount", "partitions in the metadata image", topics.partition_count),
        ("OfflinePartitionsCount", "partitions without a leader", topics.offline_count),
        (
            "PreferredReplicaImbalanceCount",
            "partitions not led by their first replica",
            topics.imbalanced_count,
        ),
        ("FencedBrokerCount", "registered brokers fenced", sum(b.fenced for b in brokers)),
        ("ActiveBrokerCount", "registered brokers not fenced", sum(not b.fenced for b in brokers)),
        ("LastAppliedRecordOffset", "offset of the last record in the image", image.last_offset),
        ("LastCommittedRecordOffset", "offset of the last committed record", committed_offset),
        (
            "MetadataErrorCount",
            "records that could not be replayed, handler failures",
            metadata_errors,
        ),
        (
            "ZkMigrationState",
            "KIP-866 state: 0 NONE, 1 MIGRATION, 2 PRE_MIGRATION, 3 POST_MIGRATION",
            image.migration_state,
        ),
        (
            "MigratingZkBrokerCount",
            "registered brokers with IsMigratingZkBroker",
            sum(b.is_migrating_zk_broker for b in brokers),
        ),
        (
            "ZkWriteBehindLag",
            "offset of the last committed change minus the last one written to ZooKeeper",
            zk_write_behind_lag(controller, committed_offset, zk_written),
        ),
        (
            "ZkWriteSnapshotTimeMs",
            "duration of the last full write of the metadata to ZooKeeper (the last value, "
            "not a histogram)",
            migration.snapshot_write_ms if migration is not None else 0.0,
        ),
        (
            "ZkWriteDeltaTimeMs",
            "duration of the last dual write of committed changes to ZooKeeper (the last "
            "value, not a histogram)",
            migration.delta_write_ms if migration is not None else 0.0,
        ),
    ]
    return [(metric_name(name), f"{name}: {doc}", float(value)) for name, doc, value in values]
