"""The asyncio edge over real loopback sockets: ordering, errors, timeouts, reconnects."""

from __future__ import annotations

import asyncio
import datetime
import socket
import struct
from collections.abc import Awaitable, Callable
from typing import Any

import kio.schema.api_versions.v3.request as av3
import kio.schema.fetch.v12.request as fetch_v12
import kio.schema.vote.v2.request as vote_req
from kio.static.protocol import ResponsePayload

from pykraft.net.apis import request_from_kio, response_to_kio
from pykraft.net.client import Connection, PeerChannel
from pykraft.net.security import Session
from pykraft.net.server import KafkaServer
from pykraft.protocol import (
    ApiKey,
    DecodedRequest,
    ErrorCode,
    decode_response,
    encode_request,
    request_schema,
)
from pykraft.raft.messages import (
    FetchRequest,
    FetchResponse,
    RaftRequest,
    RaftResponse,
    VoteRequest,
    VoteResponse,
)
from pykraft.raft.types import ReplicaKey

TIMEOUT_S = 10

VOTE = VoteRequest("c", 3, ReplicaKey(1), ReplicaKey(2), 1, 10, pre_vote=True)
FETCH = FetchRequest("c", ReplicaKey(1), 3, 10, 1, 200)


def run(coro: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(coro(), TIMEOUT_S))


async def raft_handler(request: DecodedRequest, session: Session) -> ResponsePayload:
    """Answers Vote at once and Fetch after its max wait (a long poll)."""
    body = request_from_kio(request.message, local_id=2)
    response: RaftResponse
    if isinstance(body, FetchRequest):
        await asyncio.sleep(body.max_wait_ms / 1000)
        response = FetchResponse(ErrorCode.none, 3, 2, 10, 0)
    else:
        assert isinstance(body, VoteRequest)
        response = VoteResponse(ErrorCode.none, 3, -1, True, pre_vote=body.pre_vote)
    return response_to_kio(response, request.api_version, listener_name=session.listener_name)


async def start(handler: Any = raft_handler) -> KafkaServer:
    server = KafkaServer(handler, listener_name="CONTROLLER", host="127.0.0.1", port=0)
    await server.start()
    return server


def test_api_versions_and_in_order_responses() -> None:
    async def main() -> None:
        server = await start()
        conn = await Connection.open("127.0.0.1", server.port, timeout_ms=2000)
        assert conn.pick_version(52) == 2
        assert conn.pick_version(1) == 18
        results: list[tuple[int, RaftResponse | None]] = []
        done = asyncio.Event()

        def on_result(rid: int, response: RaftResponse | None) -> None:
            results.append((rid, response))
            if len(results) == 2:
                done.set()

        channel = PeerChannel(
            "127.0.0.1",
            server.port,
            listener_name="CONTROLLER",
            on_result=on_result,
            request_timeout_ms=2000,
            retry_backoff_ms=20,
        )
        channel.send(1, FETCH)  # a 200 ms long poll ...
        channel.send(2, VOTE)  # ... delays the vote answer on the same connection
        await done.wait()
        assert [rid for rid, _ in results] == [1, 2]
        assert isinstance(results[1][1], VoteResponse) and results[1][1].pre_vote
        await channel.close()
        conn.close()
        await server.close()

    run(main)


def test_unsupported_version_answered_and_connection_kept() -> None:
    async def main() -> None:
        server = await start()
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        # Fetch v12 exists in Kafka (and kio) but is not served here.
        old_fetch = fetch_v12.FetchRequest(
            max_wait=datetime.timedelta(0), min_bytes=0, topics=(), forgotten_topics_data=()
        )
        writer.write(encode_request(5, "x", old_fetch))
        size = struct.unpack(">i", await reader.readexactly(4))[0]
        body = await reader.readexactly(size)
        answer = decode_response(body, {5: (1, 12)}).message
        assert answer.error_code == ErrorCode.unsupported_version
        # Then an ApiVersions request on the same connection still works.
        writer.write(
            encode_request(
                6,
                "x",
                av3.ApiVersionsRequest(client_software_name="t", client_software_version="1"),
            )
        )
        size = struct.unpack(">i", await reader.readexactly(4))[0]
        body = await reader.readexactly(size)
        assert struct.unpack(">ih", body[:6]) == (6, 0)
        writer.close()
        await writer.wait_closed()
        await server.close()

    run(main)


