"""``pykraft metadata-quorum describe`` output (Kafka 4.3's layout) from a fixed QuorumInfo.
``tests/interop/test_metadata_quorum_tool.py`` compares it with Kafka's own tool."""

from __future__ import annotations

import uuid

from pykraft.admin import QuorumInfo, RaftVoterEndpoint, ReplicaState
from pykraft.cli.metadata_quorum import replication_lines, status_lines
from pykraft.storage import uuid_to_kafka

D1, D2, D3, D9 = (uuid.UUID(int=i) for i in (11, 22, 33, 99))
INFO = QuorumInfo(
    leader_id=2,
    leader_epoch=7,
    high_watermark=120,
    voters=(
        ReplicaState(1, D1, 100, 1_000, 900),
        ReplicaState(2, D2, 125, 1_050, 1_050),
        ReplicaState(3, None, 125, 1_040, 1_040),
    ),
    observers=(ReplicaState(9, D9, 80, 1_010, -1),),
    nodes={
        1: (RaftVoterEndpoint("CONTROLLER", "h1", 9093),),
        2: (RaftVoterEndpoint("CONTROLLER", "h2", 9093),),
        3: (RaftVoterEndpoint("CONTROLLER", "::1", 9093),),
    },
)


def test_status_lines() -> None:
    assert status_lines("CID", INFO) == [
        "ClusterId:              CID",
        "LeaderId:               2",
        "LeaderEpoch:            7",
        "HighWatermark:          120",
        "MaxFollowerLag:         25",
        "MaxFollowerLagTimeMs:   150",
        "CurrentVoters:          ["
        f'{{"id": 1, "directoryId": "{uuid_to_kafka(D1)}", "endpoints": ["CONTROLLER://h1:9093"]}}, '
        f'{{"id": 2, "directoryId": "{uuid_to_kafka(D2)}", "endpoints": ["CONTROLLER://h2:9093"]}}, '
        '{"id": 3, "endpoints": ["CONTROLLER://[::1]:9093"]}]',
        f'CurrentObservers:       [{{"id": 9, "directoryId": "{uuid_to_kafka(D9)}"}}]',
    ]


def test_status_of_a_lone_leader_has_no_lag() -> None:
    lone = QuorumInfo(2, 1, 5, (ReplicaState(2, D2, 5, 10, 10),), (), {})
    lines = status_lines("CID", lone)
    assert lines[4:6] == ["MaxFollowerLag:         0", "MaxFollowerLagTimeMs:   0"]


def test_replication_table() -> None:
    lines = replication_lines(INFO, human_readable=False, now_ms=2_000)
    assert [line.split() for line in lines] == [
        [
            "NodeId",
            "DirectoryId",
            "LogEndOffset",
            "Lag",
            "LastFetchTimestamp",
            "LastCaughtUpTimestamp",
            "Status",
        ],
        ["2", uuid_to_kafka(D2), "125", "0", "1050", "1050", "Leader"],
        ["1", uuid_to_kafka(D1), "100", "25", "1000", "900", "Follower"],
        ["3", "AAAAAAAAAAAAAAAAAAAAAA", "125", "0", "1040", "1040", "Follower"],
        ["9", uuid_to_kafka(D9), "80", "45", "1010", "-1", "Observer"],
    ]
    # Kafka's prettyPrintTable: each cell padded to its column's width, then a tab.
    starts = [lines[0].index(h) for h in ("DirectoryId", "LogEndOffset", "Status")]
    for line in lines:
        assert line.endswith("\t")
        assert all(line[s - 1] == "\t" and line[s] != " " for s in starts)


def test_replication_human_readable() -> None:
    lines = replication_lines(INFO, human_readable=True, now_ms=2_000)
    assert "950 ms ago" in lines[1] and "1100 ms ago" in lines[2]
    assert lines[4].split()[-2:] == ["-1", "Observer"]
