"""Kafka's controller metrics, computed from the controller's image and the migration's state
(SPEC G5: ZkMigrationState, ZkWriteBehindLag), under the names the Prometheus JMX exporter
gives Kafka's MBeans with the rules Kafka users deploy (``node/metrics.py``'s docstring):
``kafka.controller:type=KafkaController,name=X`` as ``kafka_controller_kafkacontroller_`` + X
in lower case; ``kafka.server:type=MetadataLoader,name=X`` as ``kafka_server_metadataloader_``
+ x, FinalizedLevel with a ``featureName`` label (``group.version`` -> ``groupVersion``).
Zero-valued families Kafka's controllers serve for request paths a controller never takes
(BrokerTopicMetrics' meters, the AlterAcls purgatory) are served too, so that a dashboard
built on Kafka's controllers finds every series it queries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from pykraft.controller.quorum_controller import QuorumController
from pykraft.node.performance import EventPerformanceMonitor

__all__ = [
    "PREFIX",
    "MigrationFigures",
    "NodeFigures",
    "broker_families",
    "controller_metrics",
    "event_families",
    "feature_label",
    "loader_families",
    "metric_name",
    "zk_write_behind_lag",
]

PREFIX: Final = "kafka_controller_kafkacontroller_"
STATS: Final = "kafka_controller_controllerstats_"
EVENTS: Final = "kafka_controller_controllereventmanager_"


@dataclass(frozen=True)
class MigrationFigures:
    """What the metrics read of a KIP-866 migration (``MigrationHost.figures``)."""

    zk_written_offset: int | None  # the last offset written to ZooKeeper; None unless dual write
    snapshot_write_ms: float  # the last full reconciliation (ZkWriteSnapshotTimeMs)
    delta_write_ms: float  # the last dual write (ZkWriteDeltaTimeMs)


def metric_name(jmx_name: str) -> str:
    """``ZkWriteBehindLag`` -> ``kafka_controller_kafkacontroller_zkwritebehindlag``."""
    return PREFIX + jmx_name.lower()


def feature_label(feature: str) -> str:
    """Kafka's FinalizedLevel label: ``eligible.leader.replicas.version`` ->
    ``eligibleLeaderReplicasVersion``."""
    first, *rest = feature.split(".")
    return first + "".join(word[:1].upper() + word[1:] for word in rest)


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
        (
            "ControlledShutdownBrokerCount",
            "registered brokers in controlled shutdown",
            sum(b.in_controlled_shutdown for b in brokers),
        ),
        ("ActiveBrokerCount", "registered brokers not fenced", sum(not b.fenced for b in brokers)),
        ("LastAppliedRecordOffset", "offset of the last record in the image", image.last_offset),
        ("LastCommittedRecordOffset", "offset of the last committed record", committed_offset),
        (
            "MetadataErrorCount",
            "records that could not be replayed, handler failures",
            metadata_errors,
        ),
        *_migration_values(controller, committed_offset, migration),
    ]
    return [(metric_name(name), f"{name}: {doc}", float(value)) for name, doc, value in values]


LOADER: Final = "kafka_server_metadataloader_"
# Kafka's controllers serve BrokerTopicMetrics' meters (all zero: a controller serves no topic
# produce or fetch) and the AlterAcls purgatory's gauges; read from Kafka 4.4.0's controller.
IDLE_METERS: Final = [
    "bytesin",
    "bytesout",
    "bytesrejected",
    "failedfetchrequests",
    "failedproducerequests",
    "failedshareacknowledgementrequests",
    "failedsharefetchrequests",
    "fetchmessageconversions",
    "invalidmagicnumberrecords",
    "invalidmessagecrcrecords",
    "invalidoffsetorsequencerecords",
    "messagesin",
    "nokeycompactedtopicrecords",
    "producemessageconversions",
    "reassignmentbytesin",
    "reassignmentbytesout",
    "replicationbytesin",
    "replicationbytesout",
    "totalfetchrequests",
    "totalproducerequests",
    "totalshareacknowledgementrequests",
    "totalsharefetchrequests",
]


@dataclass
class NodeFigures:
    """What the node knows beside the controller's image: the leader, the snapshots it
    loaded, and its snapshot emitter's last snapshot (bytes, when) at ``now_ms``."""

    leader_id: int
    snapshot_loads: int
    now_ms: int
    snapshot_bytes: int
    snapshot_ms: int = 0
    new_leaders: int = 0  # leaders of the quorum this node saw elected
    applied_timestamp_ms: int = 0  # the last applied batch's append time (wall clock)
    wall_ms: int = 0  # the wall clock now


