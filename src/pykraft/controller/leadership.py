"""Partition leadership requests a metadata controller answers: AlterPartition (a leader's
ISR and recovery state, KIP-497/KIP-903) and ElectLeaders (preferred and unclean elections,
KIP-460). Pure functions of the image returning the PartitionChangeRecords and the response
fields, as Kafka's ``ReplicationControlManager`` does."""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from pykraft.controller import brokers as b
from pykraft.controller.errors import ApiError
from pykraft.controller.partition_change import PartitionChangeBuilder
from pykraft.controller.partitions import (
    ELECTION_PREFERRED,
    ELECTION_UNCLEAN,
    RECOVERED,
    RECOVERING,
    partition_version,
)
from pykraft.controller.result import RecordList
from pykraft.metadata import records as r
from pykraft.metadata.image import NO_LEADER, NO_LEADER_CHANGE, Image, PartitionState
from pykraft.protocol import views

__all__ = ["alter_partition", "elect_leaders"]


def alter_partition(
    image: Image,
    metadata_version: int,
    version: int,
    request: views.AlterPartitionRequest,
) -> tuple[RecordList, views.AlterPartitionResponse]:
    """AlterPartition (KIP-497, KIP-903): a leader's new ISR and recovery state, checked
    against the image; the records and the response."""
    broker_id = int(request.broker_id)
    try:
        b.check_broker_epoch(image, broker_id, int(request.broker_epoch))
    except ApiError as e:
        return [], {"throttle_time": 0, "error_code": e.code, "topics": ()}
    pversion = partition_version(metadata_version)
    records: RecordList = []
    topics: list[views.alter_partition_response.TopicData] = []
    for topic in request.topics:
        topic_state = None if topic.topic_id is None else image.topics.get(topic.topic_id)
        partitions: list[views.alter_partition_response.PartitionData] = []
        for part in topic.partitions:
            index = int(part.partition_index)
            if topic_state is None:
                partitions.append(
                    {"partition_index": index, "error_code": ErrorCode.unknown_topic_id}
                )
                continue
            outcome = _alter_one(image, broker_id, version, topic_state.topic_id, part, pversion)
            if isinstance(outcome, ApiError):
                partitions.append({"partition_index": index, "error_code": outcome.code})
                continue
            record, after = outcome
            if record is not None:
                records.append((record, pversion))
            if after.leader != broker_id:
                # The change (a completed reassignment) moved leadership off the sender:
                # the record is written, the old leader told to look again.
                partitions.append(
                    {"partition_index": index, "error_code": ErrorCode.new_leader_elected}
                )
                continue
            partitions.append(
                {
                    "partition_index": index,
                    "error_code": 0,
                    "leader_id": after.leader,
                    "leader_epoch": after.leader_epoch,
                    "isr": after.isr,
                    "leader_recovery_state": after.leader_recovery_state,
                    "partition_epoch": after.partition_epoch,
                }
            )
        topics.append({"topic_id": topic.topic_id, "partitions": partitions})
    return records, {"throttle_time": 0, "error_code": 0, "topics": topics}


def _alter_one(
    image: Image,
    broker_id: int,
    version: int,
    topic_id: uuid.UUID,
    part: views.alter_partition.PartitionData,
    pversion: int,
) -> ApiError | tuple[r.PartitionChangeRecord | None, _After]:
    p = image.partition(topic_id, int(part.partition_index))
    if p is None:
        return ApiError(ErrorCode.unknown_topic_or_partition)
    leader_epoch, partition_epoch = int(part.leader_epoch), int(part.partition_epoch)
    if leader_epoch > p.leader_epoch or partition_epoch > p.partition_epoch:
        return ApiError(ErrorCode.not_controller)
    if leader_epoch < p.leader_epoch:
        return ApiError(ErrorCode.fenced_leader_epoch)
    if p.leader != broker_id:
        return ApiError(ErrorCode.invalid_request)
    if partition_epoch < p.partition_epoch:
        return ApiError(ErrorCode.invalid_update_version)
    if version >= 3:
        with_epochs = getattr(part, "new_isr_with_epochs", ())  # v3+
        members = [(int(m.broker_id), int(m.broker_epoch)) for m in with_epochs]
    else:
        members = [(int(x), -1) for x in getattr(part, "new_isr", ())]  # up to v2
    new_isr = tuple(m for m, _ in members)
    recovery = int(part.leader_recovery_state)
    if not set(new_isr) <= set(p.replicas) or broker_id not in new_isr:
        return ApiError(ErrorCode.invalid_request)
    if len(set(new_isr)) != len(new_isr):
        return ApiError(ErrorCode.invalid_request)
    if recovery == RECOVERING and len(new_isr) > 1:
        return ApiError(ErrorCode.invalid_request)
    if p.leader_recovery_state == RECOVERED and recovery == RECOVERING:
        return ApiError(ErrorCode.invalid_request)
    for member, epoch in members:
        broker = image.brokers.get(member)
        if (
            broker is None
            or broker.fenced
            or broker.in_controlled_shutdown
            or (epoch != -1 and broker.epoch != epoch)
        ):
            return ApiError(ErrorCode.ineligible_replica)
    record = PartitionChangeBuilder(image, p, pversion).set_target_isr(new_isr).build()
    if record is not None and p.leader_recovery_state == RECOVERING and recovery == RECOVERED:
        record = dataclasses.replace(record, leader_recovery_state=RECOVERED)
    elif record is None and p.leader_recovery_state == RECOVERING and recovery == RECOVERED:
        record = r.PartitionChangeRecord(
            partition_id=p.partition_id, topic_id=p.topic_id, leader_recovery_state=RECOVERED
        )
    return record, _after(p, record)


