"""End to end: real ``pykraft server start`` processes on 127.0.0.1, formatted with
``pykraft storage format``, observed through DescribeQuorum (what an operator's tool asks)
and through their log lines, killed with SIGKILL."""

from __future__ import annotations

import asyncio
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pykraft.net.client import Connection
from pykraft.node.describe import describe_quorum_request
from pykraft.protocol import ErrorCode
from pykraft.records import decode_records, iter_batches

CLUSTER_ID = "X5SvYNT7TJu0jYq2_o3_vg"
STEP_TIMEOUT_S = 20
COMMITTED = re.compile(r"committed offset=(\d+) epoch=(\d+) value=(\S+)")


def free_ports(n: int) -> list[int]:
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pykraft.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT_S,
    )


@dataclass
class Node:
    node_id: int
    port: int
    config: Path
    data: Path
    output: Path
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.output.open("ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "pykraft.cli.main", "server", "start", str(self.config)],
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def committed(self) -> list[tuple[int, int, str]]:
        text = self.output.read_text()
        return [(int(o), int(e), v) for o, e, v in COMMITTED.findall(text)]

    def stop(self, signum: int = signal.SIGTERM) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signum)
        return self.process.wait(timeout=STEP_TIMEOUT_S)

    def log_values(self) -> dict[int, bytes | None]:
        """Every record of the on-disk log (read while the process is stopped)."""
        values: dict[int, bytes | None] = {}
        for segment in sorted((self.data / "__cluster_metadata-0").glob("*.log")):
            buf = segment.read_bytes()
            for header, pos in iter_batches(buf):
                if header.is_control:
                    continue
                for record in decode_records(buf[pos : pos + header.size]):
                    values[record.offset] = record.value
        return values


@pytest.fixture
def quorum(tmp_path: Path) -> Iterator[list[Node]]:
    ports = free_ports(3)
    voters = ",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(ports))
    nodes = []
    for i, port in enumerate(ports):
        node_id = i + 1
        config = tmp_path / f"n{node_id}.properties"
        data = tmp_path / f"data{node_id}"
        config.write_text(
            f"node.id={node_id}\n"
            "process.roles=controller\n"
            f"listeners=CONTROLLER://127.0.0.1:{port}\n"
            "controller.listener.names=CONTROLLER\n"
            f"metadata.log.dir={data}\n"
            f"controller.quorum.voters={voters}\n"
            "controller.quorum.election.timeout.ms=500\n"
            "controller.quorum.fetch.timeout.ms=1000\n"
            "controller.quorum.request.timeout.ms=1000\n"
            "controller.quorum.append.linger.ms=5\n"
            "pykraft.debug.append.interval.ms=50\n"
        )
        result = cli(
            "storage",
            "format",
            "--config",
            str(config),
            "--cluster-id",
            CLUSTER_ID,
            "--no-initial-controllers",
        )
        assert result.returncode == 0, result.stderr
        nodes.append(Node(node_id, port, config, data, tmp_path / f"n{node_id}.out"))
    try:
        yield nodes
    finally:
        for node in nodes:
            if node.process is not None and node.process.poll() is None:
                node.process.kill()
                node.process.wait()


async def describe(port: int) -> Any:
    conn = await Connection.open("127.0.0.1", port, timeout_ms=1000)
    try:
        request = describe_quorum_request()
        response: Any = await conn.request(request, timeout_ms=1000)
        return response.topics[0].partitions[0]
    finally:
        conn.close()
        await conn.wait_closed()


def find_leader(nodes: list[Node], *, not_id: int | None = None) -> tuple[Node, Any]:
    """Poll DescribeQuorum until a node answers as leader."""
    deadline = time.monotonic() + STEP_TIMEOUT_S
    while time.monotonic() < deadline:
        for node in nodes:
            if node.node_id == not_id:
                continue
            try:
                partition = asyncio.run(describe(node.port))
            except (OSError, TimeoutError):
                continue
            if partition.error_code == ErrorCode.none:
                return node, partition
        time.sleep(0.1)
    raise AssertionError("no leader elected in time")