def test_unknown_version_without_schema_closes() -> None:
    async def main() -> None:
        server = await start()
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        frame = bytearray(encode_request(5, "x", vote_req.VoteRequest(topics=())))
        struct.pack_into(">h", frame, 6, 9)  # Vote v9: no response format exists
        writer.write(bytes(frame))
        assert await reader.read() == b""
        writer.close()
        await writer.wait_closed()
        await server.close()

    run(main)


def test_malformed_frame_closes_connection(caplog: Any) -> None:
    async def main() -> None:
        server = await start()
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(struct.pack(">i", 6) + b"\x00\x34\x00\x02\xff\xff")  # truncated header
        assert await reader.read() == b""  # closed by the server
        writer.close()
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(struct.pack(">i", -5))
        assert await reader.read() == b""
        writer.close()
        await server.close()

    run(main)
    assert any("closing connection" in r.getMessage() for r in caplog.records)


def test_peer_down_fails_requests_then_reconnects() -> None:
    async def main() -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        results: asyncio.Queue[tuple[int, RaftResponse | None]] = asyncio.Queue()
        channel = PeerChannel(
            "127.0.0.1",
            port,
            listener_name="CONTROLLER",
            on_result=lambda rid, r: results.put_nowait((rid, r)),
            request_timeout_ms=500,
            retry_backoff_ms=10,
        )
        channel.send(1, VOTE)
        assert await results.get() == (1, None)  # refused -> RequestFailed
        server = KafkaServer(raft_handler, listener_name="CONTROLLER", host="127.0.0.1", port=port)
        await server.start()
        for attempt in range(2, 50):
            channel.send(attempt, VOTE)
            rid, response = await results.get()
            assert rid == attempt
            if response is not None:
                break
            await asyncio.sleep(0.02)
        assert isinstance(response, VoteResponse)
        await channel.close()
        await server.close()

    run(main)


def test_request_timeout_fails_request() -> None:
    async def never(request: DecodedRequest, session: Session) -> ResponsePayload:
        await asyncio.sleep(60)
        raise AssertionError

    async def main() -> None:
        server = await start(never)
        results: asyncio.Queue[tuple[int, RaftResponse | None]] = asyncio.Queue()
        channel = PeerChannel(
            "127.0.0.1",
            server.port,
            listener_name="CONTROLLER",
            on_result=lambda rid, r: results.put_nowait((rid, r)),
            request_timeout_ms=300,
            retry_backoff_ms=10,
        )
        request: RaftRequest = VOTE
        channel.send(7, request)
        assert await results.get() == (7, None)
        await channel.close()
        await server.close()

    run(main)


def test_api_versions_v5_as_kafka_4_4_sends_it() -> None:
    """KIP-1242: Kafka 4.4's clients send ApiVersions v5 (ClusterId, NodeId) first. A
    controller answers it at v5 with every row (ApiVersions 0-5), ignores the two fields, and
    answers INVALID_REQUEST with no rows when only one of them is set or the client software
    name is malformed (Kafka's ApiVersionsRequest.isValid in ControllerApis)."""
    v5 = request_schema(ApiKey.API_VERSIONS, 5)

    async def ask(reader: Any, writer: Any, cid: int, message: Any) -> Any:
        writer.write(encode_request(cid, "kafka-4.4", message))
        size = struct.unpack(">i", await reader.readexactly(4))[0]
        body = await reader.readexactly(size)
        return decode_response(body, {cid: (ApiKey.API_VERSIONS, 5)}).message

    def request(**fields: Any) -> Any:
        base = {"client_software_name": "apache-kafka-java", "client_software_version": "4.4.0"}
        return v5(**{**base, **fields})  # type: ignore[call-arg]

    async def main() -> None:
        server = await start()
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        ok = await ask(reader, writer, 1, request(cluster_id="other-cluster", node_id=9))
        assert ok.error_code == ErrorCode.none
        rows = {k.api_key: (k.min_version, k.max_version) for k in ok.api_keys}
        assert rows[ApiKey.API_VERSIONS] == (0, 5)
        assert ok == await ask(reader, writer, 2, request())  # both unset: the same answer
        for cid, bad in enumerate(
            (
                request(cluster_id="c"),  # ClusterId without NodeId
                request(node_id=3),  # NodeId without ClusterId
                request(client_software_name="-bad name"),
                request(client_software_version=""),
            ),
            start=3,
        ):
            answer = await ask(reader, writer, cid, bad)
            assert (answer.error_code, answer.api_keys) == (ErrorCode.invalid_request, ())
        # The connection stays usable after the refusals.
        assert (await ask(reader, writer, 9, request())).error_code == ErrorCode.none
        writer.close()
        await writer.wait_closed()
        await server.close()

    run(main)
