"""The outbound side: Kafka-protocol client connections.

* :class:`Connection` -- one TCP connection; requests are pipelined and answered in order by the
  server; each ``request`` has a timeout, and a timed-out request closes the connection (as
  Kafka's NetworkClient does: the server answers in order, so everything behind a stuck
  request is stuck too). A request the server may hold on purpose (a long-poll Fetch's
  ``max_wait_ms``, passed as ``server_wait_ms``) gets that wait added to its timeout, and so
  does every request pipelined behind it on the same connection (its answer cannot overtake
  the held one): a long poll never times out a connection by itself.
* :class:`PeerChannel` -- what the node uses to talk to one peer: a bounded send queue of the
  core's requests, one connection opened on demand (ApiVersions first, to learn which versions
  the peer speaks), reconnect with exponential backoff from ``retry_backoff_ms``. Every request
  ends in exactly one call of ``on_result(request_id, response | None)``; ``None`` means
  "never answered" (refused, reset, timed out, queue full) and becomes ``RequestFailed``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any, Final

import kio.schema.api_versions.v3.request as api_versions_v3
from kio.static.protocol import RequestPayload, ResponsePayload

from pykraft import __version__
from pykraft.net.convert import (
    InvalidResponse,
    VersionTooOld,
    api_key_of,
    error_response_for,
    request_to_kio,
    response_from_kio,
)
from pykraft.net.convert_voters import (
    OutboundVoterRequest,
    voter_api_key,
    voter_request_to_kio,
    voter_response_from_kio,
)
from pykraft.net.server import READ_CHUNK_BYTES  # one read size for both ends
from pykraft.protocol import (
    FRAME_MAX_BYTES_DEFAULT,
    KRAFT_APIS,
    ApiTable,
    ErrorCode,
    ProtocolError,
    ResponseReader,
)
from pykraft.raft.messages import (
    AddRaftVoterRequest,
    AnyRequest,
    AnyResponse,
    ApiVersionsRequest,
    DescribeQuorumRequest,
    FetchRequest,
    RemoveRaftVoterRequest,
    UpdateFeaturesRequest,
    UpdateRaftVoterRequest,
)

__all__ = ["Connection", "PeerChannel", "ResultCallback"]

log = logging.getLogger("pykraft.net.client")

# Requests the core answers but never sends.
_NOT_SENT: Final = (DescribeQuorumRequest, UpdateFeaturesRequest)
_VOTER_REQUESTS: Final = (
    AddRaftVoterRequest,
    RemoveRaftVoterRequest,
    UpdateRaftVoterRequest,
    ApiVersionsRequest,
)
VOTER_CHANGE_WAIT_MS: Final = 30_000  # how long a leader may take to commit a voter change
IN_FLIGHT_MAX_DEFAULT: Final = 64
SEND_QUEUE_MAX_DEFAULT: Final = 256
RECONNECT_BACKOFF_MAX_MS: Final = 1000  # Kafka's reconnect.backoff.max.ms default

ResultCallback = Callable[[int, AnyResponse | None], None]


class Connection:
    """One client connection. Invariant: ``_waiting`` holds a future for every correlation id
    the reader still expects; when the connection dies every one of them fails."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        client_id: str,
        frame_max_bytes: int,
        in_flight_max: int,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._responses = ResponseReader(
            client_id=client_id, frame_max_bytes=frame_max_bytes, in_flight_max=in_flight_max
        )
        self._waiting: dict[int, asyncio.Future[ResponsePayload]] = {}
        # Loop time until which the server may hold an answer on purpose (long polls sent
        # so far); answers behind it are delayed as long. Never decreases.
        self._held_until_s = 0.0
        self._closed: BaseException | None = None
        self._read_task = asyncio.ensure_future(self._read_loop())
        self.peer_versions: dict[int, tuple[int, int]] = {}

    @classmethod
    async def open(
        cls,
        host: str,
        port: int,
        *,
        timeout_ms: int,
        client_id: str = "pykraft",
        frame_max_bytes: int = FRAME_MAX_BYTES_DEFAULT,
        in_flight_max: int = IN_FLIGHT_MAX_DEFAULT,
    ) -> Connection:
        """Connect and learn the peer's API versions; raises OSError / TimeoutError."""
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(host, port), timeout_ms / 1000
        )
        conn = cls(
            reader,
            writer,
            client_id=client_id,
            frame_max_bytes=frame_max_bytes,
            in_flight_max=in_flight_max,
        )
        try:
            versions: Any = await conn.request(
                api_versions_v3.ApiVersionsRequest(
                    client_software_name="pykraft", client_software_version=__version__
                ),
                timeout_ms=timeout_ms,
            )
        except BaseException:
            conn.close()
            raise
        if versions.error_code != ErrorCode.none:
            conn.close()
            raise ConnectionError(f"ApiVersions answered {versions.error_code!r}")
        conn.peer_versions = {
            int(k.api_key): (int(k.min_version), int(k.max_version)) for k in versions.api_keys
        }
        return conn

    @property
    def closed(self) -> bool:
        return self._closed is not None

    def pick_version(self, api_key: int, ours: ApiTable = KRAFT_APIS) -> int | None:
        """The highest version both sides speak, or None."""
        row = ours.get(api_key)
        theirs = self.peer_versions.get(api_key)
        if row is None or theirs is None:
            return None
        high = min(row.max_version, theirs[1])
        return high if high >= max(row.min_version, theirs[0]) else None

    async def request(
        self, message: RequestPayload, *, timeout_ms: int, server_wait_ms: int = 0
    ) -> ResponsePayload:
        """Send and wait for the answer; raises ConnectionError or TimeoutError.

        ``server_wait_ms``: how long the server may hold this request on purpose (a Fetch's
        MaxWaitMs); the effective timeout is ``timeout_ms`` past the end of every such hold
        on this connection, this one included.
        """
        if self._closed is not None:
            raise ConnectionError(f"connection closed: {self._closed}")
        loop = asyncio.get_running_loop()
        now = loop.time()
        self._held_until_s = max(self._held_until_s, now + server_wait_ms / 1000)
        effective_ms = timeout_ms + max(0, round((self._held_until_s - now) * 1000))
        correlation_id, data = self._responses.send(message)
        answer: asyncio.Future[ResponsePayload] = loop.create_future()
        self._waiting[correlation_id] = answer
        self._writer.write(data)
        try:
            return await asyncio.wait_for(asyncio.shield(answer), effective_ms / 1000)
        except TimeoutError:
            self._fail(TimeoutError(f"request {correlation_id} timed out after {effective_ms} ms"))
            raise
        finally:
            self._waiting.pop(correlation_id, None)

    def close(self) -> None:
        self._fail(ConnectionError("closed locally"))

    async def wait_closed(self) -> None:
        with contextlib.suppress(BaseException):
            await self._read_task

    def _fail(self, error: BaseException) -> None:
        if self._closed is None:
            self._closed = error
        for answer in self._waiting.values():
            if not answer.done():
                answer.set_exception(ConnectionError(str(error)))
                answer.exception()  # mark retrieved: the waiter may already be gone
        self._waiting.clear()
        self._read_task.cancel()
        self._writer.close()

    async def _read_loop(self) -> None:
        try:
            while True:
                data = await self._reader.read(READ_CHUNK_BYTES)
                if not data:
                    self._responses.end_of_stream()
                    raise ConnectionError("closed by peer")
                self._responses.feed(data)
                while (response := self._responses.next_response()) is not None:
                    answer = self._waiting.pop(response.correlation_id, None)
                    if answer is not None and not answer.done():
                        answer.set_result(response.message)
        except asyncio.CancelledError:
            raise
        except (ProtocolError, OSError) as e:
            if self._closed is None:
                log.info("connection to %s lost: %s", self._writer.get_extra_info("peername"), e)
            self._fail(e)


