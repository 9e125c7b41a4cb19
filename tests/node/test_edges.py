"""The edges of a running node, end to end, on one quorum of real processes (module fixture):
a controller that knows only ``controller.quorum.bootstrap.servers`` finds the leader and
follows it as an observer (SPEC D8), and bad input over raw sockets -- random bytes, an
oversized frame, an unknown API key, an unsupported version, truncated requests -- closes the
connection with a log line or gets UNSUPPORTED_VERSION, while the node keeps serving other
clients and the quorum keeps committing (SPEC I4); last, the leader removes itself with
``remove-controller`` and ends as an observer, losing nothing committed (SPEC D)."""

from __future__ import annotations

import contextlib
import datetime
import random
import signal
import socket
import struct
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final, cast

import kio.schema.api_versions.v3.request as api_versions_v3
import kio.schema.fetch.v12.request as fetch_v12
import pytest
from kio.static.primitive import i32, i32Timedelta
from kio.static.protocol import RequestPayload

from pykraft.admin import QuorumInfo
from pykraft.admin.describe import describe_quorum_request
from pykraft.protocol import (
    ApiKey,
    ErrorCode,
    ResponseReader,
    decode_response,
    encode_frame,
    encode_request,
)
from pykraft.storage import read_meta_properties, uuid_to_kafka

from .procs import CLUSTER_ID, Proc, cli, describe_quorum, fmt, free_ports, make_config, wait_for

pytestmark = pytest.mark.slow

FRAME_MAX_BYTES: Final = 1024 * 1024  # socket.request.max.bytes of the voters
IO_TIMEOUT_S: Final = 5.0
UNKNOWN_API_KEY: Final = 999  # no Kafka API has this key


@dataclass
class Quorum:
    voters: list[Proc]
    observer: Proc  # formatted, not started: the observer test starts it
    servers: str  # the voters' addresses, for the admin client


@pytest.fixture(scope="module")
def quorum(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Quorum]:
    """Three voters of a dynamic quorum (``--initial-controllers``), the leader appending a
    record every 50 ms; a fourth controller formatted with ``--no-initial-controllers`` whose
    config names nothing but the bootstrap servers."""
    tmp = tmp_path_factory.mktemp("edges")
    ports = free_ports(4)
    servers = ",".join(f"127.0.0.1:{p}" for p in ports[:3])
    bootstrap = f"controller.quorum.bootstrap.servers={servers}\n"
    voters = [
        make_config(
            tmp,
            i + 1,
            ports[i],
            voters=None,
            extra=bootstrap
            + "pykraft.debug.append.interval.ms=50\n"
            + f"socket.request.max.bytes={FRAME_MAX_BYTES}\n",
        )
        for i in range(3)
    ]
    observer = make_config(tmp, 4, ports[3], voters=None, extra=bootstrap)
    directories = [cli("storage", "random-uuid").stdout.strip() for _ in voters]
    initial = ",".join(
        f"{p.node_id}@127.0.0.1:{p.port}:{d}" for p, d in zip(voters, directories, strict=True)
    )
    for p in voters:
        fmt(p, "--initial-controllers", initial)
    fmt(observer, "--no-initial-controllers")
    try:
        for p in voters:
            p.start()
        wait_for(lambda: describe(servers).high_watermark > 0, "a leader that commits")
        yield Quorum(voters, observer, servers)
    finally:
        for p in [*voters, observer]:
            p.kill()


def describe(bootstrap: str) -> QuorumInfo:
    return describe_quorum(bootstrap, timeout_ms=10_000)


