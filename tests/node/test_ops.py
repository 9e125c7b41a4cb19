"""Operations surface end to end, on one 3-voter quorum of real processes (module fixture):
the Prometheus endpoint, ``pykraft metadata-quorum describe``, the admin client following
NOT_LEADER_OR_FOLLOWER, kafka-python's ``describe_metadata_quorum``, and Pre-Vote over the
real network (a follower SIGSTOPped past its fetch timeout changes no epoch). The SIGSTOP
test runs last: it is the only one that perturbs the quorum."""

from __future__ import annotations

import math
import re
import signal
import time
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from pykraft.admin import QuorumInfo
from pykraft.cli.metadata_quorum import STATUS_KEY_WIDTH
from pykraft.storage import read_meta_properties, uuid_to_kafka

from .procs import CLUSTER_ID, Proc, cli, describe_quorum, fmt, free_ports, make_config, wait_for

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def quorum(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Proc]]:
    tmp = tmp_path_factory.mktemp("ops")
    ports = free_ports(6)
    voters = ",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(ports[:3]))
    procs = [
        make_config(
            tmp,
            i + 1,
            ports[i],
            voters=voters,
            metrics_port=ports[3 + i],
            extra="pykraft.debug.append.interval.ms=50\n",
        )
        for i in range(3)
    ]
    for p in procs:
        fmt(p, "-N")
    for p in procs:
        p.start()
    try:
        yield procs
    finally:
        for p in procs:
            p.kill()


def describe(bootstrap: str) -> QuorumInfo:
    return describe_quorum(bootstrap, timeout_ms=15_000)


def leader_of(quorum: list[Proc]) -> tuple[Proc, QuorumInfo]:
    """Ask through a single (possibly follower) address: the client follows the redirect."""
    info = describe(quorum[0].address)
    assert info.leader_id > 0
    wait_for(lambda: describe(quorum[0].address).high_watermark > 5, "commits")
    return next(p for p in quorum if p.node_id == info.leader_id), describe(quorum[2].address)


def test_admin_client_follows_the_leader(quorum: list[Proc]) -> None:
    leader, _ = leader_of(quorum)
    follower = next(p for p in quorum if p is not leader)
    info = describe(follower.address)  # NOT_LEADER_OR_FOLLOWER, then the leader answers
    assert sorted(v.replica_id for v in info.voters) == [1, 2, 3]
    assert info.leader is not None and info.leader.replica_id == leader.node_id
    assert info.leader_epoch >= 1
    # v2 reports directory ids and the voters' endpoints.
    meta = read_meta_properties(leader.data)
    assert meta is not None
    assert info.leader.directory_id == meta.directory_id
    assert {n: [str(e) for e in eps] for n, eps in info.nodes.items()} == {
        p.node_id: [f"CONTROLLER://127.0.0.1:{p.port}"] for p in quorum
    }