def elect_leaders(
    image: Image, metadata_version: int, request: views.ElectLeadersRequest
) -> tuple[RecordList, views.ElectLeadersResponse]:
    """ElectLeaders (KIP-460): preferred or unclean elections of the partitions named (all
    that need one when none is named); the records and the response."""
    election = (
        ELECTION_UNCLEAN if int(getattr(request, "election_type", 0)) == 1 else ELECTION_PREFERRED
    )
    pversion = partition_version(metadata_version)
    wanted: list[tuple[str, list[int]]] = []
    if request.topic_partitions is None:
        for topic in image.topics.values():
            parts = [
                p.partition_id
                for p in topic.partitions.values()
                if (election == ELECTION_PREFERRED and p.replicas and p.leader != p.replicas[0])
                or (election == ELECTION_UNCLEAN and p.leader == NO_LEADER)
            ]
            if parts:
                wanted.append((topic.name, parts))
    else:
        wanted = [(tp.topic, [int(x) for x in tp.partitions]) for tp in request.topic_partitions]
    records: RecordList = []
    results: list[views.elect_leaders_response.ReplicaElectionResult] = []
    for name, parts in wanted:
        outcomes: list[views.elect_leaders_response.PartitionResult] = []
        for index in parts:
            error = _elect_one(image, name, index, election, pversion, records)
            outcomes.append(
                {
                    "partition_id": index,
                    "error_code": error.code if error else 0,
                    "error_message": error.message if error else None,
                }
            )
        results.append({"topic": name, "partition_result": outcomes})
    return records, {"throttle_time": 0, "error_code": 0, "replica_election_results": results}


def _elect_one(
    image: Image,
    name: str,
    index: int,
    election: str,
    pversion: int,
    records: RecordList,
) -> ApiError | None:
    topic_id = image.topics_by_name.get(name)
    p = None if topic_id is None else image.partition(topic_id, index)
    if p is None:
        return ApiError(
            ErrorCode.unknown_topic_or_partition,
            f"No such topic or partition as {name}-{index}",
        )
    if election == ELECTION_PREFERRED and p.replicas and p.leader == p.replicas[0]:
        return ApiError(ErrorCode.election_not_needed)
    if election == ELECTION_UNCLEAN and p.leader != NO_LEADER:
        return ApiError(ErrorCode.election_not_needed)
    record = PartitionChangeBuilder(image, p, pversion).set_election(election).build()
    if record is None or record.leader == NO_LEADER_CHANGE:
        if election == ELECTION_PREFERRED:
            return ApiError(ErrorCode.preferred_leader_not_available)
        return ApiError(ErrorCode.eligible_leaders_not_available)
    if election == ELECTION_PREFERRED and record.leader != p.replicas[0]:
        return ApiError(ErrorCode.preferred_leader_not_available)
    records.append((record, pversion))
    return None


@dataclass(frozen=True, slots=True)
class _After:
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    leader_recovery_state: int
    partition_epoch: int


def _after(p: PartitionState, record: r.PartitionChangeRecord | None) -> _After:
    """The partition as it will be once ``record`` is replayed."""
    if record is None:
        return _After(p.leader, p.leader_epoch, p.isr, p.leader_recovery_state, p.partition_epoch)
    leader, leader_epoch = p.leader, p.leader_epoch
    if record.leader != NO_LEADER_CHANGE:
        leader, leader_epoch = record.leader, leader_epoch + 1
    return _After(
        leader,
        leader_epoch,
        record.isr if record.isr is not None else p.isr,
        record.leader_recovery_state
        if record.leader_recovery_state != -1
        else p.leader_recovery_state,
        p.partition_epoch + 1,
    )
