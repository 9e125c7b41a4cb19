"""The outbound side: Kafka-protocol client connections.

* :class:`Connection` -- one TCP connection (an ``asyncio.Protocol``); requests are pipelined
  and answered in order by the server. :meth:`Connection.send` writes a request at once and
  calls back with its answer from ``data_received`` (no task, no trip through the loop's
  ready queue: the node's Fetch answers take this path on every commit); :meth:`request` is
  the awaitable form. Each request has a timeout, and a timed-out request closes the
  connection (as Kafka's NetworkClient does: the server answers in order, so everything
  behind a stuck request is stuck too). A request the server may hold on purpose (a
  long-poll Fetch's ``max_wait_ms``, passed as ``server_wait_ms``) gets that wait added to
  its timeout, and so does every request pipelined behind it on the same connection (its
  answer cannot overtake the held one): a long poll never times out a connection by itself.
* :class:`PeerChannel` -- what the node uses to talk to one peer: one connection opened on
  demand (ApiVersions first, to learn which versions the peer speaks), a bounded backlog of
  the core's requests while it connects, reconnect with exponential backoff from
  ``retry_backoff_ms``. Once connected, ``send`` encodes and writes in the caller's call.
  Every request ends in exactly one call of ``on_result(request_id, response | None)``,
  never from inside ``send``; ``None`` means "never answered" (refused, reset, timed out,
  backlog full) and becomes ``RequestFailed``.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, cast

from kio.static.protocol import RequestPayload, ResponsePayload

from pykraft.net import apis, sasl_client
from pykraft.net.apis import KRAFT_APIS
from pykraft.net.convert import InvalidResponse, VersionTooOld
from pykraft.net.convert.features import api_versions_request
from pykraft.net.security import ClientSecurity, SaslClientConfig
from pykraft.protocol import (
    FRAME_MAX_BYTES_DEFAULT,
    ApiKey,
    ApiTable,
    ErrorCode,
    ProtocolError,
    ResponseReader,
)
from pykraft.raft.config import RaftConfig
from pykraft.raft.messages import (
    AnyRequest,
    AnyResponse,
)

__all__ = ["AnswerCallback", "Connection", "PeerChannel", "ResultCallback"]

log = logging.getLogger("pykraft.net.client")

# How long a leader may take to commit a voter change (the server's wait added to the
# request timeout): RaftConfig's voter_change_timeout_ms default, as the peer's is unknown.
VOTER_CHANGE_WAIT_MS: Final = RaftConfig().voter_change_timeout_ms
IN_FLIGHT_MAX_DEFAULT: Final = 64
SEND_QUEUE_MAX_DEFAULT: Final = 256
RECONNECT_BACKOFF_MAX_MS: Final = 1000  # Kafka's reconnect.backoff.max.ms default
TLS_SHUTDOWN_TIMEOUT_S: Final = 2.0
REAUTH_SHARE_MIN: Final = 0.85  # KIP-368: a client renews between 85 % and 95 % of the
REAUTH_SHARE_MAX: Final = (
    0.95  # session lifetime the server gave  # waiting for the peer's close_notify
)

ResultCallback = Callable[[int, AnyResponse | None], None]
AnswerCallback = Callable[[ResponsePayload | BaseException], None]
"""Called once per sent request: the answer, or the exception that ended it
(``TimeoutError`` for the request that timed out, ``ConnectionError`` otherwise)."""


class Connection(asyncio.Protocol):
    """One client connection. Invariant: ``_waiting`` holds a callback and a timeout timer
    for every correlation id the server still owes an answer; when the connection dies
    every one of them is called with the error, once."""

    def __init__(self, *, client_id: str, frame_max_bytes: int, in_flight_max: int) -> None:
        self._responses = ResponseReader(
            client_id=client_id, frame_max_bytes=frame_max_bytes, in_flight_max=in_flight_max
        )
        self._waiting: dict[int, tuple[AnswerCallback, asyncio.TimerHandle]] = {}
        # Loop time until which the server may hold an answer on purpose (long polls sent
        # so far); answers behind it are delayed as long. Never decreases.
        self._held_until_s = 0.0
        self._closed: BaseException | None = None
        self._loop = asyncio.get_running_loop()
        self._transport: asyncio.Transport | None = None
        self._lost: asyncio.Future[None] = self._loop.create_future()
        self.renew_at_s: float | None = None  # KIP-368: when to stop using this connection
        self._close_when_idle = False
        self.peer_versions: dict[int, tuple[int, int]] = {}
        self.stats: ChannelStats | None = None  # a peer channel's counts (raft-channel-metrics)

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
        security: ClientSecurity | None = None,
    ) -> Connection:
        """Connect (TLS and SASL as ``security`` says), learn the peer's API versions;
        raises OSError (a failed TLS handshake: ``ssl.SSLError``; refused credentials:
        ``SaslAuthenticationError``) / TimeoutError."""
        loop = asyncio.get_running_loop()
        tls = None if security is None else security.ssl_context
        _, conn = await asyncio.wait_for(
            loop.create_connection(
                lambda: cls(
                    client_id=client_id,
                    frame_max_bytes=frame_max_bytes,
                    in_flight_max=in_flight_max,
                ),
                host,
                port,
                ssl=tls,
                server_hostname=host if tls is not None else None,
                # A peer that never answers our close_notify does not hold close() up.
                ssl_shutdown_timeout=TLS_SHUTDOWN_TIMEOUT_S if tls is not None else None,
            ),
            timeout_ms / 1000,
        )
        try:
            versions: Any = await conn.request(
                api_versions_request(3),
                timeout_ms=timeout_ms,
            )
        except BaseException:
            conn.abort()
            raise
        if versions.error_code != ErrorCode.none:
            conn.abort()
            raise ConnectionError(f"ApiVersions answered {versions.error_code!r}")
        conn.peer_versions = {
            int(k.api_key): (int(k.min_version), int(k.max_version)) for k in versions.api_keys
        }
        if security is not None and security.sasl is not None:
            await conn._authenticate(security.sasl, timeout_ms)
        return conn

    async def _authenticate(self, sasl: SaslClientConfig, timeout_ms: int) -> None:
        """SASL as a client, and when the server gave the session a lifetime, the time to
        renew it (KIP-368: at 85-95 % of it, as Kafka's clients do; here by a new
        connection, ``renewal_due``)."""
        server_max = self.peer_versions.get(int(ApiKey.SASL_AUTHENTICATE), (0, 0))[1]
        try:
            lifetime_ms = await sasl_client.authenticate(
                lambda message: self.request(message, timeout_ms=timeout_ms), sasl, server_max
            )
        except BaseException:
            # Nothing more to say to a peer that refused us: its socket goes now, not after a
            # TLS close_notify exchange the caller's loop may not live to see.
            self.abort()
            raise
        if lifetime_ms > 0:
            share = random.uniform(REAUTH_SHARE_MIN, REAUTH_SHARE_MAX)
            self.renew_at_s = self._loop.time() + lifetime_ms * share / 1000

    @property
    def renewal_due(self) -> bool:
        """The server's authentication session is near its end: use a new connection for
        new requests and let this one finish what it has in flight (``close_when_idle``)."""
        return self.renew_at_s is not None and self._loop.time() >= self.renew_at_s

    def close_when_idle(self) -> None:
        """Close once every request in flight is answered (at once if none is)."""
        if not self._waiting:
            self.close()
        else:
            self._close_when_idle = True

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

    def send(
        self,
        message: RequestPayload,
        on_answer: AnswerCallback,
        *,
        timeout_ms: int,
        server_wait_ms: int = 0,
    ) -> None:
        """Write ``message`` now; ``on_answer`` gets the answer later (never from inside this
        call). Raises ConnectionError when closed, ProtocolError when too many are in flight.

        ``server_wait_ms``: how long the server may hold this request on purpose (a Fetch's
        MaxWaitMs); the effective timeout is ``timeout_ms`` past the end of every such hold
        on this connection, this one included.
        """
        if self._closed is not None:
            raise ConnectionError(f"connection closed: {self._closed}")
        transport = self._transport
        assert transport is not None
        now = self._loop.time()
        self._held_until_s = max(self._held_until_s, now + server_wait_ms / 1000)
        effective_ms = timeout_ms + max(0, round((self._held_until_s - now) * 1000))
        correlation_id, data = self._responses.send(message)
        timer = self._loop.call_at(
            now + effective_ms / 1000, self._timed_out, correlation_id, effective_ms
        )
        self._waiting[correlation_id] = (on_answer, timer)
        transport.write(data)
        if self.stats is not None:
            self.stats.requests += 1
            self.stats.bytes_out += len(data)

    async def request(
        self, message: RequestPayload, *, timeout_ms: int, server_wait_ms: int = 0
    ) -> ResponsePayload:
        """Send and wait for the answer; raises ConnectionError or TimeoutError."""
        answer: asyncio.Future[ResponsePayload] = self._loop.create_future()

        def on_answer(result: ResponsePayload | BaseException) -> None:
            if answer.done():
                return
            if isinstance(result, BaseException):
                answer.set_exception(result)
            else:
                answer.set_result(result)

        self.send(message, on_answer, timeout_ms=timeout_ms, server_wait_ms=server_wait_ms)
        return await answer

    def close(self) -> None:
        self._fail(ConnectionError("closed locally"))

    def abort(self) -> None:
        """Close at once, unsent bytes dropped (``close`` waits for them to leave, which
        never happens when the peer is cut off)."""
        self._fail(ConnectionError("aborted locally"))
        if self._transport is not None:
            self._transport.abort()

    async def wait_closed(self) -> None:
        with contextlib.suppress(BaseException):
            await asyncio.shield(self._lost)

    # -- asyncio.Protocol ---------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, only alike.
        self._transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        responses, stats = self._responses, self.stats
        if stats is not None:
            stats.bytes_in += len(data)
        try:
            responses.feed(data)
            while (response := responses.next_response()) is not None:
                if stats is not None:
                    stats.responses += 1
                entry = self._waiting.pop(response.correlation_id, None)
                if entry is not None:
                    entry[1].cancel()
                    _call(entry[0], response.message)
            if self._close_when_idle and not self._waiting:
                self.close()
        except ProtocolError as e:
            self._lost_with(e)

    def eof_received(self) -> bool:
        try:
            self._responses.end_of_stream()
            error: BaseException = ConnectionError("closed by peer")
        except ProtocolError as e:
            error = e
        self._lost_with(error)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost_with(exc or ConnectionError("closed by peer"))
        if not self._lost.done():
            self._lost.set_result(None)

    # -- failures -----------------------------------------------------------------------

    def _lost_with(self, error: BaseException) -> None:
        if self._closed is None and self._transport is not None:
            log.info("connection to %s lost: %s", self._transport.get_extra_info("peername"), error)
        self._fail(error)

    def _timed_out(self, correlation_id: int, effective_ms: int) -> None:
        entry = self._waiting.pop(correlation_id, None)
        error = TimeoutError(f"request {correlation_id} timed out after {effective_ms} ms")
        if self._closed is None and self._transport is not None:
            # Kafka's NetworkClient says it too: the only trace of a peer that stopped
            # answering on an open connection.
            log.info("disconnecting from %s: %s", self._transport.get_extra_info("peername"), error)
        self._fail(error)
        if entry is not None:
            _call(entry[0], error)

    def _fail(self, error: BaseException) -> None:
        if self._closed is None:
            self._closed = error
        waiting, self._waiting = self._waiting, {}
        for on_answer, timer in waiting.values():
            timer.cancel()
            _call(on_answer, ConnectionError(str(error)))
        if self._transport is not None:
            # Once: asyncio's TLS transport, closed twice, drops its protocol, and a later
            # abort() then raises AttributeError (seen in CI: the peer's EOF closed it, then
            # a failed open aborted it).
            if not self._transport.is_closing():
                self._transport.close()
        elif not self._lost.done():
            self._lost.set_result(None)


def _call(on_answer: AnswerCallback, result: ResponsePayload | BaseException) -> None:
    """A callback's error is a bug of its owner: logged; the connection goes on."""
    try:
        on_answer(result)
    except Exception:
        log.exception("answer callback failed")