def test_observer_with_only_bootstrap_servers_finds_the_leader_and_follows(
    quorum: Quorum,
) -> None:
    observer = quorum.observer
    config = observer.config.read_text()
    assert "controller.quorum.voters" not in config and "auto.join" not in config
    assert "controller.quorum.bootstrap.servers" in config
    observer.start()

    def observed() -> QuorumInfo | None:
        info = describe(quorum.servers)
        return info if any(o.replica_id == 4 for o in info.observers) else None

    wait_for(observed, "node 4 fetching as an observer")
    # The leader keeps appending: catching up means reaching a log end offset the leader had
    # once node 4 was already fetching, as the leader itself reports it.
    info = observed()
    assert info is not None and info.leader is not None
    target = info.leader.log_end_offset
    assert target > 0

    def observer_leo() -> int:
        info = describe(quorum.servers)
        return next((o.log_end_offset for o in info.observers if o.replica_id == 4), -1)

    wait_for(lambda: observer_leo() >= target, f"node 4's log end offset to reach {target}")

    info = describe(quorum.servers)
    assert sorted(v.replica_id for v in info.voters) == [1, 2, 3]
    assert [o.replica_id for o in info.observers] == [4]
    assert info.leader_id in (1, 2, 3)

    # What an operator reads: an Observer row for node 4 in describe --replication.
    result = cli(
        "metadata-quorum", "--bootstrap-controller", quorum.servers, "describe", "--replication"
    )
    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines()[1:]]
    assert sorted((r[0], r[-1]) for r in rows) == [
        ("1", "Follower" if info.leader_id != 1 else "Leader"),
        ("2", "Follower" if info.leader_id != 2 else "Leader"),
        ("3", "Follower" if info.leader_id != 3 else "Leader"),
        ("4", "Observer"),
    ]
    observer_row = next(r for r in rows if r[0] == "4")
    assert int(observer_row[2]) >= target

    # It followed the leader's log, not just its offsets: every record the voters committed
    # below that offset is in node 4's log, with the same value.
    assert observer.stop(signal.SIGTERM) == 0
    committed = [c for p in quorum.voters for c in p.committed() if c[0] < target]
    assert committed
    values = observer.log_values()
    for offset, _epoch, value in committed:
        assert values.get(offset) == value.encode(), offset
    # An observer follows (Kafka's FollowerState) but never campaigns.
    roles = {to for _, to, _ in observer.transitions()}
    assert "follower" in roles and not roles & {"prospective", "candidate", "leader"}, roles
    # Still three voters: an observer without auto-join never joins.
    assert sorted(v.replica_id for v in describe(quorum.servers).voters) == [1, 2, 3]


class RawClient:
    """A blocking Kafka-protocol connection over a plain socket (a client that may misbehave).

    ``reader`` matches responses to the requests sent through :meth:`request`."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=IO_TIMEOUT_S)
        self.reader = ResponseReader(client_id="edges")

    @property
    def peer_name(self) -> str:
        """How the node's log names this connection."""
        host, port = self.sock.getsockname()[:2]
        return repr((host, port))

    def close(self) -> None:
        self.sock.close()

    def request(self, message: RequestPayload) -> Any:
        _, data = self.reader.send(message)
        self.sock.sendall(data)
        while (response := self.reader.next_response()) is None:
            chunk = self.sock.recv(65536)
            assert chunk, "the node closed a connection that sent a valid request"
            self.reader.feed(chunk)
        return response.message

    def read_frame(self) -> bytes:
        """One whole response frame, without its size prefix."""
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
            chunk = self.sock.recv(65536)
            assert chunk, "closed before a whole response frame"
            buf += chunk
        size = struct.unpack(">i", buf[:4])[0]
        assert len(buf) == 4 + size, "more than one response"
        return buf[4:]

    def send_quietly(self, data: bytes) -> None:
        """Send what may be refused halfway: the node may close before taking all of it."""
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.sock.sendall(data)

    def closed_by_node(self) -> bool:
        """True once the node closes the connection (EOF or reset) without answering."""
        try:
            return self.sock.recv(65536) == b""
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False


def api_versions() -> RequestPayload:
    return api_versions_v3.ApiVersionsRequest(
        client_software_name="edges", client_software_version="1"
    )


