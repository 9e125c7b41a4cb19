"""pykraft and Apache Kafka controllers voting in one quorum (SPEC J3; B, C, D across
implementations), kraft.version 1, formatted with one ``--initial-controllers`` list:

* two pykraft + one Kafka, and one pykraft + two Kafka: the leader is killed (SIGKILL) again
  and again, so that leadership crosses between the implementations; afterwards every
  replica's committed prefix is identical byte for byte (offsets, epochs, CRCs, bytes);
* KIP-853 across implementations: Kafka's tool adds a pykraft controller to a Kafka quorum,
  pykraft's tool adds a Kafka controller to a pykraft quorum, and each is removed again;
* KIP-996 across implementations: a follower of either kind stopped past its fetch timeout
  and resumed changes no epoch.

A Kafka controller leads such a quorum as it leads its own: it writes its bootstrap metadata
records (metadata.version and the other features, in a metadata transaction) and NoOpRecords,
which pykraft replicates untouched.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pykraft.interop.kafka import KafkaDist, write_properties
from pykraft.interop.load import Load, assert_nothing_lost, consume_all

from ..node.procs import CLUSTER_ID, cli, free_ports
from .mixed import Member, MixedQuorum, committed_batches

pytestmark = [
    pytest.mark.slow,
    # kafka-python leaves the sockets of attempts to reach a killed node to the GC.
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

KILLS_MIN = 10
KILLS_MAX = 20
LEADS_PER_KIND = 2


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    return tmp_path


def _kill_leaders(quorum: MixedQuorum) -> list[tuple[int, str, int]]:
    """Kill the leader at least KILLS_MIN times (up to KILLS_MAX, until each kind has led
    LEADS_PER_KIND epochs); each time wait for a new leader in a higher epoch, restart the
    killed one and wait until it caught up. Returns (leader id, kind, epoch) per epoch."""
    led: list[tuple[int, str, int]] = []
    for kill in range(KILLS_MAX):
        info = quorum.caught_up()
        leader = quorum.members[info.leader_id]
        led.append((leader.node_id, leader.kind, info.leader_epoch))
        kinds = [kind for _, kind, _ in led]
        if kill >= KILLS_MIN and all(
            kinds.count(k) >= LEADS_PER_KIND for k in ("pykraft", "kafka")
        ):
            break
        leader.kill()
        quorum.wait(
            lambda i, old=info: (
                i.leader_id not in (-1, old.leader_id) and i.leader_epoch > old.leader_epoch
            ),
            f"a new leader after killing {leader.kind} {leader.node_id} (kill {kill})",
        )
        leader.start()
    return led


@pytest.mark.parametrize("kinds", ["ppk", "pkk"], ids=["2-pykraft-1-kafka", "1-pykraft-2-kafka"])
def test_leadership_crosses_implementations_and_the_committed_log_is_identical(
    kafka: KafkaDist, tmp: Path, kinds: str
) -> None:
    # The minority kind notices a dead leader last (a longer fetch timeout), so that it
    # often wins the next election and leadership keeps crossing over: under KIP-996 the
    # first survivor to time out asks for pre-votes while the other still trusts the old
    # leader and refuses; the second one, asking later, is granted them.
    slower = "controller.quorum.fetch.timeout.ms"
    quorum = MixedQuorum(
        kafka,
        tmp,
        kinds,
        kafka_overrides={slower: 1400} if kinds == "ppk" else {},
        pykraft_extra="" if kinds == "ppk" else f"{slower}=1400\n",
    )
    try:
        quorum.start()
        led = _kill_leaders(quorum)
        kinds_led = [kind for _, kind, _ in led]
        assert kinds_led.count("kafka") >= LEADS_PER_KIND, led
        assert kinds_led.count("pykraft") >= LEADS_PER_KIND, led
        epochs = [epoch for *_, epoch in led]
        assert epochs == sorted(set(epochs)), led  # one leader per epoch, epochs increase

        info = quorum.caught_up()
        for member in quorum.members.values():
            member.stop()
        high_watermark = info.high_watermark
        logs = {
            m.node_id: committed_batches(m.data, high_watermark) for m in quorum.members.values()
        }
        reference = logs[1]
        assert reference and reference[-1][0] < high_watermark
        # Dense offsets from 0 up to the high watermark, then identical on every replica.
        offsets = [base for base, *_ in reference]
        assert offsets[0] == 0 and offsets == sorted(offsets)
        for node_id, batches in logs.items():
            assert batches == reference, f"replica {node_id} differs"
        # Kafka-led epochs wrote metadata records (its bootstrap and NoOps) that pykraft kept.
        written_by = {epoch for _, epoch, _, _ in reference}
        assert any(kind == "kafka" and epoch in written_by for _, kind, epoch in led)
        # pykraft's side of the quorum, traced, follows the KRaft specification step by step
        # through every leader of either kind (issue 49 item 2).
        steps = quorum.walk_spec_traces()
        assert steps["spec_append"] > 0 and steps["spec_hwm"] > 0 and steps["transition"] > 0
    finally:
        quorum.close()


def _voters(quorum: MixedQuorum) -> set[int]:
    return {v.replica_id for v in quorum.describe().voters}


def test_kafkas_tool_adds_a_pykraft_controller_to_a_kafka_quorum(
    kafka: KafkaDist, tmp: Path
) -> None:
    quorum = MixedQuorum(kafka, tmp, "k", extra_ids=1)
    try:
        quorum.start()
        quorum.caught_up()
        joining = quorum.add_observer(2, "pykraft")
        joining.start()
        quorum.wait(lambda i: any(o.replica_id == 2 for o in i.observers), "pykraft 2 observing")
        out = kafka.run(
            "metadata-quorum",
            "--bootstrap-controller",
            quorum.bootstrap,
            "--command-config",
            str(joining.config),
            "add-controller",
        ).stdout
        assert f"Added controller 2 with directory id {joining.directory_id}" in out
        quorum.wait(lambda i: {v.replica_id for v in i.voters} == {1, 2}, "pykraft 2 a voter")
        quorum.caught_up()
        kafka.run(
            "metadata-quorum",
            "--bootstrap-controller",
            quorum.bootstrap,
            "remove-controller",
            "--controller-id",
            "2",
            "--controller-directory-id",
            joining.directory_id,
        )
        quorum.wait(lambda i: {v.replica_id for v in i.voters} == {1}, "pykraft 2 removed")
    finally:
        quorum.close()


def test_pykrafts_tool_adds_a_kafka_controller_to_a_pykraft_quorum(
    kafka: KafkaDist, tmp: Path
) -> None:
    quorum = MixedQuorum(kafka, tmp, "p", extra_ids=1)
    try:
        quorum.start()
        quorum.caught_up()
        joining = quorum.add_observer(2, "kafka")
        joining.start()
        quorum.wait(lambda i: any(o.replica_id == 2 for o in i.observers), "Kafka 2 observing")
        result = cli(
            "metadata-quorum",
            "--bootstrap-controller",
            quorum.bootstrap,
            "add-controller",
            "--command-config",
            str(joining.config),
            timeout_s=60,
        )
        assert result.returncode == 0, result.stderr
        assert "Added controller 2" in result.stdout
        quorum.wait(lambda i: {v.replica_id for v in i.voters} == {1, 2}, "Kafka 2 a voter")
        quorum.caught_up()
        result = cli(
            "metadata-quorum",
            "--bootstrap-controller",
            quorum.bootstrap,
            "remove-controller",
            "--controller-id",
            "2",
            "--controller-directory-id",
            joining.directory_id,
            timeout_s=60,
        )
        assert result.returncode == 0, result.stderr
        quorum.wait(lambda i: {v.replica_id for v in i.voters} == {1}, "Kafka 2 removed")
    finally:
        quorum.close()


@pytest.fixture
def ppk(kafka: KafkaDist, tmp: Path) -> Iterator[MixedQuorum]:
    quorum = MixedQuorum(kafka, tmp, "ppk")
    try:
        quorum.start()
        yield quorum
    finally:
        quorum.close()


def test_pre_vote_across_implementations(ppk: MixedQuorum) -> None:
    """A follower of each kind is stopped (SIGSTOP) for three fetch timeouts, then resumed:
    its pre-votes are refused (the others still fetch from the leader), no epoch changes."""
    info = ppk.caught_up()
    for _ in range(5):  # a pykraft leader, so that there is a follower of each kind
        if ppk.members[info.leader_id].kind == "pykraft":
            break
        killed = ppk.members[info.leader_id]
        killed.kill()
        ppk.wait(
            lambda i, old=info: i.leader_epoch > old.leader_epoch and i.leader_id > 0,
            "a new leader",
        )
        killed.start()
        info = ppk.caught_up()
    epoch, leader_id = info.leader_epoch, info.leader_id
    followers: dict[str, Member] = {
        m.kind: m for m in ppk.members.values() if m.node_id != leader_id
    }
    assert set(followers) == {"pykraft", "kafka"}, (leader_id, followers)
    for kind in ("pykraft", "kafka"):
        follower = followers[kind]
        follower.pause()
        time.sleep(3.0)  # fetch timeout 1 s
        follower.resume()
        time.sleep(3.0)
        after = ppk.caught_up()
        assert (after.leader_id, after.leader_epoch) == (leader_id, epoch), (kind, after)
    ppk.walk_spec_traces()


def test_a_kip642_reassignment_with_a_kafka_voter_in_the_quorum(
    kafka: KafkaDist, tmp: Path
) -> None:
    """pykraft's KIP-642 target travels in a LeaderChangeMessage tagged field (Kafka stops on
    control record types it does not know): a reassignment run by a pykraft leader, with a
    Kafka voter replicating every record of it, completes and the Kafka voter keeps
    following; Kafka's dump tool reads the target records as LeaderChange records."""
    quorum = MixedQuorum(kafka, tmp, "ppk", extra_ids=1)
    try:
        joining = quorum.add_observer(4, "pykraft")
        quorum.start()
        info = quorum.caught_up()
        for _ in range(5):  # the reassignment is pykraft's: a pykraft leader runs it
            if quorum.members[info.leader_id].kind == "pykraft":
                break
            killed = quorum.members[info.leader_id]
            killed.kill()
            quorum.wait(
                lambda i, old=info: i.leader_epoch > old.leader_epoch and i.leader_id > 0,
                "a new leader",
            )
            killed.start()
            info = quorum.caught_up()
        leader_id = info.leader_id
        assert quorum.members[leader_id].kind == "pykraft"
        removed = next(
            m.node_id
            for m in quorum.members.values()
            if m.kind == "pykraft" and m.node_id not in (leader_id, 4)
        )
        quorum.wait(lambda i: any(o.replica_id == 4 for o in i.observers), "pykraft 4 observing")
        assert joining.proc is not None
        from ..node.procs import wait_for

        wait_for(lambda: "registered with leader" in joining.proc.text(), "4 registered")
        target = sorted({1, 2, 3, 4} - {removed})
        result = cli(
            "metadata-quorum",
            "--bootstrap-controller",
            quorum.bootstrap,
            "reassign",
            "--voters",
            ",".join(map(str, target)),
            "--wait",
            timeout_s=180,
        )
        assert result.returncode == 0, result.stderr
        info = quorum.wait(
            lambda i: {v.replica_id for v in i.voters} == set(target), "the target voters"
        )
        kafka_member = quorum.members[3]
        assert kafka_member.running, kafka_member.tail()
        info = quorum.caught_up()
        assert any(
            v.replica_id == 3 and v.log_end_offset >= info.high_watermark for v in info.voters
        )
        assert "fatal" not in kafka_member.log.read_text().lower()
        kafka_member.stop()
        out = kafka.run(
            "dump-log",
            "--cluster-metadata-decoder",
            "--files",
            ",".join(str(s) for s in kafka_member.segments()),
        ).stdout
        assert out.count("LeaderChange:") >= 3  # epoch starts plus the target and its clearing
        assert quorum.walk_spec_traces()["spec_voters"] > 0
    finally:
        quorum.close()


