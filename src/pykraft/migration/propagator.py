"""What a migrating KRaft controller tells ZooKeeper-mode brokers (Kafka 3.9's
``MigrationPropagator``): UpdateMetadata v8 and LeaderAndIsr v7 built from the metadata image,
marked as coming from a KRaft controller. Pure: ``legacy_channel`` sends them.

Versions are fixed (no negotiation, as Kafka): UpdateMetadata v8, LeaderAndIsr v7, StopReplica
v4. The header's ControllerEpoch is the ZooKeeper controller epoch this controller claimed;
each partition's ControllerEpoch is the KRaft leader epoch; BrokerEpoch is the target
broker's KRaft registration epoch. FULL (type 2) requests list every partition: a broker treats
a local log missing from a FULL LeaderAndIsr as stray (KAFKA-15605), so ``full_leader_and_isr``
always lists every partition the broker replicates.

StopReplica v4 (``stop_replicas``) is what a FULL LeaderAndIsr cannot say: a replica to drop.
Between two ``replica_map`` views of the image, every replica of a deleted topic gets
DeletePartition with leader epoch -2 (Kafka's ``LeaderAndIsr.EpochDuringDelete``, which a
broker accepts whatever its own epoch) and every replica removed from a partition's
assignment (a finished reassignment) gets DeletePartition with the partition's leader epoch.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Final

from pykraft.metadata.image import BrokerState, Image, PartitionState, TopicState
from pykraft.migration.rpc.leader_and_isr_request import (
    LeaderAndIsrLiveLeader,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrTopicState,
)
from pykraft.migration.rpc.stop_replica_request import (
    StopReplicaPartitionState,
    StopReplicaRequest,
    StopReplicaTopicState,
)
from pykraft.migration.rpc.update_metadata_request import (
    UpdateMetadataBroker,
    UpdateMetadataEndpoint,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
    UpdateMetadataTopicState,
)

__all__ = [
    "FULL",
    "INCREMENTAL",
    "LEADER_AND_ISR_VERSION",
    "UPDATE_METADATA_VERSION",
    "full_leader_and_isr",
    "full_update_metadata",
    "inter_broker_endpoint",
    "replica_map",
    "stop_replicas",
]

UPDATE_METADATA_VERSION: Final = 8
LEADER_AND_ISR_VERSION: Final = 7
STOP_REPLICA_VERSION: Final = 4
INCREMENTAL, FULL = 1, 2
EPOCH_DURING_DELETE: Final = -2

# (topic id, partition) -> (topic name, replicas, leader epoch)
ReplicaMap = dict[tuple[object, int], tuple[str, tuple[int, ...], int]]


def inter_broker_endpoint(broker: BrokerState, listener: str) -> tuple[str, int] | None:
    for e in broker.endpoints:
        if e.name == listener:
            return e.host, int(e.port)
    return None


def _partition_um(
    name: str, p: PartitionState, kraft_epoch: int, registered: set[int]
) -> UpdateMetadataPartitionState:
    return UpdateMetadataPartitionState(
        topic_name=name,
        partition_index=p.partition_id,
        controller_epoch=kraft_epoch,
        leader=p.leader,
        leader_epoch=p.leader_epoch,
        isr=p.isr,
        zk_version=p.partition_epoch,
        replicas=p.replicas,
        offline_replicas=tuple(b for b in p.replicas if b not in registered),
    )


def _topics_of(image: Image, names: Collection[str] | None) -> list[TopicState]:
    """The image's topics (those named, when ``names`` is given), by name."""
    if names is None:
        return sorted(image.topics.values(), key=lambda t: t.name)
    ids = (image.topics_by_name.get(n) for n in sorted(names))
    return [image.topics[i] for i in ids if i is not None]


def full_update_metadata(
    image: Image,
    *,
    controller_id: int,
    zk_controller_epoch: int,
    kraft_epoch: int,
    broker_epoch: int,
    topics_only: Collection[str] | None = None,
) -> UpdateMetadataRequest:
    """Every topic's partitions and every registered broker (ZooKeeper and KRaft, fenced
    included), as the FULL UpdateMetadata of KRAFT_CONTROLLER_TO_BROKER_COMM; with
    ``topics_only``, an INCREMENTAL one of those topics' partitions (a dual write's delta:
    Kafka's ``MigrationPropagator.sendRPCsToBrokersFromMetadataDelta``), every broker still
    listed."""
    registered = set(image.brokers)
    topics = tuple(
        UpdateMetadataTopicState(
            topic_name=t.name,
            topic_id=t.topic_id,
            partition_states=tuple(
                _partition_um(t.name, p, kraft_epoch, registered)
                for _, p in sorted(t.partitions.items())
            ),
        )
        for t in _topics_of(image, topics_only)
    )
    brokers = tuple(
        UpdateMetadataBroker(
            id=b.broker_id,
            endpoints=tuple(
                UpdateMetadataEndpoint(
                    port=int(e.port),
                    host=e.host,
                    listener=e.name,
                    security_protocol=int(e.security_protocol),
                )
                for e in b.endpoints
            ),
            rack=b.rack,
        )
        for _, b in sorted(image.brokers.items())
    )
    return UpdateMetadataRequest(
        controller_id=controller_id,
        is_k_raft_controller=True,
        type=FULL if topics_only is None else INCREMENTAL,
        controller_epoch=zk_controller_epoch,
        broker_epoch=broker_epoch,
        topic_states=topics,
        live_brokers=brokers,
    )


