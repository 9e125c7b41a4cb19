"""KIP-853 end to end with real processes, driven only through ``pykraft storage format``,
``pykraft server start`` and ``pykraft metadata-quorum`` (seed 003's operator scenarios)."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pykraft.admin import QuorumInfo
from pykraft.storage import read_meta_properties, uuid_to_kafka

from .procs import Proc, cli, describe_quorum, fmt, free_ports, make_config, wait_for

pytestmark = pytest.mark.slow


def describe(bootstrap: str) -> QuorumInfo:
    return describe_quorum(bootstrap, timeout_ms=10_000)


def voter_keys(bootstrap: str) -> set[tuple[int, str]]:
    info = describe(bootstrap)
    return {
        (v.replica_id, uuid_to_kafka(v.directory_id) if v.directory_id else "null")
        for v in info.voters
    }


def directory(p: Proc) -> str:
    meta = read_meta_properties(p.data)
    assert meta is not None and meta.directory_id is not None
    return uuid_to_kafka(meta.directory_id)


def quorum_cli(bootstrap: str, *args: str) -> str:
    result = cli("metadata-quorum", "--bootstrap-controller", bootstrap, *args, timeout_s=40)
    assert result.returncode == 0, result.stderr
    return result.stdout


def without_static_voters(tmp: Path, ports: list[int], count: int, extra: str) -> list[Proc]:
    """``count`` controllers configured without ``controller.quorum.voters``."""
    return [make_config(tmp, i + 1, ports[i], voters=None, extra=extra) for i in range(count)]


def initial_controllers(nodes: list[Proc]) -> str:
    """``--initial-controllers`` for ``nodes``, each with a new directory id."""
    ids = [cli("storage", "random-uuid").stdout.strip() for _ in nodes]
    return ",".join(f"{p.node_id}@127.0.0.1:{p.port}:{d}" for p, d in zip(nodes, ids, strict=True))


@pytest.fixture
def procs() -> Iterator[list[Proc]]:
    started: list[Proc] = []
    yield started
    for p in started:
        p.kill()


def test_standalone_then_auto_join_then_leader_removes_itself(
    tmp_path: Path, procs: list[Proc]
) -> None:
    ports = free_ports(3)
    bootstrap = f"controller.quorum.bootstrap.servers=127.0.0.1:{ports[0]}\n"
    nodes = without_static_voters(
        tmp_path,
        ports,
        3,
        bootstrap
        + "controller.quorum.auto.join.enable=true\n"
        + "pykraft.debug.append.interval.ms=50\n",
    )
    fmt(nodes[0], "--standalone")
    fmt(nodes[1], "--no-initial-controllers")
    fmt(nodes[2], "--no-initial-controllers")
    for p in nodes:
        p.start()
        procs.append(p)
    everyone = ",".join(p.address for p in nodes)
    expected = {(p.node_id, directory(p)) for p in nodes}
    wait_for(lambda: voter_keys(everyone) == expected, "all three controllers to be voters")
    assert "voter set node.id=1 voters=" in nodes[0].text()

    # The leader removes itself: it stays leader until the removal commits, then resigns.
    leader_id = describe(everyone).leader_id
    leader = nodes[leader_id - 1]
    wait_for(lambda: len(leader.committed()) >= 5, "records committed before the removal")
    out = quorum_cli(
        nodes[(leader_id) % 3].address,
        "remove-controller",
        "--controller-id",
        str(leader_id),
        "--controller-directory-id",
        directory(leader),
    )
    assert f"Removed KRaft controller {leader_id}" in out
    rest = ",".join(p.address for p in nodes if p is not leader)
    wait_for(
        lambda: (
            (info := describe(rest)).leader_id not in (-1, leader_id)
            and {v.replica_id for v in info.voters} == {p.node_id for p in nodes if p is not leader}
        ),
        "a new leader among the remaining voters",
    )

    # Nothing committed is lost: every record the removed leader acknowledged as committed
    # (all of them before it resigned) is in both survivors' logs, at the same offset.
    acknowledged = leader.committed()
    assert len(acknowledged) >= 5
    survivors = [p for p in nodes if p is not leader]
    new_leader = nodes[describe(rest).leader_id - 1]
    seen = len(new_leader.committed())
    wait_for(lambda: len(new_leader.committed()) >= seen + 3, "commits by the new leader")
    # Auto-join is on, yet the removed leader does not add itself back (KAFKA-19850), also
    # once restarted: its directory remembers it was a voter. (Its bootstrap server was
    # itself alone; restarted, it is pointed at the others, as an operator would.)
    assert (leader.data / "__cluster_metadata-0" / "was-voter").is_file()
    leader.stop()
    config = leader.config.read_text()
    leader.config.write_text(
        config.replace(bootstrap, f"controller.quorum.bootstrap.servers={rest}\n")
    )
    leader.start()
    wait_for(
        lambda: leader_id in {o.replica_id for o in describe(rest).observers},
        "the removed leader, restarted, fetching as an observer",
    )
    time.sleep(3)  # several fetches: an auto-join would be sent and committed by now
    assert leader_id not in {v.replica_id for v in describe(rest).voters}
    for p in survivors:
        assert p.stop() == 0
    for p in survivors:
        values = p.log_values()
        for offset, _epoch, value in acknowledged:
            assert values.get(offset) == value.encode(), (p.node_id, offset)


def test_disk_failure_recovery(tmp_path: Path, procs: list[Proc]) -> None:
    """Seed 003: replica 3's disk is replaced; (3, UUID3) is removed, then (3, UUID3')
    added -- a replica id may appear once in the voter set (DUPLICATE_VOTER)."""
    ports = free_ports(3)
    servers = ",".join(f"127.0.0.1:{p}" for p in ports)
    nodes = without_static_voters(
        tmp_path, ports, 3, f"controller.quorum.bootstrap.servers={servers}\n"
    )
    initial = initial_controllers(nodes)
    for p in nodes:
        fmt(p, "--initial-controllers", initial)
        p.start()
        procs.append(p)
    wait_for(lambda: voter_keys(servers) == {(p.node_id, directory(p)) for p in nodes}, "voters")

    # Disk failure on 3: a new, empty directory with a new directory id.
    failed = nodes[2]
    old_directory = directory(failed)
    failed.stop()
    shutil.rmtree(failed.data)
    fmt(failed, "--no-initial-controllers")
    new_directory = directory(failed)
    assert new_directory != old_directory
    failed.start()
    wait_for(
        lambda: any(o.replica_id == 3 for o in describe(servers).observers),
        "replica 3 fetching as an observer",
    )

    quorum_cli(
        servers,
        "remove-controller",
        "--controller-id",
        "3",
        "--controller-directory-id",
        old_directory,
    )
    assert voter_keys(servers) == {(1, directory(nodes[0])), (2, directory(nodes[1]))}
    out = quorum_cli(servers, "add-controller", "--command-config", str(failed.config))
    assert "Added controller 3" in out
    wait_for(
        lambda: (
            voter_keys(servers)
            == {(1, directory(nodes[0])), (2, directory(nodes[1])), (3, new_directory)}
        ),
        "(3, UUID3') in the voter set",
    )


def register_controller(address: str, controller_id: int, kraft: tuple[int, int]) -> None:
    """A ControllerRegistration (KIP-919) as a controller sends it, straight to ``address``."""
    import asyncio
    import uuid as uuid_module

    import kio.schema.controller_registration.v0.request as registration

    from pykraft.net.client import Connection

    request = registration.ControllerRegistrationRequest(
        controller_id=controller_id,  # type: ignore[arg-type]
        incarnation_id=uuid_module.uuid4(),
        zk_migration_ready=False,
        listeners=(
            registration.Listener(name="CONTROLLER", host="127.0.0.1", port=1, security_protocol=0),  # type: ignore[arg-type]
        ),
        features=(
            registration.Feature(
                name="kraft.version", min_supported_version=kraft[0], max_supported_version=kraft[1]
            ),  # type: ignore[arg-type]
        ),
    )

    async def go() -> None:
        host, port = address.split(":")
        conn = await Connection.open(host, int(port), timeout_ms=5_000)
        try:
            answer = await conn.request(request, timeout_ms=5_000)
        finally:
            conn.close()
        assert answer.error_code == 0, answer  # type: ignore[attr-defined]

    asyncio.run(go())


def status_voters(bootstrap: str) -> dict[int, str]:
    """``describe --status``'s CurrentVoters as {id: directoryId} (what an operator reads)."""
    out = quorum_cli(bootstrap, "describe", "--status")
    line = next(ln for ln in out.splitlines() if ln.startswith("CurrentVoters:"))
    voters = json.loads(line.split(":", 1)[1])
    return {int(v["id"]): str(v.get("directoryId", "null")) for v in voters}


