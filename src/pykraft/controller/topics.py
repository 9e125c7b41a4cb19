"""Topics on the controller: CreateTopics, DeleteTopics, CreatePartitions (Kafka's
``ReplicationControlManager``), their validation in Kafka's order with Kafka's errors, and
replica placement (``StripedReplicaPlacer``).

Placement: replicas go to *usable* brokers (registered, unfenced, not shutting down, not every
log directory cordoned: KIP-1066). The
brokers are listed rack by rack, interleaved (one broker of each rack in turn), so that
consecutive entries sit on different racks; partition ``p`` takes ``rf`` consecutive entries
starting at ``start + p`` (``start`` random per topic, so leaders spread across topics). The
leader of a new partition is its first active replica, the ISR every active replica.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from typing import Final

from kio.schema.errors import ErrorCode

from pykraft.controller.config import ControllerConfig, RandomSource
from pykraft.controller.configs import TOPIC_DEFAULTS, validate_topic_config
from pykraft.controller.errors import ApiError
from pykraft.controller.log_config import validate_log_config
from pykraft.controller.partitions import active, directory_of
from pykraft.controller.result import RecordList
from pykraft.metadata.image import (
    NO_LEADER,
    TOPIC_RESOURCE,
    Image,
    has_collision_chars,
    normalized_topic_name,
)
from pykraft.metadata.records import ConfigRecord, PartitionRecord, RemoveTopicRecord, TopicRecord

__all__ = [
    "TopicPlan",
    "delete_topic",
    "new_partitions",
    "plan_topic",
    "validate_topic_name",
]

MAX_NAME_LENGTH: Final = 249
_LEGAL: Final = re.compile(r"^[a-zA-Z0-9._-]+$")


@dataclass(slots=True)
class TopicPlan:
    """The records that create one topic, and what the response says of it."""

    name: str
    topic_id: uuid.UUID
    num_partitions: int
    replication_factor: int
    configs: dict[str, str]
    records: RecordList = field(default_factory=list)


def validate_topic_name(name: str) -> None:
    if not name:
        raise ApiError(
            ErrorCode.invalid_topic_exception, "Topic name is illegal, it can't be empty"
        )
    if name in (".", ".."):
        raise ApiError(ErrorCode.invalid_topic_exception, 'Topic name cannot be "." or ".."')
    if len(name) > MAX_NAME_LENGTH:
        raise ApiError(
            ErrorCode.invalid_topic_exception,
            f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters, "
            f"topic name: {name}",
        )
    if not _LEGAL.match(name):
        raise ApiError(
            ErrorCode.invalid_topic_exception,
            f'Topic name "{name}" is illegal, it contains a character other than ASCII '
            "alphanumerics, '.', '_' and '-'",
        )


def _collides(image: Image, name: str) -> str | None:
    """An existing topic whose name differs from ``name`` only in '.' against '_' (Kafka's
    ``topicsWithCollisionChars`` lookup); a name with neither collides with nothing."""
    if not has_collision_chars(name):
        return None
    twins = image.topics_image.colliding_names.get(normalized_topic_name(name), ())
    return min((other for other in twins if other != name), default=None)


def usable_brokers(image: Image) -> list[int]:
    """Brokers new replicas may go to (Kafka's ``usableBrokers``): active, and with a log
    directory that is not cordoned (KIP-1066)."""
    return sorted(
        b for b, state in image.brokers.items() if state.active and state.has_uncordoned_dirs
    )


def _striped(image: Image, brokers: list[int]) -> list[int]:
    """Brokers rack by rack, interleaved."""
    by_rack: dict[str, list[int]] = {}
    for b in brokers:
        by_rack.setdefault(image.brokers[b].rack or "", []).append(b)
    racks = [by_rack[k] for k in sorted(by_rack)]
    out = []
    for i in range(max((len(r) for r in racks), default=0)):
        for rack in racks:
            if i < len(rack):
                out.append(rack[i])
    return out


def place(
    image: Image, partitions: range, replication_factor: int, rng: RandomSource
) -> list[tuple[int, ...]]:
    """Replicas of each partition in ``partitions`` (see the module docstring)."""
    brokers = usable_brokers(image)
    if replication_factor > len(brokers):
        raise ApiError(
            ErrorCode.invalid_replication_factor,
            f"Unable to replicate the partition {replication_factor} time(s): The target "
            f"replication factor of {replication_factor} cannot be reached because only "
            f"{len(brokers)} broker(s) are registered.",
        )
    ring = _striped(image, brokers)
    start = rng.randrange(len(ring))
    return [
        tuple(ring[(start + p + i) % len(ring)] for i in range(replication_factor))
        for p in partitions
    ]


def partition_records(
    image: Image,
    topic_id: uuid.UUID,
    assignment: dict[int, tuple[int, ...]],
    version: int,
) -> RecordList:
    out: RecordList = []
    for partition_id, replicas in sorted(assignment.items()):
        isr = tuple(b for b in replicas if active(image, b))
        leader = isr[0] if isr else NO_LEADER
        out.append(
            (
                PartitionRecord(
                    partition_id=partition_id,
                    topic_id=topic_id,
                    replicas=replicas,
                    isr=isr or replicas,
                    leader=leader,
                    leader_epoch=0,
                    partition_epoch=0,
                    directories=tuple(directory_of(image, b) for b in replicas)
                    if version >= 1
                    else (),
                ),
                version,
            )
        )
    return out


def _manual(
    image: Image, assignments: list[tuple[int, tuple[int, ...]]], first: int
) -> dict[int, tuple[int, ...]]:
    out: dict[int, tuple[int, ...]] = {}
    sizes = set()
    for index, brokers in assignments:
        if index in out:
            raise ApiError(
                ErrorCode.invalid_replica_assignment, f"Partition {index} is assigned twice"
            )
        if not brokers:
            raise ApiError(
                ErrorCode.invalid_replica_assignment, f"Partition {index} has no replicas"
            )
        if len(set(brokers)) != len(brokers):
            raise ApiError(
                ErrorCode.invalid_replica_assignment,
                f"The manual partition assignment includes a partition with duplicate broker IDs: {list(brokers)}",
            )
        for b in brokers:
            if b not in image.brokers:
                raise ApiError(
                    ErrorCode.invalid_replica_assignment,
                    f"The manual partition assignment includes broker {b}, but no such broker is registered.",
                )
        sizes.add(len(brokers))
        out[index] = tuple(brokers)
    if sorted(out) != list(range(first, first + len(out))):
        raise ApiError(
            ErrorCode.invalid_replica_assignment,
            f"Partitions must be numbered consecutively from {first}",
        )
    if len(sizes) > 1:
        raise ApiError(
            ErrorCode.invalid_replica_assignment,
            "All partitions in the manual partition assignment must have the same number of replicas.",
        )
    if not any(active(image, b) for brokers in out.values() for b in brokers):
        raise ApiError(
            ErrorCode.invalid_replica_assignment,
            "All brokers specified in the manual partition assignment are fenced or in controlled shutdown.",
        )
    return out


def plan_topic(
    image: Image,
    config: ControllerConfig,
    rng: RandomSource,
    *,
    name: str,
    num_partitions: int,
    replication_factor: int,
    assignments: list[tuple[int, tuple[int, ...]]],
    configs: dict[str, str | None],
    version: int,
) -> TopicPlan:
    """Validate one CreateTopics entry against ``image`` (Kafka's order) and build its
    records; raises :class:`ApiError`."""
    validate_topic_name(name)
    if name in image.topics_by_name:
        raise ApiError(ErrorCode.topic_already_exists, f"Topic '{name}' already exists.")
    collision = _collides(image, name)
    if collision is not None:
        raise ApiError(
            ErrorCode.invalid_topic_exception,
            f"Topic '{name}' collides with existing topic: {collision}",
        )
    assignment = _assignment(image, config, rng, num_partitions, replication_factor, assignments)
    num_partitions = len(assignment)
    replication_factor = len(next(iter(assignment.values())))
    kept: dict[str, str] = {}
    for key, value in configs.items():
        validate_topic_config(key, value)
        assert value is not None
        kept[key] = value
    validate_log_config({}, kept, TOPIC_DEFAULTS, config.remote_log_storage_system_enable)
    topic_id = new_topic_id(image, rng)
    plan = TopicPlan(name, topic_id, num_partitions, replication_factor, kept)
    plan.records.append((TopicRecord(name=name, topic_id=topic_id), 0))
    for key, value in sorted(kept.items()):
        plan.records.append(
            (
                ConfigRecord(
                    resource_type=TOPIC_RESOURCE, resource_name=name, name=key, value=value
                ),
                0,
            )
        )
    plan.records.extend(partition_records(image, topic_id, assignment, version))
    return plan


def _assignment(
    image: Image,
    config: ControllerConfig,
    rng: RandomSource,
    num_partitions: int,
    replication_factor: int,
    assignments: list[tuple[int, tuple[int, ...]]],
) -> dict[int, tuple[int, ...]]:
    """The partitions' replicas: the manual assignment, or placed (with the controller's
    num.partitions and default.replication.factor for -1)."""
    if assignments:
        if num_partitions != -1 or replication_factor != -1:
            raise ApiError(
                ErrorCode.invalid_request,
                "A manual partition assignment was specified, but numPartitions or "
                "replicationFactor was not set to -1.",
            )
        return _manual(image, assignments, 0)
    if num_partitions == -1:
        num_partitions = config.num_partitions
    if replication_factor == -1:
        replication_factor = config.default_replication_factor
    if num_partitions <= 0:
        raise ApiError(
            ErrorCode.invalid_partitions,
            "Number of partitions was set to an invalid non-positive value.",
        )
    if replication_factor <= 0:
        raise ApiError(
            ErrorCode.invalid_replication_factor,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        )
    return dict(enumerate(place(image, range(num_partitions), replication_factor, rng)))


def new_topic_id(image: Image, rng: RandomSource) -> uuid.UUID:
    """A random topic id that is not reserved (Kafka's Uuid.randomUuid) nor taken."""
    while True:
        value = uuid.UUID(int=rng.getrandbits(128))
        if value.int > 100 and value not in image.topics:
            return value


def delete_topic(image: Image, topic_id: uuid.UUID) -> RecordList:
    return [(RemoveTopicRecord(topic_id=topic_id), 0)]


def new_partitions(
    image: Image,
    rng: RandomSource,
    *,
    name: str,
    count: int,
    assignments: list[tuple[int, ...]] | None,
    version: int,
) -> RecordList:
    """CreatePartitions for one topic: records of the partitions from the current count to
    ``count``; raises :class:`ApiError`."""
    topic_id = image.topics_by_name.get(name)
    if topic_id is None:
        raise ApiError(ErrorCode.unknown_topic_or_partition, f"The topic '{name}' does not exist.")
    topic = image.topics[topic_id]
    current = len(topic.partitions)
    if count < current:
        raise ApiError(
            ErrorCode.invalid_partitions,
            f"The topic {name} currently has {current} partition(s); {count} would not be an increase.",
        )
    if count == current:
        raise ApiError(ErrorCode.invalid_partitions, f"Topic already has {current} partition(s).")
    replication_factor = (
        len(next(iter(topic.partitions.values())).replicas) if topic.partitions else 1
    )
    new = range(current, count)
    if assignments is not None:
        if len(assignments) != len(new):
            raise ApiError(
                ErrorCode.invalid_replica_assignment,
                f"Attempted to add {len(new)} additional partition(s), but only "
                f"{len(assignments)} assignment(s) were specified.",
            )
        assignment = _manual(image, list(zip(new, assignments, strict=True)), current)
    else:
        assignment = dict(zip(new, place(image, new, replication_factor, rng), strict=True))
    return partition_records(image, topic_id, assignment, version)