def request_frame(correlation_id: int, message: RequestPayload) -> bytes:
    return encode_request(correlation_id, "edges", message)


@dataclass
class Target:
    """The node under attack, a client connected to it throughout, and the HWM last seen."""

    node: Proc
    servers: str
    bystander: RawClient
    high_watermark: int

    def assert_closed_with_log_line(self, client: RawClient, what: str) -> None:
        assert client.closed_by_node(), f"{what}: the node answered or kept the connection open"
        needle = f"closing connection from {client.peer_name}"
        wait_for(lambda: needle in self.node.text(), f"{what}: a log line '{needle}'", 5)
        client.close()

    def assert_still_serving(self, what: str) -> None:
        """The process is alive, the bystander's connection and a new one are served, and the
        quorum commits."""
        assert self.node.process is not None and self.node.process.poll() is None, what
        assert self.bystander.request(api_versions()).error_code == ErrorCode.none, what
        fresh = RawClient(self.node.port)
        try:
            assert fresh.request(api_versions()).error_code == ErrorCode.none, what
            (topic,) = fresh.request(describe_quorum_request()).topics
            (partition,) = topic.partitions
            assert partition.error_code in (ErrorCode.none, ErrorCode.not_leader_or_follower)
        finally:
            fresh.close()
        before = self.high_watermark

        def advanced() -> bool:
            self.high_watermark = describe(self.servers).high_watermark
            return self.high_watermark > before

        wait_for(advanced, f"{what}: the high watermark to pass {before}", 10)


@pytest.fixture(scope="module")
def target(quorum: Quorum) -> Iterator[Target]:
    """The leader when the first bad-input test starts; the bystander stays connected to it
    through every bad-input test of the module."""
    info = describe(quorum.servers)
    leader = next(p for p in quorum.voters if p.node_id == info.leader_id)
    bystander = RawClient(leader.port)
    try:
        yield Target(leader, quorum.servers, bystander, info.high_watermark)
    finally:
        bystander.close()


def test_random_bytes_close_the_connection_with_a_log_line(target: Target) -> None:
    for seed in (1, 2, 3):
        rng = random.Random(seed)
        # Unframed: the first four bytes are a size prefix that is negative or too large.
        data = rng.randbytes(256)
        prefix = int.from_bytes(data[:4], "big", signed=True)
        assert not 0 <= prefix <= FRAME_MAX_BYTES, "pick a seed whose prefix is out of range"
        client = RawClient(target.node.port)
        client.send_quietly(data)
        target.assert_closed_with_log_line(client, f"random bytes (seed {seed})")
        target.assert_still_serving(f"after random bytes (seed {seed})")
        # Framed: a well-sized frame whose header and body are random.
        client = RawClient(target.node.port)
        client.send_quietly(encode_frame(rng.randbytes(256)))
        target.assert_closed_with_log_line(client, f"a random frame (seed {seed})")
        target.assert_still_serving(f"after a random frame (seed {seed})")
        # A valid Fetch v17 header (api key, version, correlation id, client id, no tagged
        # fields) and a random body: what the body decoder makes of garbage.
        header = struct.pack(">hhih", ApiKey.FETCH, 17, seed, 5) + b"edges" + b"\x00"
        client = RawClient(target.node.port)
        client.send_quietly(encode_frame(header + rng.randbytes(256)))
        target.assert_closed_with_log_line(client, f"a Fetch of random bytes (seed {seed})")
        target.assert_still_serving(f"after a Fetch of random bytes (seed {seed})")


def test_oversized_frame_is_closed_before_its_body(target: Target) -> None:
    client = RawClient(target.node.port)
    # Only the size prefix (and a few bytes): the node must not wait for the rest.
    client.send_quietly(struct.pack(">i", FRAME_MAX_BYTES + 1) + b"\x00" * 16)
    target.assert_closed_with_log_line(client, "an oversized frame")
    assert f"frame of {FRAME_MAX_BYTES + 1} bytes exceeds the limit" in target.node.text()
    target.assert_still_serving("after an oversized frame")


