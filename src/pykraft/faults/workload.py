"""The workload: a client of the controller's public RPCs whose every acknowledged write has a
known offset.

It registers simulated brokers (BrokerRegistration v4, as a Kafka broker does) with the active
controller. The controller answers only once the ``RegisterBrokerRecord`` is committed, and the
broker epoch it answers is that record's offset (Kafka's rule), so each acknowledgement says
exactly what the committed log must hold where: (offset, broker id, incarnation id). Broker ids
come from a pool, each reused only after the broker session timeout has passed (a live session
would be refused with DUPLICATE_BROKER_REGISTRATION, as Kafka refuses it).

The client follows the leader as a broker does: NOT_CONTROLLER, a timeout or a lost
connection sends the next request to the next controller; nothing is acknowledged that the
controller did not answer with NONE.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
import uuid
from dataclasses import dataclass
from typing import Any

from pykraft.metadata.versions import broker_registration_features
from pykraft.net.client import Connection
from pykraft.protocol import ApiKey
from pykraft.protocol.apis import request_schema
from pykraft.protocol.build import make

__all__ = ["Ack", "Workload"]

# A Kafka 4.4.0 broker's features (4.4-IV2 is its newest level).
_FEATURES = broker_registration_features(33)
_NOT_CONTROLLER = 41
_REQUEST_TIMEOUT_MS = 5_000
_FIRST_BROKER_ID = 10_000


@dataclass(frozen=True, slots=True)
class Ack:
    offset: int  # the broker epoch answered: where the RegisterBrokerRecord is
    broker_id: int
    incarnation: uuid.UUID
    at_s: float  # monotonic


class Workload:
    """Registrations at ``rate`` per second, at most ``in_flight`` at a time."""

    def __init__(
        self,
        cluster_id: str,
        addresses: list[str],
        *,
        rate: float = 20.0,
        in_flight: int = 8,
        pool: int = 1_000,
    ) -> None:
        self.cluster_id = cluster_id
        self.addresses = addresses
        self.rate = rate
        self.acked: list[Ack] = []
        self.outcomes: collections.Counter[str] = collections.Counter()
        self._slots = asyncio.Semaphore(in_flight)
        self._ids = collections.deque(range(_FIRST_BROKER_ID, _FIRST_BROKER_ID + pool))
        self._guess = 0  # index into addresses of the controller believed active
        self._conns: dict[str, Connection] = {}
        self._opened: list[Connection] = []  # every connection, aborted at the end

    async def run(self, stop: asyncio.Event) -> None:
        tasks: set[asyncio.Task[None]] = set()
        next_at = time.monotonic()
        while not stop.is_set():
            period = 1.0 / self.rate  # read each time: the run raises it while a disk is full
            await self._slots.acquire()
            broker_id = self._ids.popleft()
            self._ids.append(broker_id)
            task = asyncio.ensure_future(self._register(broker_id))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            next_at += period
            delay = next_at - time.monotonic()
            if delay > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), delay)
            else:
                next_at = time.monotonic()
        if tasks:
            await asyncio.wait(tasks, timeout=_REQUEST_TIMEOUT_MS / 1000 + 1)
        for task in tasks:  # a connect still waiting: given up (never acknowledged)
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)
        self._conns.clear()
        for conn in self._opened:
            conn.abort()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.wait_closed(), 2)

    async def _register(self, broker_id: int) -> None:
        try:
            incarnation = uuid.uuid4()
            address = self.addresses[self._guess % len(self.addresses)]
            try:
                response = await self._call(address, broker_id, incarnation)
            except (ConnectionError, TimeoutError, OSError) as e:
                self.outcomes[type(e).__name__] += 1
                self._next(address)
                return
            code = int(response.error_code)
            if code == 0:
                self.outcomes["acked"] += 1
                self.acked.append(
                    Ack(int(response.broker_epoch), broker_id, incarnation, time.monotonic())
                )
                return
            self.outcomes[f"error {code}"] += 1
            if code == _NOT_CONTROLLER:
                self._next(address)
        finally:
            self._slots.release()

    def _next(self, address: str) -> None:
        if self.addresses[self._guess % len(self.addresses)] == address:
            self._guess += 1
        conn = self._conns.pop(address, None)
        if conn is not None:
            conn.abort()

    async def _call(self, address: str, broker_id: int, incarnation: uuid.UUID) -> Any:
        conn = self._conns.get(address)
        if conn is None or conn.closed:
            host, port = address.rsplit(":", 1)
            conn = await Connection.open(
                host, int(port), timeout_ms=_REQUEST_TIMEOUT_MS, client_id="pykraft-faults"
            )
            self._conns[address] = conn
            self._opened.append(conn)
        fields = {
            "broker_id": broker_id,
            "cluster_id": self.cluster_id,
            "incarnation_id": incarnation,
            "listeners": [
                {"name": "PLAINTEXT", "host": "127.0.0.1", "port": 1, "security_protocol": 0}
            ],
            "features": _FEATURES,
            "rack": None,
            "log_dirs": [uuid.UUID(int=(broker_id << 64) | 4242)],
        }
        message = make(request_schema(ApiKey.BROKER_REGISTRATION, 4), fields)
        return await conn.request(message, timeout_ms=_REQUEST_TIMEOUT_MS)
