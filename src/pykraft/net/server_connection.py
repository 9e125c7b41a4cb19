"""One connection of a :class:`~pykraft.net.server.KafkaServer`: the module docstring of
``net/server.py`` says what it does (request order, back-pressure, TLS, SASL); admitted by the
server's connection quotas (``net/connection_quotas.py``) before anything is read."""

from __future__ import annotations

import asyncio
import collections
import logging
from typing import TYPE_CHECKING, Final, cast

from kio.static.protocol import ResponsePayload

from pykraft.net.answer import Answer
from pykraft.net.sasl import (
    Action,
    SaslServerAuthenticator,
    illegal_sasl_state,
)
from pykraft.net.security import (
    ANONYMOUS,
    AuthenticationContext,
    KafkaPrincipal,
    SecurityProtocol,
    Session,
)
from pykraft.net.server_tls import ServerTls, TlsClosed, TlsHandshakeFailed
from pykraft.net.tls import peer_subject
from pykraft.protocol import (
    ApiKey,
    ApiTable,
    DecodedRequest,
    ErrorCode,
    ProtocolError,
    RequestReader,
    UnsupportedApiVersion,
    api_versions_request_valid,
    build_api_versions_response,
    encode_response,
    error_response,
)

if TYPE_CHECKING:
    from pykraft.net.server import KafkaServer

__all__ = ["TLS_HANDSHAKE_TIMEOUT_S", "ServerConnection"]

log = logging.getLogger("pykraft.net.server")  # the server's: one logger for the listener

TLS_HANDSHAKE_TIMEOUT_S: Final = 10.0
EARLY_MAX_BYTES: Final = 65_536  # what a connection not yet admitted may send meanwhile
_SASL_APIS: Final = frozenset({ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})


