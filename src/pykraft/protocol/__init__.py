"""pykraft.protocol: Kafka's wire protocol on top of kio's generated messages.

Layers, bottom up (each a small module, re-exported here):

* ``framing``  -- 4-byte size prefix; :class:`FrameDecoder` splits a byte stream, bounded by
  ``frame_max_bytes`` (Kafka's ``socket.request.max.bytes``).
* ``codec``    -- request/response headers at the right version, kio bodies, typed errors.
* ``streams``  -- per-connection readers for the server (:class:`RequestReader`) and the client
  (:class:`ResponseReader`, which owns the correlation id -> (api key, version) map).
* ``apis``     -- the table of APIs and versions served (data, extensible).
* ``api_versions``, ``error_responses`` -- the answers Kafka's rules prescribe.
* ``errors``   -- :class:`ProtocolError` family (remote) and Kafka's :class:`ErrorCode`.

No I/O happens here; the asyncio edge moves bytes and calls these functions.
"""

from .api_versions import (
    API_VERSIONS_ROW,
    KRAFT_SUPPORTED_FEATURES,
    ApiVersionsResponse,
    api_versions_request_valid,
    build_api_versions_response,
    unsupported_api_versions_response,
)
from .apis import (
    ApiKey,
    ApiTable,
    ApiVersionRange,
    request_schema,
    response_schema,
)
from .codec import (
    DecodedRequest,
    DecodedResponse,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    peek_correlation_id,
    request_header_version,
    response_header_version,
)
from .error_responses import error_response
from .errors import (
    ErrorCode,
    FrameTooLarge,
    LocalProtocolError,
    MalformedFrame,
    ProtocolError,
    UnknownCorrelationId,
    UnsupportedApiVersion,
)
from .framing import FRAME_MAX_BYTES_DEFAULT, FrameDecoder, encode_frame
from .streams import IN_FLIGHT_MAX_DEFAULT, RequestReader, ResponseReader

__all__ = [
    "API_VERSIONS_ROW",
    "FRAME_MAX_BYTES_DEFAULT",
    "IN_FLIGHT_MAX_DEFAULT",
    "KRAFT_SUPPORTED_FEATURES",
    "ApiKey",
    "ApiTable",
    "ApiVersionRange",
    "ApiVersionsResponse",
    "DecodedRequest",
    "DecodedResponse",
    "ErrorCode",
    "FrameDecoder",
    "FrameTooLarge",
    "LocalProtocolError",
    "MalformedFrame",
    "ProtocolError",
    "RequestReader",
    "ResponseReader",
    "UnknownCorrelationId",
    "UnsupportedApiVersion",
    "api_versions_request_valid",
    "build_api_versions_response",
    "decode_request",
    "decode_response",
    "encode_frame",
    "encode_request",
    "encode_response",
    "error_response",
    "peek_correlation_id",
    "request_header_version",
    "request_schema",
    "response_header_version",
    "response_schema",
    "unsupported_api_versions_response",
]