def test_unknown_api_key_closes_the_connection_with_a_log_line(target: Target) -> None:
    """Kafka closes the connection on an API key it does not know (``RequestHeader.parse``
    fails: there is no response format to answer in); so does the node."""
    client = RawClient(target.node.port)
    frame = bytearray(request_frame(7, api_versions()))
    struct.pack_into(">h", frame, 4, UNKNOWN_API_KEY)  # after the size prefix
    client.send_quietly(bytes(frame))
    target.assert_closed_with_log_line(client, "an unknown api key")
    assert f"no response format for api key {UNKNOWN_API_KEY} v3" in target.node.text()
    target.assert_still_serving("after an unknown api key")


def test_unsupported_version_gets_unsupported_version_and_keeps_the_connection(
    target: Target,
) -> None:
    client = RawClient(target.node.port)
    try:
        # Fetch v12 is a Kafka version (KRaft serves 13+): its UNSUPPORTED_VERSION answer.
        old_fetch = fetch_v12.FetchRequest(
            max_wait=i32Timedelta.parse(datetime.timedelta(0)),
            min_bytes=i32(0),
            topics=(),
            forgotten_topics_data=(),
        )
        answer = client.request(old_fetch)
        assert answer.error_code == ErrorCode.unsupported_version
        # ApiVersions past the node's range: a v0 answer with UNSUPPORTED_VERSION and the
        # node's versions, which is how a Kafka client learns which version to retry with.
        frame = bytearray(request_frame(41, api_versions()))
        struct.pack_into(">h", frame, 6, 127)
        client.sock.sendall(bytes(frame))
        body = client.read_frame()
        answer = cast(Any, decode_response(body, {41: (ApiKey.API_VERSIONS, 0)}).message)
        assert answer.error_code == ErrorCode.unsupported_version
        row = next(k for k in answer.api_keys if k.api_key == ApiKey.API_VERSIONS)
        assert (row.min_version, row.max_version) == (0, 5)
        # The connection is still usable.
        assert client.request(api_versions()).error_code == ErrorCode.none
        (topic,) = client.request(describe_quorum_request()).topics
        assert topic.partitions[0].error_code == ErrorCode.none
    finally:
        client.close()
    assert "answering UNSUPPORTED_VERSION" in target.node.text()
    target.assert_still_serving("after unsupported versions")

    # A version with no response format at all (DescribeQuorum v3 does not exist): nothing
    # the client could read, so the connection is closed, with a log line.
    client = RawClient(target.node.port)
    frame = bytearray(request_frame(8, describe_quorum_request()))
    struct.pack_into(">h", frame, 6, 3)
    client.send_quietly(bytes(frame))
    target.assert_closed_with_log_line(client, "a version with no response format")
    target.assert_still_serving("after a version with no response format")


def test_vote_for_another_replica_key_gets_invalid_voter_key(target: Target) -> None:
    """D7 over the wire: a Vote (v2) addressed to this node's id with another directory id
    is answered INVALID_VOTER_KEY, and nothing changes."""
    import kio.schema.vote.v2.request as vote_v2

    meta = read_meta_properties(target.node.data)
    assert meta is not None
    epoch = describe(target.servers).leader_epoch
    partition = vote_v2.PartitionData(
        partition_index=0,
        replica_epoch=epoch + 5,
        replica_id=9,
        replica_directory_id=uuid.uuid4(),
        voter_directory_id=uuid.uuid4(),  # not the node's
        last_offset_epoch=epoch,
        last_offset=10**9,
        pre_vote=False,
    )
    request = vote_v2.VoteRequest(
        cluster_id=CLUSTER_ID,
        voter_id=target.node.node_id,  # type: ignore[arg-type]
        topics=(vote_v2.TopicData(topic_name="__cluster_metadata", partitions=(partition,)),),
    )
    client = RawClient(target.node.port)
    try:
        answer = cast(Any, client.request(request))
    finally:
        client.close()
    assert answer.error_code == ErrorCode.none
    assert answer.topics[0].partitions[0].error_code == ErrorCode.invalid_voter_key
    assert not answer.topics[0].partitions[0].vote_granted
    assert describe(target.servers).leader_epoch == epoch  # no epoch bump from it
    target.assert_still_serving("after a vote for another replica key")