def three_voters_and_a_spare(tmp_path: Path, procs: list[Proc]) -> tuple[list[Proc], str]:
    """Controllers 1-3 formatted with one ``--initial-controllers`` list and running as the
    voters, and controller 4 configured (not formatted); their bootstrap servers."""
    ports = free_ports(4)
    servers = ",".join(f"127.0.0.1:{p}" for p in ports[:3])
    nodes = without_static_voters(
        tmp_path, ports, 4, f"controller.quorum.bootstrap.servers={servers}\n"
    )
    initial = initial_controllers(nodes[:3])
    for p in nodes[:3]:
        fmt(p, "--initial-controllers", initial)
        p.start()
        procs.append(p)
    wait_for(lambda: len(status_voters(servers)) == 3, "three voters")
    return nodes, servers


def test_node_failure_recovery(tmp_path: Path, procs: list[Proc]) -> None:
    """Seed 003: node 3 fails for good; a new node 4 (formatted with
    --no-initial-controllers) joins as an observer, is added with add-controller, then the
    failed node 3 is removed with remove-controller -- only storage format and
    metadata-quorum commands."""
    nodes, servers = three_voters_and_a_spare(tmp_path, procs)

    failed, new = nodes[2], nodes[3]
    failed_directory = directory(failed)
    failed.kill()  # node 3 is gone for good
    fmt(new, "--no-initial-controllers")
    new.start()
    procs.append(new)
    wait_for(
        lambda: any(o.replica_id == 4 for o in describe(servers).observers),
        "node 4 fetching as an observer",
    )

    out = quorum_cli(servers, "add-controller", "--command-config", str(new.config))
    assert "Added controller 4" in out
    out = quorum_cli(
        servers,
        "remove-controller",
        "--controller-id",
        "3",
        "--controller-directory-id",
        failed_directory,
    )
    assert "Removed KRaft controller 3" in out
    expected = {1: directory(nodes[0]), 2: directory(nodes[1]), 4: directory(new)}
    wait_for(lambda: status_voters(servers) == expected, "voters 1, 2, 4")