def test_metrics_endpoint(quorum: list[Proc]) -> None:
    leader, _ = leader_of(quorum)
    wait_for(
        lambda: leader.scrape()["kafka_server_raftmetrics_commit_latency_avg"] >= 0, "a commit"
    )
    m = leader.scrape()
    # Kafka's exporter convention: one current_state series, labelled with the state.
    states = [k for k in m if k.startswith("kafka_server_raftmetrics_current_state")]
    assert states == ["kafka_server_raftmetrics_current_state{current_state=leader}"], states
    assert m[states[0]] == 1
    assert m["kafka_server_raftmetrics_number_unknown_voter_connections"] == 0
    assert (
        m["kafka_server_metadataloader_finalizedlevel{featureName=metadataVersion}"]
        == (m["kafka_server_metadataloader_currentmetadataversion"])
    )
    assert m["kafka_server_metadataloader_currentcontrollerid"] == leader.node_id
    assert m["kafka_server_raftmetrics_current_leader"] == leader.node_id
    assert m["kafka_server_raftmetrics_current_epoch"] >= 1
    assert m["kafka_server_raftmetrics_number_of_voters"] == 3
    assert m["pykraft_raft_number_of_offline_voters"] == 0
    assert "kafka_server_raftmetrics_duplicate_voter_ids" not in m  # see node/metrics.py
    assert m["kafka_server_raftmetrics_uncommitted_voter_change"] == 0
    assert m["pykraft_raft_pending_add_voter"] == 0
    assert m["pykraft_raft_pending_remove_voter"] == 0
    assert m["pykraft_raft_is_observer"] == 0
    # Static voters at kraft.version 0: the setting is in use.
    assert m["kafka_controller_kafkacontroller_ignoredstaticvoters"] == 0
    assert (
        m["kafka_server_raftmetrics_log_end_epoch"] == m["kafka_server_raftmetrics_current_epoch"]
    )
    # The loop-lag sampler runs (node/loop_lag.py): the window's longest is the longest ever
    # at most.
    assert 0 <= m["pykraft_event_loop_lag_max_ms"] <= m["pykraft_event_loop_lag_max_ever_ms"]
    # What the node held of it is no more than the lag (the wait for a core taken out).
    assert 0 <= m["pykraft_event_loop_held_max_ms"] <= m["pykraft_event_loop_held_max_ever_ms"]
    assert m["pykraft_event_loop_held_max_ever_ms"] <= m["pykraft_event_loop_lag_max_ever_ms"]
    # The controller froze its image out of full collections once it had replayed the log
    # (these controllers start without a snapshot, so only the catch-up does it).
    caught_up = re.search(
        r"metadata image caught up position=\d+; frozen out of full collections", leader.text()
    )
    assert caught_up is not None, leader.text()[-2000:]
    assert m["pykraft_gc_image_frozen"] == 1
    assert (
        0
        < m["kafka_server_raftmetrics_high_watermark"]
        <= m["kafka_server_raftmetrics_log_end_offset"]
    )
    assert m["pykraft_raft_append_records_total"] > 0
    assert m["kafka_server_raftmetrics_append_records_rate"] > 0
    assert (
        0
        <= m["kafka_server_raftmetrics_commit_latency_avg"]
        <= m["kafka_server_raftmetrics_commit_latency_max_total"]
    )
    for follower in (p for p in quorum if p is not leader):
        wait_for(lambda f=follower: f.scrape()["pykraft_raft_fetch_records_total"] > 0, "fetches")
        f = follower.scrape()
        assert f["kafka_server_raftmetrics_current_state{current_state=follower}"] == 1
        assert f["kafka_server_raftmetrics_current_leader"] == leader.node_id
        assert f["kafka_server_raftmetrics_fetch_records_rate"] > 0
        # Election latency is recorded by whoever took part in an election; NaN otherwise.
        latency = f["kafka_server_raftmetrics_election_latency_max_total"]
        assert math.isnan(latency) or latency >= 0


