"""Kafka's connection quotas on a listener (``SocketServer``'s ``ConnectionQuotas`` and
``Acceptor``): how many connections, how fast, and from which address.

Theory of operation. Each new TCP connection is put to :meth:`ConnectionGate.arrived` before
anything is read from it:

* With ``max.connections`` (or ``listener.name.<l>.max.connections``) open already, or faster
  than ``max.connection.creation.rate`` (or its listener override), the connection is *held*:
  nothing is read from it until a slot frees or the throttle time passes, as Kafka's acceptor
  waits before it accepts (``Throttling <listener> for <ms> ms``).
* From an address with ``max.connections.per.ip`` open already (or its entry in
  ``max.connections.per.ip.overrides``) it is closed at once: ``Rejected connection from <ip>,
  address already has the configured maximum of <n> connections.``
* From an address over its ``connection_creation_rate`` client quota (entity ``ip``, KIP-612,
  ``kafka-configs --entity-type ips``; the default entity for any address without its own)
  it is closed after the throttle time: ``Delaying closing of connection from <ip> for <ms>
  ms``.

Rates are Kafka's ``Rate`` over ``quota.window.num`` (11) windows of one second: the count
over the time since the oldest window began, but never less than ten windows, so a burst up
to ten seconds' worth passes before a quota bites; the throttle time is Kafka's
``QuotaUtils.throttleTime``, (rate - bound) / bound x that window. Limits change at run time
(``node/reconfigure.py`` reads them from the node's configs and the ip quotas) and apply to
the connections that arrive after.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final

__all__ = ["UNLIMITED", "ConnectionGate", "ConnectionLimits", "Rate"]

log = logging.getLogger("pykraft.net")

UNLIMITED: Final = 2**31 - 1  # Kafka's default for each of these limits (Int.MaxValue)
WINDOWS: Final = 11  # quota.window.num
WINDOW_S: Final = 1.0  # quota.window.size.seconds


@dataclass(frozen=True)
class ConnectionLimits:
    max_connections: int = UNLIMITED
    max_creation_rate: int = UNLIMITED
    max_per_ip: int = UNLIMITED
    per_ip: Mapping[str, int] = field(default_factory=dict)
    ip_rate_default: float = UNLIMITED  # the default ip entity's connection_creation_rate
    ip_rates: Mapping[str, float] = field(default_factory=dict)

    def per_ip_max(self, ip: str) -> int:
        return self.per_ip.get(ip, self.max_per_ip)

    def ip_rate(self, ip: str) -> float:
        return self.ip_rates.get(ip, self.ip_rate_default)


class Rate:
    """Events per second over Kafka's sampled windows (module docstring)."""

    def __init__(self, windows: int = WINDOWS, window_s: float = WINDOW_S) -> None:
        self.windows, self.window_s = windows, window_s
        self._samples: collections.deque[list[float]] = collections.deque()  # [start, count]

    def _purge(self, now: float) -> None:
        while self._samples and now - self._samples[0][0] >= self.windows * self.window_s:
            self._samples.popleft()

    def record(self, now: float, count: float = 1.0) -> None:
        self._purge(now)
        if not self._samples or now - self._samples[-1][0] >= self.window_s:
            self._samples.append([now, 0.0])
        self._samples[-1][1] += count

    def value(self, now: float) -> float:
        self._purge(now)
        total = sum(count for _, count in self._samples)
        elapsed = now - self._samples[0][0] if self._samples else 0.0
        return total / max(elapsed, (self.windows - 1) * self.window_s)

    def throttle_ms(self, now: float, bound: float) -> int:
        """How long to wait for the rate to come back to ``bound`` (0: within it)."""
        rate = self.value(now)
        if rate <= bound:
            return 0
        window = max(now - self._samples[0][0], (self.windows - 1) * self.window_s)
        return max(1, round((rate - bound) / bound * window * 1000))


class ConnectionGate:
    """Invariant: ``open`` counts the admitted connections not yet closed, by address in
    ``by_ip``; ``held`` are connections waiting for a slot, oldest first."""

    def __init__(self, listener_name: str, limits: ConnectionLimits | None = None) -> None:
        self.listener_name = listener_name
        self.limits = limits or ConnectionLimits()
        self.open = 0
        self.by_ip: collections.Counter[str] = collections.Counter()
        self.rate = Rate()  # the listener's accepted connections
        self.ip_rates: dict[str, Rate] = {}
        # (transport, address, start, when it arrived) of each connection waiting
        self.held: collections.deque[tuple[asyncio.Transport, str, Callable[[], None], float]] = (
            collections.deque()
        )
        self.blocked_ns = 0  # how long held connections waited, in all (AcceptorBlockedPercent)
        self.rejected = 0  # closed for their address's count or rate
        self._timer: asyncio.TimerHandle | None = None

    def arrived(self, transport: asyncio.Transport, ip: str, start: Callable[[], None]) -> bool:
        """True: admitted now (the caller goes on); False: held (``start`` is called once
        admitted) or closed."""
        if self.held or self._hold_ms() is not None:
            transport.pause_reading()
            self.held.append((transport, ip, start, _now()))
            self._wake_later()
            return False
        return self._admit(transport, ip)

    def left(self, ip: str) -> None:
        """An admitted connection closed."""
        self.open -= 1
        self.by_ip[ip] -= 1
        if self.by_ip[ip] <= 0:
            del self.by_ip[ip]
        self._wake()

    def _hold_ms(self) -> float | None:
        """None when a connection may be admitted now; else how long to wait (0: until a
        connection closes)."""
        if self.open >= self.limits.max_connections:
            return 0.0
        throttle = self.rate.throttle_ms(_now(), self.limits.max_creation_rate)
        if throttle > 0:
            log.debug("Throttling listener %s for %d ms", self.listener_name, throttle)
            return float(throttle)
        return None

    def _admit(self, transport: asyncio.Transport, ip: str) -> bool:
        limits, now = self.limits, _now()
        most = limits.per_ip_max(ip)
        if self.by_ip[ip] >= most:
            self.rejected += 1
            log.info(
                "Rejected connection from %s, address already has the configured maximum of "
                "%d connections.",
                ip,
                most,
            )
            transport.close()
            return False
        bound = limits.ip_rate(ip)
        if bound < UNLIMITED:
            rate = self.ip_rates.setdefault(ip, Rate())
            rate.record(now)
            delay = rate.throttle_ms(now, bound)
            if delay > 0:
                rate.record(now, -1.0)  # as Kafka: a throttled connection is not counted
                self.rejected += 1
                log.info("Delaying closing of connection from %s for %d ms", ip, delay)
                transport.pause_reading()
                asyncio.get_running_loop().call_later(delay / 1000, transport.close)
                return False
        self.open += 1
        self.by_ip[ip] += 1
        self.rate.record(now)
        return True

    def _wake_later(self) -> None:
        hold = self._hold_ms()
        if self._timer is None and hold:
            self._timer = asyncio.get_running_loop().call_later(hold / 1000, self._wake)

    def _wake(self) -> None:
        """Admit held connections while the limits allow."""
        self._timer = None
        while self.held and self._hold_ms() is None:
            transport, ip, start, arrived = self.held.popleft()
            self.blocked_ns += int((_now() - arrived) * 1e9)
            if transport.is_closing():
                continue
            if self._admit(transport, ip):
                transport.resume_reading()
                start()
        if self.held:
            self._wake_later()


def _now() -> float:
    return asyncio.get_running_loop().time()
