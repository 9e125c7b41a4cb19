"""Kafka's own ``kafka-metadata-quorum`` (``MetadataQuorumCommand``) against a pykraft
quorum (SPEC J2, D11, I2): it describes the quorum as pykraft knows it, pykraft's tool prints
the same text, and Kafka's ``add-controller`` / ``remove-controller`` change a pykraft quorum.

One quorum for the module: three pykraft voters formatted with ``--initial-controllers``
(kraft.version 1, so directory ids are known) and one observer (node 4, formatted with
``--no-initial-controllers``). Nothing appends, so the log end offsets and the high watermark
stay put between the two tools' runs.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pykraft.admin import AdminClient, AdminError
from pykraft.interop.kafka import KafkaDist
from pykraft.storage import read_meta_properties, uuid_to_kafka

from ..node.procs import Proc, cli, describe_quorum, fmt, free_ports, make_config, wait_for

pytestmark = pytest.mark.slow


class Quorum:
    def __init__(self, voters: list[Proc], observers: list[Proc]) -> None:
        self.voters = voters
        self.observers = observers
        self.bootstrap = ",".join(p.address for p in voters)

    def directory(self, p: Proc) -> str:
        meta = read_meta_properties(p.data)
        assert meta is not None and meta.directory_id is not None
        return uuid_to_kafka(meta.directory_id)


@pytest.fixture(scope="module")
def quorum(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Quorum]:
    tmp = tmp_path_factory.mktemp("quorum")
    ports = free_ports(4)
    servers = ",".join(f"127.0.0.1:{p}" for p in ports[:3])
    nodes = [
        make_config(
            tmp,
            i + 1,
            ports[i],
            voters=None,
            # No idle NoOpRecords (Kafka's metadata.max.idle.interval.ms=0): the two tools
            # read the quorum at different moments and compare offsets.
            extra=f"controller.quorum.bootstrap.servers={servers}\n"
            "metadata.max.idle.interval.ms=0\n",
        )
        for i in range(4)
    ]
    dirs = [cli("storage", "random-uuid").stdout.strip() for _ in range(3)]
    initial = ",".join(
        f"{p.node_id}@127.0.0.1:{p.port}:{d}" for p, d in zip(nodes, dirs, strict=False)
    )
    for p in nodes[:3]:
        fmt(p, "--initial-controllers", initial)
    fmt(nodes[3], "--no-initial-controllers")
    for p in nodes:
        p.start()
    q = Quorum(nodes[:3], nodes[3:])
    try:
        seen: list[object] = []  # the last answer
        held: dict[int, float] = {}  # a settled high watermark -> when first seen

        def ready() -> bool:
            try:
                info = describe_quorum(q.bootstrap, timeout_ms=5_000)
            except AdminError:
                return False  # not listening yet: four interpreters starting on two cores
            settled = (
                info.leader_id > 0
                and {o.replica_id for o in info.observers} == {4}
                and info.high_watermark >= 3
                and all(v.log_end_offset == info.high_watermark for v in info.voters)
                # Each other controller's ControllerRegistration is answered before the
                # leader's RegisterControllerRecord is appended: every one registered with
                # this leader, and the high watermark unchanged for a second since.
                and all(
                    f"registered with leader {info.leader_id} epoch {info.leader_epoch}" in p.text()
                    for p in nodes
                    if p.node_id != info.leader_id
                )
            )
            seen[:] = [info]
            if not settled:
                held.clear()
                return False
            since = held.setdefault(info.high_watermark, time.monotonic())
            if len(held) > 1:  # it moved: start the second again
                held.clear()
                held[info.high_watermark] = since = time.monotonic()
            return time.monotonic() - since >= 1.0

        try:
            wait_for(ready, "a leader, its epoch's records committed everywhere and observer 4", 60)
        except AssertionError as e:
            tails = "\n".join(f"--- {p.node_id}\n{p.text()[-3000:]}" for p in nodes)
            raise AssertionError(f"{e}; last: {seen}\n{tails}") from None
        yield q
    finally:
        for p in nodes:
            p.kill()


def kafka_quorum(kafka: KafkaDist, bootstrap: str, *args: str) -> str:
    return kafka.run("metadata-quorum", "--bootstrap-controller", bootstrap, *args).stdout


def pykraft_quorum(bootstrap: str, *args: str) -> str:
    result = cli("metadata-quorum", "--bootstrap-controller", bootstrap, *args, timeout_s=40)
    assert result.returncode == 0, result.stderr
    return result.stdout


def status(text: str) -> dict[str, str]:
    return {k: v.strip() for k, v in (line.split(":", 1) for line in text.splitlines() if line)}


def test_kafka_describe_status_shows_the_pykraft_quorum(kafka: KafkaDist, quorum: Quorum) -> None:
    info = describe_quorum(quorum.bootstrap, timeout_ms=5_000)
    fields = status(kafka_quorum(kafka, quorum.bootstrap, "describe", "--status"))
    assert fields["ClusterId"] == "X5SvYNT7TJu0jYq2_o3_vg"
    assert int(fields["LeaderId"]) == info.leader_id
    assert int(fields["LeaderEpoch"]) == info.leader_epoch
    assert int(fields["HighWatermark"]) == info.high_watermark
    assert int(fields["MaxFollowerLag"]) == 0
    voters = json.loads(fields["CurrentVoters"])
    assert [
        (v["id"], v["directoryId"], v["endpoints"]) for v in sorted(voters, key=lambda v: v["id"])
    ] == [
        (p.node_id, quorum.directory(p), [f"CONTROLLER://127.0.0.1:{p.port}"])
        for p in quorum.voters
    ]
    observers = json.loads(fields["CurrentObservers"])
    assert observers == [{"id": 4, "directoryId": quorum.directory(quorum.observers[0])}]


# Times the two tools read at different moments: timestamps, and MaxFollowerLagTimeMs (a
# follower's last caught-up time moves with each of its long polls).
# A masked table cell takes its padding with it (the column's width depends on the values).
_TIMES = re.compile(r"(\b1\d{12}|\b\d+ ms ago) *(?=\t)|(?<=MaxFollowerLagTimeMs:)\s+-?\d+")


def test_pykraft_describe_prints_what_kafka_prints(kafka: KafkaDist, quorum: Quorum) -> None:
    for args in (
        ("describe", "--status"),
        ("describe", "--replication"),
        ("describe", "--replication", "--human-readable"),
    ):
        theirs = _TIMES.sub("T", kafka_quorum(kafka, quorum.bootstrap, *args))
        ours = _TIMES.sub("T", pykraft_quorum(quorum.bootstrap, *args))
        assert ours == theirs, args


def test_kafka_replication_table(kafka: KafkaDist, quorum: Quorum) -> None:
    text = kafka_quorum(kafka, quorum.bootstrap, "describe", "--replication")
    rows = [line.rstrip("\t").split("\t") for line in text.splitlines()]
    header = [c.strip() for c in rows[0]]
    assert header == [
        "NodeId",
        "DirectoryId",
        "LogEndOffset",
        "Lag",
        "LastFetchTimestamp",
        "LastCaughtUpTimestamp",
        "Status",
    ]
    table = {int(r[0]): dict(zip(header, (c.strip() for c in r), strict=True)) for r in rows[1:]}
    info = describe_quorum(quorum.bootstrap, timeout_ms=5_000)
    assert table[info.leader_id]["Status"] == "Leader"
    assert {i for i, r in table.items() if r["Status"] == "Follower"} == {1, 2, 3} - {
        info.leader_id
    }
    assert table[4]["Status"] == "Observer"
    for p in quorum.voters + quorum.observers:
        assert table[p.node_id]["DirectoryId"] == quorum.directory(p)
        assert int(table[p.node_id]["LogEndOffset"]) == info.high_watermark
        assert table[p.node_id]["Lag"] == "0"


def test_kafka_tool_adds_and_removes_a_pykraft_controller(
    kafka: KafkaDist, quorum: Quorum, tmp_path: Path
) -> None:
    """KIP-853 through Kafka's tool: node 5 joins as an observer, Kafka's ``add-controller``
    makes it a voter, Kafka's ``remove-controller`` removes it again."""
    port = free_ports(1)[0]
    servers = ",".join(p.address for p in quorum.voters)
    new = make_config(
        tmp_path, 5, port, voters=None, extra=f"controller.quorum.bootstrap.servers={servers}\n"
    )
    fmt(new, "--no-initial-controllers")
    new.start()
    try:
        wait_for(
            lambda: any(
                o.replica_id == 5 for o in describe_quorum(servers, timeout_ms=5_000).observers
            ),
            "node 5 fetching as an observer",
        )
        directory = quorum.directory(new)
        out = kafka_quorum(kafka, servers, "--command-config", str(new.config), "add-controller")
        assert f"Added controller 5 with directory id {directory}" in out
        wait_for(
            lambda: 5 in {v.replica_id for v in describe_quorum(servers, timeout_ms=5_000).voters},
            "node 5 among the voters",
        )
        out = kafka_quorum(
            kafka,
            servers,
            "remove-controller",
            "--controller-id",
            "5",
            "--controller-directory-id",
            directory,
        )
        assert re.search(rf"Removed\s+KRaft controller 5 with directory id {directory}", out), out
        wait_for(
            lambda: (
                {v.replica_id for v in describe_quorum(servers, timeout_ms=5_000).voters}
                == {1, 2, 3}
            ),
            "node 5 removed",
        )
    finally:
        new.kill()


