"""Kafka's connection quotas on a listener (``net/connection_quotas.py``), on a real server over
loopback sockets from addresses of their own (127.0.0.x): too many connections from one
address are closed at once, an address over its connection rate is closed after the throttle
time, a listener at max.connections holds new connections until one closes; and Kafka's
``Rate`` arithmetic. With Kafka's kafka-configs against real controllers:
``tests/interop/test_kafka_broker.py``."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
import uvloop

from pykraft.net.connection_quotas import ConnectionLimits, Rate
from pykraft.net.server import KafkaServer

TIMEOUT_S = 20
Main = Callable[[], Coroutine[Any, Any, None]]


@pytest.fixture(params=["asyncio", "uvloop"])
def run(request: pytest.FixtureRequest) -> Callable[[Main], None]:
    """On asyncio's loop and on uvloop's, which the node runs (it reads a new connection
    before a pause in connection_made takes)."""

    def on_loop(main: Main) -> None:
        coro = asyncio.wait_for(main(), TIMEOUT_S)
        if request.param == "uvloop":
            uvloop.run(coro)
        else:
            asyncio.run(coro)

    return on_loop


async def _server(limits: ConnectionLimits) -> KafkaServer:
    async def never(*_: object) -> None:
        raise AssertionError("only ApiVersions is sent")

    server = KafkaServer(never, listener_name="CONTROLLER", host="127.0.0.1", port=0)
    server.gate.limits = limits
    await server.start()
    return server


OPEN: list[asyncio.StreamWriter] = []  # the clients' side, closed by _close


async def _dial(
    server: KafkaServer, source: str
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    conn = await asyncio.open_connection("127.0.0.1", server.port, local_addr=(source, 0))
    OPEN.append(conn[1])
    return conn


async def _close(server: KafkaServer) -> None:
    for writer in OPEN:
        writer.close()
    OPEN.clear()
    await server.close()


async def _answered(
    conn: tuple[asyncio.StreamReader, asyncio.StreamWriter], wait_s: float = 2.0
) -> bool:
    """An ApiVersions v0 answered within ``wait_s`` (False: closed or still waiting)."""
    reader, writer = conn
    body = struct.pack(">hhih", 18, 0, 7, -1)
    try:
        writer.write(struct.pack(">i", len(body)) + body)
        size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), wait_s))[0]
        await asyncio.wait_for(reader.readexactly(size), wait_s)
        return True
    except (TimeoutError, asyncio.IncompleteReadError, ConnectionError):
        return False


def test_too_many_connections_from_one_address_are_closed(run: Callable[[Main], None]) -> None:
    async def main() -> None:
        server = await _server(ConnectionLimits(max_per_ip=5, per_ip={"127.0.0.2": 2}))
        first = [await _dial(server, "127.0.0.2") for _ in range(2)]
        assert all([await _answered(c) for c in first])
        third = await _dial(server, "127.0.0.2")
        assert await third[0].read() == b""  # closed at once: the override's 2 reached
        others = [await _dial(server, "127.0.0.3") for _ in range(3)]  # the default, 5
        assert all([await _answered(c) for c in others])
        first[0][1].close()
        await asyncio.sleep(0.2)
        assert await _answered(await _dial(server, "127.0.0.2"))  # a slot freed
        assert server.gate.rejected == 1 and server.gate.by_ip["127.0.0.3"] == 3
        await _close(server)

    run(main)


def test_an_address_over_its_connection_rate_is_closed_after_the_throttle_time(
    run: Callable[[Main], None],
) -> None:
    async def main() -> None:
        server = await _server(ConnectionLimits(ip_rates={"127.0.0.2": 1.0}))
        burst = [await _dial(server, "127.0.0.2") for _ in range(14)]
        answered = [await _answered(c, wait_s=0.5) for c in burst]
        # Kafka's Rate: at least ten one-second windows, so ten pass, then the quota bites.
        assert answered == [True] * 10 + [False] * 4, answered
        assert server.gate.rejected == 4
        assert await burst[-1][0].read() == b""  # closed once its throttle time passed
        assert await _answered(await _dial(server, "127.0.0.4"))  # another address: free
        await _close(server)

    run(main)


def test_a_listener_at_max_connections_holds_the_next_until_one_closes(
    run: Callable[[Main], None],
) -> None:
    async def main() -> None:
        server = await _server(ConnectionLimits(max_connections=2))
        first = [await _dial(server, "127.0.0.2") for _ in range(2)]
        assert all([await _answered(c) for c in first])
        held = await _dial(server, "127.0.0.3")
        waiting = asyncio.ensure_future(_answered(held, wait_s=5))
        await asyncio.sleep(0.5)
        assert not waiting.done()  # held: nothing read from it
        first[1][1].close()
        assert await waiting  # admitted once a connection closed
        assert server.gate.rejected == 0
        await _close(server)

    run(main)


@pytest.mark.parametrize(("events", "throttle_ms"), [(10, 0), (11, 1000), (20, 10_000)])
def test_rate_is_kafkas(events: int, throttle_ms: int) -> None:
    rate = Rate()
    for _ in range(events):
        rate.record(100.0)
    assert rate.value(100.0) == events / 10  # never less than ten windows
    assert rate.throttle_ms(100.0, 1.0) == throttle_ms  # (rate - bound) / bound x 10 s
