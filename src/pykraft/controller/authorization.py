"""What Kafka's ControllerApis authorizes, per API (docs/kafka/SECURITY-CONTRACT.md 4.2):
the operation a caller needs on the cluster to make a request at all, and, for the APIs
that name topics or config resources, the operation it needs on each item.

Theory of operation. :func:`cluster_operation` gives the top-level check: a caller without
it gets CLUSTER_AUTHORIZATION_FAILED for the whole request (per item where the response has
no top-level code; ``handlers.item_errors``), and nothing is written. :func:`split` sorts the
items of CreateTopics, DeleteTopics, CreatePartitions, AlterConfigs,
IncrementalAlterConfigs and DescribeConfigs into those the caller may touch (left in the
request, for the handler) and those it may not (answered here with Kafka's per-item code:
TOPIC_AUTHORIZATION_FAILED 29, CLUSTER_AUTHORIZATION_FAILED 31, GROUP_AUTHORIZATION_FAILED
30); :func:`merge` puts both halves of the response together.

Pure, like the rest of ``controller/``: the caller's identity comes in a :class:`Caller`,
the decision from an ``Authorize`` callable (``acls.StandardAuthorizer`` on the image).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol, TypeVar, cast

from kio.schema.errors import ErrorCode

from pykraft.controller.acls import CLUSTER_NAME, Op, Res
from pykraft.controller.errors import Items
from pykraft.controller.result import Response
from pykraft.metadata.image import Image
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.controller_apis import authorized_items

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

# A decoded request (a frozen dataclass of its API's version), split item by item.
_M = TypeVar("_M", bound="DataclassInstance")
# The response entries refusing items, by response field (added by ``merge``).
Refusals = dict[str, list[Mapping[str, object]]]

__all__ = ["Caller", "cluster_operation", "merge", "split"]


@dataclass(frozen=True, slots=True)
class Caller:
    """Who makes a request: ``Type:name``, the client's address, whether it came through
    an Envelope (a broker's client) and whether a delegation token authenticated it."""

    principal: str
    host: str
    forwarded: bool = False
    token_authenticated: bool = False
    protocol: str = "PLAINTEXT"  # the connection's security protocol (delegation tokens)
    client_id: str = ""  # the request header's (quotas: KIP-599)


Allowed = Callable[[int, int, str], bool]
"""``allowed(operation, resource_type, resource_name)`` for one caller."""

_CLUSTER_ACTION: Final = frozenset(
    {
        ApiKey.FETCH,
        ApiKey.FETCH_SNAPSHOT,
        ApiKey.VOTE,
        ApiKey.BEGIN_QUORUM_EPOCH,
        ApiKey.END_QUORUM_EPOCH,
        ApiKey.UPDATE_RAFT_VOTER,
        ApiKey.BROKER_REGISTRATION,
        ApiKey.BROKER_HEARTBEAT,
        ApiKey.ALTER_PARTITION,
        ApiKey.ALLOCATE_PRODUCER_IDS,
        ApiKey.CONTROLLER_REGISTRATION,
        ApiKey.ASSIGN_REPLICAS_TO_DIRS,
        ApiKey.ENVELOPE,
    }
)
_CLUSTER_OPS: Final[dict[int, int]] = {
    **{api: Op.CLUSTER_ACTION for api in _CLUSTER_ACTION},
    ApiKey.DESCRIBE_QUORUM: Op.DESCRIBE,
    ApiKey.ADD_RAFT_VOTER: Op.ALTER,
    ApiKey.REMOVE_RAFT_VOTER: Op.ALTER,
    ApiKey.UNREGISTER_BROKER: Op.ALTER,
    ApiKey.UNREGISTER_CONTROLLER: Op.ALTER,
    ApiKey.ELECT_LEADERS: Op.ALTER,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: Op.ALTER,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: Op.DESCRIBE,
    ApiKey.UPDATE_FEATURES: Op.ALTER,
    ApiKey.DESCRIBE_CLUSTER: Op.ALTER,
    ApiKey.DESCRIBE_ACLS: Op.DESCRIBE,
    ApiKey.CREATE_ACLS: Op.ALTER,
    ApiKey.DELETE_ACLS: Op.ALTER,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: Op.ALTER,
    ApiKey.ALTER_CLIENT_QUOTAS: Op.ALTER_CONFIGS,
}


def cluster_operation(api_key: int) -> int | None:
    """The operation ``api_key`` needs on the cluster resource, or None."""
    return _CLUSTER_OPS.get(api_key)


# Config resource types (ConfigResource.Type) -> the ACL resource checked and the error.
_TOPIC_CONFIG, _BROKER_CONFIG, _LOGGER_CONFIG, _METRICS_CONFIG, _GROUP_CONFIG = 2, 4, 8, 16, 32


def _config_check(resource_type: int, name: str, *, alter: bool) -> tuple[int, int, str, ErrorCode]:
    """(operation, ACL resource type, name, error) for one config resource."""
    op = Op.ALTER_CONFIGS if alter else Op.DESCRIBE_CONFIGS
    if resource_type == _TOPIC_CONFIG:
        return op, Res.TOPIC, name, ErrorCode.topic_authorization_failed
    if resource_type == _GROUP_CONFIG:
        return op, Res.GROUP, name, ErrorCode.group_authorization_failed
    if resource_type == _LOGGER_CONFIG and alter:
        return Op.CLUSTER_ACTION, Res.CLUSTER, CLUSTER_NAME, ErrorCode.cluster_authorization_failed
    return op, Res.CLUSTER, CLUSTER_NAME, ErrorCode.cluster_authorization_failed


class _Named(Protocol):
    """A topic of CreateTopics, CreatePartitions or DeleteTopics v6+ (by name or id)."""

    @property
    def name(self) -> str | None: ...


class _Resource(Protocol):
    """A resource of DescribeConfigs, AlterConfigs or IncrementalAlterConfigs."""

    @property
    def resource_type(self) -> int: ...
    @property
    def resource_name(self) -> str: ...


def _topic_allowed(api_key: int, item: object, allowed: Allowed, image: Image) -> bool:
    # ``item`` is an entry of the request's topics (a plain name in DeleteTopics before v6).
    if api_key == ApiKey.CREATE_TOPICS:
        created = str(cast(_Named, item).name)
        return allowed(Op.CREATE, Res.CLUSTER, CLUSTER_NAME) or allowed(
            Op.CREATE, Res.TOPIC, created
        )
    if api_key == ApiKey.DELETE_TOPICS:
        name = item if isinstance(item, str) else cast(_Named, item).name
        if name is None:
            topic_id = getattr(item, "topic_id", None)
            topic = None if topic_id is None else image.topics.get(topic_id)
            if topic is None:
                return True  # unknown id: the handler answers UNKNOWN_TOPIC_ID
            name = topic.name
        return allowed(Op.DELETE, Res.CLUSTER, CLUSTER_NAME) or (
            allowed(Op.DESCRIBE, Res.TOPIC, name) and allowed(Op.DELETE, Res.TOPIC, name)
        )
    return allowed(Op.ALTER, Res.TOPIC, str(cast(_Named, item).name))  # CreatePartitions


AUTHORIZATION_FAILED: Final = "Authorization failed."
# Kafka's default text of CLUSTER_AUTHORIZATION_FAILED (Errors), the whole request refused.
CLUSTER_AUTHORIZATION_FAILED: Final = "Cluster authorization failed."


def split(
    api_key: int,
    version: int,
    request: _M,
    allowed: Allowed,
    image: Image,
    refuse: Callable[[object, ErrorCode, str | None], Items],
) -> tuple[_M, Refusals]:
    """``request`` without the items the caller may not touch, and the response entries
    refusing those (by response field)."""
    items = authorized_items(api_key, version)
    if items is None:
        return request, {}
    field, response_field = items
    kept: list[object] = []
    refused: list[tuple[object, ErrorCode]] = []
    for item in getattr(request, field):
        if api_key in (ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.CREATE_PARTITIONS):
            ok = _topic_allowed(api_key, item, allowed, image)
            code = ErrorCode.topic_authorization_failed
        else:
            resource = cast(_Resource, item)
            op, res, name, code = _config_check(
                int(resource.resource_type),
                str(resource.resource_name),
                alter=api_key != ApiKey.DESCRIBE_CONFIGS,
            )
            ok = allowed(op, res, name)
        if ok:
            kept.append(item)
        else:
            refused.append((item, code))
    if not refused:
        return request, {}
    entries: list[Mapping[str, object]] = []
    for item, code in refused:
        one = dataclasses.replace(request, **{field: (item,)})
        message = AUTHORIZATION_FAILED if api_key == ApiKey.CREATE_TOPICS else None
        entries += refuse(one, code, message)[response_field]
    return dataclasses.replace(request, **{field: tuple(kept)}), {response_field: entries}


def merge(response: Response, refused: Refusals) -> Response:
    """The handler's response with the refused items' entries added."""
    merged = dict(response)
    for field, entries in refused.items():
        before = response.get(field, ())
        merged[field] = [*cast(Sequence[object], before), *entries]
    return merged
