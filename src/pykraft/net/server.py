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

Security (``net/security.py``): on an SSL or SASL_SSL listener every byte goes through the
connection's TLS engine (``net/server_tls.py``) first; a failed handshake is one log line, a
count in ``failed-authentication-total`` and a closed connection. On a SASL listener every
request goes through the connection's ``SaslServerAuthenticator`` (``net/sasl.py``) until
it authenticates, frames capped at ``sasl.server.max.receive.size`` until then. Handlers get
the connection's :class:`~pykraft.net.security.Session` (listener, protocol, principal,
client address).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Final

from kio.static.protocol import ResponsePayload

from pykraft.net.answer import Answer, AuthenticationStats
from pykraft.net.apis import KRAFT_APIS
from pykraft.net.connection_quotas import ConnectionGate
from pykraft.net.sasl import (
    CredentialLookup,
)
from pykraft.net.security import (
    ListenerSecurity,
    Session,
)
from pykraft.net.server_connection import ServerConnection
from pykraft.protocol import (
    FRAME_MAX_BYTES_DEFAULT,
    ApiTable,
    DecodedRequest,
    build_api_versions_response,
)

__all__ = ["Answer", "AuthenticationStats", "Handler", "KafkaServer"]

log = logging.getLogger("pykraft.net.server")

IN_FLIGHT_MAX_DEFAULT: Final = 64


Handler = Callable[[DecodedRequest, Session], "Answer | Awaitable[ResponsePayload]"]
"""``handler(request, session)`` -> an :class:`Answer` or an awaitable response."""

_NO_CREDENTIALS: CredentialLookup = lambda _mechanism, _user: None  # noqa: E731


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
        security: ListenerSecurity | None = None,
        credentials: CredentialLookup = _NO_CREDENTIALS,
    ) -> None:
        assert in_flight_max > 0
        # Replaced as a whole when the listener's TLS is reconfigured (node/reconfigure.py):
        # each new connection reads it.
        self.security = security or ListenerSecurity(listener_name)
        self.credentials = credentials
        self.stats = AuthenticationStats()
        self.listener_name: Final = listener_name
        self.apis: Final = apis
        self.handler = handler
        self._host = host
        self._port = port
        self.frame_max_bytes = frame_max_bytes
        self.in_flight_max = in_flight_max
        self.api_versions = api_versions or (lambda v: build_api_versions_response(v, apis))
        self._server: asyncio.Server | None = None
        self.connections: set[ServerConnection] = set()
        self.gate = ConnectionGate(listener_name)  # its limits set by node/reconfigure.py

    @property
    def port(self) -> int:
        """The bound port (after :meth:`start`)."""
        assert self._server is not None and self._server.sockets
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: ServerConnection(self), self._host or None, self._port, reuse_address=True
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
