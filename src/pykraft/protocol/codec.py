"""Whole Kafka messages: header + body, framed; all encoding and decoding is kio's.

Header versions (Kafka's ``ApiMessageType.requestHeaderVersion/responseHeaderVersion``):

===========================  ==============  ===============
message version              request header  response header
===========================  ==============  ===============
non-flexible                 v1              v0
flexible                     v2              v1
ApiVersions, any version     (as above)      v0 always
===========================  ==============  ===============

ApiVersions responses keep header v0 so that a client that sent a version the server does not
know can still read the error: the server answers with a v0 body (see ``api_versions.py``), and
the client, seeing ``UNSUPPORTED_VERSION`` in the first two body bytes, re-reads the body as v0.

Decoding trusts nothing: kio's errors, lengths that do not fit (checked by ``_preflight``
first, because kio would abort the process), and bytes left over after the body all become
:class:`MalformedFrame`.  Records in Fetch/FetchSnapshot stay the raw ``bytes`` kio returns for
``records`` fields; no record batch is decoded here.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar, cast

from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i16, i32
from kio.static.protocol import Entity, RequestPayload, ResponsePayload

from ._preflight import check_lengths
from .apis import ApiKey, ApiTable, request_schema, response_schema
from .errors import (
    ErrorCode,
    LocalProtocolError,
    MalformedFrame,
    UnknownCorrelationId,
    UnsupportedApiVersion,
)
from .ext import is_generated, read_generated
from .framing import Buffer

__all__ = [
    "DecodedRequest",
    "DecodedResponse",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "peek_correlation_id",
    "request_header_version",
    "response_header_version",
]

_SIZE_PLACEHOLDER: Final = b"\x00\x00\x00\x00"
E = TypeVar("E", bound=Entity)


def request_header_version(api_key: int, api_version: int) -> int:
    """1 for non-flexible request versions, 2 for flexible ones."""
    return 2 if request_schema(api_key, api_version).__flexible__ else 1


def response_header_version(api_key: int, api_version: int) -> int:
    """0 for non-flexible response versions and for every ApiVersions version, else 1."""
    if api_key == ApiKey.API_VERSIONS:
        return 0
    return 1 if response_schema(api_key, api_version).__flexible__ else 0


@dataclass(frozen=True, slots=True)
class DecodedRequest:
    """A request as the server sees it: header fields plus kio's body."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    message: RequestPayload


@dataclass(frozen=True, slots=True)
class DecodedResponse:
    """A response as the client sees it, matched to the request it answers."""

    api_key: int
    api_version: int
    correlation_id: int
    message: ResponsePayload


def _serialize(header: Entity, message: Entity) -> bytes:
    out = io.BytesIO()
    out.write(_SIZE_PLACEHOLDER)
    entity_writer(type(header))(out, header)
    if is_generated(type(message)):
        out.write(cast(Any, message).encode(int(message.__version__)))
    else:
        entity_writer(type(message))(out, message)
    size = out.tell() - len(_SIZE_PLACEHOLDER)
    out.getbuffer()[:4] = size.to_bytes(4, "big")
    return out.getvalue()


def encode_request(correlation_id: int, client_id: str | None, message: RequestPayload) -> bytes:
    """Frame ``message`` with the request header its version requires."""
    api_key, api_version = int(message.__api_key__), int(message.__version__)
    header_type: type[RequestHeaderV1 | RequestHeaderV2] = (
        RequestHeaderV2 if request_header_version(api_key, api_version) == 2 else RequestHeaderV1
    )
    header = header_type(
        request_api_key=i16(api_key),
        request_api_version=i16(api_version),
        correlation_id=i32(correlation_id),
        client_id=client_id,
    )
    return _serialize(header, message)


def encode_response(correlation_id: int, message: ResponsePayload) -> bytes:
    """Frame ``message`` with the response header its API and version require."""
    api_key, api_version = int(message.__api_key__), int(message.__version__)
    header_type: type[ResponseHeaderV0 | ResponseHeaderV1] = (
        ResponseHeaderV1 if response_header_version(api_key, api_version) == 1 else ResponseHeaderV0
    )
    header = header_type(correlation_id=i32(correlation_id))
    return _serialize(header, message)


