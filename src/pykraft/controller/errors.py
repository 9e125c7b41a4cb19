"""The one exception the controller's handlers raise (a Kafka error code with its message),
and the responses that refuse a whole request item by item."""

from __future__ import annotations

import uuid
from typing import Any, Final

from kio.schema.errors import ErrorCode

from pykraft.protocol.apis import ApiKey, response_schema
from pykraft.protocol.build import version_fields

__all__ = [
    "CONTROLLER_ID_NOT_REGISTERED",
    "MAX_RECORDS_PER_USER_OP",
    "ApiError",
    "check_op_size",
    "error_fields",
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


def error_fields(
    api_key: int, version: int, request: Any, code: ErrorCode, message: str | None
) -> dict[str, Any]:
    """The response fields refusing every item of ``request`` with ``code`` (Kafka's
    ``getErrorResponse``: APIs without a top-level error code carry it per item, which is
    where a broker looks for NOT_CONTROLLER); the top-level fields only where the response
    has them (``build.make`` refuses a field no version has)."""
    known = version_fields(response_schema(api_key, version))
    top = {"throttle_time": 0, "error_code": code, "error_message": message}
    fields: dict[str, Any] = {k: v for k, v in top.items() if k in known}
    if api_key == ApiKey.CREATE_TOPICS:
        fields["topics"] = [topic_error(t.name, ApiError(code, message)) for t in request.topics]
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
    elif api_key == ApiKey.CREATE_ACLS:
        fields["results"] = [
            {"error_code": code, "error_message": message} for _ in request.creations
        ]
    elif api_key == ApiKey.DELETE_ACLS:
        fields["filter_results"] = [
            {"error_code": code, "error_message": message, "matching_acls": []}
            for _ in request.filters
        ]
    elif api_key == ApiKey.ALTER_USER_SCRAM_CREDENTIALS:
        users = dict.fromkeys(
            [d.name for d in request.deletions] + [u.name for u in request.upsertions]
        )
        fields["results"] = [
            {"user": u, "error_code": code, "error_message": message} for u in users
        ]
    elif api_key == ApiKey.ALTER_CLIENT_QUOTAS:
        fields["entries"] = [
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
    return fields


def topic_error(name: str, error: ApiError) -> dict[str, Any]:
    return {
        "name": name,
        "topic_id": uuid.UUID(int=0),
        "error_code": error.code,
        "error_message": error.message,
        "num_partitions": -1,
        "replication_factor": -1,
        "configs": None,
    }
