"""The metadata controller (Kafka's ``QuorumController``): a deterministic state machine over
the metadata log. No I/O: the host (``pykraft.node.controller_host``) feeds it committed
records and requests, gives it the time and the offset its next records will get, appends
what it returns and answers once they commit.

Theory of operation. Every controller replays committed records into its :class:`Image`.
The raft leader becomes the *active* controller once its image holds everything committed
before its epoch began (``activate``); from then on it validates each request against the
image, returns the records the request produces together with the response, and the host
appends the records as one batch (atomic) and *applies them to the image at once*
(``apply``), so the next request sees them, before they commit. The response is sent once
everything appended up to then has committed. If leadership is lost with applied records
uncommitted, the host rebuilds the image from the committed log (``Image`` replays only
committed records on a standby).

Requests a controller answers only when active (everything in ``CONTROLLER_APIS``) get
NOT_CONTROLLER from a standby, which is what makes a Kafka broker look for the new active
controller.

Time and randomness are inputs (``now_ms``, the ``rng`` given at construction), so the
simulator replays any run from its seed.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from kio.schema.errors import ErrorCode

from pykraft.controller import brokers as b
from pykraft.controller import configs as cfgs
from pykraft.controller import migration, reassign, throttles
from pykraft.controller import topics as t
from pykraft.controller.config import ControllerConfig, RandomSource
from pykraft.controller.errors import ApiError
from pykraft.controller.image import (
    BROKER_RESOURCE,
    NO_LEADER,
    NO_LEADER_CHANGE,
    TOPIC_RESOURCE,
    Image,
)
from pykraft.controller.partitions import (
    ELECTION_PREFERRED,
    ELECTION_UNCLEAN,
    RECOVERED,
    RECOVERING,
    change_record,
    partition_version,
)
from pykraft.controller.steps import Limits
from pykraft.metadata import records as r
from pykraft.metadata.versions import (
    DEFAULT_METADATA_VERSION,
    FEATURES,
    METADATA_VERSION,
    MINIMUM_METADATA_VERSION,
)
from pykraft.protocol.apis import ApiKey

__all__ = [
    "CONTROLLER_API_VERSIONS",
    "METADATA_TOPIC",
    "READ_APIS",
    "SUPPORTED_FEATURES",
    "Context",
    "QuorumController",
    "Result",
    "error_fields",
]

TRANSACTIONS_MV: Final = 13  # 3.6-IV1: Begin/End/AbortTransactionRecord
CONTROLLER_REGISTRATION_MV: Final = 15
# The metadata.version range pykraft's controller writes records for: up to 4.0-IV3 (25).
MAX_METADATA_VERSION: Final = DEFAULT_METADATA_VERSION.level
SUPPORTED_FEATURES: Final = {
    METADATA_VERSION: (MINIMUM_METADATA_VERSION.level, MAX_METADATA_VERSION),
    **FEATURES,
}
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3

# The APIs only the active controller answers, and the versions pykraft serves (Kafka
# 4.3.1's controller ranges, where kio has them).
CONTROLLER_API_VERSIONS: Final = {
    ApiKey.CREATE_TOPICS: (2, 7),
    ApiKey.DELETE_TOPICS: (1, 6),
    ApiKey.DESCRIBE_CONFIGS: (1, 4),
    ApiKey.ALTER_CONFIGS: (0, 2),
    ApiKey.CREATE_PARTITIONS: (0, 3),
    ApiKey.ELECT_LEADERS: (0, 2),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ApiKey.ALTER_PARTITION: (2, 3),
    ApiKey.UPDATE_FEATURES: (0, 2),
    ApiKey.BROKER_REGISTRATION: (0, 4),
    ApiKey.BROKER_HEARTBEAT: (0, 2),
    ApiKey.UNREGISTER_BROKER: (0, 0),
    ApiKey.ALLOCATE_PRODUCER_IDS: (0, 0),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 1),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 1),  # v1: KIP-435, pykraft's (protocol/ext.py)
}
METADATA_TOPIC: Final = "__cluster_metadata"  # the quorum's own partition: KIP-642 (raft/)


# Answered by any controller from its image (Kafka's read events), not only the active one.
READ_APIS: Final = frozenset({ApiKey.DESCRIBE_CONFIGS})


@dataclass(frozen=True, slots=True)
class Context:
    """What the host tells the controller with each input."""

    now_ms: int
    next_offset: int  # the offset the first returned record will be written at
    kraft_version: int = 0
    # Supported feature ranges of the controllers (by id), for UpdateFeatures.
    controller_features: dict[int, dict[str, tuple[int, int]]] = field(default_factory=dict)


@dataclass(slots=True)
class Result:
    """Records to append (one batch) and the response fields, sent once they commit.
    ``on_written(last_offset)`` runs after the append (Kafka's controlled-shutdown offset)."""

    records: list[tuple[Any, int]]
    response: dict[str, Any]
    on_written: Callable[[int], None] | None = None


def _ms(value: Any) -> int:
    """Milliseconds of a duration field (kio gives ``timedelta``s, plain values are ints)."""
    if hasattr(value, "total_seconds"):
        return int(value.total_seconds() * 1000)
    return int(value)


class QuorumController:
    """Invariant: ``active`` only on the raft leader, after ``activate``; then ``image``
    includes every record returned so far (applied at append)."""

    def __init__(
        self, config: ControllerConfig, *, node_id: int, cluster_id: str, rng: RandomSource
    ) -> None:
        self.config = config
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.rng = rng
        self.image = Image()
        self.sessions = b.BrokerSessions(config.broker_session_timeout_ms)
        self.active = False
        self.last_write_ms = 0
        # Reassignment work (KIP-435 steps, managed throttles) may be due: set by records
        # that can change it, cleared by the tick that looks.
        self._moves_due = False
        self._handlers: dict[int, Callable[[int, Any, Context], Result]] = {
            ApiKey.BROKER_REGISTRATION: self._broker_registration,
            ApiKey.BROKER_HEARTBEAT: self._broker_heartbeat,
            ApiKey.CREATE_TOPICS: self._create_topics,
            ApiKey.DELETE_TOPICS: self._delete_topics,
            ApiKey.CREATE_PARTITIONS: self._create_partitions,
            ApiKey.ALTER_PARTITION: self._alter_partition,
            ApiKey.ALLOCATE_PRODUCER_IDS: self._allocate_producer_ids,
            ApiKey.INCREMENTAL_ALTER_CONFIGS: self._incremental_alter_configs,
            ApiKey.ALTER_CONFIGS: self._alter_configs,
            ApiKey.DESCRIBE_CONFIGS: self._describe_configs,
            ApiKey.ELECT_LEADERS: self._elect_leaders,
            ApiKey.UNREGISTER_BROKER: self._unregister_broker,
            ApiKey.UPDATE_FEATURES: self._update_features,
            ApiKey.ALTER_PARTITION_REASSIGNMENTS: self._alter_reassignments,
            ApiKey.LIST_PARTITION_REASSIGNMENTS: self._list_reassignments,
        }

    # -- the log ---------------------------------------------------------------------------

    def replay(self, record: Any, version: int, offset: int) -> None:
        """A committed record (standby), or one this controller wrote (active)."""
        self.image.replay(record, version, offset)
        if isinstance(record, _MOVE_RECORDS):
            self._moves_due = True

    def reset(self) -> None:
        """Forget the image (before replaying a snapshot and the log again)."""
        self.image = Image()
        self.active = False

    @property
    def metadata_version(self) -> int:
        return self.image.metadata_version or MINIMUM_METADATA_VERSION.level

    # -- activation ------------------------------------------------------------------------

    def activate(self, now_ms: int, bootstrap: dict[str, int] | None) -> list[tuple[Any, int]]:
        """Become the active controller; returns the activation records: an abort of a
        transaction left open, and on a log without metadata.version the bootstrap features
        (metadata.version first) in a transaction (Kafka's ActivationRecordsGenerator)."""
        self.active = True
        self.last_write_ms = now_ms
        self._moves_due = True
        self.sessions.reset(self.image, now_ms)
        records: list[tuple[Any, int]] = []
        if self.image.in_transaction:
            records.append((r.AbortTransactionRecord(reason="Controller failover"), 0))
        empty = self.image.metadata_version is None
        if not empty:
            # KIP-866: refuse a migration of a cluster born in KRaft; finalize one migrated.
            records += migration.activation_records(
                self.image,
                enabled=self.config.zk_migration_enabled,
                empty_log=False,
                metadata_version=self.metadata_version,
            )
        if empty:
            features = dict(bootstrap or {METADATA_VERSION: self.config.bootstrap_metadata_version})
            level = features.pop(METADATA_VERSION)
            body: list[tuple[Any, int]] = [
                (r.FeatureLevelRecord(name=METADATA_VERSION, feature_level=level), 0)
            ]
            body += [
                (r.FeatureLevelRecord(name=name, feature_level=value), 0)
                for name, value in sorted(features.items())
                if value
            ]
            body += migration.activation_records(
                self.image,
                enabled=self.config.zk_migration_enabled,
                empty_log=True,
                metadata_version=level,
            )
            if level >= TRANSACTIONS_MV:
                body = [
                    (r.BeginTransactionRecord(name="Bootstrap records"), 0),
                    *body,
                    (r.EndTransactionRecord(), 0),
                ]
            records.extend(body)
        return records

    def deactivate(self) -> None:
        self.active = False

    # -- time ------------------------------------------------------------------------------

    def tick(self, ctx: Context) -> list[tuple[Any, int]]:
        """Periodic work of the active controller: fence brokers whose session expired; a
        NoOpRecord after ``metadata.max.idle.interval.ms`` without a write."""
        if not self.active:
            return []
        records: list[tuple[Any, int]] = []
        unclean = self._unclean()
        for broker_id in self.sessions.expired(self.image, ctx.now_ms):
            broker = self.image.brokers[broker_id]
            records.extend(b.fence_records(self.image, broker, unclean))
            break  # one per tick, as Kafka: the next sees the image with this one applied
        if not records and self._moves_due:
            self._moves_due = False
            records.extend(self._reassignment_work())
        idle = self.config.metadata_max_idle_interval_ms
        if not records and idle > 0 and ctx.now_ms - self.last_write_ms >= idle:
            records.append((r.NoOpRecord(), 0))
        return records

    def next_deadline_ms(self) -> int | None:
        if not self.active:
            return None
        deadlines = []
        idle = self.config.metadata_max_idle_interval_ms
        if idle > 0:
            deadlines.append(self.last_write_ms + idle)
        expiry = self.sessions.next_expiry_ms(self.image)
        if expiry is not None:
            deadlines.append(expiry + 1)
        if self._moves_due:
            deadlines.append(0)
        return min(deadlines) if deadlines else None

    def wrote(self, now_ms: int) -> None:
        self.last_write_ms = now_ms

    # -- requests --------------------------------------------------------------------------

    def handle(self, api_key: int, api_version: int, request: Any, ctx: Context) -> Result:
        """The records and response of one request; raises ApiError for a request refused
        as a whole (the host answers it with that error)."""
        if not self.active and api_key not in READ_APIS:
            raise ApiError(ErrorCode.not_controller, "This controller is not the active controller")
        handler = self._handlers.get(api_key)
        if handler is None:
            raise ApiError(ErrorCode.unsupported_version, f"API {api_key} is not served")
        if api_key not in READ_APIS:
            migration.check_write(self.image, api_key)
        return handler(api_version, request, ctx)

    def _unclean(self) -> set[uuid.UUID]:
        return b.unclean_topics(self.image, self.config.unclean_leader_election)

    # BrokerRegistration / BrokerHeartbeat / UnregisterBroker ------------------------------

    def _broker_registration(self, version: int, request: Any, ctx: Context) -> Result:
        try:
            records, epoch = b.register_broker(
                self.image,
                self.sessions,
                request,
                cluster_id=self.cluster_id,
                kraft_version=ctx.kraft_version,
                next_offset=ctx.next_offset,
                now_ms=ctx.now_ms,
                unclean=self._unclean(),
                zk_migration=self.config.zk_migration_enabled,
                inter_broker_listener=self.config.inter_broker_listener_name,
            )
        except ApiError as e:
            return Result([], {"error_code": e.code, "broker_epoch": -1})
        return Result(records, {"error_code": 0, "broker_epoch": epoch})

    def _broker_heartbeat(self, version: int, request: Any, ctx: Context) -> Result:
        broker = self.image.brokers.get(int(request.broker_id))
        register_offset = broker.register_offset if broker is not None else 0
        try:
            beat = b.heartbeat(
                self.image,
                self.sessions,
                request,
                register_offset=register_offset,
                now_ms=ctx.now_ms,
                unclean=self._unclean(),
            )
        except ApiError as e:
            return Result([], {"error_code": e.code, "is_fenced": True})
        on_written = None
        if beat.next_state == b.CONTROLLED_SHUTDOWN:
            broker_id = int(request.broker_id)

            def on_written(last_offset: int) -> None:
                self.sessions.shutdown_offset.setdefault(broker_id, last_offset)

            if not beat.records:
                self.sessions.shutdown_offset.setdefault(broker_id, ctx.next_offset - 1)
        return Result(
            beat.records,
            {
                "error_code": 0,
                "is_caught_up": beat.caught_up,
                "is_fenced": beat.fenced,
                "should_shut_down": beat.should_shut_down,
            },
            on_written,
        )

    def _unregister_broker(self, version: int, request: Any, ctx: Context) -> Result:
        try:
            records = b.unregister_broker(
                self.image, self.sessions, int(request.broker_id), self._unclean()
            )
        except ApiError as e:
            return Result([], {"error_code": e.code, "error_message": e.message})
        return Result(records, {"error_code": 0})

    # Topics -------------------------------------------------------------------------------

    def _create_topics(self, version: int, request: Any, ctx: Context) -> Result:
        validate_only = bool(getattr(request, "validate_only", False))
        pversion = partition_version(self.metadata_version)
        names = [topic.name for topic in request.topics]
        duplicates = {n for n in names if names.count(n) > 1}
        records: list[tuple[Any, int]] = []
        results = []
        for topic in request.topics:
            name = topic.name
            if name in duplicates:
                results.append(
                    _topic_error(name, ApiError(ErrorCode.invalid_request, "Duplicate topic name."))
                )
                continue
            try:
                plan = t.plan_topic(
                    self.image,
                    self.config,
                    self.rng,
                    name=name,
                    num_partitions=int(topic.num_partitions),
                    replication_factor=int(topic.replication_factor),
                    assignments=[
                        (int(a.partition_index), tuple(int(x) for x in a.broker_ids))
                        for a in topic.assignments
                    ],
                    configs={c.name: c.value for c in topic.configs},
                    version=pversion,
                )
            except ApiError as e:
                results.append(_topic_error(name, e))
                continue
            if not validate_only:
                records.extend(plan.records)
            configs = cfgs.describe_configs(
                _with_topic(self.image, name, plan.configs), [_TopicResource(name)]
            )[0]["configs"]
            results.append(
                {
                    "name": name,
                    "topic_id": plan.topic_id if not validate_only else uuid.UUID(int=0),
                    "error_code": 0,
                    "error_message": None,
                    "num_partitions": plan.num_partitions,
                    "replication_factor": plan.replication_factor,
                    "configs": [
                        {k: v for k, v in c.items() if k not in ("is_default", "config_type")}
                        for c in configs
                    ],
                }
            )
        return Result(records, {"throttle_time": 0, "topics": results})

    def _delete_topics(self, version: int, request: Any, ctx: Context) -> Result:
        wanted: list[tuple[str | None, uuid.UUID | None]] = []
        if version >= 6:
            wanted = [(topic.name, topic.topic_id) for topic in request.topics]
        else:
            wanted = [(name, None) for name in request.topic_names]
        records: list[tuple[Any, int]] = []
        results = []
        deleted: set[uuid.UUID] = set()
        for name, topic_id in wanted:
            has_id = topic_id is not None and topic_id.int != 0
            entry: dict[str, Any] = {"name": name, "topic_id": topic_id or uuid.UUID(int=0)}
            if has_id and name is not None:
                entry.update(
                    error_code=ErrorCode.invalid_request,
                    error_message="Either topic name or topic ID must be specified, not both",
                )
            elif has_id:
                assert topic_id is not None
                topic = self.image.topics.get(topic_id)
                if topic is None:
                    entry.update(
                        error_code=ErrorCode.unknown_topic_id,
                        error_message=f"No topic with ID {topic_id}",
                    )
                else:
                    entry.update(name=topic.name, error_code=0)
            else:
                found = self.image.topics_by_name.get(name or "")
                if found is None:
                    entry.update(
                        error_code=ErrorCode.unknown_topic_or_partition,
                        error_message="This server does not host this topic-partition.",
                    )
                else:
                    entry.update(topic_id=found, error_code=0)
                    topic_id = found
            if entry["error_code"] == 0:
                tid = entry["topic_id"]
                if tid not in deleted:
                    deleted.add(tid)
                    records.extend(t.delete_topic(self.image, tid))
            results.append(entry)
        return Result(records, {"throttle_time": 0, "responses": results})

    def _create_partitions(self, version: int, request: Any, ctx: Context) -> Result:
        validate_only = bool(request.validate_only)
        pversion = partition_version(self.metadata_version)
        names = [topic.name for topic in request.topics]
        records: list[tuple[Any, int]] = []
        results = []
        for topic in request.topics:
            try:
                if names.count(topic.name) > 1:
                    raise ApiError(ErrorCode.invalid_request, "Duplicate topic name.")
                assignments = (
                    None
                    if topic.assignments is None
                    else [tuple(int(x) for x in a.broker_ids) for a in topic.assignments]
                )
                new = t.new_partitions(
                    self.image,
                    self.rng,
                    name=topic.name,
                    count=int(topic.count),
                    assignments=assignments,
                    version=pversion,
                )
                if not validate_only:
                    records.extend(new)
                results.append({"name": topic.name, "error_code": 0, "error_message": None})
            except ApiError as e:
                results.append(
                    {"name": topic.name, "error_code": e.code, "error_message": e.message}
                )
        return Result(records, {"throttle_time": 0, "results": results})

    # AlterPartition -----------------------------------------------------------------------

    def _alter_partition(self, version: int, request: Any, ctx: Context) -> Result:
        broker_id = int(request.broker_id)
        try:
            b.check_broker_epoch(self.image, broker_id, int(request.broker_epoch))
        except ApiError as e:
            return Result([], {"throttle_time": 0, "error_code": e.code, "topics": ()})
        pversion = partition_version(self.metadata_version)
        records: list[tuple[Any, int]] = []
        topics = []
        for topic in request.topics:
            topic_state = self.image.topics.get(topic.topic_id)
            partitions = []
            for part in topic.partitions:
                index = int(part.partition_index)
                if topic_state is None:
                    partitions.append(
                        {"partition_index": index, "error_code": ErrorCode.unknown_topic_id}
                    )
                    continue
                outcome = self._alter_one(broker_id, version, topic_state.topic_id, part, pversion)
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
        return Result(records, {"throttle_time": 0, "error_code": 0, "topics": topics})

    def _alter_one(
        self, broker_id: int, version: int, topic_id: uuid.UUID, part: Any, pversion: int
    ) -> ApiError | tuple[r.PartitionChangeRecord | None, Any]:
        p = self.image.partition(topic_id, int(part.partition_index))
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
            members = [(int(m.broker_id), int(m.broker_epoch)) for m in part.new_isr_with_epochs]
        else:
            members = [(int(x), -1) for x in part.new_isr]
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
            broker = self.image.brokers.get(member)
            if (
                broker is None
                or broker.fenced
                or broker.in_controlled_shutdown
                or (epoch != -1 and broker.epoch != epoch)
            ):
                return ApiError(ErrorCode.ineligible_replica)
        record = change_record(self.image, p, isr=new_isr, version=pversion)
        if record is not None and p.leader_recovery_state == RECOVERING and recovery == RECOVERED:
            record = _replace(record, leader_recovery_state=RECOVERED)
        elif record is None and p.leader_recovery_state == RECOVERING and recovery == RECOVERED:
            record = r.PartitionChangeRecord(
                partition_id=p.partition_id, topic_id=p.topic_id, leader_recovery_state=RECOVERED
            )
        return record, _after(p, record)

    # AllocateProducerIds ------------------------------------------------------------------

    def _allocate_producer_ids(self, version: int, request: Any, ctx: Context) -> Result:
        broker_id, epoch = int(request.broker_id), int(request.broker_epoch)
        try:
            b.check_broker_epoch(self.image, broker_id, epoch)
        except ApiError as e:
            return Result(
                [],
                {
                    "throttle_time": 0,
                    "error_code": e.code,
                    "producer_id_start": -1,
                    "producer_id_len": 0,
                },
            )
        start = self.image.next_producer_id
        size = self.config.producer_id_block_size
        if start > (1 << 63) - 1 - size:
            return Result([], {"throttle_time": 0, "error_code": ErrorCode.unknown_server_error})
        record = r.ProducerIdsRecord(
            broker_id=broker_id, broker_epoch=epoch, next_producer_id=start + size
        )
        return Result(
            [(record, 0)],
            {
                "throttle_time": 0,
                "error_code": 0,
                "producer_id_start": start,
                "producer_id_len": size,
            },
        )

    # Configs ------------------------------------------------------------------------------

    def _incremental_alter_configs(self, version: int, request: Any, ctx: Context) -> Result:
        records, results = cfgs.incremental_alter_configs(
            self.image, request.resources, bool(request.validate_only)
        )
        return Result(self._unthrottle(records), {"throttle_time": 0, "responses": results})

    def _alter_configs(self, version: int, request: Any, ctx: Context) -> Result:
        records, results = cfgs.alter_configs(
            self.image, request.resources, bool(request.validate_only)
        )
        return Result(self._unthrottle(records), {"throttle_time": 0, "responses": results})

    def _unthrottle(self, records: list[tuple[Any, int]]) -> list[tuple[Any, int]]:
        """``records`` and, when they delete the managed-throttle policy, the removal of
        every throttle it set (``throttles``)."""
        deleted = any(
            isinstance(rec, r.ConfigRecord)
            and (rec.resource_type, rec.resource_name, rec.name)
            == (BROKER_RESOURCE, "", throttles.THROTTLE_POLICY)
            and rec.value is None
            for rec, _ in records
        )
        if deleted and throttles.policy(self.image) is not None:
            return records + list(throttles.reconcile(self.image, None))
        return records

    # Reassignment work between requests (KIP-435 steps, managed throttles) ----------------

    def limits(self) -> Limits:
        """The KIP-435 limits: dynamic cluster configs (the cluster default broker
        resource), read afresh for each batch."""
        return Limits.from_configs(self.image.configs.get((BROKER_RESOURCE, ""), {}))

    def _min_insync(self, topic: str) -> int:
        value = self.image.configs.get((TOPIC_RESOURCE, topic), {}).get(
            "min.insync.replicas"
        ) or self.image.configs.get((BROKER_RESOURCE, ""), {}).get("min.insync.replicas", "1")
        try:
            return int(value)
        except ValueError:
            return 1

    def _reassignment_work(self) -> list[tuple[Any, int]]:
        """The next KIP-435 steps; when there are none, and the policy is set, the throttle
        configs that make the throttles match the moves in flight (the records of a step
        make the work due again: the next tick sets its throttles, on the image with the
        step applied)."""
        records: list[tuple[Any, int]] = []
        if self.image.stepping:
            records.extend(
                reassign.step_records(
                    self.image,
                    self.limits(),
                    min_insync_of=self._min_insync,
                    version=partition_version(self.metadata_version),
                )
            )
        rate = throttles.policy(self.image)
        if not records and rate is not None:
            records.extend(throttles.reconcile(self.image, rate))
        return records

    def _describe_configs(self, version: int, request: Any, ctx: Context) -> Result:
        return Result(
            [],
            {"throttle_time": 0, "results": cfgs.describe_configs(self.image, request.resources)},
        )

    # ElectLeaders -------------------------------------------------------------------------

    def _elect_leaders(self, version: int, request: Any, ctx: Context) -> Result:
        election = (
            ELECTION_UNCLEAN
            if int(getattr(request, "election_type", 0)) == 1
            else ELECTION_PREFERRED
        )
        pversion = partition_version(self.metadata_version)
        wanted: list[tuple[str, list[int]]] = []
        if request.topic_partitions is None:
            for topic in self.image.topics.values():
                parts = [
                    p.partition_id
                    for p in topic.partitions.values()
                    if (election == ELECTION_PREFERRED and p.replicas and p.leader != p.replicas[0])
                    or (election == ELECTION_UNCLEAN and p.leader == NO_LEADER)
                ]
                if parts:
                    wanted.append((topic.name, parts))
        else:
            wanted = [
                (tp.topic, [int(x) for x in tp.partitions]) for tp in request.topic_partitions
            ]
        records: list[tuple[Any, int]] = []
        results = []
        for name, parts in wanted:
            outcomes = []
            for index in parts:
                error = self._elect_one(name, index, election, pversion, records)
                outcomes.append(
                    {
                        "partition_id": index,
                        "error_code": error.code if error else 0,
                        "error_message": error.message if error else None,
                    }
                )
            results.append({"topic": name, "partition_result": outcomes})
        return Result(
            records, {"throttle_time": 0, "error_code": 0, "replica_election_results": results}
        )

    def _elect_one(
        self, name: str, index: int, election: str, pversion: int, records: list[tuple[Any, int]]
    ) -> ApiError | None:
        topic_id = self.image.topics_by_name.get(name)
        p = None if topic_id is None else self.image.partition(topic_id, index)
        if p is None:
            return ApiError(
                ErrorCode.unknown_topic_or_partition,
                f"No such topic or partition as {name}-{index}",
            )
        if election == ELECTION_PREFERRED and p.replicas and p.leader == p.replicas[0]:
            return ApiError(ErrorCode.election_not_needed)
        if election == ELECTION_UNCLEAN and p.leader != NO_LEADER:
            return ApiError(ErrorCode.election_not_needed)
        record = change_record(self.image, p, election=election, version=pversion)
        if record is None or record.leader == NO_LEADER_CHANGE:
            if election == ELECTION_PREFERRED:
                return ApiError(ErrorCode.preferred_leader_not_available)
            return ApiError(ErrorCode.eligible_leaders_not_available)
        if election == ELECTION_PREFERRED and record.leader != p.replicas[0]:
            return ApiError(ErrorCode.preferred_leader_not_available)
        records.append((record, pversion))
        return None

    # Reassignment (KIP-455) --------------------------------------------------------------

    def _alter_reassignments(self, version: int, request: Any, ctx: Context) -> Result:
        unclean = self._unclean()
        records, responses = reassign.alter_reassignments(
            self.image,
            request,
            version,
            unclean_of=lambda topic_id: topic_id in unclean,
            partition_version=partition_version(self.metadata_version),
            skip=lambda name: name == METADATA_TOPIC,
            limits=self.limits(),
        )
        return Result(
            records,
            {"throttle_time": 0, "error_code": 0, "error_message": None, "responses": responses},
        )

    def _list_reassignments(self, version: int, request: Any, ctx: Context) -> Result:
        return Result(
            [],
            {
                "throttle_time": 0,
                "error_code": 0,
                "error_message": None,
                **reassign.list_reassignments(self.image, request),
            },
        )

    # UpdateFeatures -----------------------------------------------------------------------

    def _update_features(self, version: int, request: Any, ctx: Context) -> Result:
        validate_only = bool(getattr(request, "validate_only", False))
        records: list[tuple[Any, int]] = []
        results = []
        top: ApiError | None = None
        for update in request.feature_updates:
            try:
                record = self._feature_update(version, update, ctx)
                if record is not None:
                    records.append((record, 0))
                results.append({"feature": update.feature, "error_code": 0, "error_message": None})
            except ApiError as e:
                top = top or e
                results.append(
                    {"feature": update.feature, "error_code": e.code, "error_message": e.message}
                )
        if top is not None:
            # Kafka applies all or nothing.
            records = []
        response: dict[str, Any] = {
            "throttle_time": 0,
            "error_code": 0,
            "error_message": None,
            "results": results,
        }
        if top is not None and version >= 2:
            response.update(error_code=top.code, error_message=top.message, results=())
        if validate_only:
            records = []
        return Result(records, response)

    def _feature_update(
        self, version: int, update: Any, ctx: Context
    ) -> r.FeatureLevelRecord | None:
        name = update.feature
        level = int(update.max_version_level)
        if version == 0:
            upgrade_type = SAFE_DOWNGRADE if getattr(update, "allow_downgrade", False) else UPGRADE
        else:
            upgrade_type = int(update.upgrade_type)
        if name not in SUPPORTED_FEATURES:
            raise ApiError(
                ErrorCode.invalid_update_version,
                f"Invalid update version {level} for feature {name}. The controller does not "
                "support the given feature.",
            )
        current = self.image.features.get(name, 0)
        if upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
            raise ApiError(ErrorCode.invalid_update_version, f"Unknown upgrade type {upgrade_type}")
        if level < current:
            if upgrade_type == UPGRADE:
                raise ApiError(
                    ErrorCode.invalid_update_version,
                    f"Invalid update version {level} for feature {name}. Can't downgrade the "
                    "version of this feature without setting the upgrade type to either safe or "
                    "unsafe downgrade.",
                )
            if name == METADATA_VERSION:
                raise ApiError(
                    ErrorCode.invalid_update_version,
                    f"Invalid metadata.version {level}. Unsafe metadata.version downgrades are "
                    "not supported.",
                )
        if name == METADATA_VERSION and level < MINIMUM_METADATA_VERSION.level:
            raise ApiError(
                ErrorCode.invalid_update_version,
                f"Invalid metadata.version {level}. The minimum is {MINIMUM_METADATA_VERSION.level}.",
            )
        low, high = SUPPORTED_FEATURES[name]
        if not (level == 0 or low <= level <= high):
            raise ApiError(
                ErrorCode.invalid_update_version,
                f"Invalid update version {level} for feature {name}. Local controller "
                f"{self.node_id} only supports versions {low}-{high}",
            )
        for broker in self.image.brokers.values():
            blow, bhigh = broker.features.get(name, (0, 0))
            if level != 0 and not blow <= level <= bhigh:
                raise ApiError(
                    ErrorCode.invalid_update_version,
                    f"Invalid update version {level} for feature {name}. Broker "
                    f"{broker.broker_id} only supports versions {blow}-{bhigh}",
                )
        for controller_id, features in ctx.controller_features.items():
            if name in features:
                clow, chigh = features[name]
                if level != 0 and not clow <= level <= chigh:
                    raise ApiError(
                        ErrorCode.invalid_update_version,
                        f"Invalid update version {level} for feature {name}. Controller "
                        f"{controller_id} only supports versions {clow}-{chigh}",
                    )
        if level == current:
            return None
        return r.FeatureLevelRecord(name=name, feature_level=level)


# -- helpers ------------------------------------------------------------------------------


def error_fields(
    api_key: int, request: Any, code: ErrorCode, message: str | None
) -> dict[str, Any]:
    """The response fields refusing every item of ``request`` with ``code`` (Kafka's
    ``getErrorResponse``: APIs without a top-level error code carry it per item, which is
    where a broker looks for NOT_CONTROLLER)."""
    fields: dict[str, Any] = {"throttle_time": 0, "error_code": code, "error_message": message}
    if api_key == ApiKey.CREATE_TOPICS:
        fields["topics"] = [_topic_error(t.name, ApiError(code, message)) for t in request.topics]
    elif api_key == ApiKey.DELETE_TOPICS:
        if hasattr(request, "topics"):
            items = [(t.name, t.topic_id) for t in request.topics]
        else:
            items = [(n, None) for n in request.topic_names]
        fields["responses"] = [
            {
                "name": n,
                "topic_id": i or uuid.UUID(int=0),
                "error_code": code,
                "error_message": message,
            }
            for n, i in items
        ]
    elif api_key == ApiKey.CREATE_PARTITIONS:
        fields["results"] = [
            {"name": t.name, "error_code": code, "error_message": message} for t in request.topics
        ]
    elif api_key in (ApiKey.INCREMENTAL_ALTER_CONFIGS, ApiKey.ALTER_CONFIGS):
        fields["responses"] = [
            {
                "error_code": code,
                "error_message": message,
                "resource_type": r_.resource_type,
                "resource_name": r_.resource_name,
            }
            for r_ in request.resources
        ]
    elif api_key == ApiKey.DESCRIBE_CONFIGS:
        fields["results"] = [
            {
                "error_code": code,
                "error_message": message,
                "resource_type": r_.resource_type,
                "resource_name": r_.resource_name,
                "configs": (),
            }
            for r_ in request.resources
        ]
    return fields


@dataclass(frozen=True, slots=True)
class _TopicResource:
    resource_name: str
    resource_type: int = TOPIC_RESOURCE
    configuration_keys: None = None


def _with_topic(image: Image, name: str, configs: dict[str, str]) -> Image:
    """A view of ``image`` in which topic ``name`` exists with ``configs`` (for describing
    the configs of a topic being created)."""
    view = Image()
    view.topics_by_name = {name: uuid.UUID(int=0)}
    if configs:
        view.configs = {(TOPIC_RESOURCE, name): dict(configs)}
    return view


def _topic_error(name: str, error: ApiError) -> dict[str, Any]:
    return {
        "name": name,
        "topic_id": uuid.UUID(int=0),
        "error_code": error.code,
        "error_message": error.message,
        "num_partitions": -1,
        "replication_factor": -1,
        "configs": None,
    }


def _replace(record: r.PartitionChangeRecord, **changes: Any) -> r.PartitionChangeRecord:
    return dataclasses.replace(record, **changes)


@dataclass(frozen=True, slots=True)
class _After:
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    leader_recovery_state: int
    partition_epoch: int


def _after(p: Any, record: r.PartitionChangeRecord | None) -> _After:
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


# Records after which reassignment work may be due.
_MOVE_RECORDS: Final = (
    r.PartitionChangeRecord,
    r.PartitionRecord,
    r.ConfigRecord,
    r.RemoveTopicRecord,
    r.UnfenceBrokerRecord,
    r.BrokerRegistrationChangeRecord,
    r.RegisterBrokerRecord,
)