def test_kafka_features_tool_and_pykrafts_print_the_same(kafka: KafkaDist, quorum: Quorum) -> None:
    """``kafka-features describe`` against pykraft, and pykraft's own: the same lines; a
    kraft.version downgrade is refused to both (D10). Kafka 4.4.0's tool: it knows every
    level pykraft runs (4.3.1's prints the supported maximum 4.4-IV2 as ``UNKNOWN 33``)."""
    kafka = KafkaDist.get("4.4")
    theirs = kafka.run("features", "--bootstrap-controller", quorum.bootstrap, "describe").stdout
    result = cli("features", "--bootstrap-controller", quorum.bootstrap, "describe")
    assert result.returncode == 0, result.stderr
    assert result.stdout == theirs
    assert re.search(
        r"Feature: kraft\.version\s+SupportedMinVersion: 0\s+SupportedMaxVersion: 1\s+FinalizedVersionLevel: 1\s",
        theirs,
    ), theirs

    refused = kafka.run(
        "features",
        "--bootstrap-controller",
        quorum.bootstrap,
        "downgrade",
        "--feature",
        "kraft.version=0",
        check=False,
    )
    assert refused.returncode == 1
    assert (
        "Could not downgrade kraft.version to 0. kraft.version cannot be downgraded from 1 to 0"
        in refused.stdout
    )
    ours = cli(
        "features",
        "--bootstrap-controller",
        quorum.bootstrap,
        "downgrade",
        "--feature",
        "kraft.version=0",
    )
    assert ours.returncode == 1
    assert ours.stdout.splitlines()[0] == refused.stdout.splitlines()[0]