# Kafka's BrokerRegistrationState values (controller.metrics.BrokerRegistrationState).
FENCED, CONTROLLED_SHUTDOWN, ACTIVE = 10, 20, 30


def broker_families(controller: QuorumController, now_ms: int) -> list[Metric]:
    """Per registered broker: BrokerRegistrationState, and on the active controller
    TimeSinceLastHeartbeatReceivedMs (from its broker sessions)."""
    state = GaugeMetricFamily(
        PREFIX + "brokerregistrationstate",
        "BrokerRegistrationState: 10 fenced, 20 in controlled shutdown, 30 active",
        labels=["broker"],
    )
    since = GaugeMetricFamily(
        PREFIX + "timesincelastheartbeatreceivedms",
        "TimeSinceLastHeartbeatReceivedMs: since the broker's last heartbeat (active only)",
        labels=["broker"],
    )
    contact = controller.sessions.contact_ms if controller.active else {}
    for broker_id, b in sorted(controller.image.brokers.items()):
        value = FENCED if b.fenced else CONTROLLED_SHUTDOWN if b.in_controlled_shutdown else ACTIVE
        state.add_metric([str(broker_id)], float(value))
        if broker_id in contact:
            since.add_metric([str(broker_id)], float(now_ms - contact[broker_id][1]))
    return [state, since]


