"""The metadata log's files across implementations (SPEC J2, B1, B11):

* Kafka's ``kafka-dump-log --cluster-metadata-decoder`` reads the segments and snapshots a
  pykraft node wrote, without an error, and shows the same batches (positions, offsets,
  epochs, CRCs, sizes) and records as pykraft's own readers;
* Kafka's ``kafka-metadata-shell`` opens a pykraft snapshot and shows its image;
* pykraft's storage opens a metadata log directory formatted (``kafka-storage format``) and
  written by a Kafka controller, and reads every batch and record of it.
"""

from __future__ import annotations

import asyncio
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pykraft.interop.kafka import KafkaDist, write_properties
from pykraft.metadata.records import (
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    FeatureLevelRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from pykraft.metadata.records.register_broker_record import BrokerEndpoint, BrokerFeature
from pykraft.metadata.serde import encode_record
from pykraft.node.config import load_config
from pykraft.node.driver import RaftNode
from pykraft.records import iter_batches
from pykraft.storage import (
    PARTITION_DIR_NAME,
    FileLog,
    FileQuorumStateStore,
    FileSnapshotStore,
    format_storage,
    read_meta_properties,
    read_snapshot,
)

from ..node.procs import CLUSTER_ID, free_ports
from .dumplog import feature_levels, kafka_dump, pykraft_dump, same_payload

pytestmark = pytest.mark.slow

TOPIC_ID = uuid.UUID("8f1c0b2e-5d4a-4c3b-9a2f-0e1d2c3b4a59")
DIR_ID = uuid.UUID("6a3f5c1e-2b4d-4e8f-9c7a-1d2e3f4a5b6c")
INCARNATION = uuid.UUID("0f0e0d0c-0b0a-4908-8706-050403020100")

# A small cluster's worth of metadata records, at the versions Kafka 4.x writes them.
RECORDS = [
    (FeatureLevelRecord(name="metadata.version", feature_level=21), 0),
    (
        RegisterBrokerRecord(
            broker_id=4,
            incarnation_id=INCARNATION,
            broker_epoch=3,
            end_points=(BrokerEndpoint(name="PLAINTEXT", host="127.0.0.1", port=9092),),
            features=(
                BrokerFeature(
                    name="metadata.version", min_supported_version=7, max_supported_version=21
                ),
            ),
            rack="r1",
            log_dirs=(DIR_ID,),
        ),
        3,
    ),
    (BrokerRegistrationChangeRecord(broker_id=4, broker_epoch=3, fenced=-1), 0),
    (TopicRecord(name="orders", topic_id=TOPIC_ID), 0),
    (
        ConfigRecord(
            resource_type=2, resource_name="orders", name="min.insync.replicas", value="1"
        ),
        0,
    ),
    (
        PartitionRecord(
            partition_id=0,
            topic_id=TOPIC_ID,
            replicas=(4,),
            isr=(4,),
            leader=4,
            leader_epoch=0,
            partition_epoch=0,
            directories=(DIR_ID,),
        ),
        1,
    ),
    (PartitionChangeRecord(partition_id=0, topic_id=TOPIC_ID, isr=(4,), leader=4), 1),
    (ProducerIdsRecord(broker_id=4, broker_epoch=3, next_producer_id=1000), 0),
]


def _single_voter(tmp: Path) -> Path:
    (port,) = free_ports(1)
    path = tmp / "n.properties"
    path.write_text(
        "node.id=1\nprocess.roles=controller\n"
        f"listeners=CONTROLLER://127.0.0.1:{port}\ncontroller.listener.names=CONTROLLER\n"
        f"metadata.log.dir={tmp / 'data'}\ncontroller.quorum.bootstrap.servers=127.0.0.1:{port}\n"
        "controller.quorum.append.linger.ms=1\n"
    )
    format_storage(load_config(path), CLUSTER_ID, standalone=True)
    return path


async def _write_pykraft_log(config: Path) -> None:
    """A standalone pykraft node: the records in three appends, then a snapshot holding all
    of them at the high watermark, then more appends after it."""
    values = [encode_record(r, v) for r, v in RECORDS]
    node = RaftNode(load_config(config))
    await node.start()
    try:
        assert node.core is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        while node.core.role != "leader":
            assert loop.time() < deadline
            await asyncio.sleep(0.01)
        for chunk in (values[:1], values[1:3], values[3:]):
            await node.wait_committed(await node.append(chunk))
        await node.create_snapshot(lambda w: w.append(values, node.now_ms()))
        await node.wait_committed(await node.append(values[-2:]))
    finally:
        await node.shutdown()


@pytest.fixture(scope="module")
def pykraft_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("pykraft-log")
    asyncio.run(_write_pykraft_log(_single_voter(tmp)))
    return tmp / "data" / PARTITION_DIR_NAME


def _files(partition: Path) -> list[Path]:
    return sorted(partition.glob("*.log")) + sorted(partition.glob("*.checkpoint"))


def test_kafka_dump_log_reads_what_pykraft_wrote(kafka: KafkaDist, pykraft_dir: Path) -> None:
    files = _files(pykraft_dir)
    assert any(f.suffix == ".checkpoint" for f in files) and any(f.suffix == ".log" for f in files)
    theirs = kafka_dump(kafka, *files)
    assert set(theirs) == {f.name for f in files}
    seen_types = set()
    for path in files:
        ours = pykraft_dump(path)
        assert [b.header() for b in theirs[path.name]] == [b.header() for b in ours], path.name
        for t_batch, o_batch in zip(theirs[path.name], ours, strict=True):
            assert [(r.offset, r.kind) for r in t_batch.records] == [
                (r.offset, r.kind) for r in o_batch.records
            ]
            for t_record, o_record in zip(t_batch.records, o_batch.records, strict=True):
                assert same_payload(o_record.payload, t_record.payload), (t_record, o_record)
                seen_types.add(t_record.kind)
    # Batches carry wall-clock CreateTime, as Kafka's do (not the node's monotonic clock).
    now_ms = time.time() * 1000
    stamps = [b.create_time_ms for batches in theirs.values() for b in batches]
    assert all(now_ms - 600_000 < t <= now_ms for t in stamps), stamps
    # Every record type this test wrote was decoded by Kafka, control records too.
    assert {
        "LeaderChange",
        "KRaftVersion",
        "KRaftVoters",
        "SnapshotHeader",
        "SnapshotFooter",
    } <= seen_types
    assert {"FEATURE_LEVEL_RECORD", "REGISTER_BROKER_RECORD", "PARTITION_RECORD"} <= seen_types


def test_kafka_metadata_shell_opens_a_pykraft_snapshot(
    kafka431: KafkaDist, pykraft_dir: Path
) -> None:
    snapshot = max(pykraft_dir.glob("*.checkpoint"))
    assert not snapshot.name.startswith("00000000000000000000-")

    def shell(*command: str, has: Callable[[str], bool]) -> bool:
        """Whether the command's output ``has`` what is expected. Kafka's shell runs a
        command as soon as its loader applied the first batch (MetadataShell's
        waitUntilCaughtUp: lastAppliedOffset > 0), so on a busy machine it may answer from
        part of the file: a command is run again, a few times, until it sees it."""
        out = ""
        for _ in range(4):  # 4.3.1's shell: kafka-shell 4.4.0 is not on Maven Central
            out = kafka431.run("metadata-shell", "--snapshot", str(snapshot), *command).stdout
            if has(out):
                return True
        print(command, out)
        return False

    assert shell("ls", "/image/topics/byName", has=lambda out: out.split() == ["orders"])
    assert shell(
        "cat",
        "/image/topics/byName/orders/0",
        has=lambda out: "replicas=[4]" in out and "isr=[4]" in out and "leader=4" in out,
    )
    assert shell("cat", "/image/features/metadataVersion", has=lambda out: "3.9-IV0" in out)
    assert shell(
        "cat",
        "/image/cluster/brokers/4",
        has=lambda out: (
            "id=4" in out
            and "epoch=3" in out
            and "fenced=false" in out
            and "rack=Optional[r1]" in out
        ),
    )
    assert shell("cat", "/image/producerIds/nextProducerId", has=lambda out: out.strip() == "1000")


@pytest.fixture(scope="module")
def kafka_dir(kafka: KafkaDist, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A Kafka controller's metadata log directory: formatted by ``kafka-storage format
    --standalone``, then run (activation records, its registration, NoOpRecords and two
    snapshots), then stopped."""
    tmp = tmp_path_factory.mktemp("kafka-log")
    (port,) = free_ports(1)
    config = write_properties(
        tmp / "controller.properties",
        {
            "process.roles": "controller",
            "node.id": 1,
            "controller.listener.names": "CONTROLLER",
            "listeners": f"CONTROLLER://127.0.0.1:{port}",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
            "log.dirs": tmp / "data",
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{port}",
            "metadata.log.max.snapshot.interval.ms": 1500,
            "metadata.max.idle.interval.ms": 100,
        },
    )
    kafka.format_storage(config, CLUSTER_ID, "--standalone")
    process = kafka.start("server", str(config), log=tmp / "controller.log")
    try:
        process.wait_for_line(r"Kafka Server started", 60)
        partition = tmp / "data" / PARTITION_DIR_NAME
        deadline = 60.0
        start = time.monotonic()
        while len(list(partition.glob("*.checkpoint"))) < 3:  # bootstrap + two snapshots
            assert time.monotonic() - start < deadline, process.tail()
            time.sleep(0.2)
    finally:
        process.stop()
    copy = tmp / "copy"
    shutil.copytree(tmp / "data", copy)  # pykraft rewrites the .index files it opens
    yield copy


def test_pykraft_reads_a_log_kafka_wrote(kafka: KafkaDist, kafka_dir: Path) -> None:
    meta = read_meta_properties(kafka_dir)
    assert meta is not None and meta.cluster_id == CLUSTER_ID and meta.node_id == 1
    assert meta.directory_id is not None
    partition = kafka_dir / PARTITION_DIR_NAME
    state = FileQuorumStateStore(partition).read()
    assert state is not None and state.leader_id == 1 and state.epoch >= 1

    # Batch for batch what Kafka's own tool shows, every record decoded by pykraft.
    files = _files(partition)
    theirs = kafka_dump(kafka, *files)
    kinds = set()
    for path in files:
        ours = pykraft_dump(path)
        assert [b.header() for b in ours] == [b.header() for b in theirs[path.name]], path.name
        for t_batch, o_batch in zip(theirs[path.name], ours, strict=True):
            for t_record, o_record in zip(t_batch.records, o_batch.records, strict=True):
                assert (t_record.offset, t_record.kind) == (o_record.offset, o_record.kind)
                assert same_payload(o_record.payload, t_record.payload), (t_record, o_record)
                kinds.add(o_record.kind)
    assert {
        "FEATURE_LEVEL_RECORD",
        "BEGIN_TRANSACTION_RECORD",
        "REGISTER_CONTROLLER_RECORD",
        "NO_OP_RECORD",
    } <= kinds

    # The log and snapshot stores open it as a starting node would.
    with FileLog.open(partition) as log:
        assert log.start_offset == 0 and log.end_offset > 10
        assert sum(1 for _ in _log_batches(log)) == len(theirs[files[0].name])
    snapshots = FileSnapshotStore.open(partition)
    latest = snapshots.latest()
    assert latest is not None and latest.offset > 0
    contents = read_snapshot(snapshots, latest)
    assert contents.kraft_version == 1 and contents.voters is not None
    assert contents.records  # the controller's image, as metadata records


def _log_batches(log: FileLog) -> Iterator[int]:
    offset = log.start_offset
    while offset < log.end_offset:
        data = log.read(offset, 1 << 20)
        for header, _ in iter_batches(data):
            yield header.base_offset
            offset = header.next_offset


def test_kafka_reads_pykrafts_bootstrap_checkpoint(kafka: KafkaDist, tmp_path: Path) -> None:
    """``bootstrap.checkpoint`` from ``pykraft storage format`` (default 4.4-IV2, Kafka
    4.4.0's) is the file Kafka's format writes: Kafka's dump tool decodes its
    FeatureLevelRecords, metadata.version first and the release's default features after it,
    by name (Kafka's ``BootstrapMetadata``)."""
    config = _single_voter(tmp_path)  # formats (default metadata.version 4.4-IV2 = 33)
    del config
    assert feature_levels(kafka, tmp_path / "data" / "bootstrap.checkpoint") == [
        ("metadata.version", 33),
        ("eligible.leader.replicas.version", 1),
        ("group.version", 1),
        ("share.version", 2),
        ("streams.version", 1),
        ("transaction.version", 2),
    ]
