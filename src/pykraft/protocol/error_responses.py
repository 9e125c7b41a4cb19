"""An error response for any request, as Kafka's ``AbstractRequest.getErrorResponse`` builds.

Kafka's generated error responses set the top-level ``ErrorCode`` (and ``ErrorMessage`` where
the version has one) and leave every collection empty and every other field at its default.
kio's dataclasses make that generic: required fields get the zero value of their Kafka type,
nested structs are filled the same way, arrays are empty.  ApiVersions is special (its error
answer carries the ApiVersions row, see ``api_versions.py``).
"""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from typing import cast

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    get_schema_field_type,
    is_optional,
)
from kio.static.protocol import ResponsePayload

from .api_versions import build_api_versions_response, unsupported_api_versions_response
from .apis import KRAFT_APIS, ApiKey, ApiTable, response_schema
from .errors import ErrorCode

__all__ = ["error_response"]

_ZERO_BY_KAFKA_TYPE: dict[str, object] = {
    "string": "",
    "bytes": b"",
    "records": b"",
    "bool": False,
    "uuid": uuid.UUID(int=0),
    "timedelta_i32": datetime.timedelta(0),
    "timedelta_i64": datetime.timedelta(0),
    "datetime_i64": datetime.datetime.fromtimestamp(0, datetime.UTC),
    "float64": 0.0,
}


def error_response(
    api_key: int,
    api_version: int,
    error_code: ErrorCode,
    *,
    error_message: str | None = None,
    apis: ApiTable = KRAFT_APIS,
) -> ResponsePayload:
    """The response to request (``api_key``, ``api_version``) that only reports ``error_code``.

    Raises ``LookupError`` when kio has no response class at that version: then no answer the
    client could parse exists, and the server should close the connection (as Kafka does).
    """
    if api_key == ApiKey.API_VERSIONS:
        if error_code == ErrorCode.unsupported_version or not 0 <= api_version <= 4:
            return unsupported_api_versions_response(apis)
        return build_api_versions_response(api_version, apis, error_code=error_code)
    response_type = response_schema(api_key, api_version)
    return cast(ResponsePayload, _fill(response_type, error_code, error_message))


def _fill(entity_type: type, error_code: ErrorCode, error_message: str | None) -> object:
    values: dict[str, object] = {}
    for field in dataclasses.fields(entity_type):
        if field.name == "error_code":
            values["error_code"] = error_code
            continue
        if field.name == "error_message":
            values["error_message"] = error_message if is_optional(field) else error_message or ""
            continue
        if field.default is not dataclasses.MISSING:
            continue
        match classify_field(field):
            case PrimitiveTupleField() | EntityTupleField():
                values[field.name] = ()
            case EntityField(nested):
                values[field.name] = (
                    None if is_optional(field) else _fill(nested, ErrorCode.none, None)
                )
            case PrimitiveField():
                if is_optional(field):
                    values[field.name] = None
                else:
                    kafka_type = get_schema_field_type(field)
                    values[field.name] = _ZERO_BY_KAFKA_TYPE.get(kafka_type, 0)
                    if kafka_type == "error_code":
                        values[field.name] = ErrorCode.none
    return entity_type(**values)
