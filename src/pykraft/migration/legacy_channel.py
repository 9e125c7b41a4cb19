"""The controller-to-broker channel of the ZooKeeper era (Kafka's ``ControllerChannelManager``):
a blocking connection per ZooKeeper-mode broker, one request at a time, used by the migration's
worker thread, never by the event loop. Requests are the generated codecs of
``pykraft.migration.rpc`` at fixed versions, framed with request header v2 (all three APIs are
flexible at the versions a KRaft controller sends)."""

from __future__ import annotations

import socket
import struct
from typing import Any, Protocol

from pykraft.schema.runtime import r_uvarint, w_str, w_uvarint

__all__ = ["LegacyChannel", "LegacyChannelError"]


class _Request(Protocol):
    API_KEY: int

    def encode(self, version: int) -> bytes: ...


class LegacyChannelError(ConnectionError):
    """The broker could not be reached or answered something unreadable."""


class LegacyChannel:
    """One broker's connection; reconnects on the next call after a failure."""

    def __init__(self, host: str, port: int, *, client_id: str, timeout_s: float = 30) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self.timeout_s = timeout_s
        self._sock: socket.socket | None = None
        self._correlation = 0

    def call(self, request: _Request, version: int, response_cls: Any) -> Any:
        """Send ``request`` at ``version``; the decoded response (raises LegacyChannelError)."""
        self._correlation += 1
        header = bytearray(struct.pack(">hhi", request.API_KEY, version, self._correlation))
        w_str(header, self.client_id)
        w_uvarint(header, 0)  # no tagged fields
        body = bytes(header) + request.encode(version)
        try:
            sock = self._connect()
            sock.sendall(struct.pack(">i", len(body)) + body)
            size = struct.unpack(">i", self._read(sock, 4))[0]
            frame = self._read(sock, size)
        except OSError as e:
            self.close()
            raise LegacyChannelError(f"broker {self.host}:{self.port}: {e}") from None
        correlation = struct.unpack_from(">i", frame)[0]
        if correlation != self._correlation:
            self.close()
            raise LegacyChannelError(f"correlation id {correlation}, expected {self._correlation}")
        pos = 4
        tags, pos = r_uvarint(frame, pos)
        for _ in range(tags):
            _, pos = r_uvarint(frame, pos)
            length, pos = r_uvarint(frame, pos)
            pos += length
        response, _ = response_cls.read(frame, pos, version)
        return response

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def _connect(self) -> socket.socket:
        if self._sock is None:
            self._sock = socket.create_connection((self.host, self.port), timeout=self.timeout_s)
        return self._sock

    @staticmethod
    def _read(sock: socket.socket, size: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < size:
            chunk = sock.recv(size - len(chunks))
            if not chunk:
                raise ConnectionError("closed by the broker")
            chunks += chunk
        return bytes(chunks)
