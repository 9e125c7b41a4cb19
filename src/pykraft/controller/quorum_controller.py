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
import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final, TypeVar, cast

from kio.schema.errors import ErrorCode

from pykraft.controller import (
    acls,
    authorization,
    migration,
    mutation_quota,
    reassign,
    throttles,
    tokens,
    topic_requests,
)
from pykraft.controller import brokers as b
from pykraft.controller.activation import activation_records
from pykraft.controller.authorization import Caller
from pykraft.controller.config import ControllerConfig, RandomSource
from pykraft.controller.context import METADATA_TOPIC, Context, Duration, duration_ms
from pykraft.controller.errors import ApiError
from pykraft.controller.features import SUPPORTED_FEATURES
from pykraft.controller.handlers import HANDLERS, error_fields, item_errors
from pykraft.controller.partitions import (
    partition_version,
)
from pykraft.controller.periodic import (
    PeriodicTasks,
    balance_partition_leaders,
    elect_unclean_leaders,
)
from pykraft.controller.result import RecordList, Response, Result
from pykraft.controller.sessions import BrokerSessions
from pykraft.controller.steps import Limits
from pykraft.metadata import records as r
from pykraft.metadata.image import (
    BROKER_RESOURCE,
    TOPIC_RESOURCE,
    Image,
)
from pykraft.metadata.serde import MetadataRecord
from pykraft.metadata.versions import (
    MINIMUM_METADATA_VERSION,
)
from pykraft.protocol.controller_apis import READ_APIS, STRICT_FROM

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

_M = TypeVar("_M", bound="DataclassInstance")  # a decoded request

__all__ = [
    "METADATA_TOPIC",
    "SUPPORTED_FEATURES",
    "Context",
    "QuorumController",
    "error_fields",
]


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

    def replay(self, record: object, version: int, offset: int, value: bytes | None = None) -> None:
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
        bootstrap_records: Sequence[MetadataRecord] = (),
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
        unclean = self.unclean()
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
            lambda _: elect_unclean_leaders(self.image, self.unclean()),
        )
        return tasks

    def wrote(self, now_ms: int) -> None:
        self.last_write_ms = now_ms

    # -- requests --------------------------------------------------------------------------

    def handle(
        self, api_key: int, api_version: int, request: DataclassInstance, ctx: Context
    ) -> Result[Response]:
        """The records and response of one request; raises ApiError for a request refused
        as a whole (the host answers it with that error)."""
        if not self.active and api_key not in READ_APIS:
            raise ApiError(ErrorCode.not_controller, "This controller is not the active controller")
        handler = HANDLERS.get(api_key)
        if handler is None:
            raise ApiError(ErrorCode.unsupported_version, f"API {api_key} is not served")
        if api_key not in READ_APIS:
            migration.check_write(self.image, api_key)
        topic_requests.check_deletion_enabled(self.config, api_key, api_version)
        refused: authorization.Refusals = {}
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
                functools.partial(item_errors, api_key),
            )
        throttle_ms = 0
        if api_key in STRICT_FROM and caller is not None:
            request, throttled, throttle_ms = self._mutation_quota(
                api_key, api_version, request, caller, ctx.now_ms
            )
            for key, entries in throttled.items():
                refused[key] = [*refused.get(key, ()), *entries]
        result = handler.handle(self, api_version, request, ctx)
        if not refused and not throttle_ms:
            return result
        response = authorization.merge(result.response, refused)
        if throttle_ms:
            before = cast("int | Duration", response.get("throttle_time", 0))
            response = {**response, "throttle_time": max(throttle_ms, duration_ms(before))}
        return dataclasses.replace(result, response=response)

    def _mutation_quota(
        self, api_key: int, version: int, request: _M, caller: Caller, now_ms: int
    ) -> tuple[_M, authorization.Refusals, int]:
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
        refusals: authorization.Refusals = {}
        for item in throttled:
            one = dataclasses.replace(request, **{field_name: (item,)})
            fields = item_errors(
                api_key, one, mutation_quota.THROTTLED_CODE, mutation_quota.THROTTLED
            )
            for key, entries in fields.items():
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

    def unclean(self) -> b.UncleanTopics:
        return b.UncleanTopics(self.image, self.config.unclean_leader_election)

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
