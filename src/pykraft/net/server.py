"""The inbound side: an asyncio server speaking Kafka's protocol on one listener.

Each connection is an ``asyncio.Protocol``: bytes are decoded in ``data_received`` and each
request is handed to the handler there, in the same loop callback; answers are written *in
request order*, as Kafka does (clients rely on it: a long-poll Fetch delays later responses on
the same connection, in Kafka too). A handler answers in one of two ways:

* it returns an :class:`Answer` and calls ``Answer.set`` later (or already did): the response
  is encoded and written inside that call, once every earlier answer on the connection is
  out. The node does this: a request goes from the socket into the core and its answer back
  to the socket without a trip through the event loop's ready queue (each such trip costs a
  loop iteration, and a follower's Fetch crosses this edge on every commit);
* it returns an awaitable (a coroutine): run as a task, written when it completes.

At most ``in_flight_max`` requests per connection are outstanding, and nothing more is
decoded while the transport's write buffer is over its high-water mark; either way the
server stops reading, which pushes back on the client through TCP.

What this edge decides on its own (SPEC I4): a malformed frame closes the connection with one
log line; a request for an API or version not in the table gets UNSUPPORTED_VERSION (and the
connection stays open) unless Kafka defines no response for that api key and version (an
unknown api key): then no answer could be read, and the connection is closed with a log line,
as Kafka does; ApiVersions is answered here from the table.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Awaitable, Callable
from typing import Final, cast

from kio.static.protocol import ResponsePayload

from pykraft.net.apis import KRAFT_APIS
from pykraft.protocol import (
    FRAME_MAX_BYTES_DEFAULT,
    ApiKey,
    ApiTable,
    DecodedRequest,
    ErrorCode,
    ProtocolError,
    RequestReader,
    UnsupportedApiVersion,
    build_api_versions_response,
    encode_response,
    error_response,
)

__all__ = ["Answer", "Handler", "KafkaServer"]

log = logging.getLogger("pykraft.net.server")

IN_FLIGHT_MAX_DEFAULT: Final = 64


class Answer:
    """A response a handler gives now or later. ``set`` delivers it synchronously to the
    connection (which writes it if it is next in request order); ``on_cancel`` runs if the
    connection goes away first. Invariant: set or cancelled at most once, never both."""

    __slots__ = ("_deliver", "done", "on_cancel", "payload")

    def __init__(self, payload: ResponsePayload | None = None) -> None:
        self.payload = payload
        self.done = payload is not None
        self._deliver: Callable[[], None] | None = None
        self.on_cancel: Callable[[], None] | None = None

    def attach(self, deliver: Callable[[], None]) -> None:
        """The connection's side: ``deliver()`` runs inside ``set``."""
        self._deliver = deliver

    def set(self, payload: ResponsePayload) -> None:
        if self.done:
            return
        self.payload = payload
        self.done = True
        if self._deliver is not None:
            self._deliver()

    def cancel(self) -> None:
        if self.done:
            return
        self.done = True
        self._deliver = None
        if self.on_cancel is not None:
            self.on_cancel()


Handler = Callable[[DecodedRequest, str], "Answer | Awaitable[ResponsePayload]"]
"""``handler(request, listener_name)`` -> an :class:`Answer` or an awaitable response."""


class KafkaServer:
    """Accepts Kafka-protocol connections on ``host:port`` (port 0 picks a free one)."""

    def __init__(
        self,
        handler: Handler,
        *,
        listener_name: str,
        host: str,
        port: int,
        apis: ApiTable = KRAFT_APIS,
        frame_max_bytes: int = FRAME_MAX_BYTES_DEFAULT,
        in_flight_max: int = IN_FLIGHT_MAX_DEFAULT,
        api_versions: Callable[[int], ResponsePayload] | None = None,
    ) -> None:
        assert in_flight_max > 0
        self.listener_name: Final = listener_name
        self.apis: Final = apis
        self.handler = handler
        self._host = host
        self._port = port
        self.frame_max_bytes = frame_max_bytes
        self.in_flight_max = in_flight_max
        self.api_versions = api_versions or (lambda v: build_api_versions_response(v, apis))
        self._server: asyncio.Server | None = None
        self.connections: set[_ServerConnection] = set()

    @property
    def port(self) -> int:
        """The bound port (after :meth:`start`)."""
        assert self._server is not None and self._server.sockets
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: _ServerConnection(self), self._host or None, self._port, reuse_address=True
        )

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        connections = list(self.connections)
        for conn in connections:
            conn.abort()
        for conn in connections:
            await conn.closed
        if self._server is not None:
            await self._server.wait_closed()


