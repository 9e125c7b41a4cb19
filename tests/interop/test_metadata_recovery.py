"""``pykraft metadata-recovery`` on the directories of Apache Kafka 4.4.0's own controllers
(issue 48 items 1 and 2).

* survey: a quorum of one pykraft and two Kafka controllers; one Kafka controller is killed and
  the other two go on writing (the leader's NoOpRecords), then all stop. The survey reads
  Kafka's directories as it reads pykraft's (meta.properties, quorum-state, segments, the
  VotersRecord with each voter's directory id), names a seed among the two that went on --
  never the one killed early -- and changes no file;
* force-standalone: three Kafka controllers, two lost; the survivor's directory made a quorum
  of one, which Kafka's controller then runs;
* a ghost: a stopped Kafka 4.3.1 controller's registration does not block raising
  metadata.version on pykraft's controllers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pykraft.interop.kafka import KafkaDist, write_properties

from ..node.procs import CLUSTER_ID, cli, fmt, free_ports, wait_for
from ..node.test_membership import describe, initial_controllers, without_static_voters
from ..storage.test_survey import digest
from .mixed import MixedQuorum, committed_batches

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]


def test_survey_reads_kafkas_directories_and_names_an_up_to_date_seed(
    kafka: KafkaDist, tmp_path: Path
) -> None:
    quorum = MixedQuorum(kafka, tmp_path, "pkk")
    try:
        quorum.start()
        info = quorum.caught_up()
        lagging = next(
            m for m in quorum.members.values() if m.kind == "kafka" and m.node_id != info.leader_id
        )
        lagging.kill()
        quorum.wait(
            lambda i: i.high_watermark > info.high_watermark + 5,
            "the two others committing without the killed one",
        )
        for member in quorum.members.values():
            member.stop()
    finally:
        quorum.close()
    members = sorted(quorum.members.values(), key=lambda m: m.node_id)
    before = {m.node_id: digest(m.data) for m in members}
    done = cli("metadata-recovery", "survey", "--json", *(str(m.data) for m in members))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    found = {d["node_id"]: d for d in report["directories"]}
    assert sorted(found) == [m.node_id for m in members]
    for m in members:
        d = found[m.node_id]
        assert d["cluster_id"] == CLUSTER_ID and d["directory_id"] == m.directory_id, d
        assert d["problems"] == [], d
        voters = {v["id"]: v["directory_id"] for v in d["voters"]}
        assert voters == {x.node_id: x.directory_id for x in members}, d
    assert report["seed"] != str(lagging.data)
    seed = next(d for d in report["directories"] if d["path"] == report["seed"])
    ranks = [(d["last_epoch"], d["log_end_offset"]) for d in report["directories"]]
    assert (seed["last_epoch"], seed["log_end_offset"]) == max(ranks)
    assert found[lagging.node_id]["log_end_offset"] < seed["log_end_offset"]
    assert {m.node_id: digest(m.data) for m in members} == before


def test_force_standalone_on_kafkas_own_controllers(kafka: KafkaDist, tmp_path: Path) -> None:
    """Three Kafka 4.4.0 controllers, two lost for good: pykraft's force-standalone on the
    survivor's directory, then Kafka's own controller starts from it and leads alone in a
    higher epoch, every batch it held unchanged and committed."""
    quorum = MixedQuorum(kafka, tmp_path, "kkk")
    try:
        quorum.start()
        old = quorum.caught_up()
        seed, *lost = sorted(quorum.members.values(), key=lambda m: m.node_id)
        for member in lost:
            member.kill()
            shutil.rmtree(member.data)
        seed.stop()
        surveyed = json.loads(cli("metadata-recovery", "survey", "--json", str(seed.data)).stdout)
        end = surveyed["directories"][0]["log_end_offset"]
        held = committed_batches(seed.data, end)
        done = cli("metadata-recovery", "force-standalone", str(seed.data))
        assert done.returncode == 0, done.stderr
        seed.start()
        info = quorum.wait(
            lambda i: i.leader_id == seed.node_id and i.high_watermark > end,
            "Kafka's controller leading alone past the old log",
        )
        assert [v.replica_id for v in info.voters] == [seed.node_id]
        assert info.leader_epoch > old.leader_epoch
        assert committed_batches(seed.data, end) == held
    finally:
        quorum.close()


def test_a_ghost_controller_does_not_block_an_upgrade(kafka431: KafkaDist, tmp_path: Path) -> None:
    """Issue 48 item 6: three pykraft controllers at 4.3-IV0; a Kafka 4.3.1 controller joins as
    an observer and registers (its metadata.version range ends below 4.4), so raising
    metadata.version to 4.4-IV2 is refused while it runs -- Kafka's rule, kept -- and it is
    then stopped for good. Kafka's controllers would refuse the upgrade forever (its way out,
    UnregisterController, needs 4.4-IV2); once the active controller has not seen it fetch
    (here after a failover), pykraft's lets the upgrade through."""
    ports = free_ports(4)
    servers = ",".join(f"127.0.0.1:{p}" for p in ports[:3])
    nodes = without_static_voters(
        tmp_path, ports, 3, f"controller.quorum.bootstrap.servers={servers}\n"
    )
    initial = initial_controllers(nodes)
    for p in nodes:
        fmt(p, "--initial-controllers", initial, "--release-version", "4.3-IV0")
    ghost_config = write_properties(
        tmp_path / "kafka4.properties",
        {
            "process.roles": "controller",
            "node.id": 4,
            "controller.listener.names": "CONTROLLER",
            "listeners": f"CONTROLLER://127.0.0.1:{ports[3]}",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
            "log.dirs": tmp_path / "kafka4",
            "controller.quorum.bootstrap.servers": servers,
        },
    )
    kafka431.format_storage(ghost_config, CLUSTER_ID, "--no-initial-controllers")
    upgrade = ("features", "--bootstrap-controller", servers, "upgrade", "--release-version")
    try:
        for p in nodes:
            p.start()
        wait_for(lambda: len(describe(servers).voters) == 3, "three voters")
        ghost = kafka431.start("server", str(ghost_config), log=tmp_path / "kafka4.log")
        refused = {"output": ""}

        def refused_for_controller_4() -> bool:
            done = cli(*upgrade, "4.4-IV2", "--dry-run")
            refused["output"] = done.stdout + done.stderr
            return done.returncode != 0 and "Controller 4" in refused["output"]

        wait_for(refused_for_controller_4, "the upgrade refused for the running controller 4")
        ghost.kill()
        leader = nodes[describe(servers).leader_id - 1]
        leader.stop()  # a failover: the next leader never sees controller 4 fetch
        leader.start()
        wait_for(lambda: describe(servers).leader_id > 0, "a leader again")
        done = cli(*upgrade, "4.4-IV2")
        assert done.returncode == 0, done.stdout + done.stderr
        described = cli("features", "--bootstrap-controller", servers, "describe").stdout
        assert "FinalizedVersionLevel: 4.4-IV2" in described, described
    finally:
        for p in nodes:
            p.kill()
