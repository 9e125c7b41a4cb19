"""The inbound side: an asyncio server speaking Kafka's protocol on one listener.

Per connection, one task reads bytes, feeds ``protocol.RequestReader`` and dispatches each
decoded request to the handler as its own task; a second task writes the answers *in request
order*, as Kafka does (clients rely on it: a long-poll Fetch delays later responses on the same
connection, in Kafka too). At most ``in_flight_max`` requests per connection are outstanding;
past that the reader stops reading, which pushes back on the client through TCP.

What this edge decides on its own (SPEC I4): a malformed frame closes the connection with one
log line; a request for an API or version not in the table gets UNSUPPORTED_VERSION (and the
connection stays open) unless Kafka defines no response for that api key and version (an
unknown api key): then no answer could be read, and the connection is closed with a log line,
as Kafka does; ApiVersions is answered here from the table.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Final

from kio.static.protocol import ResponsePayload

from pykraft.protocol import (
    FRAME_MAX_BYTES_DEFAULT,
    KRAFT_APIS,
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

__all__ = ["READ_CHUNK_BYTES", "Handler", "KafkaServer"]

log = logging.getLogger("pykraft.net.server")

READ_CHUNK_BYTES: Final = 64 * 1024
IN_FLIGHT_MAX_DEFAULT: Final = 64

Handler = Callable[[DecodedRequest, str], Awaitable[ResponsePayload]]
"""``handler(request, listener_name)`` -> the response (may wait, e.g. a long-poll Fetch)."""

_CLOSE: Final = None  # queued after the last response of a connection


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
        self._handler = handler
        self._host = host
        self._port = port
        self._frame_max_bytes = frame_max_bytes
        self._in_flight_max = in_flight_max
        self._api_versions = api_versions or (lambda v: build_api_versions_response(v, apis))
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    @property
    def port(self) -> int:
        """The bound port (after :meth:`start`)."""
        assert self._server is not None and self._server.sockets
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._on_connection, self._host or None, self._port, reuse_address=True
        )

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        for task in list(self._connections):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._server is not None:
            with contextlib.suppress(Exception):
                await self._server.wait_closed()

    async def _on_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await self._serve(reader, writer)
        except asyncio.CancelledError:
            # close() ends connection tasks this way; asyncio would log a cancelled
            # client_connected_cb task as an error, so end it normally.
            pass
        finally:
            self._connections.discard(task)

    def _dispatch(self, request: DecodedRequest) -> asyncio.Future[ResponsePayload]:
        if request.api_key == ApiKey.API_VERSIONS:
            done: asyncio.Future[ResponsePayload] = asyncio.get_running_loop().create_future()
            done.set_result(self._api_versions(request.api_version))
            return done
        return asyncio.ensure_future(self._handler(request, self.listener_name))

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        requests = RequestReader(self.apis, frame_max_bytes=self._frame_max_bytes)
        pending: asyncio.Queue[tuple[int, asyncio.Future[ResponsePayload]] | None] = asyncio.Queue(
            maxsize=self._in_flight_max
        )
        write_task = asyncio.ensure_future(self._write_loop(pending, writer, peer))
        try:
            while not write_task.done():
                data = await reader.read(READ_CHUNK_BYTES)
                if not data:
                    requests.end_of_stream()
                    break
                requests.feed(data)
                while True:
                    try:
                        request = requests.next_request()
                    except UnsupportedApiVersion as e:
                        try:
                            body = error_response(
                                e.api_key, e.api_version, ErrorCode.unsupported_version
                            )
                        except LookupError:
                            # An api key or version Kafka does not define: no answer exists
                            # that the client could read, so close, as Kafka does.
                            log.warning(
                                "closing connection from %s: no response format for api key %d "
                                "v%d (correlation id %d, client id %r)",
                                peer,
                                e.api_key,
                                e.api_version,
                                e.correlation_id,
                                e.client_id,
                            )
                            return
                        log.info("answering UNSUPPORTED_VERSION to %s: %s", peer, e)
                        answer = asyncio.get_running_loop().create_future()
                        answer.set_result(body)
                        await pending.put((e.correlation_id, answer))
                        continue
                    if request is None:
                        break
                    await pending.put((request.correlation_id, self._dispatch(request)))
            await pending.put(_CLOSE)
            await write_task
        except ProtocolError as e:
            log.warning("closing connection from %s: %s: %s", peer, type(e).__name__, e)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            write_task.cancel()
            while not pending.empty():
                item = pending.get_nowait()
                if item is not None:
                    item[1].cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await write_task
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _write_loop(
        self,
        pending: asyncio.Queue[tuple[int, asyncio.Future[ResponsePayload]] | None],
        writer: asyncio.StreamWriter,
        peer: object,
    ) -> None:
        while True:
            item = await pending.get()
            if item is None:
                return
            correlation_id, answer = item
            try:
                response = await answer
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("handler failed; closing connection from %s", peer)
                writer.close()
                return
            writer.write(encode_response(correlation_id, response))
            await writer.drain()