def _migration_values(
    controller: QuorumController, committed_offset: int, migration: MigrationFigures | None
) -> list[tuple[str, str, float]]:
    """KIP-866's KafkaController gauges (Kafka 3.x's names)."""
    image = controller.image
    brokers = image.brokers.values()
    zk_written = None if migration is None else migration.zk_written_offset
    return [
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


def loader_families(controller: QuorumController, node: NodeFigures) -> list[Metric]:
    """MetadataLoader's gauges (the image this node has loaded), the snapshot emitter's, the
    brokers' and the idle families."""
    leader_id, snapshot_loads = node.leader_id, node.snapshot_loads
    image = controller.image
    finalized = GaugeMetricFamily(
        LOADER + "finalizedlevel",
        "FinalizedLevel: a finalized feature's level in the loaded image",
        labels=["featureName"],
    )
    for feature, level in sorted(image.features.items()):
        finalized.add_metric([feature_label(feature)], float(level))
    families: list[Metric] = [
        GaugeMetricFamily(
            LOADER + "currentmetadataversion",
            "CurrentMetadataVersion: the metadata.version feature level of the loaded image",
            value=float(image.metadata_version or 0),
        ),
        GaugeMetricFamily(
            LOADER + "currentcontrollerid",
            "CurrentControllerId: the active controller's id, -1 if none",
            value=float(leader_id),
        ),
        GaugeMetricFamily(
            LOADER + "handleloadsnapshotcount",
            "HandleLoadSnapshotCount: snapshots this node loaded",
            value=float(snapshot_loads),
        ),
        finalized,
        GaugeMetricFamily(
            "kafka_server_snapshotemitter_latestsnapshotgeneratedbytes",
            "LatestSnapshotGeneratedBytes: the record bytes of the last snapshot generated",
            value=float(node.snapshot_bytes),
        ),
        GaugeMetricFamily(
            "kafka_server_snapshotemitter_latestsnapshotgeneratedagems",
            "LatestSnapshotGeneratedAgeMs: since the last snapshot (or the start)",
            value=float(node.now_ms - node.snapshot_ms),
        ),
        *broker_families(controller, node.now_ms),
        *_applied_families(controller, node),
        GaugeMetricFamily(
            PREFIX + "newactivecontrollerscount",
            "NewActiveControllersCount: new active controllers this node saw elected",
            value=float(node.new_leaders),
        ),
    ]
    families.extend(_idle_families())
    return families


def _applied_families(controller: QuorumController, node: NodeFigures) -> list[Metric]:
    """The last applied batch's time and ControllerStats' election meters (as the exporter
    serves a meter: its count)."""
    topics = controller.image.topics_image
    applied = node.applied_timestamp_ms
    return [
        GaugeMetricFamily(
            PREFIX + "lastappliedrecordtimestamp",
            "LastAppliedRecordTimestamp: append time of the last applied batch (ms since epoch)",
            value=float(applied),
        ),
        GaugeMetricFamily(
            PREFIX + "lastappliedrecordlagms",
            "LastAppliedRecordLagMs: now less LastAppliedRecordTimestamp (ms)",
            value=float(node.wall_ms - applied),
        ),
        CounterMetricFamily(
            STATS + "uncleanleaderelections",
            "UncleanLeaderElectionsPerSec: unclean elections replayed (leader RECOVERING)",
            value=float(topics.unclean_elections),
        ),
        CounterMetricFamily(
            STATS + "electionfromeligibleleaderreplicas",
            "ElectionFromEligibleLeaderReplicasPerSec: leaders elected from the ELR, replayed",
            value=float(topics.elr_elections),
        ),
    ]


def event_families(performance: EventPerformanceMonitor, idle_ratio: float) -> list[Metric]:
    """Kafka's event queue metrics (``node/performance.py``) and its threads' idle ratio,
    which is the loop's (``node/loop_lag.py``'s IdleRatio)."""
    families: list[Metric] = []
    for name, reservoir in (
        ("eventqueuetimems", performance.queue_ms),
        ("eventqueueprocessingtimems", performance.processing_ms),
    ):
        quantiles = GaugeMetricFamily(
            EVENTS + name, f"{name}: percentiles of the last 1028 events (ms)", labels=["quantile"]
        )
        for label, value in reservoir.quantiles():
            quantiles.add_metric([label], value)
        count = float(reservoir.count)
        families += [quantiles, CounterMetricFamily(EVENTS + name + "_count", name, value=count)]
    counts = (
        ("EventQueueOperationsStartedCount", "events started", performance.started),
        ("EventQueueOperationsTimedOutCount", "events past their deadline", performance.timed_out),
        (
            "TimedOutBrokerHeartbeatCount",
            "heartbeats past their deadline",
            performance.timed_out_heartbeats,
        ),
    )
    families += [
        GaugeMetricFamily(metric_name(n), f"{n}: {d}", value=float(v)) for n, d, v in counts
    ]
    for prefix in (EVENTS, LOADER):
        families.append(
            GaugeMetricFamily(
                prefix + "avgidleratio",
                "AvgIdleRatio: share of the last minute the thread was idle",
                value=idle_ratio,
            )
        )
    return families


def _idle_families() -> list[Metric]:
    """The families Kafka's controllers serve at zero (module docstring)."""
    families: list[Metric] = []
    for meter in IDLE_METERS:
        families.append(
            CounterMetricFamily(
                f"kafka_server_brokertopicmetrics_{meter}",
                "a BrokerTopicMetrics meter, 0 on a controller (no topic produce or fetch)",
                value=0.0,
            )
        )
    for gauge in ("numdelayedoperations", "purgatorysize"):
        idle = GaugeMetricFamily(
            f"kafka_server_delayedoperationpurgatory_{gauge}",
            "the AlterAcls purgatory, empty on a controller",
            labels=["delayedOperation"],
        )
        idle.add_metric(["AlterAcls"], 0.0)
        families.append(idle)
    return families
