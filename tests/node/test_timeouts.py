"""Short quorum timeouts without spurious elections (issue 13's defect): three voters with
``controller.quorum.fetch.timeout.ms=300`` and ``controller.quorum.election.timeout.ms=150``
keep their first epoch while idle for 10 s (33 fetch timeouts), and when a follower is stopped for 3 s and
resumed (Pre-Vote keeps it from disturbing the leader). It used to go from epoch 1 to 19 in
6 s: the follower's long-poll Fetch (held 500 ms) outlived its 300 ms fetch timeout.

What is measured is the quorum's timers, not the disk: the logs are on tmpfs when the
machine has one (an fsync the shared CI disk holds for 300 ms freezes an idle leader's
NoOp append for longer than the followers' fetch timeout, as it would Kafka's), and the
module runs with the machine to itself (``alone``)."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .procs import Proc, cli, describe_quorum, fmt, free_ports, make_config, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.alone]
TMPFS = Path("/dev/shm")

SHORT = (
    "controller.quorum.fetch.timeout.ms=300\n"
    "controller.quorum.election.timeout.ms=150\n"
    "controller.quorum.request.timeout.ms=1000\n"
)


@pytest.fixture
def quorum(tmp_path: Path) -> Iterator[list[Proc]]:
    on_tmpfs = TMPFS.is_dir() and os.access(TMPFS, os.W_OK)
    root = Path(tempfile.mkdtemp(prefix="pykraft-timeouts-", dir=TMPFS)) if on_tmpfs else tmp_path
    try:
        yield from _quorum(root)
    finally:
        if on_tmpfs:
            for f in root.rglob("*.out"):  # the nodes' output stays with the test's files
                shutil.copy(f, tmp_path / f.name)
            shutil.rmtree(root, ignore_errors=True)


def _quorum(tmp_path: Path) -> Iterator[list[Proc]]:
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
    for p in nodes:  # make_config's FAST_QUORUM first; these later lines win
        p.config.write_text(p.config.read_text() + SHORT)
    dirs = [cli("storage", "random-uuid").stdout.strip() for _ in nodes]
    initial = ",".join(
        f"{p.node_id}@127.0.0.1:{p.port}:{d}" for p, d in zip(nodes, dirs, strict=True)
    )
    for p in nodes:
        fmt(p, "--initial-controllers", initial)
        p.start()
    try:
        yield nodes
    finally:
        for p in nodes:
            p.kill()


def epochs(nodes: list[Proc]) -> set[int]:
    return {e for p in nodes for *_, e in p.transitions()}


WHY = ("role transition", "timeout", "vote", "Vote", "held", "lag")


def why(nodes: list[Proc]) -> str:
    """Each node's lines about elections and stalls, for a failure's message."""
    return "\n".join(
        f"node {p.node_id}: {line}"
        for p in nodes
        for line in p.text().splitlines()
        if any(w in line for w in WHY)
    )[-6000:]


def test_idle_quorum_with_short_timeouts_keeps_its_epoch(quorum: list[Proc]) -> None:
    servers = ",".join(p.address for p in quorum)
    wait_for(lambda: describe_quorum(servers, timeout_ms=5_000).leader_id > 0, "a leader")
    first = describe_quorum(servers, timeout_ms=5_000)
    time.sleep(10)
    after = describe_quorum(servers, timeout_ms=5_000)
    assert (after.leader_id, after.leader_epoch) == (first.leader_id, first.leader_epoch), why(
        quorum
    )

    # A follower stopped for 3 s (ten fetch timeouts) and resumed changes nothing either.
    follower = next(p for p in quorum if p.node_id != first.leader_id)
    follower.send(signal.SIGSTOP)
    time.sleep(3)
    follower.send(signal.SIGCONT)
    time.sleep(3)
    resumed = describe_quorum(servers, timeout_ms=5_000)
    assert (resumed.leader_id, resumed.leader_epoch) == (first.leader_id, first.leader_epoch), why(
        quorum
    )
    assert max(epochs(quorum)) == first.leader_epoch, why(quorum)