def test_metadata_quorum_describe(quorum: list[Proc]) -> None:
    leader, info = leader_of(quorum)
    bootstrap = ",".join(p.address for p in quorum)
    result = cli("metadata-quorum", "--bootstrap-controller", bootstrap, "describe", "--status")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    keys = [line.split(":", 1)[0] for line in lines]
    assert keys == [
        "ClusterId",
        "LeaderId",
        "LeaderEpoch",
        "HighWatermark",
        "MaxFollowerLag",
        "MaxFollowerLagTimeMs",
        "CurrentVoters",
        "CurrentObservers",
    ]
    width = STATUS_KEY_WIDTH  # values start right after the padded key, as Kafka's tool
    assert all(line[width] != " " and line[width - 1] == " " for line in lines)
    status = {k: line[width:] for k, line in zip(keys, lines, strict=True)}
    assert status["ClusterId"] == CLUSTER_ID
    assert int(status["LeaderId"]) == leader.node_id
    assert int(status["HighWatermark"]) >= info.high_watermark
    # The leader's log end offset minus the slowest voter's: no more than the leader holds.
    _, after = leader_of(quorum)
    assert after.leader is not None
    assert 0 <= int(status["MaxFollowerLag"]) <= after.leader.log_end_offset
    assert int(status["MaxFollowerLagTimeMs"]) >= 0
    for p in quorum:
        meta = read_meta_properties(p.data)
        assert meta is not None
        # Static voters (kraft.version 0): the leader may not know a voter's directory id
        # (Kafka's tool leaves the key out then), else it is the one in meta.properties.
        assert any(
            f'{{"id": {p.node_id}{directory}, '
            f'"endpoints": ["CONTROLLER://127.0.0.1:{p.port}"]}}' in status["CurrentVoters"]
            for directory in (f', "directoryId": "{uuid_to_kafka(meta.directory_id)}"', "")
        ), status["CurrentVoters"]
    assert status["CurrentObservers"] == "[]"

    result = cli(
        "metadata-quorum",
        "--bootstrap-controller",
        quorum[1].address,
        "describe",
        "--replication",
        "--human-readable",
    )
    assert result.returncode == 0, result.stderr
    header, *rows = result.stdout.splitlines()
    assert header.split() == [
        "NodeId",
        "DirectoryId",
        "LogEndOffset",
        "Lag",
        "LastFetchTimestamp",
        "LastCaughtUpTimestamp",
        "Status",
    ]
    assert len(rows) == 3
    assert rows[0].split()[0] == str(leader.node_id) and rows[0].split()[-1] == "Leader"
    assert [r.split()[-1] for r in rows[1:]] == ["Follower", "Follower"]
    assert all(re.search(r"\d+ ms ago\s+\d+ ms ago", r) for r in rows)

    result = cli(
        "metadata-quorum", "--bootstrap-server", quorum[2].address, "describe", "--replication"
    )
    assert result.returncode == 0, result.stderr
    assert all(re.search(r"\s\d{13}\s+\d{13}\s", r) for r in result.stdout.splitlines()[1:])


def test_kafka_python_describe_metadata_quorum(quorum: list[Proc]) -> None:
    leader, _ = leader_of(quorum)
    follower = next(p for p in quorum if p is not leader)
    with warnings.catch_warnings():
        # kafka-python 3.0.12 loads its message schemas with importlib.resources.read_text /
        # open_text, deprecated on Python 3.11 (also from its IO thread); pytest runs with
        # warnings as errors.
        warnings.filterwarnings(
            "ignore", message=r"(read|open)_text is deprecated", category=DeprecationWarning
        )
        from kafka import KafkaAdminClient

        # Bootstrapped from a follower: Metadata names the active controller only, so the
        # client's "any broker" for DescribeQuorum is the leader.
        admin: Any = KafkaAdminClient(
            bootstrap_servers=follower.address,
            request_timeout_ms=5_000,
            bootstrap_timeout_ms=10_000,
        )
        try:
            result = admin.describe_metadata_quorum()
        finally:
            admin.close()
    (topic,) = result["topics"]
    assert topic["topic_name"] == "__cluster_metadata"
    (partition,) = topic["partitions"]
    assert partition["error"] is None
    assert partition["leader_id"] == leader.node_id
    assert sorted(v["replica_id"] for v in partition["current_voters"]) == [1, 2, 3]
    assert partition["high_watermark"] > 0
    assert {n["node_id"] for n in result["nodes"]} == {1, 2, 3}


def test_health_of_a_working_quorum(quorum: list[Proc]) -> None:
    """Issue 47 item 3: every node live and ready; restarting any one of three caught-up
    voters keeps a caught-up majority; the answers say who leads and why."""
    leader, info = leader_of(quorum)
    for p in quorum:
        status, live = p.health("live")
        assert status == 200 and live["status"] == "UP" and live["node_id"] == p.node_id, live
        assert len(str(live["incarnation"])) == 32, live  # this process's id (a roll reads it)
        wait_for(lambda p=p: p.health("ready")[0] == 200, f"node {p.node_id} ready", 20)
        status, ready = p.health("ready")
        assert ready["leader_id"] == leader.node_id and ready["epoch"] == info.leader_epoch
        assert ready["state"] == ("leader" if p is leader else "follower")
        status, safe = p.health("safe-to-restart")
        assert status == 200, safe
        assert safe["caught_up"] == [1, 2, 3] and safe["leader_id"] == leader.node_id
    endpoints = ",".join(f"127.0.0.1:{p.metrics_port}" for p in quorum)
    shown = cli("cluster", "health", "--endpoints", endpoints)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    lines = shown.stdout.splitlines()
    assert len(lines) == 3, lines
    for p, line in zip(quorum, lines, strict=True):
        assert line.startswith(f"node {p.node_id} "), line
        assert "live UP  ready UP  safe-to-restart UP" in line, line


