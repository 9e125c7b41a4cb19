"""Kafka 4.4.0 beside pykraft (issue 28): the bootstrap records ``pykraft storage format``
writes for each release equal Kafka 4.4.0's ``kafka-storage format`` (which writes them into
the 0-0 checkpoint, KIP-1170); and a live cluster of Kafka 4.1.2, 4.3.1 and 4.4.0 brokers on a
pykraft controller whose directory Kafka 4.4.0's tool formatted (KIP-1170's layout, read as a
4.4 controller reads it), upgraded with Kafka 4.4.0's own ``kafka-features upgrade`` under
produce load: to ``--release-version 4.1`` (eligible leader replicas on) with all three, to
4.4 refused while an older broker is registered and accepted once both are rolled to 4.4.0
(kraft.version raised from 0 within the first upgrade, as Kafka's controller raises it),
nothing acknowledged lost, and a 4.1.2 broker cannot join the upgraded cluster. The
controller answers the 4.4.0 brokers' and tools' ApiVersions v5 (KIP-1242) without the
UNSUPPORTED_VERSION fallback."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from pykraft.interop.kafka import KafkaDist
from pykraft.interop.load import Load, assert_nothing_lost, consume_all

from ..node.procs import CLUSTER_ID, cli, free_ports, wait_for
from . import describe
from .cluster import KafkaCluster
from .dumplog import feature_levels

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

TOPIC = "upgrade"
PARTITIONS = 3


@pytest.fixture(scope="module")
def kafka44() -> KafkaDist:
    """Apache Kafka 4.4.0 (``interop/kafka-4.4/pom.xml``)."""
    return KafkaDist.get("4.4")


def test_format_writes_kafka_4_4s_bootstrap_features(
    kafka: KafkaDist, kafka44: KafkaDist, tmp_path: Path
) -> None:
    """For every release from 3.3-IV3 to 4.4: the FeatureLevelRecords of ``pykraft storage
    format --release-version X`` (``bootstrap.checkpoint``) are those Kafka 4.4.0's
    ``kafka-storage format`` writes into ``__cluster_metadata-0``'s 0-0 checkpoint, in the
    same order."""
    for release in ("3.3-IV3", "3.9", "4.0", "4.1", "4.2", "4.3", "4.4"):
        found = {}
        for side in ("kafka", "pykraft"):
            (port,) = free_ports(1)
            home = tmp_path / release / side
            home.mkdir(parents=True)
            config = home / "c.properties"
            config.write_text(
                "node.id=1\nprocess.roles=controller\n"
                f"listeners=CONTROLLER://127.0.0.1:{port}\ncontroller.listener.names=CONTROLLER\n"
                f"controller.quorum.voters=1@127.0.0.1:{port}\nmetadata.log.dir={home / 'data'}\n"
                f"log.dirs={home / 'data'}\n"
            )
            args = ("format", "-t", CLUSTER_ID, "-c", str(config), "--release-version", release)
            if side == "kafka":
                kafka44.run("storage", *args)
                path = (
                    home
                    / "data"
                    / "__cluster_metadata-0"
                    / ("00000000000000000000-0000000000.checkpoint")
                )
                assert not (home / "data" / "bootstrap.checkpoint").exists()  # KIP-1170
            else:
                done = cli("storage", *args)
                assert done.returncode == 0, done.stderr
                path = home / "data" / "bootstrap.checkpoint"
            found[side] = feature_levels(kafka, path)
        assert found["kafka"] and found["kafka"] == found["pykraft"], (release, found)


@pytest.fixture(scope="module")
def kafka41() -> KafkaDist:
    """Apache Kafka 4.1.2 (``interop/kafka-4.1/pom.xml``)."""
    return KafkaDist.get("4.1")


@pytest.fixture(scope="module")
def cluster(
    kafka431: KafkaDist,
    kafka41: KafkaDist,
    kafka44: KafkaDist,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[KafkaCluster]:
    """One pykraft controller; brokers 100 (Kafka 4.1.2), 101 (4.3.1) and 102 (4.4.0). The
    controller's directory is formatted by Kafka 4.4.0's ``kafka-storage format
    --release-version 4.0`` (KIP-1170: no ``bootstrap.checkpoint``, the bootstrap records in
    the 0-0 checkpoint), which pykraft reads as a 4.4 controller does."""
    tmp = tmp_path_factory.mktemp("kafka-44")
    c = KafkaCluster(
        kafka44,
        tmp,
        controllers=1,
        brokers=3,
        broker_overrides={"broker.heartbeat.interval.ms": 500},
    )
    c.brokers[0].dist = kafka41
    c.brokers[1].dist = kafka431
    controller = c.controllers[0]
    shutil.rmtree(controller.data)
    config = tmp / "kafka-format.properties"
    config.write_text(controller.config.read_text() + f"log.dirs={controller.data}\n")
    kafka44.format_storage(config, c.cluster_id, "--release-version", "4.0")
    assert not (controller.data / "bootstrap.checkpoint").exists()
    try:
        c.start()
        yield c
    finally:
        c.kill()


def _finalized(kafka44: KafkaDist, cluster: KafkaCluster) -> dict[str, str]:
    described = kafka44.run(
        "features", "--bootstrap-controller", cluster.bootstrap_controllers, "describe"
    ).stdout
    return dict(re.findall(r"Feature: (\S+)\s.*FinalizedVersionLevel: (\S+)", described))


def _whole(cluster: KafkaCluster) -> bool:
    parts = describe.partitions(cluster.bootstrap, TOPIC)
    return len(parts) == PARTITIONS and all(
        p["Leader"] != "none" and set(p["Isr"].split(",")) == set(p["Replicas"].split(","))
        for p in parts
    )


def test_mixed_brokers_upgraded_to_4_4_with_kafkas_tool_under_load(
    kafka41: KafkaDist, kafka44: KafkaDist, cluster: KafkaCluster
) -> None:
    kafka44.run(
        "topics",
        "--bootstrap-server",
        cluster.bootstrap,
        "--create",
        "--topic",
        TOPIC,
        "--partitions",
        str(PARTITIONS),
        "--replication-factor",
        "3",
        "--config",
        "min.insync.replicas=2",
    )
    wait_for(lambda: _whole(cluster), "the topic whole")
    load = Load(cluster.bootstrap, TOPIC)
    load.start()
    try:
        wait_for(lambda: load.count() > 500, "the load to run")

        def upgrade(release: str) -> tuple[str, ...]:
            return (
                "features",
                "--bootstrap-server",
                cluster.bootstrap,
                "upgrade",
                "--release-version",
                release,
            )

        # As Kafka 4.4.0's format wrote them into the 0-0 checkpoint (KIP-1170).
        start = _finalized(kafka44, cluster)
        assert start["metadata.version"] == "4.0-IV3", start
        assert start["transaction.version"] == "2" and start["group.version"] == "1", start
        assert start.get("eligible.leader.replicas.version", "0") == "0", start
        assert start["kraft.version"] == "0", start  # a static quorum (controller.quorum.voters)

        # Every broker runs 4.1: the cluster goes there first, eligible leader replicas on.
        to_41 = kafka44.run(*upgrade("4.1")).stdout
        assert "metadata.version was upgraded to 27" in to_41, to_41
        at_41 = _finalized(kafka44, cluster)
        assert at_41["metadata.version"] == "4.1-IV1", at_41
        assert at_41["eligible.leader.replicas.version"] == "1", at_41
        # The tool sent kraft.version=1 with the others (issue 46): upgraded in the same
        # UpdateFeatures, as Kafka's controller does, where pykraft once refused the request.
        assert at_41["kraft.version"] == "1", at_41
        wait_for(lambda: _whole(cluster), "the topic whole at 4.1")

        refused = kafka44.run(*upgrade("4.4"), check=False)
        assert refused.returncode != 0, refused.stdout
        assert re.search(r"Broker 10[01] only supports versions", refused.stdout), refused.stdout

        # Roll brokers 100 (4.1.2) and 101 (4.3.1) to Kafka 4.4.0 on the same data.
        for old in cluster.brokers[:2]:
            assert old.stop() in (0, 143)
            old.dist = kafka44
            old.start()
            wait_for(lambda: _whole(cluster), f"broker {old.node_id} back on 4.4.0", 90)

        upgraded = kafka44.run(*upgrade("4.4")).stdout
        assert "metadata.version was upgraded to 33" in upgraded, upgraded
        finalized = _finalized(kafka44, cluster)
        assert finalized["metadata.version"] == "4.4-IV2", finalized
        assert (
            finalized["share.version"] == "2"
            and finalized["eligible.leader.replicas.version"] == "1"
        )
        before = load.count()
        wait_for(lambda: load.count() > before + 500, "the load to go on after the upgrade")
    finally:
        load.stop()
    assert load.errors == 0
    assert_nothing_lost(load, consume_all(cluster.bootstrap, TOPIC, PARTITIONS))

    # The 4.4.0 brokers and tools spoke ApiVersions v5 to the controller: no fallback.
    controller_log = cluster.controllers[0].text()
    assert "unsupported api key 18 version 5" not in controller_log

    # A Kafka 4.1.2 broker cannot join the 4.4-IV2 cluster (it supports up to 4.1-IV1).
    late = cluster.brokers[2]
    assert late.stop() in (0, 143)
    late.dist = kafka41
    late.start()
    try:
        wait_for(
            lambda: (
                "Unable to register broker 102 because the controller returned error "
                "UNSUPPORTED_VERSION" in late.text()
            ),
            "the 4.3.1 broker refused",
            60,
        )
    finally:
        late.kill()