def test_truncated_requests_close_the_connection_with_a_log_line(target: Target) -> None:
    whole = request_frame(9, describe_quorum_request())
    # A frame that ends inside the request header (api key, version, half a correlation id).
    header_cut = struct.pack(">i", 6) + whole[4:10]
    # A frame whose header is whole but whose body is cut short (size prefix adjusted).
    body = whole[4:-3]
    body_cut = struct.pack(">i", len(body)) + body
    for what, data in (("a truncated header", header_cut), ("a truncated body", body_cut)):
        client = RawClient(target.node.port)
        client.send_quietly(data)
        target.assert_closed_with_log_line(client, what)
        target.assert_still_serving(f"after {what}")

    # A frame announced whole and sent in part, then the client hangs up mid-frame.
    client = RawClient(target.node.port)
    client.sock.sendall(whole[:-5])
    client.sock.shutdown(socket.SHUT_WR)
    target.assert_closed_with_log_line(client, "a frame cut by a hang-up")
    assert "stream ended inside a frame" in target.node.text()
    target.assert_still_serving("after a frame cut by a hang-up")


def test_leader_removes_itself_and_ends_as_an_observer(quorum: Quorum) -> None:
    """``remove-controller`` of the leader (runs last: it changes the voter set). The leader
    stays leader until the removal commits, then resigns; the others elect a leader among
    themselves; the removed node, whose bootstrap servers name the others and which does not
    auto-join, finds the new leader and fetches as an observer; and every record it
    acknowledged as committed is in the survivors' logs."""
    info = describe(quorum.servers)
    leader = next(p for p in quorum.voters if p.node_id == info.leader_id)
    wait_for(lambda: len(leader.committed()) >= 5, "records committed before the removal")
    meta = read_meta_properties(leader.data)
    assert meta is not None and meta.directory_id is not None
    result = cli(
        "metadata-quorum",
        "--bootstrap-controller",
        quorum.servers,
        "remove-controller",
        "--controller-id",
        str(leader.node_id),
        "--controller-directory-id",
        uuid_to_kafka(meta.directory_id),
        timeout_s=40,
    )
    assert result.returncode == 0, result.stderr
    assert f"Removed KRaft controller {leader.node_id}" in result.stdout

    survivors = [p for p in quorum.voters if p is not leader]
    rest = ",".join(p.address for p in survivors)
    expected = sorted(p.node_id for p in survivors)

    def new_quorum() -> QuorumInfo | None:
        info = describe(rest)
        voters = sorted(v.replica_id for v in info.voters)
        return info if info.leader_id in expected and voters == expected else None

    wait_for(new_quorum, "a new leader among the remaining voters")
    wait_for(
        lambda: any(o.replica_id == leader.node_id for o in describe(rest).observers),
        "the removed leader fetching as an observer",
    )
    assert sorted(v.replica_id for v in describe(rest).voters) == expected

    acknowledged = leader.committed()
    assert len(acknowledged) >= 5
    settled = new_quorum()
    assert settled is not None
    new_leader = next(p for p in survivors if p.node_id == settled.leader_id)
    seen = len(new_leader.committed())
    wait_for(lambda: len(new_leader.committed()) >= seen + 3, "commits by the new leader")
    for p in quorum.voters:
        assert p.stop() == 0
    for p in survivors:
        values = p.log_values()
        for offset, _epoch, value in acknowledged:
            assert values.get(offset) == value.encode(), (p.node_id, offset)