def test_sigstop_follower_past_fetch_timeout_changes_no_epoch(quorum: list[Proc]) -> None:
    """Pre-Vote over the real network (SPEC C6): the stopped follower times out, becomes
    Prospective on SIGCONT, is refused pre-votes by voters that still hear the leader, and
    goes back to following; no epoch moves anywhere."""
    leader, info = leader_of(quorum)
    follower = next(p for p in quorum if p is not leader)
    epochs = {p.node_id: p.scrape()["kafka_server_raftmetrics_current_epoch"] for p in quorum}
    assert set(epochs.values()) == {info.leader_epoch}
    seen = len(follower.transitions())
    follower.send(signal.SIGSTOP)
    try:
        time.sleep(2.5)  # > controller.quorum.fetch.timeout.ms (1000) and its check-quorum
    finally:
        follower.send(signal.SIGCONT)
    # After SIGCONT the overdue fetch timer fires: Prospective, pre-vote lost, Follower.
    wait_for(
        lambda: any(t[1] == "prospective" for t in follower.transitions()[seen:]),
        "the resumed follower's pre-vote",
        timeout_s=10,
    )
    wait_for(
        lambda: (
            follower.scrape().get("kafka_server_raftmetrics_current_state{current_state=follower}")
            == 1
        ),
        "the follower to follow again",
        timeout_s=10,
    )
    time.sleep(1.0)
    assert {
        p.node_id: p.scrape()["kafka_server_raftmetrics_current_epoch"] for p in quorum
    } == epochs
    assert all(
        t[2] == info.leader_epoch for p in quorum for t in p.transitions()[-3:] if p is follower
    )
    assert describe(leader.address).leader_id == leader.node_id


def test_health_tells_a_lost_majority(quorum: list[Proc]) -> None:
    """Issue 47 item 3: with one of three voters stopped, restarting either of the others
    would lose the caught-up majority (safe-to-restart refuses, saying so) while both stay
    ready; with two stopped, the survivor is no longer ready, with the reason, though its
    port still answers and it is live."""
    leader, _ = leader_of(quorum)
    followers = [p for p in quorum if p is not leader]
    first, second = followers
    first.send(signal.SIGSTOP)
    try:
        for p in (leader, second):
            wait_for(
                lambda p=p: p.health("safe-to-restart")[0] == 503,
                f"node {p.node_id}'s restart refused",
                20,
            )
            _, safe = p.health("safe-to-restart")
            assert safe["caught_up"] == sorted([leader.node_id, second.node_id]), safe
            assert safe["reasons"] == [
                f"restarting {p.node_id} leaves 1 caught-up voters "
                f"[{(leader if p is second else second).node_id}]; 2 of 3 are needed"
            ]
            assert p.health("ready")[0] == 200
        second.send(signal.SIGSTOP)
        try:
            wait_for(lambda: leader.health("ready")[0] == 503, "the survivor not ready", 20)
            _, ready = leader.health("ready")
            assert any(
                r.startswith(("last heard from a majority of the voters", "no known leader"))
                for r in ready["reasons"]
            ), ready
            assert leader.health("live")[0] == 200
            assert leader.health("safe-to-restart")[0] == 503
            shown = cli("cluster", "health", "--endpoints", f"127.0.0.1:{leader.metrics_port}")
            assert shown.returncode == 1 and "ready DOWN" in shown.stdout, shown.stdout
        finally:
            second.send(signal.SIGCONT)
    finally:
        first.send(signal.SIGCONT)
    for p in quorum:
        wait_for(lambda p=p: p.health("ready")[0] == 200, f"node {p.node_id} ready again", 30)