class PeerChannel:
    """The node's outbound channel to one peer address.

    Invariants: the send queue holds at most ``send_queue_max`` requests; every request taken
    from it gets exactly one ``on_result`` call; at most one connection is open.
    """

    def __init__(
        self,
        host: str,
        port: int,
        *,
        listener_name: str,
        on_result: ResultCallback,
        request_timeout_ms: int,
        retry_backoff_ms: int,
        send_queue_max: int = SEND_QUEUE_MAX_DEFAULT,
        frame_max_bytes: int = FRAME_MAX_BYTES_DEFAULT,
        client_id: str = "pykraft-raft",
    ) -> None:
        self.host = host
        self.port = port
        self._listener_name = listener_name
        self._on_result = on_result
        self._request_timeout_ms = request_timeout_ms
        self._retry_backoff_ms = max(1, retry_backoff_ms)
        self._frame_max_bytes = frame_max_bytes
        self._client_id = client_id
        self._queue: asyncio.Queue[tuple[int, AnyRequest]] = asyncio.Queue(send_queue_max)
        self._conn: Connection | None = None
        self._in_flight: set[asyncio.Task[None]] = set()
        self._backoff_ms = 0
        self._retry_at_s = 0.0  # loop time before which no reconnect is tried
        self._task = asyncio.ensure_future(self._run())

    def send(self, request_id: int, request: AnyRequest) -> None:
        try:
            self._queue.put_nowait((request_id, request))
        except asyncio.QueueFull:
            log.warning("send queue to %s:%d full; failing request", self.host, self.port)
            self._deliver(request_id, None)

    def _deliver(self, request_id: int, response: AnyResponse | None) -> None:
        # Through the loop, never re-entrantly from inside the caller's send().
        asyncio.get_running_loop().call_soon(self._on_result, request_id, response)

    async def close(self) -> None:
        self._task.cancel()
        for task in list(self._in_flight):
            task.cancel()
        with contextlib.suppress(BaseException):
            await self._task
        if self._conn is not None:
            self._conn.close()
            await self._conn.wait_closed()

    async def _connect(self) -> Connection | None:
        if self._conn is not None and not self._conn.closed:
            return self._conn
        # Wait out what is left of the backoff since the last failure, not the whole of it:
        # a channel unused since a failure long ago (a peer that was down at startup, the
        # other follower met again only in the next election) connects at once -- sleeping
        # a stale 1 s backoff there held a new leader's first fetch past check quorum.
        loop = asyncio.get_running_loop()
        wait_s = self._retry_at_s - loop.time()
        if wait_s > 0:
            await asyncio.sleep(wait_s)
        try:
            self._conn = await Connection.open(
                self.host,
                self.port,
                timeout_ms=self._request_timeout_ms,
                client_id=self._client_id,
                frame_max_bytes=self._frame_max_bytes,
            )
        except (OSError, TimeoutError, ProtocolError) as e:
            self._backoff_ms = min(
                RECONNECT_BACKOFF_MAX_MS, max(self._retry_backoff_ms, 2 * self._backoff_ms)
            )
            self._retry_at_s = loop.time() + self._backoff_ms / 1000
            log.debug("cannot connect to %s:%d: %s", self.host, self.port, e)
            return None
        self._backoff_ms = 0
        return self._conn

    async def _run(self) -> None:
        while True:
            request_id, request = await self._queue.get()
            conn = await self._connect()
            if conn is None:
                # Fail this request and everything queued behind it: the core retries after
                # its own backoff, with fresh state, rather than replaying stale requests.
                self._deliver(request_id, None)
                while not self._queue.empty():
                    self._deliver(self._queue.get_nowait()[0], None)
                continue
            task = asyncio.ensure_future(self._exchange(conn, request_id, request))
            self._in_flight.add(task)
            task.add_done_callback(self._in_flight.discard)

    async def _exchange(self, conn: Connection, request_id: int, request: AnyRequest) -> None:
        response: AnyResponse | None = None
        try:
            if isinstance(request, _VOTER_REQUESTS):
                response = await self._exchange_voter(conn, request)
                return
            assert not isinstance(request, _NOT_SENT), request
            version = conn.pick_version(api_key_of(request))
            if version is None:
                response = error_response_for(request, ErrorCode.unsupported_version)
                return
            try:
                message = request_to_kio(request, version)
            except VersionTooOld:
                response = error_response_for(request, ErrorCode.unsupported_version)
                return
            answer = await conn.request(
                message,
                timeout_ms=self._request_timeout_ms,
                server_wait_ms=request.max_wait_ms if isinstance(request, FetchRequest) else 0,
            )
            response = response_from_kio(answer, request=request, listener_name=self._listener_name)
        except (ConnectionError, TimeoutError, OSError, InvalidResponse) as e:
            log.debug("request %d to %s:%d failed: %s", request_id, self.host, self.port, e)
        finally:
            self._on_result(request_id, response)

    async def _exchange_voter(
        self, conn: Connection, request: OutboundVoterRequest
    ) -> AnyResponse | None:
        """Remove/AddRaftVoter (auto-join) and UpdateRaftVoter to the leader, or the
        ApiVersions probe of a would-be voter. The leader answers a voter change only once
        it committed (or timed out): that wait is the server's, added to the timeout."""
        version = conn.pick_version(voter_api_key(request))
        if version is None:
            return None  # the peer cannot take it: a failed request for the core
        if isinstance(request, AddRaftVoterRequest):
            server_wait_ms = request.timeout_ms
        elif isinstance(request, RemoveRaftVoterRequest | UpdateRaftVoterRequest):
            server_wait_ms = VOTER_CHANGE_WAIT_MS
        else:
            server_wait_ms = 0
        answer = await conn.request(
            voter_request_to_kio(request, version),
            timeout_ms=self._request_timeout_ms,
            server_wait_ms=server_wait_ms,
        )
        return voter_response_from_kio(answer, request=request, listener_name=self._listener_name)