def _live_leaders(
    image: Image, leaders: Collection[int], listener: str
) -> list[LeaderAndIsrLiveLeader]:
    """The leaders' endpoints on the inter-broker listener (those that have one)."""
    live = []
    for leader in sorted(leaders):
        b = image.brokers.get(leader)
        endpoint = None if b is None else inter_broker_endpoint(b, listener)
        if endpoint is not None:
            live.append(
                LeaderAndIsrLiveLeader(broker_id=leader, host_name=endpoint[0], port=endpoint[1])
            )
    return live


def full_leader_and_isr(
    image: Image,
    broker_id: int,
    *,
    controller_id: int,
    zk_controller_epoch: int,
    kraft_epoch: int,
    listener: str,
    topics_only: Collection[str] | None = None,
) -> LeaderAndIsrRequest | None:
    """Every partition ``broker_id`` replicates (FULL: type 2), with the leaders' endpoints on
    the inter-broker listener; with ``topics_only``, INCREMENTAL (type 1) for those topics'
    partitions only, or None when it replicates none of them."""
    broker = image.brokers[broker_id]
    topics: list[LeaderAndIsrTopicState] = []
    leaders: set[int] = set()
    for t in _topics_of(image, topics_only):
        states = tuple(
            LeaderAndIsrPartitionState(
                topic_name=t.name,
                partition_index=p.partition_id,
                controller_epoch=kraft_epoch,
                leader=p.leader,
                leader_epoch=p.leader_epoch,
                isr=p.isr,
                partition_epoch=p.partition_epoch,
                replicas=p.replicas,
                adding_replicas=p.adding,
                removing_replicas=p.removing,
                is_new=True,
                leader_recovery_state=p.leader_recovery_state,
            )
            for _, p in sorted(t.partitions.items())
            if broker_id in p.replicas
        )
        if states:
            topics.append(
                LeaderAndIsrTopicState(
                    topic_name=t.name, topic_id=t.topic_id, partition_states=states
                )
            )
            leaders.update(s.leader for s in states if s.leader >= 0)
    if topics_only is not None and not topics:
        return None
    live = _live_leaders(image, leaders, listener)
    return LeaderAndIsrRequest(
        controller_id=controller_id,
        is_k_raft_controller=True,
        controller_epoch=zk_controller_epoch,
        broker_epoch=broker.epoch,
        type=FULL if topics_only is None else INCREMENTAL,
        topic_states=tuple(topics),
        live_leaders=tuple(live),
    )


def replica_map(image: Image, topics_only: Collection[str] | None = None) -> ReplicaMap:
    """Where every partition's replicas are (of ``topics_only``, when given), to compare
    with the next image."""
    return {
        (t.topic_id, p.partition_id): (t.name, p.replicas, p.leader_epoch)
        for t in _topics_of(image, topics_only)
        for p in t.partitions.values()
    }


def stop_replicas(
    before: ReplicaMap,
    after: ReplicaMap,
    broker_epochs: dict[int, int],
    *,
    controller_id: int,
    zk_controller_epoch: int,
) -> dict[int, StopReplicaRequest]:
    """StopReplica (DeletePartition) per broker of ``broker_epochs`` for every replica in
    ``before`` that ``after`` no longer has: deleted topics' replicas with epoch -2, replicas
    reassigned away with the partition's leader epoch."""
    drops: dict[int, dict[str, list[StopReplicaPartitionState]]] = {}
    for key, (name, replicas, _) in before.items():
        now = after.get(key)
        if now is None:
            gone, epoch = replicas, EPOCH_DURING_DELETE
        else:
            gone = tuple(b for b in replicas if b not in now[1])
            epoch = now[2]
        for broker in gone:
            if broker in broker_epochs:
                state = StopReplicaPartitionState(
                    partition_index=key[1], leader_epoch=epoch, delete_partition=True
                )
                drops.setdefault(broker, {}).setdefault(name, []).append(state)
    return {
        broker: StopReplicaRequest(
            controller_id=controller_id,
            is_k_raft_controller=True,
            controller_epoch=zk_controller_epoch,
            broker_epoch=broker_epochs[broker],
            topic_states=tuple(
                StopReplicaTopicState(
                    topic_name=name,
                    partition_states=tuple(sorted(states, key=lambda s: s.partition_index)),
                )
                for name, states in sorted(topics.items())
            ),
        )
        for broker, topics in sorted(drops.items())
    }
