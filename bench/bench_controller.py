"""The metadata controller's speed (issue 15's benchmark):

    .venv/bin/python bench/bench_controller.py [--partitions 100000] [--topics 200]
        [--topic-partitions 50] [--concurrency 8] [--skip-create]

1. **Replay**: a metadata log of ``--partitions`` partitions (topics of 100 partitions, RF 3
   over 6 brokers, as a controller writes them: TopicRecord + PartitionRecords, plus the
   brokers' registrations and a few hundred ISR changes), framed as Kafka's records; the
   time to decode every value and replay it into a fresh image, as a standby or a restarting
   controller does (records/s and MB/s of record values), and the time to write the image
   back out as a snapshot's records.
2. **CreateTopics**: three pykraft controller processes (real TCP, fsync) and three brokers
   registered and kept unfenced by this script (BrokerRegistration / BrokerHeartbeat over
   the wire, as a Kafka broker sends them); ``--topics`` CreateTopics requests of
   ``--topic-partitions`` partitions each (RF 3), ``--concurrency`` in flight, each answered
   after its records committed: partitions committed per second.

Kafka's own figures for the same two measurements come with the real-cluster issue
(bench/REPORT.md puts them side by side once both exist).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import random
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from pykraft.metadata import records as r
from pykraft.metadata.image import Image
from pykraft.metadata.serde import decode_record, encode_record
from pykraft.metadata.versions import broker_registration_features
from pykraft.net.client import Connection
from pykraft.protocol import ApiKey
from pykraft.protocol.apis import request_schema
from pykraft.protocol.build import make

REPO = Path(__file__).resolve().parent.parent
CLUSTER_ID = "X5SvYNT7TJu0jYq2_o3_vg"


def build_log(partitions: int, brokers: int = 6) -> list[bytes]:
    rng = random.Random(1)
    values = [encode_record(r.FeatureLevelRecord(name="metadata.version", feature_level=25), 0)]
    dirs = {}
    for b in range(brokers):
        dirs[b] = uuid.UUID(int=(b + 1) << 64 | 1000)
        values.append(
            encode_record(
                r.RegisterBrokerRecord(
                    broker_id=b,
                    incarnation_id=uuid.uuid4(),
                    broker_epoch=len(values),
                    end_points=(
                        r.register_broker_record.BrokerEndpoint(
                            name="PLAINTEXT", host=f"broker{b}", port=9092, security_protocol=0
                        ),
                    ),
                    rack=f"rack{b % 3}",
                    fenced=False,
                    log_dirs=(dirs[b],),
                ),
                3,
            )
        )
    topic_ids = []
    for t in range(partitions // 100):
        tid = uuid.UUID(int=rng.getrandbits(128))
        topic_ids.append(tid)
        values.append(encode_record(r.TopicRecord(name=f"topic-{t}", topic_id=tid), 0))
        for p in range(100):
            replicas = tuple((t + p + i) % brokers for i in range(3))
            values.append(
                encode_record(
                    r.PartitionRecord(
                        partition_id=p,
                        topic_id=tid,
                        replicas=replicas,
                        isr=replicas,
                        leader=replicas[0],
                        directories=tuple(dirs[b] for b in replicas),
                    ),
                    2,
                )
            )
    for i in range(500):
        tid = topic_ids[i % len(topic_ids)]
        values.append(
            encode_record(
                r.PartitionChangeRecord(partition_id=i % 100, topic_id=tid, isr=(i % brokers,)),
                2,
            )
        )
    return values


def bench_replay(partitions: int) -> None:
    values = build_log(partitions)
    size = sum(len(v) for v in values)
    best = float("inf")
    image = Image()
    for _ in range(3):
        image = Image()
        started = time.perf_counter()
        for offset, value in enumerate(values):
            record, version = decode_record(value)
            image.replay(record, version, offset)
        best = min(best, time.perf_counter() - started)
    assert sum(1 for _ in image.all_partitions()) == partitions // 100 * 100
    started = time.perf_counter()
    out = image.records(2, 3)
    encoded = [encode_record(rec, ver) for rec, ver in out]
    write_s = time.perf_counter() - started
    print(
        f"replay: {len(values):,} records ({size / 1e6:.1f} MB of values, "
        f"{partitions:,} partitions) in {best:.2f} s = {len(values) / best:,.0f} records/s, "
        f"{size / best / 1e6:.1f} MB/s (best of 3)"
    )
    print(
        f"snapshot records: {len(encoded):,} written out in {write_s:.2f} s = "
        f"{len(encoded) / write_s:,.0f} records/s"
    )


# -- CreateTopics on a real quorum -----------------------------------------------------------


def start_quorum(tmp: Path) -> tuple[list[subprocess.Popen[bytes]], list[tuple[str, int]]]:
    sys.path.insert(0, str(REPO))
    from tests.node.procs import fmt, free_ports, make_config  # the tests' process helpers

    ports = free_ports(3)
    voters = ",".join(f"{i + 1}@127.0.0.1:{ports[i]}" for i in range(3))
    procs = []
    for i in range(3):
        p = make_config(
            tmp, i + 1, ports[i], voters=voters, extra="metadata.max.idle.interval.ms=500\n"
        )
        fmt(p)
        p.start()
        assert p.process is not None
        procs.append(p.process)
    return procs, [("127.0.0.1", port) for port in ports]


async def request(conn: Connection, api_key: int, version: int, fields: dict[str, Any]) -> Any:
    return await conn.request(make(request_schema(api_key, version), fields), timeout_ms=30_000)


async def active_controller(addresses: list[tuple[str, int]]) -> Connection:
    """A connection to the controller that accepts a heartbeat-less read: the leader."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for host, port in addresses:
            try:
                conn = await Connection.open(host, port, timeout_ms=2_000, client_id="bench")
            except OSError:
                continue
            m = await request(
                conn,
                ApiKey.BROKER_HEARTBEAT,
                1,
                {"broker_id": 999, "broker_epoch": 0, "current_metadata_offset": 0},
            )
            if int(m.error_code) != 41:  # NOT_CONTROLLER
                return conn
            conn.close()
        await asyncio.sleep(0.3)
    raise RuntimeError("no active controller")


