"""Issue 48's first proof: a Kafka 4.4.0 broker producing with ``acks=all`` on three pykraft
controllers (a dynamic quorum, StandardAuthorizer on). Two controllers are killed and their
directories wiped; the survivor is stopped, surveyed and made the only voter with
``force-standalone`` while the broker goes on producing; started again, it leads alone; the
quorum grows back to three with two new controllers (``add-controller``); a wiped controller's
directory, kept aside and started again with its old directory id, follows as an observer and
is not a voter again (no second quorum). No acknowledged record is lost, and the topic, its
config, the ACL and the SCRAM user written before are all there."""

from __future__ import annotations

import json
import shutil
import threading
import time
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ConfigResource,
    ConfigResourceType,
    NewTopic,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from pykraft.interop.cluster import Server
from pykraft.interop.kafka import KafkaDist, write_properties

from ..node.procs import cli, free_ports, wait_for
from ..node.test_membership import describe, quorum_cli
from .cluster import KafkaCluster
from .records import consume_values

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

AUTHORIZER = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS",
    "allow.everyone.if.no.acl.found": "true",
}
TOPIC = "orders"


class Workload:
    """One producer, ``acks=all``, one record at a time; what it acknowledged."""

    def __init__(self, bootstrap: str) -> None:
        self.acked: list[int] = []
        self.failed = 0
        self._stop = threading.Event()
        self._producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", retries=5)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        i = 0
        while not self._stop.is_set():
            try:
                self._producer.send(TOPIC, str(i).encode()).get(timeout=30)
                self.acked.append(i)
            except Exception:
                self.failed += 1
            i += 1
            time.sleep(0.005)

    def stop(self) -> list[int]:
        self._stop.set()
        self._thread.join(timeout=60)
        self._producer.close()
        return self.acked


def _metadata(bootstrap: str) -> tuple[str, int, list[str]]:
    """The topic's retention.ms, the ACLs on it, the SCRAM users: what must survive."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
    try:
        config = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, TOPIC)])
        retention = str(config["topic"][TOPIC]["retention.ms"]["value"])
        pattern = ResourcePatternFilter(ResourceType.TOPIC, TOPIC, ACLResourcePatternType.LITERAL)
        wanted = ACLFilter("User:alice", "*", ACLOperation.ANY, ACLPermissionType.ANY, pattern)
        acls, _ = admin.describe_acls(wanted)
        users = sorted(admin.describe_user_scram_credentials())
        return retention, len(acls), users
    finally:
        admin.close()


def _write_metadata(bootstrap: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
    try:
        admin.create_topics([NewTopic(TOPIC, 2, 1, topic_configs={"retention.ms": "7200000"})])
        pattern = ResourcePattern(ResourceType.TOPIC, TOPIC, ACLResourcePatternType.LITERAL)
        acl = ACL("User:alice", "*", ACLOperation.READ, ACLPermissionType.ALLOW, pattern)
        assert admin.create_acls([acl])["failed"] == []
        upsert = UserScramCredentialUpsertion("carol", ScramMechanism.SCRAM_SHA_512, "carol-pw")
        assert admin.alter_user_scram_credentials([upsert]) == {"carol": None}
    finally:
        admin.close()


def _new_controller(cluster: KafkaCluster, node_id: int, tmp_path: Path) -> Server:
    """A pykraft controller formatted with --no-initial-controllers, to be added."""
    (port,) = free_ports(1)
    data = tmp_path / f"controller{node_id}"
    config = write_properties(
        tmp_path / f"controller{node_id}.properties",
        {
            **dict(
                line.split("=", 1)
                for line in cluster.controllers[0].config.read_text().split("\n")
                if "=" in line
            ),
            "node.id": node_id,
            "listeners": f"CONTROLLER://127.0.0.1:{port}",
            "metadata.log.dir": data,
            "metrics.port": free_ports(1)[0],
        },
    )
    formatted = cli(
        "storage", "format", "-c", str(config), "--cluster-id", cluster.cluster_id,
        "--no-initial-controllers",
    )  # fmt: skip
    assert formatted.returncode == 0, formatted.stderr
    return Server(node_id, "pykraft", port, config, data, tmp_path / f"controller{node_id}.log")


def test_a_lost_majority_is_recovered_while_a_broker_produces(
    kafka: KafkaDist, tmp_path: Path
) -> None:
    cluster = KafkaCluster(
        kafka,
        tmp_path,
        controllers=3,
        brokers=1,
        controller_extra="".join(f"{k}={v}\n" for k, v in AUTHORIZER.items()),
        broker_overrides=AUTHORIZER,
        dynamic=True,
    )
    extra: list[Server] = []
    try:
        cluster.start()
        _write_metadata(cluster.bootstrap)
        before = wait_for_metadata(cluster.bootstrap)
        work = Workload(cluster.bootstrap)
        wait_for(lambda: len(work.acked) >= 100, "100 records acknowledged")

        survivor, *lost = cluster.controllers
        kept = tmp_path / "former-voter-2"
        for controller in lost:
            controller.kill()
        shutil.copytree(lost[0].data, kept)
        for controller in lost:
            shutil.rmtree(controller.data)
        survivor.stop()
        acked_without_quorum = len(work.acked)
        surveyed = json.loads(
            cli("metadata-recovery", "survey", "--json", str(survivor.data)).stdout
        )
        assert surveyed["seed"] == str(survivor.data)
        done = cli("metadata-recovery", "force-standalone", str(survivor.data))
        assert done.returncode == 0, done.stderr
        survivor.start()
        wait_for(lambda: describe(survivor.address).leader_id == 1, "the survivor leading alone")
        wait_for(lambda: len(work.acked) > acked_without_quorum + 100, "the broker producing on")

        for node_id in (4, 5):
            new = _new_controller(cluster, node_id, tmp_path)
            new.start()
            extra.append(new)
            wait_for(
                lambda n=node_id: any(
                    o.replica_id == n for o in describe(survivor.address).observers
                ),
                f"controller {node_id} fetching",
            )
            out = quorum_cli(
                survivor.address, "add-controller", "--command-config", str(new.config)
            )
            assert f"Added controller {node_id}" in out
        voters = lambda: sorted(v.replica_id for v in describe(survivor.address).voters)  # noqa: E731
        wait_for(lambda: voters() == [1, 4, 5], "three voters again")

        former = lost[0]
        shutil.copytree(kept, former.data)  # controller 2 comes back with its old directory
        former.start()
        extra.append(former)
        wait_for(
            lambda: any(o.replica_id == 2 for o in describe(survivor.address).observers),
            "the former voter following the recovered quorum",
        )
        time.sleep(3)
        assert voters() == [1, 4, 5] and describe(former.address).leader_id == 1

        acked = set(work.stop())
        print(
            f"acknowledged {len(acked)} ({acked_without_quorum} before the recovery), "
            f"{work.failed} sends failed"
        )
        assert len(acked) > acked_without_quorum + 100
        assert acked <= consume_values(
            cluster.bootstrap, TOPIC, acked.issubset
        )  # not one acknowledged record lost
        assert _metadata(cluster.bootstrap) == before
    finally:
        for server in extra:
            server.kill()
        cluster.kill()


def wait_for_metadata(bootstrap: str) -> tuple[str, int, list[str]]:
    found: list[tuple[str, int, list[str]]] = []

    def ready() -> bool:
        found[:] = [_metadata(bootstrap)]
        return found[0][1] == 1 and found[0][2] == ["carol"]

    wait_for(ready, "the topic, ACL and SCRAM user visible on the broker")
    return found[0]