def _read_body(entity_type: type[E], frame: bytes, pos: int, context: dict[str, int | None]) -> E:
    """Parse exactly ``frame[pos:]`` as ``entity_type``, or raise MalformedFrame."""
    if is_generated(entity_type):
        try:
            body, size = read_generated(entity_type, frame, pos)
        except Exception as e:
            raise MalformedFrame(
                f"cannot decode {entity_type.__name__}: {type(e).__name__}: {e}", **context
            ) from e
        if pos + size != len(frame):
            raise MalformedFrame(
                f"{len(frame) - pos - size} trailing bytes after {entity_type.__name__}",
                **context,
            )
        return cast(E, body)
    try:
        check_lengths(entity_type, frame, pos, len(frame))
    except MalformedFrame as e:
        raise MalformedFrame(str(e), **context) from None
    try:
        body, size = entity_reader(entity_type)(frame, pos)
    except Exception as e:
        # kio is a black box at this trust boundary: besides its DecodeError family it raises
        # ValueError (unknown error code), KeyError (unknown tag), UnicodeDecodeError, ...
        # Whatever it raises, the peer sent bytes we cannot read.
        raise MalformedFrame(
            f"cannot decode {entity_type.__name__}: {type(e).__name__}: {e}", **context
        ) from e
    if pos + size != len(frame):
        raise MalformedFrame(
            f"{len(frame) - pos - size} trailing bytes after {entity_type.__name__}", **context
        )
    return body


def decode_data(entity_type: type[E], frame: bytes, pos: int = 0) -> E:
    """Exactly ``frame[pos:]`` as the data entity ``entity_type`` (e.g. Kafka's
    DefaultPrincipalData inside an Envelope); raises MalformedFrame."""
    return _read_body(entity_type, frame, pos, {})


def encode_data(message: Entity) -> bytes:
    """The wire form of a data entity (no header)."""
    out = io.BytesIO()
    entity_writer(type(message))(out, message)
    return out.getvalue()


def _read_prefix(entity_type: type[E], frame: bytes) -> tuple[E, int]:
    """Parse a header at the start of ``frame``; return it and the body's position."""
    try:
        return entity_reader(entity_type)(frame, 0)
    except Exception as e:
        raise MalformedFrame(f"cannot decode {entity_type.__name__}: {e}") from e


def decode_request(frame: Buffer, apis: ApiTable) -> DecodedRequest:
    """Decode one request frame (without its size prefix), as a server.

    The v1 header (a prefix of v2) is read first to learn api key and version; if ``apis``
    does not serve them, :class:`UnsupportedApiVersion` carries what the answer needs.
    """
    data = bytes(frame)
    v1, _ = _read_prefix(RequestHeaderV1, data)
    api_key, api_version = int(v1.request_api_key), int(v1.request_api_version)
    correlation_id = int(v1.correlation_id)
    if not apis.supports(api_key, api_version):
        raise UnsupportedApiVersion(
            api_key=api_key,
            api_version=api_version,
            correlation_id=correlation_id,
            client_id=v1.client_id,
        )
    context: dict[str, int | None] = {
        "api_key": api_key,
        "api_version": api_version,
        "correlation_id": correlation_id,
    }
    body_type = request_schema(api_key, api_version)
    if request_header_version(api_key, api_version) == 2:
        _, pos = _read_prefix(RequestHeaderV2, data)
    else:
        _, pos = _read_prefix(RequestHeaderV1, data)
    message = _read_body(body_type, data, pos, context)
    return DecodedRequest(api_key, api_version, correlation_id, v1.client_id, message)


def peek_correlation_id(frame: Buffer) -> int:
    """The correlation id every response header starts with."""
    view = memoryview(frame)
    if len(view) < 4:
        raise MalformedFrame(f"response frame of {len(view)} bytes has no header")
    return int.from_bytes(view[:4], "big", signed=True)


def decode_response(frame: Buffer, in_flight: Mapping[int, tuple[int, int]]) -> DecodedResponse:
    """Decode one response frame, as a client.

    ``in_flight`` maps each correlation id the client sent to that request's (api key, api
    version); the response is read at that version (ApiVersions: at v0 when the server says
    ``UNSUPPORTED_VERSION``, as Kafka's clients do).
    """
    data = bytes(frame)
    correlation_id = peek_correlation_id(data)
    try:
        api_key, api_version = in_flight[correlation_id]
    except KeyError:
        raise UnknownCorrelationId(
            f"response for correlation id {correlation_id}, which is not in flight",
            correlation_id=correlation_id,
        ) from None
    try:
        body_type = response_schema(api_key, api_version)
    except LookupError as e:
        raise LocalProtocolError(f"request {api_key} v{api_version} was never encodable") from e
    if response_header_version(api_key, api_version) == 1:
        _, pos = _read_prefix(ResponseHeaderV1, data)
    else:
        pos = 4
    if api_key == ApiKey.API_VERSIONS and data[pos : pos + 2] == int(
        ErrorCode.unsupported_version
    ).to_bytes(2, "big"):
        api_version = 0
        body_type = response_schema(api_key, 0)
    context: dict[str, int | None] = {
        "api_key": api_key,
        "api_version": api_version,
        "correlation_id": correlation_id,
    }
    message = _read_body(body_type, data, pos, context)
    return DecodedResponse(api_key, api_version, correlation_id, message)