def test_kraft_version_upgrade_over_tcp(tmp_path: Path, procs: list[Proc]) -> None:
    """D10 over TCP: a static quorum (controller.quorum.voters, kraft.version 0) refuses
    add-controller with UNSUPPORTED_VERSION; ``pykraft features upgrade --feature
    kraft.version=1`` (with group.version in the same request) upgrades it; the voter set
    then comes from the log (directory ids known) and add-controller works."""
    ports = free_ports(5)
    voters = ",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(ports[:3]))
    servers = ",".join(f"127.0.0.1:{p}" for p in ports[:3])
    nodes = [make_config(tmp_path, i + 1, ports[i], voters=voters) for i in range(4)]
    nodes[0] = make_config(tmp_path, 1, ports[0], voters=voters, metrics_port=ports[4])
    for p in nodes:
        fmt(p, "-N")
    for p in nodes:
        p.start()
        procs.append(p)
    wait_for(lambda: describe(servers).leader_id in (1, 2, 3), "a leader")
    # Usually within 0.1 s of the leader; 10 s is ample. Issue 13: it once took over 20 s
    # (node 4 unattached at epoch 0 the whole wait): a backed-off Fetch whose poll came a
    # millisecond early was never sent, the next Ready saying "never" (regression:
    # tests/raft/test_core.py::test_a_fetch_retry_past_due_is_polled_at_once).
    wait_for(
        lambda: any(o.replica_id == 4 for o in describe(servers).observers),
        "node 4 fetching as an observer",
        timeout_s=10,
    )
    assert set(status_voters(servers)) == {1, 2, 3}

    refused = cli(
        "metadata-quorum",
        "--bootstrap-controller",
        servers,
        "add-controller",
        "--command-config",
        str(nodes[3].config),
        timeout_s=40,
    )
    assert refused.returncode == 1
    assert "UNSUPPORTED_VERSION" in refused.stderr.upper(), refused.stderr

    # D10: a controller that registered (ControllerRegistration) with kraft.version 0..0
    # blocks the upgrade, named in the error; registered again with 0..1, it does not.
    leader_address = next(p.address for p in nodes if p.node_id == describe(servers).leader_id)
    register_controller(leader_address, 9, (0, 0))
    refusals: list[subprocess.CompletedProcess[str]] = []
    upgrade = ("features", "upgrade", "--bootstrap-controller", servers)
    upgrade += ("--feature", "kraft.version=1")

    def refused_for_observer_9() -> bool:
        # Kafka's tool prints the refusal on stdout ("Could not upgrade ..."), exit code 1.
        # Until every voter's ControllerRegistration has reached the leader (a loaded
        # machine delays it) the refusal names that voter's unknown range instead.
        refusals.append(cli(*upgrade))
        assert refusals[-1].returncode == 1, refusals[-1]
        return "observer 9" in refusals[-1].stdout

    wait_for(refused_for_observer_9, "the upgrade refused because of observer 9")
    # With another feature in the same UpdateFeatures (as Kafka's ``upgrade --release-version``
    # sends kraft.version): the quorum's upgrade runs first (issue 46) and its refusal is
    # the answer, where the controller once refused any kraft.version change beside others.
    with_group = (*upgrade, "--feature", "group.version=1")
    mixed = cli(*with_group)
    assert mixed.returncode == 1 and "observer 9" in mixed.stdout, mixed
    register_controller(leader_address, 9, (0, 1))

    upgraded = cli(*with_group, timeout_s=40)
    assert upgraded.returncode == 0, upgraded.stderr
    assert "kraft.version was upgraded to 1." in upgraded.stdout, upgraded.stdout
    expected = {p.node_id: directory(p) for p in nodes[:3]}
    wait_for(lambda: status_voters(servers) == expected, "the voter set from the log")

    out = quorum_cli(servers, "add-controller", "--command-config", str(nodes[3].config))
    assert "Added controller 4" in out
    wait_for(lambda: 4 in status_voters(servers), "node 4 a voter")

    # controller.quorum.voters is now ignored: said once in the log and by the metric; a
    # restart without it (bootstrap servers instead) rejoins as the same voter.
    node1 = nodes[0]

    def ignored() -> float | None:
        try:
            return node1.scrape()["kafka_controller_kafkacontroller_ignoredstaticvoters"]
        except OSError:  # the endpoint is not up (yet)
            return None

    wait_for(lambda: ignored() == 1, "ignored-static-voters 1")
    assert node1.text().count("controller.quorum.voters is ignored") == 1
    assert node1.stop() == 0
    node1.config.write_text(
        node1.config.read_text().replace(
            f"controller.quorum.voters={voters}", f"controller.quorum.bootstrap.servers={servers}"
        )
    )
    node1.start()
    wait_for(lambda: ignored() == 0, "ignored-static-voters 0")
    wait_for(
        lambda: (
            any(v.replica_id == 1 and v.log_end_offset > 0 for v in describe(servers).voters)
            and describe(servers).leader_id > 0
        ),
        "node 1 back as a voter",
    )
    assert set(status_voters(servers)) == {1, 2, 3, 4}
