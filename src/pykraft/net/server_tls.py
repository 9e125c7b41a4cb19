"""TLS on a server connection through memory buffers (``ssl.MemoryBIO``), not asyncio's TLS
transport: every byte goes through the handshake first, and a failed handshake is the
listener's to count and log, as Kafka's Selector does (docs/DECISIONS.md, Security).

:class:`ServerTls` is the engine of one connection: ``feed`` takes what the socket read and
gives the plaintext, ``write`` encrypts what the connection answers. What ends the
connection is raised: :class:`TlsHandshakeFailed` (to be counted as a failed
authentication) and :class:`TlsClosed` (the peer's close_notify, answered with ours, or a
TLS error after the handshake).
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import Callable
from typing import Final

__all__ = ["READ_CHUNK", "ServerTls", "TlsClosed", "TlsHandshakeFailed"]

READ_CHUNK: Final = 65536


class TlsHandshakeFailed(Exception):
    """The handshake failed; ``args[0]`` is the reason to log."""


class TlsClosed(Exception):
    """The TLS session ended: the peer closed it (no args) or a TLS error (its text)."""


class ServerTls:
    """Invariant: ``ready`` once the handshake completed; nothing is read before it."""

    def __init__(self, context: ssl.SSLContext, send: Callable[[bytes], None]) -> None:
        self._in, self._out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.engine = context.wrap_bio(self._in, self._out, server_side=True)
        self._send = send  # to the socket
        self.ready = False
        self.started = False  # a byte of the handshake arrived

    def flush(self) -> None:
        """Send what the engine has to say (handshake records, an alert, encrypted data)."""
        if self._out.pending:
            self._send(self._out.read())

    def feed(self, data: bytes) -> tuple[bool, bytes]:
        """(the handshake completed with this data, the plaintext it held)."""
        self._in.write(data)
        self.started = True
        established = False
        if not self.ready:
            try:
                self.engine.do_handshake()
            except ssl.SSLWantReadError:
                self.flush()
                return False, b""
            except (ssl.SSLError, ssl.CertificateError) as e:
                raise TlsHandshakeFailed(getattr(e, "reason", None) or e) from None
            self.flush()
            self.ready = established = True
        return established, self._read_all()

    def _read_all(self) -> bytes:
        chunks = []
        while True:
            try:
                chunk = self.engine.read(READ_CHUNK)
            except ssl.SSLWantReadError:
                break
            except ssl.SSLZeroReturnError:
                chunk = b""
            except ssl.SSLError as e:
                raise TlsClosed(str(e)) from None
            if not chunk:
                # The peer's close_notify (an empty read): answered with ours, as Kafka does
                # (a client's TLS shutdown waits for it; asyncio's up to 30 s).
                with contextlib.suppress(ssl.SSLError):
                    self.engine.unwrap()
                self.flush()
                raise TlsClosed()
            chunks.append(chunk)
        self.flush()
        return b"".join(chunks)

    def write(self, data: bytes) -> None:
        self.engine.write(data)
        self.flush()
