"""End to end: real ``pykraft server start`` processes on 127.0.0.1, formatted with
``pykraft storage format``, observed through DescribeQuorum (what an operator's tool asks)
and through their log lines, killed with SIGKILL."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pykraft.admin.describe import describe_quorum_request
from pykraft.net.client import Connection
from pykraft.protocol import ErrorCode
from pykraft.spec import check_trace_files

from .procs import CLUSTER_ID, STEP_TIMEOUT_S, Proc, cli, free_ports, make_config, wait_for


@pytest.fixture
def quorum(tmp_path: Path) -> Iterator[list[Proc]]:
    ports = free_ports(3)
    voters = ",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(ports))
    nodes = [
        make_config(
            tmp_path,
            i + 1,
            port,
            voters=voters,
            extra="pykraft.debug.append.interval.ms=50\n"
            f"pykraft.spec.trace.file={tmp_path / f'spec-{i + 1}.jsonl'}\n",
        )
        for i, port in enumerate(ports)
    ]
    for node in nodes:
        result = cli(
            "storage",
            "format",
            "--config",
            str(node.config),
            "--cluster-id",
            CLUSTER_ID,
            "--no-initial-controllers",
        )
        assert result.returncode == 0, result.stderr
    try:
        yield nodes
    finally:
        for node in nodes:
            node.kill()


async def describe(port: int) -> Any:
    conn = await Connection.open("127.0.0.1", port, timeout_ms=1000)
    try:
        request = describe_quorum_request()
        response: Any = await conn.request(request, timeout_ms=1000)
        return response.topics[0].partitions[0]
    finally:
        conn.close()
        await conn.wait_closed()


def find_leader(nodes: list[Proc], *, not_id: int | None = None) -> tuple[Proc, Any]:
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


@pytest.mark.slow
def test_three_voters_elect_and_survive_leader_kill(quorum: list[Proc]) -> None:
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
    leader.start()  # back as a follower: it truncates what it alone held, then catches up
    trace = leader.config.parent / f"spec-{leader.node_id}.jsonl"
    wait_for(lambda: _hwm_since_restart(trace) > acknowledged[-1][0], "the old leader catches up")
    leader.stop(signal.SIGTERM)

    for node in survivors:
        assert node.stop(signal.SIGTERM) == 0
    for node in survivors:
        # Static voters (kraft.version 0): quorum-state in data_version 0, which a binary
        # from before KIP-853 can read (Kafka's rule, seed 003).
        state = json.loads((node.data / "__cluster_metadata-0" / "quorum-state").read_text())
        assert state["data_version"] == 0 and state["currentVoters"] == [
            {"voterId": 1},
            {"voterId": 2},
            {"voterId": 3},
        ]
        values = node.log_values()
        for offset, _epoch, value in acknowledged:
            assert values.get(offset) == value.encode(), (node.node_id, offset)
    _walk_spec_traces(sorted(quorum[0].config.parent.glob("spec-*.jsonl")))


def _hwm_since_restart(trace: Path) -> int:
    """The high watermark a node reached since its restart (its second start), by its spec
    trace; -1 before it."""
    hwm, starts = -1, 0
    for line in trace.read_text().splitlines():
        step = json.loads(line)
        starts += step["kind"] == "spec_start"
        hwm = -1 if step["kind"] == "spec_start" else step.get("hwm", hwm)
    return hwm if starts > 1 else -1


def _walk_spec_traces(paths: list[Path]) -> None:
    """Every node's ``pykraft.spec.trace.file``, merged by time, walked through the KRaft
    specification's rules (issue 49 item 2): a real run, two leaders, a SIGKILL and a restart,
    with no step the rules forbid."""
    steps, violation = check_trace_files(paths)
    assert violation is None, violation
    kinds = Counter(json.loads(line)["kind"] for p in paths for line in p.read_text().splitlines())
    assert kinds["spec_start"] == 4 and kinds["transition"] >= 6, kinds
    assert kinds["spec_append"] >= 20 and kinds["spec_hwm"] >= 20, kinds
    assert steps == sum(kinds.values())


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
    node = Proc(1, port, config, tmp_path / "data", tmp_path / "n.out")
    node.start()
    wait_for(lambda: len(node.committed()) >= 3, "a single voter commits")
    assert node.stop(signal.SIGTERM) == 0
    committed = node.committed()
    values = node.log_values()
    for offset, _epoch, value in committed:
        assert values.get(offset) == value.encode()
    assert "role transition" in node.output.read_text()