def wait_for(predicate: Any, what: str) -> None:
    deadline = time.monotonic() + STEP_TIMEOUT_S
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.mark.slow
def test_three_voters_elect_and_survive_leader_kill(quorum: list[Node]) -> None:
    for node in quorum:
        node.start()
    leader, partition = find_leader(quorum)
    assert partition.leader_id == leader.node_id
    assert sorted(v.replica_id for v in partition.current_voters) == [1, 2, 3]
    wait_for(lambda: len(leader.committed()) >= 10, "ten commits by the first leader")

    # A follower answers DescribeQuorum with NOT_LEADER_OR_FOLLOWER and the leader it knows.
    follower = next(n for n in quorum if n is not leader)
    answer = asyncio.run(describe(follower.port))
    assert answer.error_code == ErrorCode.not_leader_or_follower
    assert answer.leader_id in (leader.node_id, -1)

    leader.stop(signal.SIGKILL)
    acknowledged = leader.committed()
    assert acknowledged
    survivors = [n for n in quorum if n is not leader]
    new_leader, new_partition = find_leader(survivors, not_id=leader.node_id)
    assert new_partition.leader_epoch > partition.leader_epoch
    wait_for(lambda: len(new_leader.committed()) >= 3, "commits by the new leader")

    for node in survivors:
        assert node.stop(signal.SIGTERM) == 0
    for node in survivors:
        values = node.log_values()
        for offset, _epoch, value in acknowledged:
            assert values.get(offset) == value.encode(), (node.node_id, offset)


def test_bad_config_is_one_line_naming_the_key(tmp_path: Path) -> None:
    config = tmp_path / "bad.properties"
    config.write_text(
        "node.id=1\nprocess.roles=controller\nlisteners=CONTROLLER://127.0.0.1:0\n"
        "controller.listener.names=CONTROLLER\nmetadata.log.dir=/nonexistent\n"
        "controller.quorum.voters=1@127.0.0.1:x\n"
    )
    result = cli("server", "start", str(config))
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "controller.quorum.voters" in lines[0]


def test_unformatted_directory_refuses_to_start(tmp_path: Path) -> None:
    config = tmp_path / "n.properties"
    config.write_text(
        "node.id=1\nprocess.roles=controller\nlisteners=CONTROLLER://127.0.0.1:0\n"
        f"controller.listener.names=CONTROLLER\nmetadata.log.dir={tmp_path / 'data'}\n"
        "controller.quorum.voters=1@127.0.0.1:9093\n"
    )
    result = cli("server", "start", str(config))
    assert result.returncode == 1
    assert "not formatted" in result.stderr


def test_sigterm_on_single_voter_exits_cleanly(tmp_path: Path) -> None:
    (port,) = free_ports(1)
    config = tmp_path / "n.properties"
    config.write_text(
        "node.id=1\nprocess.roles=controller\n"
        f"listeners=CONTROLLER://127.0.0.1:{port}\n"
        f"controller.listener.names=CONTROLLER\nmetadata.log.dir={tmp_path / 'data'}\n"
        f"controller.quorum.voters=1@127.0.0.1:{port}\n"
        "pykraft.debug.append.interval.ms=20\n"
    )
    result = cli("storage", "format", "--config", str(config), "--cluster-id", CLUSTER_ID, "-N")
    assert result.returncode == 0, result.stderr
    node = Node(1, port, config, tmp_path / "data", tmp_path / "n.out")
    node.start()
    wait_for(lambda: len(node.committed()) >= 3, "a single voter commits")
    assert node.stop(signal.SIGTERM) == 0
    committed = node.committed()
    values = node.log_values()
    for offset, _epoch, value in committed:
        assert values.get(offset) == value.encode()
    assert "role transition" in node.output.read_text()
