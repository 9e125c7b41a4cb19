"""One handler per controller API (Kafka's ``ControllerApis`` and the managers it calls): each
takes the controller as a :class:`ControllerView`, the request's version, the request and
the :class:`~pykraft.controller.context.Context`, and returns the records and the response
(``Result``). :data:`HANDLERS` is the table ``QuorumController.handle`` dispatches from,
after what every request passes there (active or a read, the migration's write check,
cluster authorization, per-item authorization, the KIP-599 mutation quota).

The handlers are thin: the rules live in one module per concern (``brokers``, ``heartbeats``,
``topic_requests``, ``leadership``, ``configs``, ``acls``, ``scram``, ``quotas``, ``tokens``,
``directories``, ``features``, ``reassign``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Protocol

from kio.schema.errors import ErrorCode

from pykraft.controller import (
    acls,
    directories,
    features,
    leadership,
    quotas,
    reassign,
    scram,
    throttles,
    tokens,
    topic_requests,
)
from pykraft.controller import brokers as b
from pykraft.controller import configs as cfgs
from pykraft.controller import describe_configs as described
from pykraft.controller import errors as errs
from pykraft.controller import heartbeats as hb
from pykraft.controller.authorization import Caller
from pykraft.controller.config import ControllerConfig, RandomSource
from pykraft.controller.configs import PolicyCheck
from pykraft.controller.context import INTERNAL_CALLER, METADATA_TOPIC, Context, forwarded
from pykraft.controller.errors import CONTROLLER_ID_NOT_REGISTERED, ApiError
from pykraft.controller.partitions import partition_version
from pykraft.controller.policy_checks import alter_config_check
from pykraft.controller.result import RecordList, Response, Result
from pykraft.controller.sessions import BrokerSessions
from pykraft.controller.steps import Limits
from pykraft.metadata import records as r
from pykraft.metadata.image import BROKER_RESOURCE, Image
from pykraft.metadata.versions import IBP_4_4_IV2
from pykraft.protocol import views
from pykraft.protocol.apis import ApiKey, response_schema
from pykraft.protocol.build import version_fields

__all__ = [
    "HANDLERS",
    "ApiHandler",
    "ControllerView",
    "Handler",
    "ItemErrors",
    "error_fields",
    "item_errors",
]


class ControllerView(Protocol):
    """What the handlers read of the controller (``QuorumController``)."""

    image: Image
    config: ControllerConfig
    rng: RandomSource
    node_id: int
    cluster_id: str
    sessions: BrokerSessions
    authorizer: acls.StandardAuthorizer | None

    @property
    def metadata_version(self) -> int: ...

    def allowed(
        self,
        caller: Caller,
        operation: int | None,
        resource_type: int = acls.Res.CLUSTER,
        resource_name: str = acls.CLUSTER_NAME,
    ) -> bool: ...

    def unclean(self) -> b.UncleanTopics: ...

    def limits(self) -> Limits: ...


Handler = Callable[[ControllerView, int, Any, Context], Result[Response]]


# BrokerRegistration / BrokerHeartbeat / UnregisterBroker ------------------------------


def broker_registration(
    c: ControllerView, version: int, request: views.BrokerRegistrationRequest, ctx: Context
) -> Result[views.BrokerRegistrationResponse]:
    try:
        records, epoch = b.register_broker(
            c.image,
            c.sessions,
            request,
            cluster_id=c.cluster_id,
            kraft_version=ctx.kraft_version,
            next_offset=ctx.next_offset,
            now_ms=ctx.now_ms,
            unclean=c.unclean(),
            zk_migration=c.config.zk_migration_enabled,
            inter_broker_listener=c.config.inter_broker_listener_name,
        )
    except ApiError as e:
        return Result([], {"error_code": e.code, "broker_epoch": -1})
    return Result(records, {"error_code": 0, "broker_epoch": epoch})


def broker_heartbeat(
    c: ControllerView, version: int, request: views.BrokerHeartbeatRequest, ctx: Context
) -> Result[views.BrokerHeartbeatResponse]:
    broker = c.image.brokers.get(int(request.broker_id))
    register_offset = broker.register_offset if broker is not None else 0
    try:
        beat = hb.heartbeat(
            c.image,
            c.sessions,
            request,
            register_offset=register_offset,
            now_ms=ctx.now_ms,
            unclean=c.unclean(),
        )
    except ApiError as e:
        return Result([], {"error_code": e.code, "is_fenced": True})
    records = beat.records
    offline = getattr(request, "offline_log_dirs", None)
    if offline and broker is not None:
        # As Kafka's processBrokerHeartbeat: failed directories first (directories.py).
        records = directories.offline_dir_records(c.image, broker, offline, c.unclean()) + records
    on_written = None
    if beat.next_state == hb.CONTROLLED_SHUTDOWN:
        broker_id = int(request.broker_id)

        def on_written(last_offset: int) -> None:
            c.sessions.shutdown_offset.setdefault(broker_id, last_offset)

        if not records:
            c.sessions.shutdown_offset.setdefault(broker_id, ctx.next_offset - 1)
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


def unregister_broker(
    c: ControllerView, version: int, request: views.UnregisterBrokerRequest, ctx: Context
) -> Result[views.UnregisterBrokerResponse]:
    try:
        records = b.unregister_broker(c.image, c.sessions, int(request.broker_id), c.unclean())
    except ApiError as e:
        return Result([], {"error_code": e.code, "error_message": e.message})
    return Result(records, {"error_code": 0})


def unregister_controller(
    c: ControllerView, version: int, request: views.UnregisterControllerRequest, ctx: Context
) -> Result[views.UnregisterControllerResponse]:
    """Kafka 4.4.0's UnregisterController (``ClusterControlManager.unregisterController``,
    after ``kafka-metadata-quorum remove-controller``): from 4.4-IV2; not the active
    controller itself; a registered controller; UnregisterControllerRecord."""
    controller_id = int(request.controller_id)
    code: int
    message: str
    if c.metadata_version < IBP_4_4_IV2:
        code, message = (
            ErrorCode.unsupported_version,
            "The current MetadataVersion is too old to support controller unregistration.",
        )
    elif controller_id == c.node_id:
        code, message = (
            ErrorCode.invalid_request,
            "Controller cannot unregister itself while it is active.",
        )
    elif controller_id not in c.image.controllers:
        code, message = (
            CONTROLLER_ID_NOT_REGISTERED,
            f"Controller ID {controller_id} is not currently registered.",
        )
    else:
        record = r.UnregisterControllerRecord(controller_id=controller_id)
        return Result([(record, 0)], {"throttle_time_ms": 0, "error_code": 0})
    return Result([], {"throttle_time_ms": 0, "error_code": code, "error_message": message})


# Topics -------------------------------------------------------------------------------


def create_topics(
    c: ControllerView, version: int, request: views.CreateTopicsRequest, ctx: Context
) -> Result[views.CreateTopicsResponse]:
    return Result(
        *topic_requests.create_topics(c.image, c.config, c.rng, c.metadata_version, request)
    )


def delete_topics(
    c: ControllerView, version: int, request: views.DeleteTopicsRequest, ctx: Context
) -> Result[views.DeleteTopicsResponse]:
    return Result(*topic_requests.delete_topics(c.image, version, request))


def create_partitions(
    c: ControllerView, version: int, request: views.CreatePartitionsRequest, ctx: Context
) -> Result[views.CreatePartitionsResponse]:
    return Result(*topic_requests.create_partitions(c.image, c.rng, c.metadata_version, request))


# AlterPartition, ElectLeaders (leadership.py) ------------------------------------------


def alter_partition(
    c: ControllerView, version: int, request: views.AlterPartitionRequest, ctx: Context
) -> Result[views.AlterPartitionResponse]:
    return Result(*leadership.alter_partition(c.image, c.metadata_version, version, request))


def elect_leaders(
    c: ControllerView, version: int, request: views.ElectLeadersRequest, ctx: Context
) -> Result[views.ElectLeadersResponse]:
    return Result(*leadership.elect_leaders(c.image, c.metadata_version, request))


# AllocateProducerIds ------------------------------------------------------------------


def allocate_producer_ids(
    c: ControllerView, version: int, request: views.AllocateProducerIdsRequest, ctx: Context
) -> Result[views.AllocateProducerIdsResponse]:
    broker_id, epoch = int(request.broker_id), int(request.broker_epoch)
    try:
        b.check_broker_epoch(c.image, broker_id, epoch)
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
    start = c.image.next_producer_id
    size = c.config.producer_id_block_size
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


def incremental_alter_configs(
    c: ControllerView, version: int, request: views.IncrementalAlterConfigsRequest, ctx: Context
) -> Result[views.IncrementalAlterConfigsResponse]:
    altered = cfgs.incremental_alter_configs(
        c.image, request.resources, request.validate_only, forwarded(ctx), _policy(c, ctx), c.config
    )
    return Result(_unthrottle(c, altered[0]), {"throttle_time": 0, "responses": altered[1]})


def alter_configs(
    c: ControllerView, version: int, request: views.AlterConfigsRequest, ctx: Context
) -> Result[views.AlterConfigsResponse]:
    altered = cfgs.alter_configs(
        c.image, request.resources, request.validate_only, forwarded(ctx), _policy(c, ctx), c.config
    )
    return Result(_unthrottle(c, altered[0]), {"throttle_time": 0, "responses": altered[1]})


def _policy(c: ControllerView, ctx: Context) -> PolicyCheck | None:
    """alter.config.policy.class.name, as the caller."""
    principal = None if ctx.caller is None else ctx.caller.principal
    return alter_config_check(c.config.alter_config_policy, principal)


def _unthrottle(c: ControllerView, records: RecordList) -> RecordList:
    """``records`` and, when they delete the managed-throttle policy, the removal of
    every throttle it set (``throttles``)."""
    deleted = any(
        isinstance(rec, r.ConfigRecord)
        and (rec.resource_type, rec.resource_name, rec.name)
        == (BROKER_RESOURCE, "", throttles.THROTTLE_POLICY)
        and rec.value is None
        for rec, _ in records
    )
    if deleted and throttles.policy(c.image) is not None:
        return records + list(throttles.reconcile(c.image, None))
    return records


def describe_configs(
    c: ControllerView, version: int, request: views.DescribeConfigsRequest, ctx: Context
) -> Result[views.DescribeConfigsResponse]:
    return Result(
        [],
        {
            "throttle_time": 0,
            "results": described.describe_configs(c.image, request.resources, c.config),
        },
    )


# ACLs (acls.py), SCRAM credentials (scram.py), client quotas (quotas.py) ------------


def _require_authorizer(c: ControllerView) -> None:
    if c.authorizer is None:
        raise ApiError(ErrorCode.security_disabled, "No Authorizer is configured.")


def create_acls(
    c: ControllerView, version: int, request: views.CreateAclsRequest, ctx: Context
) -> Result[views.CreateAclsResponse]:
    _require_authorizer(c)
    return Result(*acls.create_acls(c.image, c.rng, request))


def delete_acls(
    c: ControllerView, version: int, request: views.DeleteAclsRequest, ctx: Context
) -> Result[views.DeleteAclsResponse]:
    _require_authorizer(c)
    return Result(*acls.delete_acls(c.image, request))


def describe_acls(
    c: ControllerView, version: int, request: views.DescribeAclsRequest, ctx: Context
) -> Result[views.DescribeAclsResponse]:
    if c.authorizer is None:
        raise ApiError(ErrorCode.security_disabled, "No Authorizer is configured on the broker")
    return Result([], acls.describe_acls(c.image, request))


def alter_scram(
    c: ControllerView, version: int, request: views.AlterUserScramCredentialsRequest, ctx: Context
) -> Result[views.AlterUserScramCredentialsResponse]:
    return Result(*scram.alter_user_scram_credentials(c.image, c.metadata_version, request))


def alter_client_quotas(
    c: ControllerView, version: int, request: views.AlterClientQuotasRequest, ctx: Context
) -> Result[views.AlterClientQuotasResponse]:
    return Result(*quotas.alter_client_quotas(c.image, request))


def create_token(
    c: ControllerView, version: int, request: views.CreateDelegationTokenRequest, ctx: Context
) -> Result[views.CreateDelegationTokenResponse]:
    caller = ctx.caller or INTERNAL_CALLER

    def allowed(op: int, res: int, name: str) -> bool:
        return c.allowed(caller, op, res, name)

    return Result(
        *tokens.create_token(
            c.image,
            c.config,
            c.metadata_version,
            c.rng,
            request,
            caller,
            ctx.wall_clock_ms,
            allowed,
        )
    )


def renew_token(
    c: ControllerView, version: int, request: views.RenewDelegationTokenRequest, ctx: Context
) -> Result[views.RenewDelegationTokenResponse]:
    caller, now_ms = ctx.caller or INTERNAL_CALLER, ctx.wall_clock_ms
    return Result(
        *tokens.renew_token(c.image, c.config, c.metadata_version, request, caller, now_ms)
    )


def expire_token(
    c: ControllerView, version: int, request: views.ExpireDelegationTokenRequest, ctx: Context
) -> Result[views.ExpireDelegationTokenResponse]:
    caller, now_ms = ctx.caller or INTERNAL_CALLER, ctx.wall_clock_ms
    return Result(
        *tokens.expire_token(c.image, c.config, c.metadata_version, request, caller, now_ms)
    )


# AssignReplicasToDirs (directories.py) --------------------------------------------------


def assign_replicas_to_dirs(
    c: ControllerView, version: int, request: views.AssignReplicasToDirsRequest, ctx: Context
) -> Result[views.AssignReplicasToDirsResponse]:
    return Result(*directories.assign_replicas_to_dirs(c.image, request, c.unclean()))


# UpdateFeatures (features.py) ----------------------------------------------------------


def update_features(
    c: ControllerView, version: int, request: views.UpdateFeaturesRequest, ctx: Context
) -> Result[views.UpdateFeaturesResponse]:
    return Result(
        *features.update_features(
            c.image,
            version,
            request,
            c.node_id,
            ctx.controller_features,
            c.config.min_insync_replicas,
            ctx.kraft_version,
        )
    )


# Reassignment (KIP-455) --------------------------------------------------------------


def alter_reassignments(
    c: ControllerView, version: int, request: views.AlterPartitionReassignmentsRequest, ctx: Context
) -> Result[views.AlterPartitionReassignmentsResponse]:
    unclean = c.unclean()
    records, responses = reassign.alter_reassignments(
        c.image,
        request,
        version,
        unclean_of=lambda topic_id: topic_id in unclean,
        partition_version=partition_version(c.metadata_version),
        skip=lambda name: name == METADATA_TOPIC,
        limits=c.limits(),
    )
    return Result(
        records,
        {"throttle_time": 0, "error_code": 0, "error_message": None, "responses": responses},
    )


def list_reassignments(
    c: ControllerView, version: int, request: views.ListPartitionReassignmentsRequest, ctx: Context
) -> Result[views.ListPartitionReassignmentsResponse]:
    return Result(
        [],
        {
            "throttle_time": 0,
            "error_code": 0,
            "error_message": None,
            **reassign.list_reassignments(c.image, request),
        },
    )


# An API whose items carry the error code: every item of a request refused (``errors.py``).
ItemErrors = Callable[[Any, ErrorCode, str | None], errs.Items]


@dataclass(frozen=True, slots=True)
class ApiHandler:
    """A controller API's behaviour, its row of :data:`HANDLERS`: the handler, and for an API
    whose items carry the error code (no top-level one, or both) how a refusal of every item
    is answered (Kafka's ``getErrorResponse``). The wire facts of the API -- versions, read,
    forwardable, quota, items authorized -- are its row of ``protocol/controller_apis.py``,
    which the node and the admin client read without the controller."""

    handle: Handler
    item_errors: ItemErrors | None = None


# The controller APIs: QuorumController.handle dispatches from here. (A handler's request is
# typed as its API's view; the table holds them all, so ``Handler`` and ``ItemErrors`` take
# the decoded message of the row's API, whichever that is.)
HANDLERS: Final[dict[int, ApiHandler]] = {
    ApiKey.BROKER_REGISTRATION: ApiHandler(broker_registration),
    ApiKey.BROKER_HEARTBEAT: ApiHandler(broker_heartbeat),
    ApiKey.CREATE_TOPICS: ApiHandler(create_topics, errs.create_topics_errors),
    ApiKey.DELETE_TOPICS: ApiHandler(delete_topics, errs.delete_topics_errors),
    ApiKey.CREATE_PARTITIONS: ApiHandler(create_partitions, errs.create_partitions_errors),
    ApiKey.ALTER_PARTITION: ApiHandler(alter_partition),
    ApiKey.ASSIGN_REPLICAS_TO_DIRS: ApiHandler(assign_replicas_to_dirs),
    ApiKey.ALLOCATE_PRODUCER_IDS: ApiHandler(allocate_producer_ids),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: ApiHandler(
        incremental_alter_configs, errs.alter_configs_errors
    ),
    ApiKey.ALTER_CONFIGS: ApiHandler(alter_configs, errs.alter_configs_errors),
    ApiKey.DESCRIBE_CONFIGS: ApiHandler(describe_configs, errs.describe_configs_errors),
    ApiKey.ELECT_LEADERS: ApiHandler(elect_leaders),
    ApiKey.UNREGISTER_BROKER: ApiHandler(unregister_broker),
    ApiKey.UNREGISTER_CONTROLLER: ApiHandler(unregister_controller),
    ApiKey.UPDATE_FEATURES: ApiHandler(update_features),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: ApiHandler(alter_reassignments),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: ApiHandler(list_reassignments),
    ApiKey.CREATE_ACLS: ApiHandler(create_acls, errs.create_acls_errors),
    ApiKey.DELETE_ACLS: ApiHandler(delete_acls, errs.delete_acls_errors),
    ApiKey.DESCRIBE_ACLS: ApiHandler(describe_acls),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: ApiHandler(alter_scram, errs.alter_scram_errors),
    ApiKey.ALTER_CLIENT_QUOTAS: ApiHandler(alter_client_quotas, errs.alter_quotas_errors),
    ApiKey.CREATE_DELEGATION_TOKEN: ApiHandler(create_token),
    ApiKey.RENEW_DELEGATION_TOKEN: ApiHandler(renew_token),
    ApiKey.EXPIRE_DELEGATION_TOKEN: ApiHandler(expire_token),
}


def item_errors(api_key: int, request: object, code: ErrorCode, message: str | None) -> errs.Items:
    """The entries refusing every item of ``request`` (none for an API whose items carry no
    error code)."""
    row = HANDLERS.get(api_key)
    if row is None or row.item_errors is None:
        return {}
    return row.item_errors(request, code, message)


def error_fields(
    api_key: int, version: int, request: object, code: ErrorCode, message: str | None
) -> dict[str, object]:
    """The response fields refusing every item of ``request`` with ``code`` (Kafka's
    ``getErrorResponse``: APIs without a top-level error code carry it per item, which is
    where a broker looks for NOT_CONTROLLER); the top-level fields only where the response
    has them (``build.make`` refuses a field no version has)."""
    known = version_fields(response_schema(api_key, version))
    top = {"throttle_time": 0, "error_code": code, "error_message": message}
    fields: dict[str, object] = {k: v for k, v in top.items() if k in known}
    fields.update(item_errors(api_key, request, code, message))
    return fields