class ServerConnection(asyncio.Protocol):
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
        self._host, self._admitted = "", False  # counted by the server's ConnectionGate
        self._early = b""  # bytes read before the gate admitted the connection
        self._paused_reading = False  # by us: too many in flight, or writes backed up
        self._write_paused = False  # by the transport: its buffer is over the high-water mark
        self._eof = False  # the client is done sending: close once everything is answered
        self._taking = False  # inside _take_requests (a handler may answer re-entrantly)
        self._closing = False  # a failed authentication: answer what is due, then close
        # TLS (SSL and SASL_SSL listeners): the engine; the timer gives up on a handshake that
        # does not finish.
        self._tls: ServerTls | None = None
        self._tls_timer: asyncio.TimerHandle | None = None
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        security = server.security
        self._session = Session(server.listener_name, security.protocol)
        self._sasl: SaslServerAuthenticator | None = None
        if security.sasl is not None:
            self._sasl = SaslServerAuthenticator(security.sasl, server.credentials)
            self._requests.frame_max_bytes = security.sasl.max_receive_size

    # -- asyncio.Protocol ---------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, only alike.
        self._transport = cast(asyncio.Transport, transport)
        self._peer = self._transport.get_extra_info("peername")
        self._server.connections.add(self)
        self._host = self._peer[0] if isinstance(self._peer, tuple) else "127.0.0.1"
        # Kafka's connection quotas first (net/connection_quotas.py): go on, wait, or close.
        if self._server.gate.arrived(self._transport, self._host, self._start):
            self._start()

    def _start(self) -> None:
        """The admitted connection: its principal, and its TLS handshake awaited."""
        assert self._transport is not None
        self._admitted, host = True, self._host
        protocol = self._session.security_protocol
        self._session = Session(self._server.listener_name, protocol, ANONYMOUS, host)
        if protocol is SecurityProtocol.PLAINTEXT and self._server.security.principal_builder:
            try:  # Kafka builds PLAINTEXT connections' principals too (ANONYMOUS by default)
                principal = self._built(ANONYMOUS)
            except Exception as e:
                log.info("closing connection from %s: principal.builder.class: %r", host, e)
                self._transport.close()
                return
            self._session = Session(self._server.listener_name, protocol, principal, host)
        context = self._server.security.server_ssl
        if context is not None:
            # TLS through memory buffers: every byte goes through the handshake first, and a
            # failure is ours to count and log (docs/DECISIONS.md).
            self._tls = ServerTls(context, self._transport.write)
            self._tls_timer = asyncio.get_running_loop().call_later(
                TLS_HANDSHAKE_TIMEOUT_S, self._tls_failed, "handshake timed out"
            )
        early, self._early = self._early, b""
        if early:
            self.data_received(early)

    def _tls_failed(self, reason: object) -> None:
        server = self._server
        server.stats.failed_authentication_total += 1
        log.info("Failed authentication with %s (SSL handshake failed: %s)", self._peer, reason)
        if self._tls is not None:
            self._tls.flush()  # the alert, if any
        self._closing = True
        if self._transport is not None:
            self._transport.close()

    def _tls_established(self) -> None:
        server = self._server
        assert self._tls is not None
        if self._tls_timer is not None:
            self._tls_timer.cancel()
        principal = ANONYMOUS
        subject = peer_subject(self._tls.engine)
        if self._session.security_protocol is SecurityProtocol.SSL:
            try:
                if subject is not None:
                    principal = server.security.principal_mapper.name_principal(subject)
                principal = self._built(principal, ssl_subject=subject)
            except Exception as e:  # the mapping's or a plug-in's: a failed handshake
                self._tls_failed(e)
                return
        if self._sasl is None:
            server.stats.successful_authentication_total += 1
            server.stats.successful_authentication_no_reauth_total += 1
        self._session = Session(
            self._session.listener_name,
            self._session.security_protocol,
            principal,
            self._session.client_host,
        )

    def _decrypt(self, data: bytes) -> bytes | None:
        """The plaintext in ``data`` (None: the connection failed or the peer closed)."""
        tls = self._tls
        assert tls is not None
        try:
            established, plain = tls.feed(data)
        except TlsHandshakeFailed as e:
            self._tls_failed(e.args[0])
            return None
        except TlsClosed as e:
            if e.args:
                log.info("closing connection from %s: TLS error: %s", self._peer, e.args[0])
            self._close()
            return None
        if established:
            self._tls_established()
            if self._closing:
                return None
        return plain

    def _write(self, data: bytes) -> None:
        transport = self._transport
        assert transport is not None
        if self._tls is None:
            transport.write(data)
            return
        self._tls.write(data)

    def data_received(self, data: bytes) -> None:
        if not self._admitted:
            # Not admitted yet (held by the gate; uvloop may read before a pause in
            # connection_made takes): kept for when it is, within one frame's worth.
            self._early += data
            if len(self._early) > EARLY_MAX_BYTES and self._transport is not None:
                self._transport.close()
            return
        if self._closing:
            return
        if self._tls is not None:
            plain = self._decrypt(data)
            if not plain:
                return
            data = plain
        self._requests.feed(data)
        self._take_requests()

    def eof_received(self) -> bool:
        if self._tls is not None and not self._tls.ready and not self._closing:
            # A peer that gives up mid-handshake (e.g. it refused our certificate and
            # closed without its alert): a failed handshake, counted.
            if self._tls.started:
                self._tls_failed("the peer closed the connection during the handshake")
            return False
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
        if self._admitted:
            self._server.gate.left(self._host)
        if self._tls_timer is not None:
            self._tls_timer.cancel()
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
        while not transport.is_closing() and not self._closing:
            if len(self._slots) >= self._server.in_flight_max or self._write_paused:
                if not self._paused_reading:
                    self._paused_reading = True
                    transport.pause_reading()
                return
            if self._sasl is not None and self._sasl.raw_tokens:
                try:
                    frame = self._requests.next_frame()
                except ProtocolError as e:
                    self._protocol_error(e)
                    return
                if frame is None:
                    break
                self._raw_token(self._sasl, frame)
                continue
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

    def _raw_token(self, sasl: SaslServerAuthenticator, token: bytes) -> None:
        """A bare SASL token after SaslHandshake v0: the bare reply, or a failure counted,
        logged once and the connection closed without an answer (Kafka's v0 flow)."""
        server = self._server
        reply, reason = sasl.raw_token(token)
        if reply is None:
            server.stats.failed_authentication_total += 1
            log.info(
                "Failed authentication with %s (mechanism %s: %s)",
                self._peer,
                sasl.mechanism,
                reason,
            )
            self._closing = True
            self._close()
            return
        self._write(len(reply).to_bytes(4, "big") + reply)
        if sasl.complete:
            self._authenticated(sasl, reauth_capable=False)

    def _authenticated(self, sasl: SaslServerAuthenticator, *, reauth_capable: bool) -> None:
        """The connection authenticated: counted, full frame sizes, the session's principal."""
        server = self._server
        assert sasl.principal is not None
        try:
            principal = self._built(
                sasl.principal,
                sasl_mechanism=sasl.mechanism,
                sasl_authorization_id=sasl.principal.name,
            )
        except Exception as e:  # the plug-in's: the authentication fails, the connection goes
            server.stats.failed_authentication_total += 1
            log.info("Failed authentication with %s (principal.builder.class: %r)", self._peer, e)
            self._closing = True
            self._close()
            return
        server.stats.successful_authentication_total += 1
        if not reauth_capable:
            server.stats.successful_authentication_no_reauth_total += 1
        self._requests.frame_max_bytes = server.frame_max_bytes
        self._session = Session(
            self._session.listener_name,
            self._session.security_protocol,
            principal,
            self._session.client_host,
        )

    def _built(self, default: KafkaPrincipal, **context: str | None) -> KafkaPrincipal:
        """The principal ``principal.builder.class`` gives (``default`` without one)."""
        session = self._session
        return self._server.security.principal(
            default,
            AuthenticationContext(
                session.listener_name,
                session.security_protocol.name,
                session.client_host,
                **context,
            ),
        )

    def _dispatch(self, request: DecodedRequest) -> None:
        server = self._server
        sasl = self._sasl
        if sasl is not None and not sasl.complete:
            self._authenticate(request)
            return
        if sasl is not None and request.api_key == ApiKey.SASL_HANDSHAKE:
            if sasl.begin_reauthentication():
                self._authenticate(request)
                return
        elif sasl is not None and sasl.session_expired():
            # Kafka's Processor: a request on a channel whose session expired closes it.
            server.stats.expired_connections_killed_count += 1
            log.info(
                "Closing connection from %s: its authentication session expired "
                "(connections.max.reauth.ms) without re-authentication",
                self._peer,
            )
            self._closing = True
            self._close()
            return
        if request.api_key == ApiKey.API_VERSIONS:
            self._queue(request.correlation_id, Answer(self._api_versions(request)))
            return
        if request.api_key in _SASL_APIS:
            # No exchange is due: a PLAINTEXT/SSL listener, or already authenticated.
            sasl = self._sasl
            step = None if sasl is None else sasl.step(request, None)
            payload = illegal_sasl_state(request) if step is None else step.response
            assert payload is not None
            self._queue(request.correlation_id, Answer(payload))
            return
        try:
            result = server.handler(request, self._session)
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

    def _api_versions(self, request: DecodedRequest) -> ResponsePayload:
        """The listener's ApiVersions answer; an invalid request (``ClusterId`` without
        ``NodeId``, a malformed client software name) gets ``INVALID_REQUEST`` and no rows, as
        from Kafka's ``ControllerApis``."""
        if not api_versions_request_valid(request.api_version, request.message):
            return build_api_versions_response(
                request.api_version, ApiTable(()), error_code=ErrorCode.invalid_request
            )
        return self._server.api_versions(request.api_version)

    def _authenticate(self, request: DecodedRequest) -> None:
        """One request of the SASL exchange (Kafka's order and errors: ``net/sasl.py``)."""
        server = self._server
        sasl = self._sasl
        assert sasl is not None
        versions = self._api_versions(request) if request.api_key == ApiKey.API_VERSIONS else None
        step = sasl.step(request, versions)
        if step.action is Action.CLOSE:
            log.warning("Unexpected error from %s; closing connection: %s", self._peer, step.reason)
            self._closing = True
            self._close()
            return
        assert step.response is not None
        if step.action is Action.ANSWER:
            self._queue(request.correlation_id, Answer(step.response))
            if sasl.complete and step.reauthentication:
                server.stats.successful_reauthentication_total += 1
            elif sasl.complete:
                # SaslAuthenticate v0: a client that cannot re-authenticate
                self._authenticated(sasl, reauth_capable=sasl.authenticate_version > 0)
            return
        # A failed authentication: counted and logged at once, answered after
        # connection.failed.authentication.delay.ms, then closed (Kafka's Selector).
        if step.reauthentication:
            server.stats.failed_reauthentication_total += 1
        else:
            server.stats.failed_authentication_total += 1
        log.info(
            "Failed %s with %s (mechanism %s: %s)",
            "re-authentication" if step.reauthentication else "authentication",
            self._peer,
            sasl.mechanism,
            step.reason,
        )
        self._closing = True
        answer = Answer()
        self._queue(request.correlation_id, answer)
        response = step.response
        delay_ms = server.security.sasl.failed_delay_ms if server.security.sasl else 0
        asyncio.get_running_loop().call_later(delay_ms / 1000, lambda: answer.set(response))

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
            self._write(encode_response(correlation_id, payload))
        if self._paused_reading:
            self._take_requests()
        self._close_if_done()

    def _close_if_done(self) -> None:
        if (self._eof or self._closing) and not self._slots and not self._paused_reading:
            self._close()

    def _close(self) -> None:
        """Close after what is written so far (``connection_lost`` cancels the rest)."""
        if self._transport is not None:
            self._transport.close()
