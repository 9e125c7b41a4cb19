"""Partition reassignment on the controller: KIP-455's AlterPartitionReassignments and
ListPartitionReassignments as Kafka's ``ReplicationControlManager`` implements them.

Starting a reassignment of a partition from its current replicas C to a target T writes one
PartitionChangeRecord with Replicas = T followed by the removing replicas (C - T, ascending),
AddingReplicas = T - C and RemovingReplicas = C - T (ascending). It completes in the record
that makes the ISR (less the removing replicas) cover every target replica
(``PartitionChangeBuilder``): at once for a pure reorder, or for a removal whose remaining
replicas are in sync; else later, when the leader reports the new replicas in sync through
AlterPartition (if that moves leadership off the leader, it is answered NEW_LEADER_ELECTED).
Re-targeting a moving partition computes against its current replica list, the union, as
Kafka does. Cancelling (null replicas) reverts to the current replicas less the adding ones,
the ISR less the adding ones; if no in-sync replica would be left it needs an unclean election
(allowed only where the topic allows it). Every removal bumps the leader epoch.

Errors, per partition (one failure does not stop the others): UNKNOWN_TOPIC_OR_PARTITION,
INVALID_REPLICA_ASSIGNMENT (empty target, an unregistered broker, a broker twice, a cancel
needing an unclean election), NO_REASSIGNMENT_IN_PROGRESS (cancel of a partition not moving),
INVALID_REPLICATION_FACTOR (v1, AllowReplicationFactorChange false, the size would change).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from kio.schema.errors import ErrorCode

from pykraft.controller.errors import ApiError
from pykraft.controller.partition_change import PartitionChangeBuilder
from pykraft.controller.partitions import (
    ELECTION_DEFAULT,
    ELECTION_PREFERRED,
    ELECTION_UNCLEAN,
    acceptor,
)
from pykraft.controller.result import RecordList
from pykraft.controller.steps import (
    KIP_455,
    Action,
    InFlight,
    Limits,
    moves_leader,
    next_step,
    plan_batch,
)
from pykraft.metadata.image import NO_LEADER, Image, PartitionState
from pykraft.protocol import views

__all__ = ["alter_reassignments", "list_reassignments", "reassignment_records", "step_records"]


def _validate_target(image: Image, name: str, index: int, target: tuple[int, ...]) -> None:
    where = f"The manual partition assignment for {name}:{index}"
    if not target:
        raise ApiError(
            ErrorCode.invalid_replica_assignment, f"{where} includes an empty replica list."
        )
    seen: set[int] = set()
    for b in target:
        if b not in image.brokers:
            raise ApiError(
                ErrorCode.invalid_replica_assignment,
                f"{where} includes broker {b}, but no such broker is registered.",
            )
        if b in seen:
            raise ApiError(
                ErrorCode.invalid_replica_assignment,
                f"{where} includes the broker {b} more than once.",
            )
        seen.add(b)


def _revert(
    image: Image,
    p: PartitionState,
    *,
    unclean: bool,
    version: int,
    name: str,
    final_target: tuple[int, ...] | None,
) -> RecordList:
    """The record reverting the step in flight of ``p`` (its replicas less the adding ones)
    and stating ``final_target``; raises ApiError when that needs an unclean election the
    topic does not allow."""
    if not p.adding and not p.removing:
        record = PartitionChangeBuilder(image, p, version).set_final_target(final_target).build()
        return [] if record is None else [(record, version)]
    replicas = tuple(r for r in p.replicas if r not in p.adding)
    isr = tuple(b for b in p.isr if b not in p.adding)
    election = ELECTION_UNCLEAN if unclean else ELECTION_DEFAULT
    if not isr:
        if not unclean:
            raise ApiError(
                ErrorCode.invalid_replica_assignment,
                f"Unable to revert partition assignment for {name}:{p.partition_id} "
                "because it would require an unclean leader election.",
            )
        isr = replicas[:1]
    record = (
        PartitionChangeBuilder(image, p, version)
        .set_target_isr(isr)
        .set_target_replicas(replicas)
        .set_target_adding(())
        .set_target_removing(())
        .set_election(election)
        .set_final_target(final_target)
        .build()
    )
    return [] if record is None else [(record, version)]


def reassignment_records(
    image: Image,
    p: PartitionState,
    target: tuple[int, ...] | None,
    *,
    unclean: bool,
    version: int,
    name: str,
    limits: Limits = KIP_455,
) -> RecordList:
    """The records that start (``target``) or cancel (None) the reassignment of ``p``;
    raises ApiError.

    With the default limits this is KIP-455 exactly (one step, Kafka's records). With any
    limit set it is a KIP-435 reassignment: the step in flight, if any, is reverted and the
    target is recorded as the final target; the controller's scheduler (``step_records``)
    starts the steps as the limits allow. Cancelling one reverts the step in flight only: "original" replicas are those
    before that step, the steps already completed stay."""
    stepping = p.final_target is not None
    if target is None:
        if not p.adding and not p.removing and not stepping:
            raise ApiError(ErrorCode.no_reassignment_in_progress, None)
        return _revert(
            image,
            p,
            unclean=unclean,
            version=version,
            name=name,
            final_target=() if stepping else None,
        )
    _validate_target(image, name, p.partition_id, target)
    if target == p.final_target or (target == p.replicas and not p.adding and not p.removing):
        return []  # resubmitted, or already there: nothing to write
    if limits != KIP_455:
        # Limits set: every reassignment goes through the scheduler, which batches them.
        return _revert(image, p, unclean=unclean, version=version, name=name, final_target=target)
    return _start(image, p, target, version=version, final_target=() if stepping else None)


def _start(
    image: Image,
    p: PartitionState,
    target: tuple[int, ...],
    *,
    version: int,
    final_target: tuple[int, ...] | None = None,
) -> RecordList:
    """Kafka's record starting a reassignment of ``p`` to ``target`` from its current
    replica list."""
    current = p.replicas
    removing = tuple(sorted(r for r in current if r not in target))
    adding = tuple(sorted(r for r in target if r not in current))
    replicas = target + removing
    builder = PartitionChangeBuilder(image, p, version).set_final_target(final_target)
    if replicas != current:
        builder.set_target_replicas(replicas)
    if adding:
        builder.set_target_adding(adding)
    if removing:
        builder.set_target_removing(removing)
    record = builder.build()
    return [] if record is None else [(record, version)]


def step_records(
    image: Image,
    limits: Limits,
    *,
    min_insync_of: Callable[[str], int],
    version: int,
) -> RecordList:
    """The next batch of KIP-435 steps (``steps.plan_batch``): for each partition with a
    final target and no step in flight, a preferred election when its new preferred leader
    is in sync but not leading (also once the replicas reached the final target: the plan
    ends in that election's record), else its next step (``steps.next_step``), which waits
    while the partition is offline or its new replicas' brokers are (the seed's "wait until
    ... there is at least one replica in ISR"); a partition that reached its final target
    with its preferred leader leading has the target cleared."""
    candidates: list[Action] = []
    records: RecordList = []
    acceptable = acceptor(image)
    for topic_id, index in sorted(image.stepping):
        p = image.partition(topic_id, index)
        final = None if p is None else p.final_target
        if p is None or final is None:
            continue
        if p.adding or p.removing:
            continue
        key = (topic_id, index)
        first = p.replicas[0]
        wants_election = (
            first == final[0] and p.leader != first and first in p.isr and acceptable(first)
        )
        if p.replicas == final and not wants_election:
            record = PartitionChangeBuilder(image, p, version).set_final_target(()).build()
            records.extend([] if record is None else [(record, version)])
            continue
        if wants_election:
            candidates.append(Action(key, p.replicas, True, elect=True))
            continue
        if p.leader == NO_LEADER or not p.isr:
            continue  # offline: no step can complete
        name = image.topics[topic_id].name
        target = next_step(
            p.replicas,
            final,
            in_sync=p.isr,
            max_replicas=limits.replicas,
            min_insync=min_insync_of(name),
        )
        new = [b for b in target if b not in p.replicas]
        if not new and target == p.replicas:
            continue
        if not all(acceptable(b) for b in new):
            continue  # a target broker is offline: the step waits for it
        candidates.append(
            Action(key, target, moves_leader(p.replicas, target, p.leader), adds=len(new))
        )
    for action in plan_batch(candidates, _in_flight(image), limits):
        records.extend(_perform(image, action, version))
    return records


def _perform(image: Image, action: Action, version: int) -> RecordList:
    """The records of one planned action: a preferred election (ending the plan when the
    replicas reached the final target) or the start of a step."""
    topic, index = action.key
    assert isinstance(topic, uuid.UUID)
    p = image.partition(topic, index)
    assert p is not None
    if not action.elect:
        return _start(image, p, action.target, version=version)
    done = () if p.replicas == p.final_target else None
    builder = PartitionChangeBuilder(image, p, version).set_election(ELECTION_PREFERRED)
    record = builder.set_final_target(done).build()
    return [] if record is None else [(record, version)]


def _in_flight(image: Image) -> InFlight:
    """What the moves in flight use of the KIP-435 limits: every moving partition takes a
    partition slot and its adding replicas count as replica movements; a stepped move whose
    step moves its leader (drops it, or changes the preferred leader) is a leader movement
    until it completes."""
    leaders = 0
    replicas = 0
    for topic_id, index in image.moving:
        p = image.partition(topic_id, index)
        if p is None:
            continue
        replicas += len(p.adding)
        if (topic_id, index) in image.stepping and (
            p.leader in p.removing or (bool(p.replicas) and p.replicas[0] != p.leader)
        ):
            leaders += 1
    return InFlight(len(image.moving), leaders, replicas)


def _refused_topic(
    topic: views.alter_partition_reassignments.ReassignableTopic,
) -> views.alter_partition_reassignments_response.ReassignableTopicResponse:
    """The answer for a topic this part of the node does not reassign (``skip``)."""
    message = f"{topic.name} is reassigned on its own (the controllers' voter set, KIP-642)"
    return {
        "name": topic.name,
        "partitions": [
            {
                "partition_index": int(part.partition_index),
                "error_code": ErrorCode.invalid_request,
                "error_message": message,
            }
            for part in topic.partitions
        ],
    }


def _move(
    image: Image,
    name: str,
    part: views.alter_partition_reassignments.ReassignablePartition,
    allow_rf_change: bool,
) -> tuple[PartitionState, tuple[int, ...] | None]:
    """The partition a request entry names and its target replicas (None: cancel), or the
    ApiError Kafka answers: an unknown partition, or a replication factor change the
    request does not allow (KIP-860)."""
    index = int(part.partition_index)
    topic_id = image.topics_by_name.get(name)
    p = None if topic_id is None else image.partition(topic_id, index)
    if p is None:
        raise ApiError(
            ErrorCode.unknown_topic_or_partition, f"Unable to find partition {name}:{index}."
        )
    target = None if part.replicas is None else tuple(int(b) for b in part.replicas)
    current_rf = len(p.replicas) - len(p.adding)
    if target is not None and not allow_rf_change and len(target) != current_rf:
        raise ApiError(
            ErrorCode.invalid_replication_factor,
            f"The replication factor of {name}:{index} would change from "
            f"{current_rf} to {len(target)}.",
        )
    return p, target


def alter_reassignments(
    image: Image,
    request: views.AlterPartitionReassignmentsRequest,
    version: int,
    *,
    unclean_of: Callable[[uuid.UUID], bool],
    partition_version: int,
    skip: Callable[[str], bool] = lambda name: False,
    limits: Limits = KIP_455,
) -> tuple[
    RecordList, list[views.alter_partition_reassignments_response.ReassignableTopicResponse]
]:
    """(records, per-topic responses) of an AlterPartitionReassignments request; topics for
    which ``skip(name)`` holds are refused with INVALID_REQUEST (another part of the node
    answers them when they come alone)."""
    allow_rf_change = bool(getattr(request, "allow_replication_factor_change", True))
    records: RecordList = []
    responses: list[views.alter_partition_reassignments_response.ReassignableTopicResponse] = []
    named: set[tuple[uuid.UUID, int]] = set()
    for topic in request.topics:
        if skip(topic.name):
            responses.append(_refused_topic(topic))
            continue
        results: list[
            views.alter_partition_reassignments_response.ReassignablePartitionResponse
        ] = []
        for part in topic.partitions:
            index = int(part.partition_index)
            try:
                p, target = _move(image, topic.name, part, allow_rf_change)
                # Each partition sees the records of the ones before it only through
                # distinct partitions: a partition named twice is refused.
                if (p.topic_id, index) in named:
                    raise ApiError(ErrorCode.invalid_request, f"{topic.name}:{index} named twice.")
                written = reassignment_records(
                    image,
                    p,
                    target,
                    unclean=unclean_of(p.topic_id),
                    version=partition_version,
                    name=topic.name,
                    limits=limits,
                )
                if written:
                    named.add((p.topic_id, index))
                records.extend(written)
                results.append({"partition_index": index, "error_code": 0, "error_message": None})
            except ApiError as e:
                results.append(
                    {"partition_index": index, "error_code": e.code, "error_message": e.message}
                )
        responses.append({"name": topic.name, "partitions": results})
    return records, responses


def list_reassignments(
    image: Image, request: views.ListPartitionReassignmentsRequest
) -> views.list_partition_reassignments_response.ListPartitionReassignmentsResponse:
    """ListPartitionReassignments (SPEC F4): every moving partition (topics null), or those of the
    named topics and partitions; anything unknown or not moving is left out. ``topics`` is
    KIP-455's list (v0+, with each final target in order from v1); ``current_batch`` (v1,
    KIP-435) the step in flight of each partition: the replicas it started from and its
    target."""
    wanted: dict[str, set[int]] = {}
    if request.topics is None:
        # The partitions the image indexes as moving or stepping (Kafka's
        # ``reassigningTopics``), not a walk over every partition.
        for moving_id, pid in image.moving | image.stepping:
            wanted.setdefault(image.topics[moving_id].name, set()).add(pid)
    else:
        for t in request.topics:
            wanted.setdefault(t.name, set()).update(int(i) for i in t.partition_indexes)
    topics: list[views.list_partition_reassignments_response.OngoingTopicReassignment] = []
    batch: list[views.list_partition_reassignments_response.CurrentTopicReassignmentBatch] = []
    for name, indexes in sorted(wanted.items()):
        topic_id = image.topics_by_name.get(name)
        if topic_id is None:
            continue
        partitions = image.topics[topic_id].partitions
        selected = [
            p
            for pid in sorted(indexes)
            if (p := partitions.get(pid)) is not None
            and (p.adding or p.removing or p.final_target is not None)
        ]
        if selected:
            topics.append({"name": name, "partitions": [_ongoing(p) for p in selected]})
        steps: list[
            views.list_partition_reassignments_response.CurrentPartitionReassignmentBatch
        ] = [
            {
                "partition_id": p.partition_id,
                "current_brokers": tuple(b for b in p.replicas if b not in p.adding),
                "target_brokers": tuple(b for b in p.replicas if b not in p.removing),
            }
            for p in selected
            if p.adding or p.removing
        ]
        if steps:
            batch.append({"name": name, "partitions": steps})
    return {"topics": topics, "current_batch": batch}


def _ongoing(
    p: PartitionState,
) -> views.list_partition_reassignments_response.OngoingPartitionReassignment:
    """A moving partition as KIP-455 lists it. For a KIP-435 reassignment, adding and
    removing are relative to the final target (what Kafka's tools compare with the plan
    they submitted): the replicas still to add (in flight or in later steps) and the
    replicas still to remove."""
    final = p.final_target
    if final is None:
        adding, removing = p.adding, p.removing
    else:
        adding = tuple(b for b in final if b in p.adding or b not in p.replicas)
        removing = tuple(b for b in p.replicas if b not in final or b in p.removing)
    return {
        "partition_index": p.partition_id,
        "replicas": p.replicas,
        "adding_replicas": adding,
        "removing_replicas": removing,
        "final_replicas": final or tuple(b for b in p.replicas if b not in p.removing),
    }
