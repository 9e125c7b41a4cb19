"""Log directories of brokers with several (JBOD, KIP-858; Kafka's ``ReplicationControlManager
.handleAssignReplicasToDirs`` / ``handleDirectoriesOffline`` and ``DirectoryId``).

Theory of operation. A broker registers the ids of its online log directories (from 3.7-IV2).
A new replica on a broker with exactly one directory is placed in it by the controller; on a
broker with several it is UNASSIGNED and the broker, having picked a directory, reports it
with AssignReplicasToDirs, which the controller records as the partition's ``Directories``
entry for that replica. When a directory fails, the broker's heartbeats list it in
``OfflineLogDirs`` and keep the broker unfenced: the controller takes the broker out of the
ISR and leadership of every partition whose replica lives there (its other directories serve
on) and re-registers the broker's remaining directories (BrokerRegistrationChangeRecord v2).
A replica whose directory is not online never leads (``partitions.dir_online``, in every
election ``PartitionChangeBuilder`` makes).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Container, Iterable

from kio.schema.errors import ErrorCode

from pykraft.controller import brokers as b
from pykraft.controller.errors import ApiError
from pykraft.controller.migration import MIGRATION
from pykraft.controller.partition_change import PartitionChangeBuilder
from pykraft.controller.partitions import (
    ELECTION_DEFAULT,
    ELECTION_UNCLEAN,
    UNASSIGNED_DIR,
    acceptor,
    dir_online,
    partition_version,
)
from pykraft.controller.result import RecordList
from pykraft.metadata import records as r
from pykraft.metadata.image import BrokerState, Image, PartitionState
from pykraft.metadata.versions import IBP_3_7_IV2
from pykraft.protocol import views

__all__ = ["assign_replicas_to_dirs", "offline_dir_records"]


def _partition_error(code: int, index: int) -> views.assign_replicas_to_dirs_response.PartitionData:
    return {"partition_index": index, "error_code": code}


def assign_replicas_to_dirs(
    image: Image, request: views.AssignReplicasToDirsRequest, unclean: Container[uuid.UUID]
) -> tuple[RecordList, views.AssignReplicasToDirsResponse]:
    """AssignReplicasToDirs v0: for each partition, the directory the broker put its
    replica in, as a PartitionChangeRecord (none when unchanged); a replica assigned to a
    directory the broker does not report online leaves the ISR and leadership. Errors per
    partition (UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER), or for
    the whole request (UNSUPPORTED_VERSION below 3.7-IV2, BROKER_ID_NOT_REGISTERED,
    STALE_BROKER_EPOCH)."""
    mv = image.metadata_version or 0
    broker_id = int(request.broker_id)
    if mv < IBP_3_7_IV2 or image.migration_state == MIGRATION:
        # During a ZooKeeper migration's dual write the assignments are not taken (a
        # departure, DECISIONS.md): their partition epochs would run ahead of the partition
        # state znodes the ZooKeeper-mode brokers update after a rollback.
        return [], {
            "throttle_time": 0,
            "error_code": ErrorCode.unsupported_version,
            "directories": (),
        }
    if broker_id not in image.brokers:
        return [], {
            "throttle_time": 0,
            "error_code": ErrorCode.broker_id_not_registered,
            "directories": (),
        }
    try:
        broker = b.check_broker_epoch(image, broker_id, int(request.broker_epoch))
    except ApiError as e:
        return [], {"throttle_time": 0, "error_code": e.code, "directories": ()}
    version = partition_version(mv)
    records: RecordList = []
    answer: list[views.assign_replicas_to_dirs_response.DirectoryData] = []
    for directory in request.directories:
        topics: list[views.assign_replicas_to_dirs_response.TopicData] = []
        for topic in directory.topics:
            results: list[views.assign_replicas_to_dirs_response.PartitionData] = []
            known = None if topic.topic_id is None else image.topics.get(topic.topic_id)
            for part in topic.partitions:
                index = int(part.partition_index)
                p = known.partitions.get(index) if known is not None else None
                if known is None:
                    results.append(_partition_error(ErrorCode.unknown_topic_id, index))
                elif p is None:
                    results.append(_partition_error(ErrorCode.unknown_topic_or_partition, index))
                elif broker_id not in p.replicas:
                    results.append(_partition_error(ErrorCode.not_leader_or_follower, index))
                else:
                    # kio reads Kafka's DirectoryId.UNASSIGNED (the zero UUID) as None.
                    target = directory.id_ or uuid.UUID(int=0)
                    records += _assign(image, broker, p, target, version, unclean)
                    results.append(_partition_error(ErrorCode.none, index))
            topics.append({"topic_id": topic.topic_id, "partitions": results})
        answer.append({"id_": directory.id_, "topics": topics})
    return records, {"throttle_time": 0, "error_code": ErrorCode.none, "directories": answer}


def _assign(
    image: Image,
    broker: BrokerState,
    p: PartitionState,
    directory: uuid.UUID,
    version: int,
    unclean: Container[uuid.UUID],
) -> RecordList:
    index = p.replicas.index(broker.broker_id)
    dirs = list(p.directories) or [UNASSIGNED_DIR] * len(p.replicas)
    if dirs[index] == directory:
        return []
    dirs[index] = directory
    records: RecordList = [
        (
            r.PartitionChangeRecord(
                partition_id=p.partition_id, topic_id=p.topic_id, directories=tuple(dirs)
            ),
            version,
        )
    ]
    if not dir_online(broker, directory):
        # As the record above leaves it (one more partition epoch).
        moved = dataclasses.replace(
            p, directories=tuple(dirs), partition_epoch=p.partition_epoch + 1
        )
        records += _out_of_isr(image, broker.broker_id, [moved], version, unclean)
    return records


def _out_of_isr(
    image: Image,
    broker_id: int,
    partitions: Iterable[PartitionState],
    version: int,
    unclean: Container[uuid.UUID],
) -> RecordList:
    out: RecordList = []
    for p in partitions:
        record = (
            PartitionChangeBuilder(image, p, version)
            .set_target_isr(tuple(x for x in p.isr if x != broker_id))
            .set_acceptable(acceptor(image, removing=broker_id))
            .set_election(ELECTION_UNCLEAN if p.topic_id in unclean else ELECTION_DEFAULT)
            .build()
        )
        if record is not None:
            out.append((record, version))
    return out


def offline_dir_records(
    image: Image, broker: BrokerState, offline: Iterable[uuid.UUID], unclean: Container[uuid.UUID]
) -> RecordList:
    """Heartbeat ``OfflineLogDirs`` (3.7-IV2+): for each newly offline directory, the
    partitions whose replica on ``broker`` lives there leave its ISR and leadership; then the
    broker's remaining directories (BrokerRegistrationChangeRecord v2). Nothing when no
    reported directory is still registered online."""
    mv = image.metadata_version or 0
    gone = {d for d in offline if d in broker.log_dirs}
    if mv < IBP_3_7_IV2 or not gone:
        return []
    broker_id = broker.broker_id
    affected = [
        p
        for p in image.partitions_near(broker_id)
        if broker_id in p.replicas
        and len(p.directories) == len(p.replicas)
        and p.directories[p.replicas.index(broker_id)] in gone
    ]
    version = partition_version(mv)
    records = _out_of_isr(image, broker_id, affected, version, unclean)
    records.append(
        (
            r.BrokerRegistrationChangeRecord(
                broker_id=broker_id,
                broker_epoch=broker.epoch,
                log_dirs=tuple(d for d in broker.log_dirs if d not in gone),
            ),
            2,
        )
    )
    return records
