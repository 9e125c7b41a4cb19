"""A request the server holds on purpose (a long-poll Fetch's MaxWaitMs) must not time out the
connection, nor make requests pipelined behind it time out (answers come in order)."""

from __future__ import annotations

import asyncio

import pytest
from kio.static.protocol import ResponsePayload

from pykraft.admin.describe import describe_quorum_request
from pykraft.net.client import Connection
from pykraft.net.security import Session
from pykraft.net.server import KafkaServer
from pykraft.protocol import ApiKey, DecodedRequest, ErrorCode, error_response

HOLD_MS = 300


async def held_server() -> KafkaServer:
    async def handler(request: DecodedRequest, session: Session) -> ResponsePayload:
        await asyncio.sleep(HOLD_MS / 1000)  # a parked long poll
        return error_response(ApiKey.DESCRIBE_QUORUM, request.api_version, ErrorCode.none)

    # The answer's classes imported before the clock runs, as a node imports its newest
    # versions before it serves (``import_newest``): a first use costs tens of ms here.
    error_response(ApiKey.DESCRIBE_QUORUM, describe_quorum_request().__version__, ErrorCode.none)
    server = KafkaServer(handler, listener_name="CONTROLLER", host="127.0.0.1", port=0)
    await server.start()
    return server


def test_server_wait_extends_the_timeout_of_it_and_of_requests_behind_it() -> None:
    async def go() -> None:
        server = await held_server()
        conn = await Connection.open("127.0.0.1", server.port, timeout_ms=1000)
        try:
            held = asyncio.ensure_future(
                conn.request(describe_quorum_request(), timeout_ms=100, server_wait_ms=HOLD_MS)
            )
            await asyncio.sleep(0.01)
            # Sent after the held one: its answer waits behind it on the wire.
            behind = asyncio.ensure_future(conn.request(describe_quorum_request(), timeout_ms=100))
            await asyncio.gather(held, behind)
            assert not conn.closed
        finally:
            conn.close()
            await conn.wait_closed()
            await server.close()

    asyncio.run(go())


def test_without_server_wait_a_slow_answer_times_out_and_closes() -> None:
    async def go() -> None:
        server = await held_server()
        conn = await Connection.open("127.0.0.1", server.port, timeout_ms=1000)
        try:
            with pytest.raises(TimeoutError):
                await conn.request(describe_quorum_request(), timeout_ms=100)
            assert conn.closed
        finally:
            conn.close()
            await conn.wait_closed()
            await server.close()

    asyncio.run(go())
