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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from kio.schema.errors import ErrorCode

from pykraft.controller import (
    acls,
    authorization,
    directories,
    features,
    leadership,
    migration,
    mutation_quota,
    quotas,
    reassign,
    scram,
    throttles,
    tokens,
    topic_requests,
)
from pykraft.controller import brokers as b
from pykraft.controller import configs as cfgs
from pykraft.controller import heartbeats as hb
from pykraft.controller.activation import activation_records
from pykraft.controller.authorization import Caller
from pykraft.controller.config import ControllerConfig, RandomSource
from pykraft.controller.errors import CONTROLLER_ID_NOT_REGISTERED, ApiError, error_fields
from pykraft.controller.features import SUPPORTED_FEATURES
from pykraft.controller.partitions import (
    partition_version,
)
from pykraft.controller.periodic import (
    PeriodicTasks,
    balance_partition_leaders,
    elect_unclean_leaders,
)
from pykraft.controller.policy_checks import alter_config_check
from pykraft.controller.result import RecordList, Response, Result
from pykraft.controller.sessions import BrokerSessions
from pykraft.controller.steps import Limits
from pykraft.metadata import records as r
from pykraft.metadata.image import (
    BROKER_RESOURCE,
    TOPIC_RESOURCE,
    Image,
)
from pykraft.metadata.versions import (
    IBP_4_4_IV2,
    MINIMUM_METADATA_VERSION,
)
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.controller_apis import READ_APIS, STRICT_FROM

__all__ = [
    "METADATA_TOPIC",
    "SUPPORTED_FEATURES",
    "Context",
    "QuorumController",
    "error_fields",
]


METADATA_TOPIC: Final = "__cluster_metadata"
# The caller of a request that came with none (the simulator, internal writes): forwarded,
# so the connection rules of the token APIs do not apply.
INTERNAL_CALLER: Final = Caller(
    "User:ANONYMOUS", "127.0.0.1", forwarded=True
)  # the quorum's own partition: KIP-642 (raft/)


@dataclass(frozen=True, slots=True)
class Context:
    """What the host tells the controller with each input."""

    now_ms: int
    next_offset: int  # the offset the first returned record will be written at
    kraft_version: int = 0
    # Supported feature ranges of the controllers (by id), for UpdateFeatures.
    controller_features: dict[int, dict[str, tuple[int, int]]] = field(default_factory=dict)
    # Who makes the request (authorization.py); None: an internal input, not authorized.
    caller: Caller | None = None
    # Epoch milliseconds at ``now_ms`` (timestamps users read: delegation tokens); the
    # simulator's clock starts at 0.
    wall_clock_ms: int = 0