def test_kafka_reassign_partitions_lists_the_quorum_reassignment(
    kafka: KafkaDist, quorum: Quorum
) -> None:
    """Kafka 4.3's ``kafka-reassign-partitions --bootstrap-controller`` takes ``--list`` only
    (``--execute`` with it: 'Option "[bootstrap-controller]" can't be used with action'); its
    --list shows pykraft's KIP-642 move of the voter set as a reassignment of
    ``__cluster_metadata-0``. Observer 4 is stopped right after it was last caught up, so the
    move waits for it; cancelled afterwards."""
    observer = quorum.observers[0]

    async def reassign() -> None:
        async with AdminClient(quorum.bootstrap, timeout_ms=10_000) as admin:
            await admin.describe_quorum()  # connected before the observer stops
            observer.send(signal.SIGSTOP)
            # At once (in process): the leader accepts an observer that fetched within
            # its fetch timeout (1 s here).
            await admin.reassign_voters([1, 2, 4])

    try:
        asyncio.run(reassign())
        listed = kafka.run(
            "reassign-partitions", "--bootstrap-controller", quorum.bootstrap, "--list"
        ).stdout
        assert "__cluster_metadata-0: replicas: 1,2,3,4. adding: 4. removing: 3." in listed, listed
        refused = kafka.run(
            "reassign-partitions",
            "--bootstrap-controller",
            quorum.bootstrap,
            "--cancel",
            "--reassignment-json-file",
            "/dev/null",
            check=False,
        )
        assert refused.returncode != 0
        cancelled = cli(
            "metadata-quorum",
            "--bootstrap-controller",
            quorum.bootstrap,
            "reassign",
            "--cancel",
            "--wait",
        )
        assert cancelled.returncode == 0, cancelled.stderr
    finally:
        observer.send(signal.SIGCONT)
    assert {v.replica_id for v in describe_quorum(quorum.bootstrap, timeout_ms=5_000).voters} == {
        1,
        2,
        3,
    }
    assert (
        "No partition reassignments found."
        in kafka.run(
            "reassign-partitions", "--bootstrap-controller", quorum.bootstrap, "--list"
        ).stdout
    )
