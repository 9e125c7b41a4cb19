"""The one exception the controller's handlers raise (a Kafka error code with its message),
and the responses that refuse a whole request item by item."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from kio.schema.errors import ErrorCode

from pykraft.protocol import views
from pykraft.protocol.apis import ApiKey, response_schema
from pykraft.protocol.build import version_fields

__all__ = [
    "CONTROLLER_ID_NOT_REGISTERED",
    "MAX_RECORDS_PER_USER_OP",
    "ApiError",
    "check_op_size",
    "error_fields",
    "item_errors",
    "topic_error",
]

# Kafka's QuorumController.MAX_RECORDS_PER_USER_OP: one user operation writes at most this many
# records; past it Kafka's BoundedList throws and the request fails with POLICY_VIOLATION.
MAX_RECORDS_PER_USER_OP: Final = 10_000
# Kafka 4.4.0's CONTROLLER_ID_NOT_REGISTERED (kio's ErrorCode predates it).
CONTROLLER_ID_NOT_REGISTERED: Final = 137
TOO_LARGE: Final = "Unable to perform excessively large batch operation."


class ApiError(Exception):
    """A request (or one item of it) refused with Kafka's ``code`` and ``message``."""

    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or code.name)
        self.code = code
        self.message = message


def check_op_size(records: int) -> None:
    """Refuse an operation that would write more than ``MAX_RECORDS_PER_USER_OP`` records
    (as Kafka does, before anything is written)."""
    if records > MAX_RECORDS_PER_USER_OP:
        raise ApiError(ErrorCode.policy_violation, TOO_LARGE)


# The refused items' response entries, by response field.
Items = Mapping[str, Sequence[Mapping[str, object]]]


def _create_topics(
    request: views.CreateTopicsRequest, code: ErrorCode, message: str | None
) -> Items:
    return {"topics": [topic_error(t.name, ApiError(code, message)) for t in request.topics]}


def _delete_topics(
    request: views.DeleteTopicsRequest, code: ErrorCode, message: str | None
) -> Items:
    if hasattr(request, "topics"):  # v6+
        items = [(t.name, t.topic_id) for t in getattr(request, "topics", ())]
    else:
        items = [(n, None) for n in getattr(request, "topic_names", ())]
    zero = uuid.UUID(int=0)
    return {
        "responses": [
            {"name": n, "topic_id": i or zero, "error_code": code, "error_message": message}
            for n, i in items
        ]
    }


def _create_partitions(
    request: views.CreatePartitionsRequest, code: ErrorCode, message: str | None
) -> Items:
    return {
        "results": [
            {"name": t.name, "error_code": code, "error_message": message} for t in request.topics
        ]
    }


def _resources(
    request: views.AlterConfigsRequest
    | views.IncrementalAlterConfigsRequest
    | views.DescribeConfigsRequest,
    code: ErrorCode,
    message: str | None,
) -> list[views.alter_configs_response.AlterConfigsResourceResponse]:
    return [
        {
            "error_code": code,
            "error_message": message,
            "resource_type": r_.resource_type,
            "resource_name": r_.resource_name,
        }
        for r_ in request.resources
    ]


def _alter_configs(
    request: views.AlterConfigsRequest | views.IncrementalAlterConfigsRequest,
    code: ErrorCode,
    message: str | None,
) -> Items:
    return {"responses": _resources(request, code, message)}


def _describe_configs(
    request: views.DescribeConfigsRequest, code: ErrorCode, message: str | None
) -> Items:
    return {"results": [{**r_, "configs": ()} for r_ in _resources(request, code, message)]}


def _create_acls(request: views.CreateAclsRequest, code: ErrorCode, message: str | None) -> Items:
    return {"results": [{"error_code": code, "error_message": message} for _ in request.creations]}


def _delete_acls(request: views.DeleteAclsRequest, code: ErrorCode, message: str | None) -> Items:
    return {
        "filter_results": [
            {"error_code": code, "error_message": message, "matching_acls": []}
            for _ in request.filters
        ]
    }


def _alter_scram(
    request: views.AlterUserScramCredentialsRequest, code: ErrorCode, message: str | None
) -> Items:
    users = dict.fromkeys(
        [d.name for d in request.deletions] + [u.name for u in request.upsertions]
    )
    return {"results": [{"user": u, "error_code": code, "error_message": message} for u in users]}


def _alter_quotas(
    request: views.AlterClientQuotasRequest, code: ErrorCode, message: str | None
) -> Items:
    return {
        "entries": [
            {
                "error_code": code,
                "error_message": message,
                "entity": [
                    {"entity_type": e.entity_type, "entity_name": e.entity_name}
                    for e in entry.entity
                ],
            }
            for entry in request.entries
        ]
    }


# The APIs without a top-level error code (and those whose items carry one too): the items
# each refusal is set on, one builder per API.
# (A builder's request is typed as its API's view; the table holds them all, so its request
# parameter is the decoded message of the row's API, whichever that is.)
ITEM_ERRORS: Final[dict[int, Callable[[Any, ErrorCode, str | None], Items]]] = {
    ApiKey.CREATE_TOPICS: _create_topics,
    ApiKey.DELETE_TOPICS: _delete_topics,
    ApiKey.CREATE_PARTITIONS: _create_partitions,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: _alter_configs,
    ApiKey.ALTER_CONFIGS: _alter_configs,
    ApiKey.DESCRIBE_CONFIGS: _describe_configs,
    ApiKey.CREATE_ACLS: _create_acls,
    ApiKey.DELETE_ACLS: _delete_acls,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _alter_scram,
    ApiKey.ALTER_CLIENT_QUOTAS: _alter_quotas,
}


def error_fields(
    api_key: int, version: int, request: object, code: ErrorCode, message: str | None
) -> dict[str, object]:
    """The response fields refusing every item of ``request`` with ``code`` (Kafka's
    ``getErrorResponse``: APIs without a top-level error code carry it per item, which is
    where a broker looks for NOT_CONTROLLER; ``ITEM_ERRORS``); the top-level fields only
    where the response has them (``build.make`` refuses a field no version has)."""
    known = version_fields(response_schema(api_key, version))
    top = {"throttle_time": 0, "error_code": code, "error_message": message}
    fields: dict[str, object] = {k: v for k, v in top.items() if k in known}
    fields.update(item_errors(api_key, request, code, message))
    return fields


def item_errors(api_key: int, request: object, code: ErrorCode, message: str | None) -> Items:
    """The entries refusing every item of ``request`` (none for an API whose items carry no
    error code: ``ITEM_ERRORS``)."""
    items = ITEM_ERRORS.get(api_key)
    return {} if items is None else items(request, code, message)


def topic_error(name: str, error: ApiError) -> views.create_topics_response.CreatableTopicResult:
    return {
        "name": name,
        "topic_id": uuid.UUID(int=0),
        "error_code": error.code,
        "error_message": error.message,
        "num_partitions": -1,
        "replication_factor": -1,
        "configs": None,
    }
