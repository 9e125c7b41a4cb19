"""Kafka clusters side by side: the same three Apache Kafka 4.3.1 brokers once on three pykraft
controllers and once on three Kafka controllers, same machine, same run (issue 16).

    .venv/bin/python bench/wl_cluster.py [--quick] [--only parity,heartbeats,catchup]

Measured on each, in this order, with Kafka's default timeouts on both sides (broker session
9 s, heartbeat 2 s):

* ``running_s``: from starting every process to every broker RUNNING (its log's
  "Kafka Server started");
* ``fence_s`` / ``leaders_s``: a broker kill -9'd; until the surviving brokers' metadata no
  longer lists it (the controller fenced it), and until no partition of a 12-partition RF 3
  topic is led by it;
* ``failover_s``: the active controller kill -9'd; until the next CreateTopics through a broker
  succeeds;
* ``create_partitions_s``: CreateTopics through the brokers, 100 topics of 10 partitions RF 3 in
  requests of 10 topics: partitions committed per second;
* ``heartbeats``: 1,000 simulated brokers (this script speaking BrokerRegistration and
  BrokerHeartbeat to the active controller over TCP, every 2 s each) for ``HEARTBEAT_S``: the
  heartbeat latency p50/p99 and the active controller's CPU (utime+stime from /proc);
* ``catchup_s``: with 100,000 partitions in the metadata (on the simulated brokers), a new real
  broker from start to RUNNING (it replays the whole metadata log).

Lines of JSON on stdout, one per measurement; ``run_all.py --only cluster`` reports them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from kafka import KafkaAdminClient
from kafka.admin import NewTopic
from kafka.errors import KafkaError

from pykraft.interop.cluster import BROKER_STARTED, LocalCluster, Server
from pykraft.interop.kafka import KafkaDist, write_properties
from pykraft.metadata.versions import broker_registration_features
from pykraft.net.client import Connection
from pykraft.protocol import ApiKey
from pykraft.protocol.apis import request_schema
from pykraft.protocol.build import make

HEARTBEAT_S = 30
SIM_BROKERS = 1_000
FEATURES = broker_registration_features(33)  # a Kafka 4.4.0 broker's


def emit(row: dict[str, Any]) -> None:
    print(json.dumps(row), flush=True)


def wait(predicate: Any, timeout_s: float, what: str, step_s: float = 0.05) -> float:
    started = time.monotonic()
    last: Exception | None = None
    while True:
        try:
            if predicate():
                return time.monotonic() - started
        except Exception as e:
            last = e
        if time.monotonic() - started > timeout_s:
            raise TimeoutError(f"{what} (last error: {last!r})")
        time.sleep(step_s)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime


# -- parity -----------------------------------------------------------------------------------


def parity(kind: str, dist: KafkaDist, work: Path, quick: bool) -> dict[str, Any]:
    cluster = LocalCluster(dist, work / kind, controllers=3, brokers=3, controller_kind=kind)
    row: dict[str, Any] = {"bench": "cluster_parity", "controllers": kind}
    try:
        started = time.monotonic()
        cluster.start(wait=True)
        row["running_s"] = round(time.monotonic() - started, 2)
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30_000)
        admin.create_topics([NewTopic("parity", 12, 3)])

        def leaders() -> dict[int, int]:
            described = admin.describe_topics(["parity"])[0]
            return {p["partition_index"]: p["leader_id"] for p in described["partitions"]}

        wait(lambda: len(leaders()) == 12 and all(v >= 0 for v in leaders().values()), 60, "led")
        victim = cluster.brokers[1]
        other = KafkaAdminClient(bootstrap_servers=cluster.brokers[0].address)
        victim.kill()
        killed = time.monotonic()
        wait(
            lambda: (
                victim.node_id
                not in [
                    b["broker_id"]
                    for b in other.describe_cluster()["brokers"]
                    if not b.get("is_fenced", False)
                ]
            ),
            60,
            "fenced",
        )
        row["fence_s"] = round(time.monotonic() - killed, 2)
        wait(lambda: victim.node_id not in leaders().values(), 60, "leaders moved")
        row["leaders_s"] = round(time.monotonic() - killed, 2)
        # Its log keeps the first start's lines: wait for this start's (before, the first
        # line matched at once and the controller was killed while the broker was still
        # registering, so the new controller had two usable brokers for RF 3).
        restarted_at = len(victim.text())
        victim.start()
        victim.wait_for(BROKER_STARTED, after=restarted_at)
        leader = cluster.leader()
        leader.kill()
        killed = time.monotonic()
        n = 0
        retries: list[str] = []

        def created() -> bool:
            # kafka-python's admin client keeps the "controller" broker an older Metadata
            # answer named (UnknownBrokerIdError once it is not in the client's metadata):
            # after an error the next try uses a new client, as an application would; the
            # errors are reported in the row.
            nonlocal n, admin
            n += 1
            try:
                admin.create_topics([NewTopic(f"failover-{n}", 1, 3)], timeout_ms=5_000)
            except KafkaError as e:
                retries.append(type(e).__name__)
                admin.close()
                admin = KafkaAdminClient(
                    bootstrap_servers=cluster.bootstrap, request_timeout_ms=30_000
                )
                raise
            return True

        wait(created, 120, "CreateTopics after the failover", step_s=0.1)
        row["failover_retries"] = ",".join(retries) or "none"
        row["failover_s"] = round(time.monotonic() - killed, 2)
        leader.start()
        topics = 20 if quick else 100
        started = time.monotonic()
        for batch in range(0, topics, 10):
            admin.create_topics([NewTopic(f"ct-{i}", 10, 3) for i in range(batch, batch + 10)])
        elapsed = time.monotonic() - started
        row["create_partitions_per_s"] = round(topics * 10 / elapsed)
        other.close()
        admin.close()
    finally:
        cluster.kill()
    return row


# -- simulated brokers ------------------------------------------------------------------------


async def call(conn: Connection, api_key: int, version: int, fields: dict[str, Any]) -> Any:
    return await conn.request(make(request_schema(api_key, version), fields), timeout_ms=30_000)


async def active(cluster: LocalCluster) -> tuple[Server, Connection]:
    # LocalCluster.leader runs its own event loop: in a worker thread here.
    leader = await asyncio.get_running_loop().run_in_executor(None, cluster.leader)
    host, port = leader.address.split(":")
    return leader, await Connection.open(host, int(port), timeout_ms=5_000, client_id="bench")


class SimBrokers:
    """``count`` brokers registered by this script and kept unfenced by its heartbeats."""

    def __init__(self, cluster_id: str, count: int, first_id: int = 1_000) -> None:
        self.cluster_id = cluster_id
        self.ids = list(range(first_id, first_id + count))
        self.epochs: dict[int, int] = {}
        self.latencies_ms: list[float] = []
        # Heartbeats go over this pool, one request per connection at a time, as real brokers
        # (each its own connection) send them: Kafka's servers answer a connection's requests
        # one by one, so one shared connection would measure its queue, not the controller.
        self.pool: list[Connection] = []

    async def register(self, conn: Connection) -> None:
        deadline = time.monotonic() + 60
        for b in self.ids:
            m = await self._register(conn, b)
            # The raft leader may not have activated its controller yet (NOT_CONTROLLER).
            while int(m.error_code) == 41 and time.monotonic() < deadline:
                await asyncio.sleep(0.5)
                m = await self._register(conn, b)
            assert int(m.error_code) == 0, m
            self.epochs[b] = int(m.broker_epoch)

    async def _register(self, conn: Connection, b: int) -> Any:
        return await call(
            conn,
            ApiKey.BROKER_REGISTRATION,
            4,
            {
                "broker_id": b,
                "cluster_id": self.cluster_id,
                "incarnation_id": uuid.uuid4(),
                "listeners": [
                    {
                        "name": "PLAINTEXT",
                        "host": "127.0.0.1",
                        "port": 1,
                        "security_protocol": 0,
                    }
                ],
                "features": FEATURES,
                "rack": None,
                "log_dirs": [uuid.UUID(int=(b << 64) | 4242)],
            },
        )

    async def beat_all(self, conn: Connection, measure: bool) -> None:
        # At most 50 in flight: the connection allows 64.
        for i in range(0, len(self.ids), 50):
            await asyncio.gather(*(self._beat(conn, b, measure) for b in self.ids[i : i + 50]))

    async def keep_alive(self, conn: Connection, seconds: float, measure: bool) -> None:
        """Each broker heartbeats every 2 s, spread over the interval."""
        end = time.monotonic() + seconds
        slices = 20
        while time.monotonic() < end:
            for s in range(slices):
                chunk = self.ids[s::slices]
                started = time.monotonic()
                await asyncio.gather(*(self._beat(conn, b, measure) for b in chunk))
                await asyncio.sleep(max(0.0, 2.0 / slices - (time.monotonic() - started)))

    async def _beat(self, conn: Connection, b: int, measure: bool) -> None:
        if self.pool:
            conn = self.pool[b % len(self.pool)]
        started = time.perf_counter()
        m = await call(
            conn,
            ApiKey.BROKER_HEARTBEAT,
            1,
            {
                "broker_id": b,
                "broker_epoch": self.epochs[b],
                "current_metadata_offset": 1 << 40,
                "want_fence": False,
            },
        )
        if measure and int(m.error_code) == 0:
            self.latencies_ms.append((time.perf_counter() - started) * 1000)


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)


def heartbeats_and_catchup(
    kind: str, dist: KafkaDist, work: Path, quick: bool, only: set[str], brokers: int | None
) -> list[dict[str, Any]]:
    cluster = LocalCluster(
        dist, work / f"{kind}-load", controllers=3, brokers=0, controller_kind=kind
    )
    rows: list[dict[str, Any]] = []
    count = brokers or (200 if quick else SIM_BROKERS)
    try:
        cluster.start(wait=False)
        time.sleep(3)

        async def go() -> None:
            leader, conn = await active(cluster)
            sims = SimBrokers(cluster.cluster_id, count)
            await sims.register(conn)
            host, port = leader.address.split(":")
            sims.pool = [
                await Connection.open(host, int(port), timeout_ms=5_000, client_id=f"sim{i}")
                for i in range(50)
            ]
            await sims.beat_all(conn, measure=False)  # unfenced
            if "heartbeats" in only:
                assert leader.process is not None
                cpu_before = cpu_seconds(leader.process.pid)
                seconds = 10 if quick else HEARTBEAT_S
                await sims.keep_alive(conn, seconds, measure=True)
                cpu = cpu_seconds(leader.process.pid) - cpu_before
                rows.append(
                    {
                        "bench": "cluster_heartbeats",
                        "controllers": kind,
                        "brokers": count,
                        "seconds": seconds,
                        "heartbeats": len(sims.latencies_ms),
                        "p50_ms": percentile(sims.latencies_ms, 0.5),
                        "p99_ms": percentile(sims.latencies_ms, 0.99),
                        "controller_cpu_pct": round(cpu / seconds * 100, 1),
                    }
                )
            if "catchup" in only:
                partitions = 10_000 if quick else 100_000
                keep = asyncio.ensure_future(sims.keep_alive(conn, 3_600, measure=False))
                for t in range(partitions // 100):
                    m = await call(
                        conn,
                        ApiKey.CREATE_TOPICS,
                        7,
                        {
                            "topics": [
                                {"name": f"big-{t}", "num_partitions": 100, "replication_factor": 1}
                            ],
                            "timeout": 60_000,
                        },
                    )
                    assert int(m.topics[0].error_code) == 0, m
                broker = new_broker(cluster, dist, work / f"{kind}-load")
                started = time.monotonic()
                broker.start()
                await asyncio.get_running_loop().run_in_executor(
                    None, lambda: broker.wait_for(BROKER_STARTED, 600)
                )
                rows.append(
                    {
                        "bench": "cluster_catchup",
                        "controllers": kind,
                        "partitions": partitions,
                        "catchup_s": round(time.monotonic() - started, 2),
                    }
                )
                keep.cancel()
                broker.kill()
            conn.close()
            for pooled in sims.pool:
                pooled.close()

        asyncio.run(go())
    finally:
        cluster.kill()
    return rows


def new_broker(cluster: LocalCluster, dist: KafkaDist, base: Path) -> Server:
    from pykraft.interop.cluster import free_ports

    (port,) = free_ports(1)
    data = base / "broker200"
    config = write_properties(
        base / "broker200.properties",
        {
            "process.roles": "broker",
            "node.id": 200,
            "controller.listener.names": "CONTROLLER",
            "listeners": f"PLAINTEXT://127.0.0.1:{port}",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": data,
            "controller.quorum.voters": cluster.voters,
        },
    )
    dist.format_storage(config, cluster.cluster_id)
    return Server(200, "broker", port, config, data, base / "broker200.log", dist)


async def _create_topic(conn: Connection, name: str) -> int:
    """CreateTopics v7 of one topic (1 partition, RF 3) through a broker: its error code."""
    m: Any = await conn.request(
        make(
            request_schema(ApiKey.CREATE_TOPICS, 7),
            {
                "topics": [
                    {
                        "name": name,
                        "num_partitions": 1,
                        "replication_factor": 3,
                        "assignments": [],
                        "configs": [],
                    }
                ],
                "timeout": 5_000,
                "validate_only": False,
            },
        ),
        timeout_ms=6_000,
    )
    return int(m.topics[0].error_code)


async def _quorum_leader(bootstrap: str) -> tuple[int, int] | None:
    from pykraft.admin import AdminClient

    try:
        async with AdminClient(bootstrap, timeout_ms=1_000, request_timeout_ms=500) as admin:
            q = await admin.describe_quorum()
            return int(q.leader_id), int(q.leader_epoch)
    except Exception:
        return None


def failovers(kind: str, dist: KafkaDist, work: Path, reps: int) -> dict[str, Any]:
    """``reps`` kill -9s of the active controller on one cluster: from the kill to a new
    quorum leader (DescribeQuorum at the survivors), to the first CreateTopics through a broker
    answered NONE (our own client: what is timed is the controllers, not a client's metadata
    refresh); the victim restarts and rejoins before the next."""
    cluster = LocalCluster(
        dist, work / f"failover-{kind}", controllers=3, brokers=3, controller_kind=kind
    )
    elected: list[float] = []
    created: list[float] = []
    try:
        cluster.start(wait=True)

        async def go() -> None:
            host, port = cluster.brokers[0].address.split(":")
            conn = await Connection.open(host, int(port), timeout_ms=5_000, client_id="bench")
            assert await _create_topic(conn, "warm") == 0
            for rep in range(reps):
                victim = await asyncio.get_running_loop().run_in_executor(None, cluster.leader)
                before = await _quorum_leader(cluster.bootstrap_controllers)
                assert before is not None
                survivors = ",".join(c.address for c in cluster.controllers if c is not victim)
                victim.kill()
                killed = time.monotonic()
                seen_leader: float | None = None
                while time.monotonic() - killed < 120:
                    if seen_leader is None:
                        now_leader = await _quorum_leader(survivors)
                        if now_leader is not None and now_leader[1] > before[1]:
                            seen_leader = time.monotonic() - killed
                    try:
                        if conn.closed:
                            conn = await Connection.open(
                                host, int(port), timeout_ms=5_000, client_id="bench"
                            )
                        if await _create_topic(conn, f"failover-{rep}") == 0:
                            break
                    except (ConnectionError, TimeoutError, OSError):
                        pass
                    await asyncio.sleep(0.05)
                else:
                    raise TimeoutError(f"{kind}: no CreateTopics within 120 s of kill {rep}")
                created.append(time.monotonic() - killed)
                elected.append(seen_leader if seen_leader is not None else created[-1])
                victim.start()
                await asyncio.sleep(8)  # the victim back as a follower before the next kill
            conn.close()

        asyncio.run(go())
    finally:
        cluster.kill()
    return {
        "bench": "cluster_failover",
        "controllers": kind,
        "reps": reps,
        "elected_s": [round(x, 2) for x in elected],
        "create_topics_s": [round(x, 2) for x in created],
        "create_topics_p50_s": round(sorted(created)[len(created) // 2], 2),
        "elected_p50_s": round(sorted(elected)[len(elected) // 2], 2),
    }


def run_cluster(
    work: Path,
    *,
    quick: bool,
    only: set[str],
    log: Any = print,
    kinds: tuple[str, ...] = ("pykraft", "kafka"),
    brokers: int | None = None,
    failover_reps: int = 10,
    parity_reps: int = 1,
) -> list[dict[str, Any]]:
    dist = KafkaDist.get("4")
    rows: list[dict[str, Any]] = []
    for rep in range(parity_reps if "parity" in only else 0):
        for kind in kinds:  # interleaved: one cluster of each kind per repetition
            row = parity(kind, dist, work / f"rep-{rep}", quick)
            rows.append({**row, "rep": rep})
            log(f"  parity {kind} #{rep}: {rows[-1]}")
    if parity_reps > 1:
        rows += parity_medians([r for r in rows if r["bench"] == "cluster_parity"])
    for kind in kinds:
        if "failover" in only:
            rows.append(failovers(kind, dist, work, failover_reps))
            log(f"  failover {kind}: {rows[-1]}")
    for kind in kinds:
        if only & {"heartbeats", "catchup"}:
            for row in heartbeats_and_catchup(kind, dist, work, quick, only, brokers):
                rows.append(row)
                log(f"  {row['bench']} {kind}: {row}")
    return rows


def parity_medians(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per controller kind, the median of each parity figure over the repetitions."""
    out = []
    for kind in sorted({r["controllers"] for r in rows}):
        mine = [r for r in rows if r["controllers"] == kind]
        summary: dict[str, Any] = {
            "bench": "cluster_parity_median",
            "controllers": kind,
            "reps": len(mine),
        }
        for key in ("running_s", "fence_s", "leaders_s", "failover_s", "create_partitions_per_s"):
            values = sorted(r[key] for r in mine if key in r)
            if values:
                summary[key] = values[len(values) // 2]
        out.append(summary)
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default="parity,heartbeats,catchup")
    parser.add_argument("--reps", type=int, default=10, help="kills in the failover phase")
    parser.add_argument(
        "--parity-reps", type=int, default=3, help="clusters of each kind in the parity phase"
    )
    parser.add_argument("--kinds", default="pykraft,kafka", help="controllers to measure")
    parser.add_argument(
        "--brokers", type=int, default=None, help="simulated brokers (default 1,000)"
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="pykraft-bench-cluster-"))
    try:
        for row in run_cluster(
            work,
            quick=args.quick,
            only=set(args.only.split(",")),
            log=lambda s: print(s, file=sys.stderr),
            kinds=tuple(args.kinds.split(",")),
            brokers=args.brokers,
            failover_reps=args.reps,
            parity_reps=args.parity_reps,
        ):
            emit(row)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
