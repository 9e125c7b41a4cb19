"""The one exception the controller's handlers raise (a Kafka error code with its message),
and the responses that refuse a whole request item by item."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Final

from kio.schema.errors import ErrorCode

from pykraft.protocol import views

__all__ = [
    "CONTROLLER_ID_NOT_REGISTERED",
    "MAX_RECORDS_PER_USER_OP",
    "ApiError",
    "Items",
    "alter_configs_errors",
    "alter_quotas_errors",
    "alter_scram_errors",
    "check_op_size",
    "create_acls_errors",
    "create_partitions_errors",
    "create_topics_errors",
    "delete_acls_errors",
    "delete_topics_errors",
    "describe_configs_errors",
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


# The refused items' response entries, by response field: what an API whose items carry the
# error code answers when every item is refused (Kafka's getErrorResponse), one builder per API
# below, each on its row of ``handlers.HANDLERS``.
Items = Mapping[str, Sequence[Mapping[str, object]]]


def create_topics_errors(
    request: views.CreateTopicsRequest, code: ErrorCode, message: str | None
) -> Items:
    return {"topics": [topic_error(t.name, ApiError(code, message)) for t in request.topics]}


def delete_topics_errors(
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


def create_partitions_errors(
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


def alter_configs_errors(
    request: views.AlterConfigsRequest | views.IncrementalAlterConfigsRequest,
    code: ErrorCode,
    message: str | None,
) -> Items:
    return {"responses": _resources(request, code, message)}


def describe_configs_errors(
    request: views.DescribeConfigsRequest, code: ErrorCode, message: str | None
) -> Items:
    return {"results": [{**r_, "configs": ()} for r_ in _resources(request, code, message)]}


def create_acls_errors(
    request: views.CreateAclsRequest, code: ErrorCode, message: str | None
) -> Items:
    return {"results": [{"error_code": code, "error_message": message} for _ in request.creations]}


def delete_acls_errors(
    request: views.DeleteAclsRequest, code: ErrorCode, message: str | None
) -> Items:
    return {
        "filter_results": [
            {"error_code": code, "error_message": message, "matching_acls": []}
            for _ in request.filters
        ]
    }


def alter_scram_errors(
    request: views.AlterUserScramCredentialsRequest, code: ErrorCode, message: str | None
) -> Items:
    users = dict.fromkeys(
        [d.name for d in request.deletions] + [u.name for u in request.upsertions]
    )
    return {"results": [{"user": u, "error_code": code, "error_message": message} for u in users]}


def alter_quotas_errors(
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
