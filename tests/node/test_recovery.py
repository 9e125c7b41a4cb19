"""Issue 48 item 2 with real processes: a quorum of three pykraft controllers loses two for
good (SIGKILL, directories wiped) and is brought back from the survivor with
``pykraft metadata-recovery survey`` and ``force-standalone``: refused while the survivor
runs; then it leads alone in a higher epoch with every batch it held unchanged and committed,
grows back with ``add-controller``, and a former voter started with its old directory follows
it without becoming a voter again (no second quorum)."""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

import pytest

from pykraft.admin import AdminError

from ..interop.mixed import committed_batches
from .procs import Proc, cli, describe_quorum, fmt, free_ports, make_config, wait_for
from .test_membership import (
    describe,
    directory,
    procs,
    quorum_cli,
    status_voters,
    three_voters_and_a_spare,
)

__all__ = ["procs"]  # the fixture, shared with test_membership

pytestmark = pytest.mark.slow


def test_a_lost_majority_is_recovered_from_the_survivor(tmp_path: Path, procs: list[Proc]) -> None:
    nodes, servers = three_voters_and_a_spare(tmp_path, procs)
    survivor, former = nodes[0], nodes[1]
    old_epoch = describe(servers).leader_epoch

    for lost in nodes[1:3]:
        lost.kill()
    kept = tmp_path / "former-voter-2"  # node 2's disk, to bring back at the end
    shutil.copytree(former.data, kept)
    for lost in nodes[1:3]:
        shutil.rmtree(lost.data)

    refused = cli("metadata-recovery", "force-standalone", str(survivor.data))
    assert refused.returncode == 1 and "this seed itself accepts connections" in refused.stderr
    survivor.stop()

    surveyed = cli("metadata-recovery", "survey", "--json", str(survivor.data))
    report = json.loads(surveyed.stdout)
    assert report["seed"] == str(survivor.data), surveyed.stdout
    before = report["directories"][0]
    end = before["log_end_offset"]
    held = committed_batches(survivor.data, end)
    backup = tmp_path / "backup-1"
    done = cli(
        "metadata-recovery", "force-standalone", str(survivor.data), "--backup-dir", str(backup)
    )
    assert done.returncode == 0, done.stderr
    assert committed_batches(backup, end) == held  # the backup holds the directory as it was

    survivor.start()
    seed_dir = directory(survivor)
    wait_for(lambda: status_voters(str(survivor.address)) == {1: seed_dir}, "node 1 alone")
    info = describe(survivor.address)
    assert info.leader_id == 1 and info.leader_epoch > old_epoch
    wait_for(lambda: describe(survivor.address).high_watermark > end, "the old log committed")
    assert committed_batches(survivor.data, end) == held  # not one batch it held changed

    new = nodes[3]
    fmt(new, "--no-initial-controllers")
    new.start()
    procs.append(new)
    wait_for(
        lambda: any(o.replica_id == 4 for o in describe(survivor.address).observers),
        "node 4 fetching as an observer",
    )
    out = quorum_cli(survivor.address, "add-controller", "--command-config", str(new.config))
    assert "Added controller 4" in out
    expected = {1: seed_dir, 4: directory(new)}
    wait_for(lambda: status_voters(survivor.address) == expected, "voters 1 and 4")

    shutil.copytree(kept, former.data)  # node 2 comes back with its old disk
    former.start()
    wait_for(
        lambda: any(o.replica_id == 2 for o in describe(survivor.address).observers),
        "the former voter following the recovered quorum",
    )
    info = describe(survivor.address)
    assert info.leader_id == 1 and status_voters(survivor.address) == expected


def test_a_dynamic_quorum_is_restored_from_a_backup_onto_a_new_controller(
    tmp_path: Path, procs: list[Proc]
) -> None:
    """Issue 48 item 4 on a dynamic quorum (kraft.version 1): the backup of voter 1's
    directory, every controller then killed; a new controller (node 4, never a voter) restored
    from the backup leads alone, the only voter, in an epoch past everything the backup knew,
    and serves the metadata the backup held."""
    nodes, servers = three_voters_and_a_spare(tmp_path, procs)
    features = cli("features", "--bootstrap-controller", servers, "describe")
    assert features.returncode == 0, features.stderr
    backup = tmp_path / "backup"
    taken = cli("metadata", "backup", str(nodes[0].data), "--to", str(backup))
    assert taken.returncode == 0 and "backed up" in taken.stdout, taken.stderr
    old_epoch = describe(servers).leader_epoch
    for lost in nodes[:3]:
        lost.kill()

    new = nodes[3]
    restored = cli("metadata", "restore", str(backup), "-c", str(new.config))
    assert restored.returncode == 0, restored.stderr
    assert "kraft.version 1" in restored.stdout, restored.stdout
    new.start()
    procs.append(new)
    wait_for(lambda: status_voters(new.address) == {4: directory(new)}, "node 4 alone")
    info = describe(new.address)
    assert info.leader_id == 4 and info.leader_epoch > old_epoch + 1_000
    again = cli("features", "--bootstrap-controller", new.address, "describe")
    # The same features at the same levels; only their epoch (an offset) is the new log's.
    assert again.returncode == 0
    assert _levels(again.stdout) == _levels(features.stdout) and "metadata.version" in again.stdout


