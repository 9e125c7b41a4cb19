"""An error response for any request, as Kafka's ``AbstractRequest.getErrorResponse`` builds.

Kafka's generated error responses set the top-level ``ErrorCode`` (and ``ErrorMessage`` where
the version has one) and leave every collection empty and every other field at its default.
``pykraft.protocol.build.make`` makes that generic: required fields get the zero value of
their Kafka type, nested structs are filled the same way, arrays are empty.  ApiVersions is special (its error
answer carries the ApiVersions row, see ``api_versions.py``).
"""

from __future__ import annotations

from kio.static.protocol import ResponsePayload

from .api_versions import (
    API_VERSIONS_ROW,
    build_api_versions_response,
    unsupported_api_versions_response,
)
from .apis import ApiKey, ApiTable, response_schema
from .build import known_fields, make, version_fields
from .errors import ErrorCode

__all__ = ["error_response"]


def error_response(
    api_key: int,
    api_version: int,
    error_code: ErrorCode,
    *,
    error_message: str | None = None,
    apis: ApiTable | None = None,
) -> ResponsePayload:
    """The response to request (``api_key``, ``api_version``) that only reports ``error_code``.

    ``apis`` is the server's table, read for ApiVersions only (whose error answer lists
    rows). Raises ``LookupError`` when kio has no response class at that version: then no
    answer the client could parse exists, and the server should close the connection (as
    Kafka does).
    """
    if api_key == ApiKey.API_VERSIONS:
        if apis is None:  # a table of the one row every listener serves
            apis = ApiTable([API_VERSIONS_ROW])
        if (
            error_code == ErrorCode.unsupported_version
            or not 0 <= api_version <= API_VERSIONS_ROW.max_version
        ):
            return unsupported_api_versions_response(apis)
        return build_api_versions_response(api_version, apis, error_code=error_code)
    cls = response_schema(api_key, api_version)
    # This version's own fields when it has a top-level error code (the common case):
    # asking every version's (``known_fields``) imports them all, which held a standby's
    # loop 280-340 ms at its first timed-out Fetch (bench/ANALYSIS.md section 26). An old
    # version without one is answered when another version has it (the field is dropped,
    # as Kafka's older versions do).
    own = version_fields(cls)
    names = own if "error_code" in own else known_fields(cls)
    if "error_code" not in names:
        # Its errors are per item (CreateTopics, ...): a caller that cannot build the items
        # cannot answer; it closes the connection, as Kafka does with what it cannot answer.
        raise LookupError(f"{cls.__name__} has no top-level error code")
    fields: dict[str, object] = {"error_code": error_code}
    if error_message is not None and "error_message" in names:
        fields["error_message"] = error_message
    return make(cls, fields)