class _ServerConnection(asyncio.Protocol):
    """One client connection. Invariants: ``_slots`` holds the requests not yet answered on
    the wire, in request order; only the head may be written; at most ``in_flight_max``."""

    def __init__(self, server: KafkaServer) -> None:
        self._server = server
        self._requests = RequestReader(server.apis, frame_max_bytes=server.frame_max_bytes)
        self._slots: collections.deque[tuple[int, Answer | asyncio.Future[ResponsePayload]]] = (
            collections.deque()
        )
        self._transport: asyncio.Transport | None = None
        self._peer: object = None
        self._paused_reading = False  # by us: too many in flight, or writes backed up
        self._write_paused = False  # by the transport: its buffer is over the high-water mark
        self._eof = False  # the client is done sending: close once everything is answered
        self._taking = False  # inside _take_requests (a handler may answer re-entrantly)
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    # -- asyncio.Protocol ---------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, only alike.
        self._transport = cast(asyncio.Transport, transport)
        self._peer = self._transport.get_extra_info("peername")
        self._server.connections.add(self)

    def data_received(self, data: bytes) -> None:
        self._requests.feed(data)
        self._take_requests()

    def eof_received(self) -> bool:
        try:
            self._requests.end_of_stream()
        except ProtocolError as e:
            self._protocol_error(e)
            return False
        self._eof = True
        self._close_if_done()
        return True  # keep the transport open to write the answers still due

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        self._take_requests()

    def connection_lost(self, exc: Exception | None) -> None:
        self._server.connections.discard(self)
        slots, self._slots = self._slots, collections.deque()
        for _, pending in slots:
            pending.cancel()
        if not self.closed.done():
            self.closed.set_result(None)

    def abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()

    # -- requests -----------------------------------------------------------------------

    def _take_requests(self) -> None:
        """Decode and dispatch the buffered requests while there is room for them."""
        if self._taking:
            return  # the running call goes on with the next request
        self._taking = True
        try:
            self._take_buffered()
        finally:
            self._taking = False
        self._close_if_done()

    def _take_buffered(self) -> None:
        transport = self._transport
        assert transport is not None
        while not transport.is_closing():
            if len(self._slots) >= self._server.in_flight_max or self._write_paused:
                if not self._paused_reading:
                    self._paused_reading = True
                    transport.pause_reading()
                return
            try:
                request = self._requests.next_request()
            except UnsupportedApiVersion as e:
                self._unsupported(e)
                continue
            except ProtocolError as e:
                self._protocol_error(e)
                return
            if request is None:
                break
            self._dispatch(request)
        if self._paused_reading and not transport.is_closing():
            self._paused_reading = False
            transport.resume_reading()

    def _dispatch(self, request: DecodedRequest) -> None:
        server = self._server
        if request.api_key == ApiKey.API_VERSIONS:
            self._queue(request.correlation_id, Answer(server.api_versions(request.api_version)))
            return
        try:
            result = server.handler(request, server.listener_name)
        except Exception:
            log.exception("handler failed; closing connection from %s", self._peer)
            self._close()
            return
        if isinstance(result, Answer):
            self._queue(request.correlation_id, result)
            return
        task = asyncio.ensure_future(result)
        self._slots.append((request.correlation_id, task))
        task.add_done_callback(self._task_done)

    def _queue(self, correlation_id: int, answer: Answer) -> None:
        self._slots.append((correlation_id, answer))
        if answer.done:
            self._write_ready()
        else:
            answer.attach(self._write_ready)

    def _task_done(self, task: asyncio.Future[ResponsePayload]) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.error(
                "handler failed; closing connection from %s",
                self._peer,
                exc_info=task.exception(),
            )
            self._close()
            return
        self._write_ready()

    def _unsupported(self, e: UnsupportedApiVersion) -> None:
        try:
            body = error_response(
                e.api_key, e.api_version, ErrorCode.unsupported_version, apis=self._server.apis
            )
        except LookupError:
            # An api key or version Kafka does not define: no answer exists that the
            # client could read, so close, as Kafka does.
            log.warning(
                "closing connection from %s: no response format for api key %d v%d "
                "(correlation id %d, client id %r)",
                self._peer,
                e.api_key,
                e.api_version,
                e.correlation_id,
                e.client_id,
            )
            self._close()
            return
        log.info("answering UNSUPPORTED_VERSION to %s: %s", self._peer, e)
        self._queue(e.correlation_id, Answer(body))

    def _protocol_error(self, e: ProtocolError) -> None:
        log.warning("closing connection from %s: %s: %s", self._peer, type(e).__name__, e)
        self._close()

    # -- answers ------------------------------------------------------------------------

    def _write_ready(self) -> None:
        """Write every answer at the head of the queue that is ready, in request order."""
        transport = self._transport
        slots = self._slots
        assert transport is not None
        while slots:
            correlation_id, pending = slots[0]
            if isinstance(pending, Answer):
                if not pending.done:
                    return
                payload = pending.payload
            elif pending.done() and not pending.cancelled():
                payload = pending.result()
            else:
                return
            slots.popleft()
            if transport.is_closing():
                continue
            assert payload is not None
            transport.write(encode_response(correlation_id, payload))
        if self._paused_reading:
            self._take_requests()
        self._close_if_done()

    def _close_if_done(self) -> None:
        if self._eof and not self._slots and not self._paused_reading:
            self._close()

    def _close(self) -> None:
        """Close after what is written so far (``connection_lost`` cancels the rest)."""
        if self._transport is not None:
            self._transport.close()
