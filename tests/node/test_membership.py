"""KIP-853 end to end with real processes, driven only through ``pykraft storage format``,
``pykraft server start`` and ``pykraft metadata-quorum`` (seed 003's operator scenarios)."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from pykraft.admin import AdminClient, QuorumInfo
from pykraft.storage import read_meta_properties, uuid_to_kafka

from .procs import CLUSTER_ID, Proc, cli, free_ports, make_config, wait_for

pytestmark = pytest.mark.slow


def describe(bootstrap: str) -> QuorumInfo:
    async def go() -> QuorumInfo:
        async with AdminClient(bootstrap, timeout_ms=10_000, request_timeout_ms=2_000) as admin:
            return await admin.describe_quorum()

    return asyncio.run(go())


def voter_keys(bootstrap: str) -> set[tuple[int, str]]:
    info = describe(bootstrap)
    return {
        (v.replica_id, uuid_to_kafka(v.directory_id) if v.directory_id else "null")
        for v in info.voters
    }


def directory(p: Proc) -> str:
    meta = read_meta_properties(p.data)
    assert meta is not None and meta.directory_id is not None
    return uuid_to_kafka(meta.directory_id)


def fmt(p: Proc, *mode: str) -> None:
    result = cli("storage", "format", "--config", str(p.config), "--cluster-id", CLUSTER_ID, *mode)
    assert result.returncode == 0, result.stderr


def quorum_cli(bootstrap: str, *args: str) -> str:
    result = cli("metadata-quorum", "--bootstrap-controller", bootstrap, *args, timeout_s=40)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture
def procs() -> Iterator[list[Proc]]:
    started: list[Proc] = []
    yield started
    for p in started:
        p.kill()


def test_standalone_then_auto_join_then_leader_removes_itself(
    tmp_path: Path, procs: list[Proc]
) -> None:
    ports = free_ports(3)
    bootstrap = f"controller.quorum.bootstrap.servers=127.0.0.1:{ports[0]}\n"
    nodes = [
        make_config(
            tmp_path,
            i + 1,
            ports[i],
            voters=None,
            extra=bootstrap + "controller.quorum.auto.join.enable=true\n",
        )
        for i in range(3)
    ]
    fmt(nodes[0], "--standalone")
    fmt(nodes[1], "--no-initial-controllers")
    fmt(nodes[2], "--no-initial-controllers")
    for p in nodes:
        p.start()
        procs.append(p)
    everyone = ",".join(p.address for p in nodes)
    expected = {(p.node_id, directory(p)) for p in nodes}
    wait_for(lambda: voter_keys(everyone) == expected, "all three controllers to be voters")
    assert "voter set node.id=1 voters=" in nodes[0].text()

    # The leader removes itself: it stays leader until the removal commits, then resigns.
    leader_id = describe(everyone).leader_id
    leader = nodes[leader_id - 1]
    out = quorum_cli(
        nodes[(leader_id) % 3].address,
        "remove-controller",
        "--controller-id",
        str(leader_id),
        "--controller-directory-id",
        directory(leader),
    )
    assert f"Removed KRaft controller {leader_id}" in out
    rest = ",".join(p.address for p in nodes if p is not leader)
    wait_for(
        lambda: (
            (info := describe(rest)).leader_id not in (-1, leader_id)
            and {v.replica_id for v in info.voters} == {p.node_id for p in nodes if p is not leader}
        ),
        "a new leader among the remaining voters",
    )


def test_disk_failure_recovery(tmp_path: Path, procs: list[Proc]) -> None:
    """Seed 003: replica 3's disk is replaced; (3, UUID3) is removed, then (3, UUID3')
    added -- a replica id may appear once in the voter set (DUPLICATE_VOTER)."""
    ports = free_ports(3)
    servers = ",".join(f"127.0.0.1:{p}" for p in ports)
    nodes = [
        make_config(
            tmp_path,
            i + 1,
            ports[i],
            voters=None,
            extra=f"controller.quorum.bootstrap.servers={servers}\n",
        )
        for i in range(3)
    ]
    ids = [cli("storage", "random-uuid").stdout.strip() for _ in nodes]
    initial = ",".join(
        f"{p.node_id}@127.0.0.1:{p.port}:{d}" for p, d in zip(nodes, ids, strict=True)
    )
    for p in nodes:
        fmt(p, "--initial-controllers", initial)
        p.start()
        procs.append(p)
    wait_for(lambda: voter_keys(servers) == {(p.node_id, directory(p)) for p in nodes}, "voters")

    # Disk failure on 3: a new, empty directory with a new directory id.
    failed = nodes[2]
    old_directory = directory(failed)
    failed.stop()
    shutil.rmtree(failed.data)
    fmt(failed, "--no-initial-controllers")
    new_directory = directory(failed)
    assert new_directory != old_directory
    failed.start()
    wait_for(
        lambda: any(o.replica_id == 3 for o in describe(servers).observers),
        "replica 3 fetching as an observer",
    )

    quorum_cli(
        servers,
        "remove-controller",
        "--controller-id",
        "3",
        "--controller-directory-id",
        old_directory,
    )
    assert voter_keys(servers) == {(1, directory(nodes[0])), (2, directory(nodes[1]))}
    out = quorum_cli(servers, "add-controller", "--command-config", str(failed.config))
    assert "Added controller 3" in out
    wait_for(
        lambda: (
            voter_keys(servers)
            == {(1, directory(nodes[0])), (2, directory(nodes[1])), (3, new_directory)}
        ),
        "(3, UUID3') in the voter set",
    )