def _forwarded(ctx: Context) -> bool:
    """The request came through a broker (an Envelope), or is internal."""
    return ctx.caller is None or ctx.caller.forwarded


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
        self.sessions = BrokerSessions(config.broker_session_timeout_ms)
        self.active = False
        self.last_write_ms = 0
        # Reassignment work (KIP-435 steps, managed throttles) may be due: set by records
        # that can change it, cleared by the tick that looks.
        self._moves_due = False
        self._handlers: dict[int, Callable[[int, Any, Context], Result[Response]]] = {
            ApiKey.BROKER_REGISTRATION: self._broker_registration,
            ApiKey.BROKER_HEARTBEAT: self._broker_heartbeat,
            ApiKey.CREATE_TOPICS: self._create_topics,
            ApiKey.DELETE_TOPICS: self._delete_topics,
            ApiKey.CREATE_PARTITIONS: self._create_partitions,
            ApiKey.ALTER_PARTITION: self._alter_partition,
            ApiKey.ASSIGN_REPLICAS_TO_DIRS: self._assign_replicas_to_dirs,
            ApiKey.ALLOCATE_PRODUCER_IDS: self._allocate_producer_ids,
            ApiKey.INCREMENTAL_ALTER_CONFIGS: self._incremental_alter_configs,
            ApiKey.ALTER_CONFIGS: self._alter_configs,
            ApiKey.DESCRIBE_CONFIGS: self._describe_configs,
            ApiKey.ELECT_LEADERS: self._elect_leaders,
            ApiKey.UNREGISTER_BROKER: self._unregister_broker,
            ApiKey.UNREGISTER_CONTROLLER: self._unregister_controller,
            ApiKey.UPDATE_FEATURES: self._update_features,
            ApiKey.ALTER_PARTITION_REASSIGNMENTS: self._alter_reassignments,
            ApiKey.LIST_PARTITION_REASSIGNMENTS: self._list_reassignments,
            ApiKey.CREATE_ACLS: self._create_acls,
            ApiKey.DELETE_ACLS: self._delete_acls,
            ApiKey.DESCRIBE_ACLS: self._describe_acls,
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS: self._alter_scram,
            ApiKey.ALTER_CLIENT_QUOTAS: self._alter_client_quotas,
            ApiKey.CREATE_DELEGATION_TOKEN: self._create_token,
            ApiKey.RENEW_DELEGATION_TOKEN: self._renew_token,
            ApiKey.EXPIRE_DELEGATION_TOKEN: self._expire_token,
        }
        self._last_token_sweep_ms = 0
        self.periodic = self._periodic_tasks()
        self.mutation_quotas = mutation_quota.MutationQuotas()  # KIP-599, active only
        # authorizer.class.name: Kafka's StandardAuthorizer over the image's ACLs.
        self.authorizer = (
            acls.StandardAuthorizer(config.super_users, config.allow_everyone_if_no_acl_found)
            if config.authorizer
            else None
        )

    # -- the log ---------------------------------------------------------------------------

    def replay(self, record: Any, version: int, offset: int, value: bytes | None = None) -> None:
        """A committed record (standby), or one this controller wrote (active); ``value``:
        its encoding, when the caller has it (``Image.replay``)."""
        self.image.replay(record, version, offset, value)
        if isinstance(record, _MOVE_RECORDS):
            self._moves_due = True

    def replay_encoded(self, values: Sequence[bytes], offset: int) -> list[str]:
        """Decode and replay each encoded record at ``offset`` (a snapshot's records all
        take the offset before its end); what failed to decode or replay, one message each,
        the others applied (``Image.replay_encoded``). Reassignment work is looked for
        after, as after a PartitionRecord."""
        errors = self.image.replay_encoded(values, offset)
        self._moves_due = True
        return errors

    def reset(self) -> None:
        """Forget the image (before replaying a snapshot and the log again)."""
        self.image = Image()
        self.active = False

    @property
    def metadata_version(self) -> int:
        return self.image.metadata_version or MINIMUM_METADATA_VERSION.level

    # -- activation ------------------------------------------------------------------------

    def activate(
        self,
        now_ms: int,
        bootstrap: dict[str, int] | None,
        bootstrap_records: Sequence[Any] = (),
    ) -> RecordList:
        """Become the active controller; returns the activation records: an abort of a
        transaction left open, and on a log without metadata.version the bootstrap features
        (metadata.version first) and the bootstrap checkpoint's other records (SCRAM users
        of ``storage format --add-scram``) in a transaction (Kafka's
        ActivationRecordsGenerator)."""
        self.active = True
        self.last_write_ms = now_ms
        self._moves_due = True
        self.sessions.reset(self.image, now_ms)
        self.periodic.activate(now_ms)
        return activation_records(
            self.image, self.config, bootstrap=bootstrap, bootstrap_records=bootstrap_records
        )

    def deactivate(self) -> None:
        self.active = False

    # -- time ------------------------------------------------------------------------------

    def tick(self, ctx: Context) -> RecordList:
        """Periodic work of the active controller: fence brokers whose session expired,
        expire delegation tokens, KIP-435 steps, the periodic elections (``periodic.py``);
        a NoOpRecord after ``metadata.max.idle.interval.ms`` without a write."""
        if not self.active:
            return []
        records: RecordList = []
        unclean = self._unclean()
        for broker_id in self.sessions.expired(self.image, ctx.now_ms):
            broker = self.image.brokers[broker_id]
            records.extend(b.fence_records(self.image, broker, unclean))
            break  # one per tick, as Kafka: the next sees the image with this one applied
        interval = self.config.delegation_token_expiry_check_interval_ms
        if not records and ctx.now_ms - self._last_token_sweep_ms >= interval:
            self._last_token_sweep_ms = ctx.now_ms
            records.extend(tokens.expired_tokens(self.image, ctx.wall_clock_ms))
        if not records and self._moves_due:
            self._moves_due = False
            records.extend(self._reassignment_work())
        if not records:
            records.extend(self.periodic.run_due(ctx.now_ms))
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
        periodic = self.periodic.next_deadline_ms()
        if periodic is not None:
            deadlines.append(periodic)
        return min(deadlines) if deadlines else None

    def _periodic_tasks(self) -> PeriodicTasks:
        """Kafka's electPreferred (when ``auto.leader.rebalance.enable``) and electUnclean."""
        tasks = PeriodicTasks()
        config = self.config
        if config.auto_leader_rebalance_enable:
            interval = config.leader_imbalance_check_interval_ms
            tasks.register(
                "electPreferred", interval, lambda _: balance_partition_leaders(self.image)
            )
        tasks.register(
            "electUnclean",
            config.unclean_leader_election_interval_ms,
            lambda _: elect_unclean_leaders(self.image, self._unclean()),
        )
        return tasks

    def wrote(self, now_ms: int) -> None:
        self.last_write_ms = now_ms

    # -- requests --------------------------------------------------------------------------

    def handle(
        self, api_key: int, api_version: int, request: Any, ctx: Context
    ) -> Result[Response]:
        """The records and response of one request; raises ApiError for a request refused
        as a whole (the host answers it with that error)."""
        if not self.active and api_key not in READ_APIS:
            raise ApiError(ErrorCode.not_controller, "This controller is not the active controller")
        handler = self._handlers.get(api_key)
        if handler is None:
            raise ApiError(ErrorCode.unsupported_version, f"API {api_key} is not served")
        if api_key not in READ_APIS:
            migration.check_write(self.image, api_key)
        topic_requests.check_deletion_enabled(self.config, api_key, api_version)
        refused: dict[str, list[Any]] = {}
        caller = ctx.caller
        if self.authorizer is not None and caller is not None:
            if not self.allowed(caller, authorization.cluster_operation(api_key)):
                raise ApiError(
                    ErrorCode.cluster_authorization_failed,
                    authorization.CLUSTER_AUTHORIZATION_FAILED,
                )
            request, refused = authorization.split(
                api_key,
                api_version,
                request,
                lambda op, res, name: self.allowed(caller, op, res, name),
                self.image,
            )
        throttle_ms = 0
        if api_key in STRICT_FROM and caller is not None:
            request, throttled, throttle_ms = self._mutation_quota(
                api_key, api_version, request, caller, ctx.now_ms
            )
            for key, entries in throttled.items():
                refused[key] = [*refused.get(key, ()), *entries]
        result = handler(api_version, request, ctx)
        if refused:
            authorization.merge(result.response, refused)
        if throttle_ms:
            result.response["throttle_time"] = max(
                throttle_ms, _ms(result.response.get("throttle_time", 0))
            )
        return result

    def _mutation_quota(
        self, api_key: int, version: int, request: Any, caller: Caller, now_ms: int
    ) -> tuple[Any, dict[str, list[Any]], int]:
        """KIP-599 (mutation_quota.py): the request without the topics over the caller's
        ``controller_mutation_rate``, their refusals, and the throttle time."""
        field_name = mutation_quota.item_field(api_key, request)
        items = list(getattr(request, field_name))
        admitted, throttled, throttle_ms = self.mutation_quotas.admit(
            self.image,
            caller.principal.partition(":")[2],
            caller.client_id,
            now_ms,
            items,
            mutation_quota.partitions_of(api_key, self.image, self.config.num_partitions),
            strict=version >= STRICT_FROM[api_key],
        )
        if not throttled:
            return request, {}, throttle_ms
        refusals: dict[str, list[Any]] = {}
        for item in throttled:
            one = dataclasses.replace(request, **{field_name: (item,)})
            fields = error_fields(
                api_key, version, one, mutation_quota.THROTTLED_CODE, mutation_quota.THROTTLED
            )
            for key, entries in fields.items():
                if isinstance(entries, list):
                    refusals[key] = [*refusals.get(key, ()), *entries]
        return dataclasses.replace(request, **{field_name: tuple(admitted)}), refusals, throttle_ms

    def allowed(
        self,
        caller: Caller,
        operation: int | None,
        resource_type: int = acls.Res.CLUSTER,
        resource_name: str = acls.CLUSTER_NAME,
    ) -> bool:
        """May ``caller`` do ``operation`` on the resource (None: nothing to check)?"""
        if self.authorizer is None or operation is None:
            return True
        return self.authorizer.authorize(
            self.image, caller.principal, caller.host, operation, resource_type, resource_name
        )

    def _unclean(self) -> b.UncleanTopics:
        return b.UncleanTopics(self.image, self.config.unclean_leader_election)

    # BrokerRegistration / BrokerHeartbeat / UnregisterBroker ------------------------------

    def _broker_registration(self, version: int, request: Any, ctx: Context) -> Result[Response]:
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

    def _broker_heartbeat(self, version: int, request: Any, ctx: Context) -> Result[Response]:
        broker = self.image.brokers.get(int(request.broker_id))
        register_offset = broker.register_offset if broker is not None else 0
        try:
            beat = hb.heartbeat(
                self.image,
                self.sessions,
                request,
                register_offset=register_offset,
                now_ms=ctx.now_ms,
                unclean=self._unclean(),
            )
        except ApiError as e:
            return Result([], {"error_code": e.code, "is_fenced": True})
        records = beat.records
        offline = getattr(request, "offline_log_dirs", None)
        if offline and broker is not None:
            # As Kafka's processBrokerHeartbeat: failed directories first (directories.py).
            records = (
                directories.offline_dir_records(self.image, broker, offline, self._unclean())
                + records
            )
        on_written = None
        if beat.next_state == hb.CONTROLLED_SHUTDOWN:
            broker_id = int(request.broker_id)

            def on_written(last_offset: int) -> None:
                self.sessions.shutdown_offset.setdefault(broker_id, last_offset)

            if not records:
                self.sessions.shutdown_offset.setdefault(broker_id, ctx.next_offset - 1)
        return Result(
            records,
            {
                "error_code": 0,
                "is_caught_up": beat.caught_up,
                "is_fenced": beat.fenced,
                "should_shut_down": beat.should_shut_down,
            },
            on_written,
        )

    def _unregister_broker(self, version: int, request: Any, ctx: Context) -> Result[Response]:
        try:
            records = b.unregister_broker(
                self.image, self.sessions, int(request.broker_id), self._unclean()
            )
        except ApiError as e:
            return Result([], {"error_code": e.code, "error_message": e.message})
        return Result(records, {"error_code": 0})

    def _unregister_controller(self, version: int, request: Any, ctx: Context) -> Result[Response]:
        """Kafka 4.4.0's UnregisterController (``ClusterControlManager.unregisterController``,
        after ``kafka-metadata-quorum remove-controller``): from 4.4-IV2; not the active
        controller itself; a registered controller; UnregisterControllerRecord."""
        controller_id = int(request.controller_id)
        code: int
        message: str
        if self.metadata_version < IBP_4_4_IV2:
            code, message = (
                ErrorCode.unsupported_version,
                "The current MetadataVersion is too old to support controller unregistration.",
            )
        elif controller_id == self.node_id:
            code, message = (
                ErrorCode.invalid_request,
                "Controller cannot unregister itself while it is active.",
            )
        elif controller_id not in self.image.controllers:
            code, message = (
                CONTROLLER_ID_NOT_REGISTERED,
                f"Controller ID {controller_id} is not currently registered.",
            )
        else:
            record = r.UnregisterControllerRecord(controller_id=controller_id)
            return Result([(record, 0)], {"throttle_time_ms": 0, "error_code": 0})
        return Result([], {"throttle_time_ms": 0, "error_code": code, "error_message": message})

    # Topics -------------------------------------------------------------------------------

    def _create_topics(self, version: int, request: Any, ctx: Context) -> Result[Response]:
        return Result(
            *topic_requests.create_topics(
                self.image, self.config, self.rng, self.metadata_version, request
            )
        )

    def _delete_topics(self, version: int, request: Any, ctx: Context) -> Result[Response]:
        return Result(*topic_requests.delete_topics(self.image, version, request))

    def _create_partitions(self, version: int, request: Any, ctx: Context) -> Result[Response]:
        return Result(
            *topic_requests.create_partitions(self.image, self.rng, self.metadata_version, request)
        )

    # AlterPartition, ElectLeaders (leadership.py) ------------------------------------------

    def _alter_partition(self, version: int, request: Any, ctx: Context) -> Result[Response]:
        return Result(
            *leadership.alter_partition(
                self.image,
                self.metadata_version,
                version,
                request,
                unsafe_elect_outside_isr=self.config.unsafe_test_elect_outside_isr,
            )
        )

    def _elect_leaders(self, version: int, request: Any, ctx: Context) -> Result[Response]:
        return Result(*leadership.elect_leaders(self.image, self.metadata_version, request))

    # AllocateProducerIds ------------------------------------------------------------------

    def _allocate_producer_ids(self, version: int, request: Any, ctx: Context) -> Result[Response]:
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

    def _incremental_alter_configs(
        self, version: int, request: Any, ctx: Context
    ) -> Result[Response]:
        return self._alter(cfgs.incremental_alter_configs, request, ctx)

    def _alter_configs(self, version: int, request: Any, ctx: Context) -> Result[Response]:
        return self._alter(cfgs.alter_configs, request, ctx)

    def _alter(self, alter: cfgs.Alter, request: Any, ctx: Context) -> Result[Response]:
        principal = None if ctx.caller is None else ctx.caller.principal
        policy = alter_config_check(self.config.alter_config_policy, principal)
        validate_only = bool(request.validate_only)
        records, results = alter(
            self.image, request.resources, validate_only, _forwarded(ctx), policy
        )
        return Result(self._unthrottle(records), {"throttle_time": 0, "responses": results})

    def _unthrottle(self, records: RecordList) -> RecordList:
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

    def _reassignment_work(self) -> RecordList:
        """The next KIP-435 steps; when there are none, and the policy is set, the throttle
        configs that make the throttles match the moves in flight (the records of a step
        make the work due again: the next tick sets its throttles, on the image with the
        step applied)."""
        records: RecordList = []
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

    def _describe_configs(self, version: int, request: Any, ctx: Context) -> Result[Response]:
        return Result(
            [],
            {"throttle_time": 0, "results": cfgs.describe_configs(self.image, request.resources)},
        )

    # ACLs (acls.py), SCRAM credentials (scram.py), client quotas (quotas.py) ------------

    def _require_authorizer(self) -> None:
        if self.authorizer is None:
            raise ApiError(ErrorCode.security_disabled, "No Authorizer is configured.")

    def _create_acls(self, version: int, request: Any, ctx: Context) -> Result[Response]:
        self._require_authorizer()
        return Result(*acls.create_acls(self.image, self.rng, request))

    def _delete_acls(self, version: int, request: Any, ctx: Context) -> Result[Response]:
        self._require_authorizer()
        return Result(*acls.delete_acls(self.image, request))

    def _describe_acls(self, version: int, request: Any, ctx: Context) -> Result[Response]:
        if self.authorizer is None:
            raise ApiError(ErrorCode.security_disabled, "No Authorizer is configured on the broker")
        return Result([], acls.describe_acls(self.image, request))

    def _alter_scram(self, version: int, request: Any, ctx: Context) -> Result[Response]:
        return Result(
            *scram.alter_user_scram_credentials(self.image, self.metadata_version, request)
        )

    def _alter_client_quotas(self, version: int, request: Any, ctx: Context) -> Result[Response]:
        return Result(*quotas.alter_client_quotas(self.image, request))

    def _create_token(self, version: int, request: Any, ctx: Context) -> Result[Response]:
        caller = ctx.caller or INTERNAL_CALLER

        def allowed(op: int, res: int, name: str) -> bool:
            return self.allowed(caller, op, res, name)

        return Result(
            *tokens.create_token(
                self.image,
                self.config,
                self.metadata_version,
                self.rng,
                request,
                caller,
                ctx.wall_clock_ms,
                allowed,
            )
        )

    def _renew_token(self, version: int, request: Any, ctx: Context) -> Result[Response]:
        return self._token_change(tokens.renew_token, request, ctx)

    def _expire_token(self, version: int, request: Any, ctx: Context) -> Result[Response]:
        return self._token_change(tokens.expire_token, request, ctx)

    def _token_change(self, change: tokens.Change, request: Any, ctx: Context) -> Result[Response]:
        caller = ctx.caller or INTERNAL_CALLER
        version = self.metadata_version
        return Result(*change(self.image, self.config, version, request, caller, ctx.wall_clock_ms))

    # AssignReplicasToDirs (directories.py) --------------------------------------------------

    def _assign_replicas_to_dirs(
        self, version: int, request: Any, ctx: Context
    ) -> Result[Response]:
        return Result(*directories.assign_replicas_to_dirs(self.image, request, self._unclean()))

    # UpdateFeatures (features.py) ----------------------------------------------------------

    def _update_features(self, version: int, request: Any, ctx: Context) -> Result[Response]:
        return Result(
            *features.update_features(
                self.image,
                version,
                request,
                self.node_id,
                ctx.controller_features,
                self.config.min_insync_replicas,
                ctx.kraft_version,
            )
        )

    # Reassignment (KIP-455) --------------------------------------------------------------

    def _alter_reassignments(self, version: int, request: Any, ctx: Context) -> Result[Response]:
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

    def _list_reassignments(self, version: int, request: Any, ctx: Context) -> Result[Response]:
        return Result(
            [],
            {
                "throttle_time": 0,
                "error_code": 0,
                "error_message": None,
                **reassign.list_reassignments(self.image, request),
            },
        )


# -- helpers ------------------------------------------------------------------------------


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
