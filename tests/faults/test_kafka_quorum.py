"""The monitor's reading of Apache Kafka's controllers (``faults/kafka_quorum.py``) from their
``quorum-state`` files: a follower's epoch and leader, its progress from the newest leader
answer. (The leader's DescribeQuorum path runs in ``bench/bench_faults.py`` against Kafka's
own controllers.)"""

from __future__ import annotations

import json
from pathlib import Path

from pykraft.faults.kafka_quorum import DERIVED, QuorumBoard, scrape_kafka_controller
from pykraft.storage import PARTITION_DIR_NAME


def quorum_state(data: Path, leader: int, epoch: int) -> None:
    directory = data / PARTITION_DIR_NAME
    directory.mkdir(parents=True, exist_ok=True)
    state = {
        "leaderId": leader,
        "leaderEpoch": epoch,
        "votedId": -1,
        "votedDirectoryId": "AAAAAAAAAAAAAAAAAAAAAA",
        "data_version": 1,
    }
    (directory / "quorum-state").write_text(json.dumps(state))


def test_a_follower_reports_its_leader_and_the_progress_the_leader_saw(tmp_path: Path) -> None:
    board = QuorumBoard(leader=1, epoch=4, high_watermark=120, log_end={2: 100, 3: 130})
    quorum_state(tmp_path / "n2", leader=1, epoch=4)
    quorum_state(tmp_path / "n3", leader=1, epoch=4)
    two = scrape_kafka_controller(2, "127.0.0.1:1", tmp_path / "n2", board)
    three = scrape_kafka_controller(3, "127.0.0.1:1", tmp_path / "n3", board)
    assert two == {
        "current_epoch": 4,
        "current_leader": 1,
        "high_watermark": 100,
        DERIVED: 1,  # the leader's view of node 2: not judged as its own high watermark
    }
    # Past the leader's high watermark: what is committed is what counts.
    assert three is not None and three["high_watermark"] == 120
    assert "state=leader" not in two


def test_no_quorum_state_yet_is_no_answer_and_a_self_named_leader_is_leader(
    tmp_path: Path,
) -> None:
    board = QuorumBoard()
    assert scrape_kafka_controller(1, "127.0.0.1:1", tmp_path / "none", board) is None
    quorum_state(tmp_path / "n1", leader=1, epoch=2)
    # Nobody listens at the address: no high watermark, but the file says leader.
    values = scrape_kafka_controller(1, "127.0.0.1:1", tmp_path / "n1", board)
    assert values == {"current_epoch": 2, "current_leader": 1, "state=leader": 1}
    assert board.leader == -1  # nothing answered, nothing recorded