def test_brokers_ride_through_leadership_crossing_implementations(
    kafka: KafkaDist, tmp: Path
) -> None:
    """Two pykraft and one Kafka controller (metadata.version 4.0-IV3 on both sides) with two
    Kafka brokers attached through controller.quorum.bootstrap.servers: the active controller
    is killed until both implementations have been active controller while a producer runs;
    after each failover a topic can be created through a broker, and at the end every
    acknowledged record is there. Each controller replays the other's metadata records.

    While pykraft leads, a KIP-435 reassignment starts (limits set, so its final target rides
    in tag 435 of the partition records): the Kafka controller and both Kafka brokers replay
    those records, and once a pykraft controller leads again the move completes."""
    quorum = MixedQuorum(kafka, tmp, "ppk", kafka_format=("--release-version", "4.0-IV3"))
    ports = free_ports(2)
    brokers = []
    for broker_id, port in zip((100, 101), ports, strict=True):
        config = write_properties(
            tmp / f"broker{broker_id}.properties",
            {
                "process.roles": "broker",
                "node.id": broker_id,
                "controller.listener.names": "CONTROLLER",
                "listeners": f"PLAINTEXT://127.0.0.1:{port}",
                "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                "log.dirs": tmp / f"broker{broker_id}",
                "controller.quorum.bootstrap.servers": quorum.bootstrap,
                "offsets.topic.replication.factor": 1,
                "transaction.state.log.replication.factor": 1,
                "transaction.state.log.min.isr": 1,
            },
        )
        kafka.format_storage(config, CLUSTER_ID)
        brokers.append((broker_id, config))
    bootstrap = f"127.0.0.1:{ports[0]}"
    plan = tmp / "plan.json"
    plan.write_text(
        '{"version":1,"partitions":[{"topic":"moving","partition":0,"replicas":[101,100]}]}'
    )
    procs = []
    try:
        quorum.start()
        quorum.caught_up()
        for broker_id, config in brokers:
            procs.append(kafka.start("server", str(config), log=tmp / f"broker{broker_id}.log"))
        for proc in procs:
            proc.wait_for_line("Kafka Server started", 120)
        for name, assignment in (("mixed", "100,100,100"), ("moving", "100")):
            kafka.run(
                "topics",
                "--bootstrap-server",
                bootstrap,
                "--create",
                "--topic",
                name,
                "--replica-assignment",
                assignment,
            )
        load = Load(bootstrap, "mixed")
        load.start()
        active: list[str] = []
        reassigned = False
        try:
            # Kafka 4.4.0's controller, prospective first (pre-vote), can take many rounds to
            # win against pykraft's faster timers; the last new leader counts too (for-else).
            for kill in range(20):
                info = quorum.caught_up()
                leader = quorum.members[info.leader_id]
                active.append(leader.kind)
                if leader.kind == "pykraft" and not reassigned:
                    out = cli(
                        "reassign",
                        "--bootstrap-controller",
                        quorum.bootstrap,
                        "--execute",
                        "--reassignment-json-file",
                        str(plan),
                        "--replica-count",
                        "1",
                    )
                    assert "Successfully started partition reassignment for moving-0" in (
                        out.stdout
                    ), out.stdout + out.stderr
                    reassigned = True
                if {"pykraft", "kafka"} <= set(active) and reassigned and kill >= 2:
                    break
                # Left to chance, the surviving pykraft controller tends to win: it sees the
                # killed leader's connection reset before Kafka's fetch timeout (and Kafka
                # 4.4.0 asks for pre-votes first). After two kills without the Kafka
                # controller leading, the other pykraft one is stopped too and started again
                # only once Kafka's asks for pre-votes: a fresh voter with no leader grants
                # them, then its vote, before its own election timeout runs out.
                held = None
                if leader.kind == "pykraft" and "kafka" not in active and kill >= 2:
                    held = next(
                        m
                        for m in quorum.members.values()
                        if m.kind == "pykraft" and m is not leader and m.running
                    )
                    held.kill()
                kafka_member = next(m for m in quorum.members.values() if m.kind == "kafka")
                seen = kafka_member.log.read_text(errors="replace").count("to ProspectiveState")
                leader.kill()
                if held is not None:
                    deadline = time.monotonic() + 10
                    while (
                        kafka_member.log.read_text(errors="replace").count("to ProspectiveState")
                        <= seen
                        and time.monotonic() < deadline
                    ):
                        time.sleep(0.05)
                    held.start()
                quorum.wait(
                    lambda i, old=info: (
                        i.leader_id not in (-1, old.leader_id) and i.leader_epoch > old.leader_epoch
                    ),
                    "a new active controller",
                )
                deadline = time.monotonic() + 60
                name = f"after-{kill}"
                while True:
                    out = kafka.run(
                        "topics",
                        "--bootstrap-server",
                        bootstrap,
                        "--create",
                        "--topic",
                        name,
                        "--partitions",
                        "1",
                        "--replication-factor",
                        "1",
                        check=False,
                    )
                    if f"Created topic {name}." in out.stdout:
                        break
                    assert time.monotonic() < deadline, out.stderr
                leader.start()
            else:
                active.append(quorum.members[quorum.caught_up().leader_id].kind)
        finally:
            load.stop()
        assert {"pykraft", "kafka"} <= set(active) and reassigned, active
        assert load.errors == 0 and load.count() > 0
        assert_nothing_lost(load, consume_all(bootstrap, "mixed", 3))
        # A pykraft controller leads again (the Kafka one is stopped while it leads): the
        # move is finished, whichever controller wrote its records.
        info = quorum.caught_up()
        if quorum.members[info.leader_id].kind == "kafka":
            quorum.members[info.leader_id].kill()
            quorum.wait(lambda i: i.leader_id not in (-1, info.leader_id), "a pykraft leader")

        def moved() -> bool:
            out = kafka.run(
                "topics", "--bootstrap-server", bootstrap, "--describe", "--topic", "moving"
            ).stdout
            return (
                "Replicas: 101,100\tIsr: 101,100" in out or "Replicas: 101,100\tIsr: 100,101" in out
            )

        deadline = time.monotonic() + 90
        while not moved():
            assert time.monotonic() < deadline, "the reassignment did not finish"
            time.sleep(1)
        assert all(proc.running for proc in procs)
        kafka_member = next(m for m in quorum.members.values() if m.kind == "kafka")
        log = kafka_member.log.read_text(errors="replace")
        assert "fatal fault" not in log.lower(), log[-4000:]
    finally:
        for proc in procs:
            proc.kill()
        quorum.close()
