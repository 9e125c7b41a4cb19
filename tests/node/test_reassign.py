"""KIP-642 from outside the process (SPEC E1-E4): AlterPartitionReassignments of
``__cluster_metadata`` partition 0 through ``pykraft metadata-quorum reassign`` moves a quorum
of real processes from voters (1, 2, 3) to (4, 5, 6) while a client appends; a cancel half way
goes back; ListPartitionReassignments shows the move; bad targets get
INVALID_REPLICA_ASSIGNMENT naming the id."""

from __future__ import annotations

import asyncio
import itertools
import re
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from pykraft.admin import AdminClient

from .procs import Proc, cli, describe_quorum, fmt, free_ports, make_config, wait_for

pytestmark = pytest.mark.slow

APPENDS = "pykraft.debug.append.interval.ms=50\n"


def quorum_cli(bootstrap: str, *args: str, timeout_s: float = 120) -> str:
    result = cli("metadata-quorum", "--bootstrap-controller", bootstrap, *args, timeout_s=timeout_s)
    assert result.returncode == 0, result.stderr
    return result.stdout


def voters(bootstrap: str) -> set[int]:
    return {v.replica_id for v in describe_quorum(bootstrap, timeout_ms=10_000).voters}


@pytest.fixture
def six(tmp_path: Path) -> Iterator[list[Proc]]:
    """Controllers 1-3 voters (``--initial-controllers``), 4-6 observers that registered
    with the leader (ControllerRegistration); all append through the debug appender while
    they lead."""
    ports = free_ports(6)
    servers = ",".join(f"127.0.0.1:{p}" for p in ports[:3])
    nodes = [
        make_config(
            tmp_path,
            i + 1,
            ports[i],
            voters=None,
            extra=f"controller.quorum.bootstrap.servers={servers}\n" + APPENDS,
        )
        for i in range(6)
    ]
    dirs = [cli("storage", "random-uuid").stdout.strip() for _ in range(3)]
    initial = ",".join(
        f"{p.node_id}@127.0.0.1:{p.port}:{d}" for p, d in zip(nodes, dirs, strict=False)
    )
    for p in nodes[:3]:
        fmt(p, "--initial-controllers", initial)
    for p in nodes[3:]:
        fmt(p, "--no-initial-controllers")
    for p in nodes:
        p.start()
    try:
        wait_for(
            lambda: (
                {o.replica_id for o in describe_quorum(servers, timeout_ms=10_000).observers}
                >= {4, 5, 6}
            ),
            "observers 4, 5, 6",
            timeout_s=60,
        )
        wait_for(
            lambda: all("registered with leader" in p.text() for p in nodes[3:]),
            "4, 5, 6 registered with the leader",
        )
        yield nodes
    finally:
        for p in nodes:
            p.kill()


VOTER_SET = re.compile(r"voter set node\.id=\d+ voters=(\S+)")


def voter_sets(p: Proc) -> list[set[int]]:
    """The voter sets ``p`` logged, in order, consecutive repeats dropped."""
    out: list[set[int]] = []
    for text in VOTER_SET.findall(p.text()):
        ids = {int(k.split(":")[0]) for k in text.split(",") if k}
        if not out or out[-1] != ids:
            out.append(ids)
    return out


def everyone(nodes: list[Proc]) -> str:
    return ",".join(p.address for p in nodes)


def test_reassign_to_new_voters_while_appending(six: list[Proc]) -> None:
    bootstrap = everyone(six)
    leader_before = describe_quorum(bootstrap, timeout_ms=10_000).leader_id

    out = quorum_cli(bootstrap, "reassign", "--voters", "4,5,6", "--wait")
    assert "accepted" in out and "Reassignment complete: voters" in out
    assert voters(bootstrap) == {4, 5, 6}
    assert "No reassignment" in quorum_cli(bootstrap, "reassign", "--describe")
    # E2/E4: the voter sets node 6 saw, in log order (it replicated every VotersRecord):
    # one change at a time, and the leader that started it removed after every other old
    # voter (it resigns then, and the next leader removes it).
    seen = voter_sets(six[5])
    assert seen[0] == {1, 2, 3} and seen[-1] == {4, 5, 6}, seen
    for a, b in itertools.pairwise(seen):
        assert len(a ^ b) == 1, seen
    last_old = [s & {1, 2, 3} for s in seen if s & {1, 2, 3}]
    assert last_old[-1] == {leader_before}, seen

    # Nothing acknowledged is lost: every record an old voter logged as committed is in the
    # new voters' logs at the same offset.
    acknowledged = [c for p in six[:3] for c in p.committed()]
    assert acknowledged
    new_leader = next(
        p for p in six if p.node_id == describe_quorum(bootstrap, timeout_ms=10_000).leader_id
    )
    seen = len(new_leader.committed())
    wait_for(lambda: len(new_leader.committed()) > seen + 3, "commits under the new voters")
    for p in six[3:]:
        assert p.stop() == 0
    for p in six[3:]:
        values = p.log_values()
        for offset, _epoch, value in acknowledged:
            assert values.get(offset) == value.encode(), (p.node_id, offset)


def test_cancel_half_way_goes_back(six: list[Proc]) -> None:
    """Node 6 is stopped (SIGSTOP) so that the move cannot finish: adding it waits for it to
    catch up. Cancelled half way, the voter set returns to (1, 2, 3)."""
    bootstrap = everyone(six)

    async def start_move() -> None:
        async with AdminClient(bootstrap, timeout_ms=10_000) as admin:
            await admin.describe_quorum()  # connected to the leader before node 6 stops
            six[5].send(signal.SIGSTOP)
            # At once, in process: the leader takes a target only while each new voter has
            # fetched within its fetch timeout (1 s here); a CLI process starts too slowly.
            await admin.reassign_voters([4, 5, 6])

    try:
        asyncio.run(start_move())
        wait_for(lambda: voters(bootstrap) & {4, 5}, "the first new voters", timeout_s=60)
        listing = quorum_cli(bootstrap, "reassign", "--describe")
        assert "Target voters:  4,5,6" in listing and re.search(r"Adding:\s+\S", listing), listing
        out = quorum_cli(bootstrap, "reassign", "--cancel", "--wait")
        assert "Reassignment complete: voters 1,2,3" in out or voters(bootstrap) == {1, 2, 3}, out
        wait_for(lambda: voters(bootstrap) == {1, 2, 3}, "back to voters 1, 2, 3", timeout_s=120)
    finally:
        six[5].send(signal.SIGCONT)


def test_bad_targets_are_refused_with_kafkas_errors(six: list[Proc]) -> None:
    bootstrap = everyone(six)
    for target, reason in (
        ("1,2,9", "replica 9 is neither a voter nor an observer"),
        ("4,4,5", "appears twice"),
    ):
        result = cli(
            "metadata-quorum", "--bootstrap-controller", bootstrap, "reassign", "--voters", target
        )
        assert result.returncode == 1
        assert "INVALID_REPLICA_ASSIGNMENT" in result.stderr.upper(), result.stderr
        assert reason in result.stderr, result.stderr
    result = cli("metadata-quorum", "--bootstrap-controller", bootstrap, "reassign", "--cancel")
    assert result.returncode == 1 and "NO_REASSIGNMENT_IN_PROGRESS" in result.stderr.upper()
    assert voters(bootstrap) == {1, 2, 3}
