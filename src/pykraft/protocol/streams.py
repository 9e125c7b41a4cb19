"""Connection-level readers: bytes in, decoded messages out (sans-I/O, h11 style).

The asyncio edge owns the socket; per connection it keeps one reader, calls ``feed`` with
each chunk it receives and drains ``next_request``/``next_response`` until ``None``.

Which errors end a connection: :class:`FrameTooLarge` and :class:`MalformedFrame` do (the
reader stays poisoned or the message cannot be trusted); :class:`UnsupportedApiVersion` does
not -- the server answers ``UNSUPPORTED_VERSION`` and the next call reads the next frame.
"""

from __future__ import annotations

from typing import Final

from kio.static.protocol import RequestPayload

from .apis import ApiTable
from .codec import DecodedRequest, DecodedResponse, decode_request, decode_response, encode_request
from .errors import LocalProtocolError
from .framing import FRAME_MAX_BYTES_DEFAULT, Buffer, FrameDecoder

__all__ = ["IN_FLIGHT_MAX_DEFAULT", "RequestReader", "ResponseReader"]

IN_FLIGHT_MAX_DEFAULT: Final = 1024


class RequestReader:
    """Server side of one connection: frames -> :class:`DecodedRequest`."""

    def __init__(self, apis: ApiTable, *, frame_max_bytes: int = FRAME_MAX_BYTES_DEFAULT) -> None:
        self.apis: Final = apis
        self._frames = FrameDecoder(frame_max_bytes=frame_max_bytes)

    @property
    def frame_max_bytes(self) -> int:
        return self._frames.frame_max_bytes

    @frame_max_bytes.setter
    def frame_max_bytes(self, value: int) -> None:
        """A new cap for the frames not read yet (``sasl.server.max.receive.size`` until a
        SASL connection authenticates, then ``socket.request.max.bytes``)."""
        self._frames.frame_max_bytes = value

    def feed(self, data: Buffer) -> None:
        self._frames.feed(data)

    def next_request(self) -> DecodedRequest | None:
        """The next whole request, ``None`` if more bytes are needed; raises ProtocolError."""
        frame = self._frames.next_frame()
        return None if frame is None else decode_request(frame, self.apis)

    def next_frame(self) -> bytes | None:
        """The next whole frame as bytes, undecoded (SASL tokens after a SaslHandshake v0
        travel bare, without a request header)."""
        return self._frames.next_frame()

    def end_of_stream(self) -> None:
        """The peer closed; raises MalformedFrame if it stopped inside a frame."""
        self._frames.end_of_stream()


class ResponseReader:
    """Client side of one connection: encodes requests, matches responses to them.

    Invariant: ``_in_flight`` holds exactly the correlation ids sent and not yet answered,
    at most ``in_flight_max`` of them; responses may arrive in any order (Kafka answers in
    order per connection, but nothing here relies on it).
    """

    def __init__(
        self,
        *,
        client_id: str | None = "pykraft",
        frame_max_bytes: int = FRAME_MAX_BYTES_DEFAULT,
        in_flight_max: int = IN_FLIGHT_MAX_DEFAULT,
    ) -> None:
        self.client_id: Final = client_id
        self.in_flight_max: Final = in_flight_max
        self._frames = FrameDecoder(frame_max_bytes=frame_max_bytes)
        self._in_flight: dict[int, tuple[int, int]] = {}
        self._next_correlation_id = 0

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    def send(self, message: RequestPayload) -> tuple[int, bytes]:
        """Encode ``message`` under a fresh correlation id; return (id, framed bytes)."""
        if len(self._in_flight) >= self.in_flight_max:
            raise LocalProtocolError(f"{self.in_flight_max} requests already in flight")
        correlation_id = self._next_correlation_id
        # Correlation ids are int32 on the wire; wrap rather than overflow.
        self._next_correlation_id = (correlation_id + 1) & 0x7FFFFFFF
        if correlation_id in self._in_flight:
            raise LocalProtocolError(f"correlation id {correlation_id} still in flight")
        data = encode_request(correlation_id, self.client_id, message)
        self._in_flight[correlation_id] = (int(message.__api_key__), int(message.__version__))
        return correlation_id, data

    def forget(self, correlation_id: int) -> None:
        """Stop expecting a response (the request timed out); a late answer is then an error."""
        self._in_flight.pop(correlation_id, None)

    def feed(self, data: Buffer) -> None:
        self._frames.feed(data)

    def next_response(self) -> DecodedResponse | None:
        """The next whole response, ``None`` if more bytes are needed; raises ProtocolError."""
        frame = self._frames.next_frame()
        if frame is None:
            return None
        response = decode_response(frame, self._in_flight)
        del self._in_flight[response.correlation_id]
        return response

    def end_of_stream(self) -> None:
        self._frames.end_of_stream()
