"""What a request handler gives the listener (:class:`Answer`: a response now or later) and
what the listener counts of its authentications (:class:`AuthenticationStats`, published
under Kafka's socket-server-metrics names by ``node/metrics.py``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kio.static.protocol import ResponsePayload

__all__ = ["Answer", "AuthenticationStats"]


@dataclass(slots=True)
class AuthenticationStats:
    """Kafka's socket-server-metrics of one listener: authentications that succeeded
    (TLS and SASL channels reaching ready; PLAINTEXT ones are not counted) and failed."""

    successful_authentication_total: int = 0
    failed_authentication_total: int = 0
    successful_authentication_no_reauth_total: int = 0
    # KIP-368: re-authentications, and connections closed because their session expired
    successful_reauthentication_total: int = 0
    failed_reauthentication_total: int = 0
    expired_connections_killed_count: int = 0


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
