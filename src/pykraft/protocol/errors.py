"""Typed errors of the wire-protocol layer, and Kafka's error codes.

Errors split the way h11 splits them:

* :class:`ProtocolError` and its subclasses are *remote* errors: the peer sent bytes that are
  not a valid Kafka frame/message, or asked for something we do not serve.  The network edge
  catches exactly this class; nothing else escapes the decoders, whatever the input.
  Framing-level errors (:class:`FrameTooLarge`, :class:`MalformedFrame`) leave the byte stream
  unusable, so the connection must be closed (SPEC I4: "malformed frames close the connection
  with a log line").  :class:`UnsupportedApiVersion` leaves the stream intact: the server answers
  ``UNSUPPORTED_VERSION`` and keeps reading.
* :class:`LocalProtocolError` is *our* bug or the caller's misuse (e.g. encoding a response for
  a correlation id nobody asked for); it is never caused by bytes from the network.

``ErrorCode`` is kio's enum of Kafka's error codes, re-exported so that the rest of pykraft has
one source of truth.  kio spells the members in lower case (``ErrorCode.not_leader_or_follower``
is Kafka's ``NOT_LEADER_OR_FOLLOWER``, code 6).
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

__all__ = [
    "ErrorCode",
    "FrameTooLarge",
    "LocalProtocolError",
    "MalformedFrame",
    "ProtocolError",
    "UnknownCorrelationId",
    "UnsupportedApiVersion",
]


class ProtocolError(Exception):
    """The peer sent something that is not a valid Kafka message for this connection.

    ``error_code`` is the Kafka error code a server would answer with, when it can answer at
    all (framing errors cannot be answered: the connection is closed instead).
    """

    error_code: ErrorCode = ErrorCode.invalid_request


class FrameTooLarge(ProtocolError):
    """The 4-byte size prefix announces more than ``frame_max_bytes``.

    Raised as soon as the prefix is read, before any of the body is buffered, so a hostile
    size cannot make us allocate (Kafka: ``socket.request.max.bytes``).
    """

    def __init__(self, size_bytes: int, frame_max_bytes: int) -> None:
        super().__init__(
            f"frame of {size_bytes} bytes exceeds the limit of {frame_max_bytes} bytes"
        )
        self.size_bytes = size_bytes
        self.frame_max_bytes = frame_max_bytes


class MalformedFrame(ProtocolError):
    """A frame whose size prefix, header or body cannot be decoded (or has trailing bytes).

    ``api_key``/``api_version``/``correlation_id`` are filled in when the header was readable,
    so the log line can say which request was bad.
    """

    def __init__(
        self,
        message: str,
        *,
        api_key: int | None = None,
        api_version: int | None = None,
        correlation_id: int | None = None,
    ) -> None:
        super().__init__(message)
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id


class UnknownCorrelationId(MalformedFrame):
    """A response arrived whose correlation id matches no request in flight.

    Kafka's client treats this as a broken connection (``IllegalStateException: Correlation id
    for response does not match request``); so do we.
    """


class UnsupportedApiVersion(ProtocolError):
    """A well-framed request for an API key or version this server does not serve.

    Carries what the server needs to answer (Kafka answers ``UNSUPPORTED_VERSION``; for
    ApiVersions it answers v0 with the supported table, see
    :func:`pykraft.protocol.api_versions.unsupported_api_versions_response`).  The stream
    stays usable: the next frame decodes normally.
    """

    error_code = ErrorCode.unsupported_version

    def __init__(
        self, *, api_key: int, api_version: int, correlation_id: int, client_id: str | None
    ) -> None:
        super().__init__(
            f"unsupported api key {api_key} version {api_version} "
            f"(correlation id {correlation_id}, client id {client_id!r})"
        )
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.client_id = client_id


class LocalProtocolError(Exception):
    """The caller misused the protocol layer (never caused by bytes from the network)."""
