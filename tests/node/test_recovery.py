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
from pathlib import Path

import pytest

from ..interop.mixed import committed_batches
from .procs import Proc, cli, fmt, wait_for
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