async def bench_create(
    addresses: list[tuple[str, int]], topics: int, partitions: int, k: int
) -> None:
    conn = await active_controller(addresses)
    epochs = {}
    for b in range(3):
        m = await request(
            conn,
            ApiKey.BROKER_REGISTRATION,
            4,
            {
                "broker_id": b,
                "cluster_id": CLUSTER_ID,
                "incarnation_id": uuid.uuid4(),
                "listeners": [
                    {
                        "name": "PLAINTEXT",
                        "host": "127.0.0.1",
                        "port": 19092 + b,
                        "security_protocol": 0,
                    }
                ],
                "features": broker_registration_features(33),
                "rack": None,
                "log_dirs": [uuid.UUID(int=(b + 1) << 64 | 77)],
            },
        )
        assert int(m.error_code) == 0, m
        epochs[b] = int(m.broker_epoch)

    async def heartbeats() -> None:
        while True:
            for b, epoch in epochs.items():
                await request(
                    conn,
                    ApiKey.BROKER_HEARTBEAT,
                    1,
                    {"broker_id": b, "broker_epoch": epoch, "current_metadata_offset": 1 << 40},
                )
            await asyncio.sleep(1)

    beating = asyncio.ensure_future(heartbeats())
    await asyncio.sleep(1.5)  # unfenced
    names = iter(range(topics))
    done = 0

    async def worker() -> None:
        nonlocal done
        for t in names:
            m = await request(
                conn,
                ApiKey.CREATE_TOPICS,
                7,
                {
                    "topics": [
                        {
                            "name": f"bench-{t}",
                            "num_partitions": partitions,
                            "replication_factor": 3,
                        }
                    ],
                    "timeout": datetime.timedelta(seconds=30),
                },
            )
            assert int(m.topics[0].error_code) == 0, m
            done += partitions

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(k)))
    elapsed = time.perf_counter() - started
    beating.cancel()
    conn.close()
    print(
        f"create-topics: {topics} topics x {partitions} partitions (RF 3, {k} in flight) on 3 "
        f"controllers in {elapsed:.2f} s = {done / elapsed:,.0f} partitions/s committed, "
        f"{topics / elapsed:,.1f} topics/s"
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--topics", type=int, default=200)
    parser.add_argument("--topic-partitions", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--skip-create", action="store_true")
    args = parser.parse_args()
    bench_replay(args.partitions)
    if args.skip_create:
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="pykraft-bench-controller-"))
    procs: list[subprocess.Popen[bytes]] = []
    try:
        procs, addresses = start_quorum(tmp)
        asyncio.run(bench_create(addresses, args.topics, args.topic_partitions, args.concurrency))
    finally:
        for p in procs:
            p.kill()
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