def _levels(described: str) -> list[str]:
    return [re.sub(r"\s+Epoch: \d+", "", line) for line in described.splitlines()]


def test_voters_whose_endpoints_changed_are_brought_back_by_rewriting_them(
    tmp_path: Path, procs: list[Proc]
) -> None:
    """KIP-1347's case: the three voters of a dynamic quorum come back on new addresses, so
    the endpoints their logs record reach nobody. ``rewrite-endpoints`` on the survey's seed
    writes the voter set with the new endpoints; started, the three form the quorum again:
    the same voters (ids and directory ids), the new endpoints, a higher epoch."""
    nodes, servers = three_voters_and_a_spare(tmp_path, procs)
    voters = status_voters(servers)
    old_epoch = describe(servers).leader_epoch
    for p in nodes[:3]:
        p.stop()
    moved = free_ports(3)
    old_servers = servers
    servers = ",".join(f"127.0.0.1:{port}" for port in moved)
    for p, port in zip(nodes[:3], moved, strict=True):
        text = p.config.read_text().replace(f"127.0.0.1:{p.port}\n", f"127.0.0.1:{port}\n")
        p.config.write_text(text.replace(old_servers, servers))
        p.port = port

    # As they are, the three cannot elect anyone: their logs name the old endpoints.
    for p in nodes[:3]:
        p.start()
    time.sleep(6)
    with pytest.raises(AdminError, match="NOT_LEADER_OR_FOLLOWER"):
        describe_quorum(servers, timeout_ms=3_000)
    for p in nodes[:3]:
        p.stop()

    surveyed = cli("metadata-recovery", "survey", "--json", *(str(p.data) for p in nodes[:3]))
    seed = json.loads(surveyed.stdout)["seed"]
    others = [str(p.data) for p in nodes[:3] if str(p.data) != seed]
    endpoints = [f"--endpoint={p.node_id}=CONTROLLER://127.0.0.1:{p.port}" for p in nodes[:3]]
    done = cli(
        "metadata-recovery", "rewrite-endpoints", seed, *endpoints,
        *(f"--survivor={d}" for d in others),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    for p in nodes[:3]:
        p.start()
    wait_for(lambda: status_voters(servers) == voters, "the same three voters again")
    info = describe(servers)
    assert info.leader_epoch > old_epoch
    assert {i: [e.port for e in info.nodes[i]] for i in info.nodes} == {
        p.node_id: [p.port] for p in nodes[:3]
    }


def test_the_static_to_dynamic_order_that_would_loop_is_refused(
    tmp_path: Path, procs: list[Proc]
) -> None:
    """Issue 48 item 3, the conversion's order: a static controller (kraft.version 0) whose
    config is switched to bootstrap servers before kraft.version is upgraded would know no
    voter (Kafka's loop ``UnattachedState, voters=[]``). ``pykraft storage preflight`` refuses
    that config and the server refuses to start with it, saying what to do; in the right order
    (upgrade with the static voters in place, then switch) both accept it and the controller
    leads its dynamic quorum."""
    (port,) = free_ports(1)
    static = f"controller.quorum.voters=1@127.0.0.1:{port}\n"
    dynamic = f"controller.quorum.bootstrap.servers=127.0.0.1:{port}\n"
    node = make_config(tmp_path, 1, port, voters=None, extra=static)
    fmt(node)
    node.start()
    procs.append(node)
    wait_for(lambda: describe(node.address).leader_id == 1, "the static controller leading")
    node.stop()

    node.config.write_text(node.config.read_text().replace(static, dynamic))
    checked = cli("storage", "preflight", "-c", str(node.config))
    assert checked.returncode == 1 and "refused: this quorum is static" in checked.stdout
    seen = len(node.text())
    node.start()
    assert node.process is not None and node.process.wait(timeout=60) != 0
    assert "controller.quorum.voters is not set" in node.text()[seen:]

    node.config.write_text(node.config.read_text().replace(dynamic, static))
    node.start()
    wait_for(lambda: describe(node.address).leader_id == 1, "the static controller again")
    upgraded = cli(
        "features", "--bootstrap-controller", node.address, "upgrade", "--feature",
        "kraft.version=1",
    )  # fmt: skip
    assert upgraded.returncode == 0, upgraded.stderr
    node.stop()
    node.config.write_text(node.config.read_text().replace(static, dynamic))
    checked = cli("storage", "preflight", "-c", str(node.config))
    assert checked.returncode == 0 and "kraft.version 1" in checked.stdout, checked.stdout
    node.start()
    wait_for(lambda: set(status_voters(node.address)) == {1}, "node 1 leading, dynamic")
