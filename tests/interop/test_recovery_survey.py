"""``pykraft metadata-recovery survey`` on the directories of a quorum of one pykraft and two
Apache Kafka 4.4.0 controllers (issue 48 item 1): one Kafka controller is killed and the other
two go on writing (the leader's NoOpRecords), then all stop. The survey reads Kafka's own
directories as it reads pykraft's (meta.properties, quorum-state, segments, the VotersRecord
with each voter's directory id), names a seed among the two that went on -- never the one
killed early -- and changes no file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pykraft.interop.kafka import KafkaDist

from ..node.procs import CLUSTER_ID, cli
from ..storage.test_survey import digest
from .mixed import MixedQuorum

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