@dataclass
class ChannelStats:
    """What a node's peer channels sent and received (Kafka's raft-channel-metrics)."""

    requests: int = 0
    responses: int = 0
    bytes_out: int = 0
    bytes_in: int = 0


class PeerChannel:
    """The node's outbound channel to one peer address.

    Invariants: the backlog holds at most ``send_queue_max`` requests and is non-empty only
    while no connection is open; every request gets exactly one ``on_result`` call; at most
    one connection is open.
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
        security: ClientSecurity | None = None,
        stats: ChannelStats | None = None,
    ) -> None:
        self.host = host
        self._security = security
        self._stats = stats
        self.port = port
        self._listener_name = listener_name
        self._on_result = on_result
        self._request_timeout_ms = request_timeout_ms
        self._retry_backoff_ms = max(1, retry_backoff_ms)
        self._frame_max_bytes = frame_max_bytes
        self._client_id = client_id
        self._send_queue_max = send_queue_max
        self._backlog: collections.deque[tuple[int, AnyRequest]] = collections.deque()
        self._conn: Connection | None = None
        self._connecting: asyncio.Task[None] | None = None
        self._closing = False
        self._backoff_ms = 0
        self._retry_at_s = 0.0  # loop time before which no reconnect is tried

    def send(self, request_id: int, request: AnyRequest) -> None:
        conn = self._conn
        if conn is not None and not conn.closed and conn.renewal_due:
            log.debug("renewing the authentication session to %s:%d", self.host, self.port)
            conn.close_when_idle()
            self._conn = conn = None
        if conn is not None and not conn.closed and not self._backlog:
            self._exchange(conn, request_id, request)
            return
        if self._closing or len(self._backlog) >= self._send_queue_max:
            log.warning("send queue to %s:%d full; failing request", self.host, self.port)
            self._deliver(request_id, None)
            return
        self._backlog.append((request_id, request))
        if self._connecting is None:
            self._connecting = asyncio.ensure_future(self._connect_and_send())

    def _deliver(self, request_id: int, response: AnyResponse | None) -> None:
        # Through the loop, never re-entrantly from inside the caller's send().
        asyncio.get_running_loop().call_soon(self._on_result, request_id, response)

    async def close(self) -> None:
        self._closing = True
        if self._connecting is not None:
            self._connecting.cancel()
            with contextlib.suppress(BaseException):
                await self._connecting
        backlog, self._backlog = self._backlog, collections.deque()
        for request_id, _ in backlog:
            self._on_result(request_id, None)
        if self._conn is not None:
            self._conn.close()
            await self._conn.wait_closed()

    async def _connect_and_send(self) -> None:
        try:
            conn = await self._connect()
        finally:
            self._connecting = None
        backlog, self._backlog = self._backlog, collections.deque()
        for request_id, request in backlog:
            if conn is None:
                # Fail everything queued: the core retries after its own backoff, with fresh
                # state, rather than replaying stale requests.
                self._deliver(request_id, None)
            else:
                self._exchange(conn, request_id, request)

    async def _connect(self) -> Connection | None:
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
                security=self._security,
            )
            self._conn.stats = self._stats
        except sasl_client.SaslAuthenticationError as e:
            # Kafka's NetworkClient logs it at ERROR: the operator must fix a credential.
            self._backoff_ms = RECONNECT_BACKOFF_MAX_MS
            self._retry_at_s = loop.time() + self._backoff_ms / 1000
            log.error(
                "Connection to %s:%d failed authentication due to: %s", self.host, self.port, e
            )
            return None
        except (OSError, TimeoutError, ProtocolError) as e:
            self._backoff_ms = min(
                RECONNECT_BACKOFF_MAX_MS, max(self._retry_backoff_ms, 2 * self._backoff_ms)
            )
            self._retry_at_s = loop.time() + self._backoff_ms / 1000
            log.debug("cannot connect to %s:%d: %s", self.host, self.port, e)
            return None
        self._backoff_ms = 0
        return self._conn

    def _exchange(self, conn: Connection, request_id: int, request: AnyRequest) -> None:
        """Encode ``request`` at the version the peer speaks and write it; the answer (or an
        error answer when the peer cannot take it) comes back through ``on_result``."""
        api = apis.by_request(request)
        assert api.sent and api.converters.request_to_kio is not None, request
        try:
            version = conn.pick_version(api.key)
            message: RequestPayload | None = None
            if version is not None:
                with contextlib.suppress(VersionTooOld):  # a pre-vote below Vote v2
                    message = api.converters.request_to_kio(request, version)
            if message is None:
                # The peer cannot take it: the API's own answer, or a failed request.
                error_answer = api.converters.error_answer
                self._deliver(
                    request_id,
                    None
                    if error_answer is None
                    else error_answer(request, ErrorCode.unsupported_version),
                )
                return
            conn.send(
                message,
                lambda answer: self._answered(request_id, request, answer),
                timeout_ms=self._request_timeout_ms,
                server_wait_ms=api.hold_ms(request, VOTER_CHANGE_WAIT_MS),
            )
        except (ConnectionError, ProtocolError, OSError) as e:
            log.debug("request %d to %s:%d failed: %s", request_id, self.host, self.port, e)
            self._deliver(request_id, None)

    def _answered(
        self, request_id: int, request: AnyRequest, answer: ResponsePayload | BaseException
    ) -> None:
        response: AnyResponse | None = None
        if isinstance(answer, BaseException):
            log.debug("request %d to %s:%d failed: %s", request_id, self.host, self.port, answer)
        else:
            decode = apis.by_request(request).converters.response_from_kio
            assert decode is not None, request
            try:
                response = decode(answer, request, self._listener_name)
            except InvalidResponse as e:
                log.debug("request %d to %s:%d: %s", request_id, self.host, self.port, e)
        self._on_result(request_id, response)
