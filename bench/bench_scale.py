"""Cost curves at 10,000 / 100,000 / 1,000,000 partitions: pykraft's controllers beside Apache
Kafka 4.3.1's, same machine, same run (issue 30).

    .venv/bin/python bench/bench_scale.py [--partitions 10000 100000 1000000] [--reps 2]

For each size the image (topics of 100 partitions, RF 3, six brokers) is built once in memory
by pykraft's controller (``sim/standalone.py``) and laid down as the snapshot two controllers
of a three-voter static quorum start from, as a quorum that ran a long time would have it;
the third starts empty. The same snapshot file goes to both kinds (Kafka's controller reads
the records pykraft writes: they are Kafka's). Brokers in the image never heartbeat here, so
``broker.session.timeout.ms`` is an hour on both sides. Then, on each side:

* ``ready_s``: from the spawn of the three controllers to the first CreateTopics (one
  partition, RF 3, sent to the controllers) answered NONE: two snapshot loads, an election,
  the active controller's activation;
* ``standby_catchup_s``: from the same spawn until the empty controller's log end offset, as
  the leader reports it (DescribeQuorum), passed the snapshot: FetchSnapshot of the whole
  image and the log after it;
* ``rss_mb`` of each controller, and for Kafka the heap in use after a full GC
  (``jcmd GC.run`` then ``GC.heap_info``); per partition in bytes;
* ``create_partitions_per_s``: 20 CreateTopics of 10 topics x 10 partitions, one after the
  other, on the loaded controller;
* ``snapshot_write_s``: with ``metadata.log.max.record.bytes.between.snapshots`` at
  ``SNAPSHOT_BYTES`` on both sides, topics created until a controller begins a snapshot;
  each controller's time to write it (``snapshot_write_s``'s docstring);
* ``failover_s``: kill -9 of the active controller to the next CreateTopics answered NONE by
  a survivor (``--reps`` times; the victim restarts and is caught up before the next);
* ``restart_s``: that victim, from its spawn (it loads its own snapshot or the seeded one,
  and its log) until its log end offset reaches the leader's high watermark (raft level);
  ``restart_image_s`` until its image is loaded and replayed to the high watermark (the line
  ``IMAGE_CAUGHT_UP`` in its log: Kafka's MetadataLoader's, pykraft's host's), when it can
  lead: the next repetition's kill waits for it;
* ``broker_start_s`` / ``broker_restart_s``: a real Kafka 4.3.1 broker (node 100, in no
  replica set: what it costs is the metadata, not logs) from its spawn to "Kafka Server
  started" (RUNNING: registered, caught up with the metadata log, unfenced), first with an
  empty directory (the whole image fetched from the active controller), then after a clean
  stop (its own metadata snapshot and log, then the tail);
* ``snapshot_bytes``: the seeded snapshot's size (the same for both);
* pykraft only: ``standby_loop_max_ms``, the longest the empty controller's 10 ms timer ran
  late (``pykraft_event_loop_lag_max_ever_ms``) while it installed the snapshot, and
  ``start_loop_max_ms`` of the two that loaded it at start; ``standby_held_max_ms`` and
  ``start_held_max_ms`` the same less the time the loop's thread waited for a core
  (``pykraft_event_loop_held_max_ever_ms``, node/loop_lag.py): the loop held by the node.

The broker-count axis (``--brokers``, default 100 / 1,000 / 5,000): on a fresh three-
controller quorum of each kind, that many simulated brokers (``wl_cluster.SimBrokers``:
BrokerRegistration, then a heartbeat every 2 s each, Kafka's default interval, over a pool
of connections) for ``wl_cluster.HEARTBEAT_S`` seconds: heartbeat p50/p99 and the active
controller's CPU.

Kafka's controllers run with ``-Xmx4g`` (its 1 GB default would not hold a million
partitions) and otherwise this project's server JVM options (G1, full JIT). Prints one JSON
line per (size, side), then a Markdown table (bench/ANALYSIS.md section 18). ``run_all.py
--only scale`` runs the same (``run_scale``) and plots the curves.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pykraft.admin import AdminClient
from pykraft.controller.snapshot_generator import SnapshotGenerator
from pykraft.interop.cluster import BROKER_STARTED, LocalCluster, Server
from pykraft.interop.kafka import SERVER_JVM_ENV, KafkaDist
from pykraft.net.client import Connection
from pykraft.protocol import ApiKey
from pykraft.protocol.apis import request_schema
from pykraft.protocol.build import make
from pykraft.raft.types import OffsetAndEpoch
from pykraft.sim.standalone import build_cluster
from pykraft.storage import PARTITION_DIR_NAME, lay_down_compacted

PER_TOPIC = 100
METADATA_VERSION = 25  # 4.0-IV3: LocalCluster's release on both sides
KAFKA_JVM = "-Xms512m -Xmx4g -XX:+UseG1GC -XX:MaxGCPauseMillis=20"
STEP_S = 600.0
# Both kinds snapshot after this many bytes of records (Kafka's config, pykraft's too): the
# CreateTopics phase stays under it, the snapshot step goes past it.
SNAPSHOT_BYTES = 1_000_000
CONTROLLER_CONFIG = {
    "broker.session.timeout.ms": 3_600_000,
    "metadata.log.max.record.bytes.between.snapshots": SNAPSHOT_BYTES,
}
# pykraft's controllers log where their loop's thread is when it is held past the goal
# (node/loop_lag.py's watchdog): a held loop in the table comes with what held it.
PYKRAFT_CONFIG = {"pykraft.event.loop.stall.stack.ms": 100}
STALL_STACK = (
    r"event loop is (\d+) ms late \((\S+) ms of it waiting for a core\); "
    r"its thread is at:\n((?:  .*\n)+)"
)
# A snapshot written (and Kafka's begun), as each kind logs it.
SNAPSHOT_WRITTEN = {
    "pykraft": r"(?m)^(\S+ \S+) .*metadata snapshot written .* in (\d+) ms",
    "kafka": r"(?m)^\[(\S+ \S+)\] INFO .*Successfully wrote snapshot",
}
KAFKA_BEGUN = r"(?m)^\[(\S+ \S+)\] INFO .*Creating new KRaft snapshot file"
NOT_CONTROLLER = 41
# The line each kind logs once its image is loaded and replayed up to the high watermark.
IMAGE_CAUGHT_UP = {
    "pykraft": "metadata image caught up",
    "kafka": "The loader finished catching up to the current high water mark",
}


def emit(row: dict[str, Any]) -> None:
    print(json.dumps(row), flush=True)


def snapshot_values(partitions: int) -> tuple[list[bytes], OffsetAndEpoch]:
    cluster = build_cluster(METADATA_VERSION, partitions // PER_TOPIC, PER_TOPIC)
    assert cluster.c.image.topics_image.partition_count == partitions
    values = SnapshotGenerator(cluster.c.image, cluster.offset).all_values()
    return values, OffsetAndEpoch(len(values) + 1000, 1)


def lay_down(
    server: Server, sid: OffsetAndEpoch, values: list[bytes], voters: tuple[int, ...]
) -> int:
    """``server``'s formatted directory as if its log had been compacted into ``sid``; the
    snapshot file's size."""
    partition = server.data / PARTITION_DIR_NAME
    lay_down_compacted(partition, sid, values, voters)
    return sum(f.stat().st_size for f in partition.glob("*.checkpoint"))


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def kafka_heap_used_mb(pid: int) -> float | None:
    """The JVM's heap in use after a full collection (``jcmd``)."""
    try:
        subprocess.run(["jcmd", str(pid), "GC.run"], capture_output=True, timeout=120)
        out = subprocess.run(
            ["jcmd", str(pid), "GC.heap_info"], capture_output=True, text=True, timeout=60
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"used (\d+)K", out)
    return int(m.group(1)) / 1024 if m else None


async def describe(bootstrap: str) -> Any:
    async with AdminClient(bootstrap, timeout_ms=2_000, request_timeout_ms=2_000) as admin:
        return await admin.describe_quorum()


async def create_topics(conn: Connection, names: list[str], partitions: int) -> int:
    """CreateTopics v7 to a controller; the first non-NONE error code, or 0."""
    m: Any = await conn.request(
        make(
            request_schema(ApiKey.CREATE_TOPICS, 7),
            {
                "topics": [
                    {
                        "name": name,
                        "num_partitions": partitions,
                        "replication_factor": 3,
                        "assignments": [],
                        "configs": [],
                    }
                    for name in names
                ],
                "timeout": 30_000,
                "validate_only": False,
            },
        ),
        timeout_ms=60_000,
    )
    return next((int(t.error_code) for t in m.topics if int(t.error_code)), 0)


async def unregister_broker(conn: Connection, broker_id: int) -> int:
    """UnregisterBroker v0 to a controller; its error code."""
    m: Any = await conn.request(
        make(request_schema(ApiKey.UNREGISTER_BROKER, 0), {"broker_id": broker_id}),
        timeout_ms=60_000,
    )
    return int(m.error_code)


class Controllers:
    """A connection to whichever controller is active, found by trying each."""

    def __init__(self, servers: list[Server]) -> None:
        self.servers = servers
        self.conn: Connection | None = None

    async def create(self, names: list[str], partitions: int, deadline_s: float) -> float:
        """Retry until the topics are created; the seconds it took."""
        return await self.call(
            lambda conn: create_topics(conn, names, partitions),
            f"CreateTopics {names[:1]}",
            deadline_s,
        )

    async def unregister(self, broker_id: int, deadline_s: float) -> float:
        """UnregisterBroker (what ``kafka-cluster.sh unregister`` sends); the seconds."""
        return await self.call(
            lambda conn: unregister_broker(conn, broker_id), "UnregisterBroker", deadline_s
        )

    async def call(
        self, send: Callable[[Connection], Awaitable[int]], what: str, deadline_s: float
    ) -> float:
        """Retry ``send`` on each controller in turn until it answers NONE; the seconds."""
        started = time.monotonic()
        while time.monotonic() - started < deadline_s:
            for server in self.servers:
                if not server.running:
                    continue
                try:
                    if self.conn is None or self.conn.closed:
                        host, port = server.address.split(":")
                        self.conn = await Connection.open(
                            host, int(port), timeout_ms=2_000, client_id="bench-scale"
                        )
                    code = await send(self.conn)
                except (ConnectionError, TimeoutError, OSError):
                    code = -1
                if code == 0:
                    return time.monotonic() - started
                if self.conn is not None:
                    self.conn.abort()
                self.conn = None
            await asyncio.sleep(0.05)
        raise TimeoutError(f"{what} not answered NONE in {deadline_s} s")

    def close(self) -> None:
        if self.conn is not None:
            self.conn.abort()


async def wait_log_end(bootstrap: str, node_id: int, offset: int, deadline_s: float) -> float:
    """Until the leader reports ``node_id``'s log end offset at or past ``offset``."""
    started = time.monotonic()
    while time.monotonic() - started < deadline_s:
        with contextlib.suppress(Exception):
            info = await describe(bootstrap)
            ends = {v.replica_id: v.log_end_offset for v in info.voters}
            if ends.get(node_id, -1) >= offset:
                return time.monotonic() - started
        await asyncio.sleep(0.1)
    raise TimeoutError(f"controller {node_id} not at {offset} within {deadline_s} s")


def _stamp(text: str) -> float:
    """A log line's ``YYYY-MM-DD HH:MM:SS,mmm`` as seconds."""
    return time.mktime(time.strptime(text[:19], "%Y-%m-%d %H:%M:%S")) + int(text[20:23]) / 1000


async def broker_start_s(broker: Server, ctl: Controllers, row: dict[str, Any]) -> None:
    """``broker_start_s``: spawn to RUNNING with an empty directory; ``broker_restart_s``:
    again with its data after a clean stop (SIGTERM, a controlled shutdown) and
    UnregisterBroker. Without the unregistration both kinds of controller answer the new
    incarnation DUPLICATE_BROKER_REGISTRATION until the old one's session expires (Kafka
    4.x's ``hasValidSession``: fenced or not), an hour in this bench whose image brokers never
    heartbeat; a refusal is still ``broker_error``."""
    loop = asyncio.get_running_loop()
    for key in ("broker_start_s", "broker_restart_s"):
        after = len(broker.text())
        spawned = time.monotonic()
        broker.start()
        try:
            await loop.run_in_executor(
                None, lambda a=after: broker.wait_for(BROKER_STARTED, STEP_S, after=a)
            )
        except (TimeoutError, RuntimeError) as e:
            refused = "DUPLICATE_BROKER_REGISTRATION" in broker.text()[after:]
            row["broker_error"] = "DUPLICATE_BROKER_REGISTRATION" if refused else str(e)[:300]
            broker.kill()
            return
        row[key] = round(time.monotonic() - spawned, 2)
        await loop.run_in_executor(None, broker.stop)
        if key == "broker_start_s":
            await ctl.unregister(broker.node_id, STEP_S)


async def snapshot_write_s(kind: str, servers: list[Server], ctl: Controllers) -> list[float]:
    """Topics of 100 partitions created until every controller wrote a snapshot (past
    ``SNAPSHOT_BYTES``); each controller's time to write its snapshot: pykraft's own
    figure (the generator's start to the file made durable and published), Kafka's from its
    "Creating new KRaft snapshot file" line to its "Successfully wrote" line."""
    after = [len(c.text()) for c in servers]
    # Each controller counts its own bytes (a restarted one from its load): topics until all
    # three have written one.
    written: dict[int, re.Match[str]] = {}
    for batch in range(200):
        for c, a in zip(servers, after, strict=True):
            if c.node_id not in written and (m := re.search(SNAPSHOT_WRITTEN[kind], c.text()[a:])):
                written[c.node_id] = m
        if len(written) == len(servers):
            break
        await ctl.create([f"snap-{batch}-{i}" for i in range(10)], 100, STEP_S)
        await asyncio.sleep(0.3)
    else:
        raise TimeoutError(f"snapshots written by {sorted(written)} only")
    seconds = []
    for c, a in zip(servers, after, strict=True):
        done = written[c.node_id]
        if kind == "pykraft":
            seconds.append(int(done.group(2)) / 1000)
        else:
            begun = re.search(KAFKA_BEGUN, c.text()[a:])
            assert begun is not None
            seconds.append(_stamp(done.group(1)) - _stamp(begun.group(1)))
    return [round(x, 2) for x in seconds]


def measure(
    kind: str, dist: KafkaDist, work: Path, values: list[bytes], sid: OffsetAndEpoch, reps: int
) -> dict[str, Any]:
    partitions = sum(1 for v in values if len(v) > 1 and v[1] == 3)
    cluster = LocalCluster(
        dist,
        work / f"{kind}-{partitions}",
        controllers=3,
        brokers=1,  # started after the controllers' figures (broker_start_s)
        controller_kind=kind,
        controller_config={**CONTROLLER_CONFIG, **(PYKRAFT_CONFIG if kind == "pykraft" else {})},
        metrics=kind == "pykraft",
    )
    row: dict[str, Any] = {"bench": "scale", "controllers": kind, "partitions": partitions}
    voters = tuple(c.node_id for c in cluster.controllers)
    seeded, empty = cluster.controllers[:2], cluster.controllers[2]
    for c in seeded:
        row["snapshot_bytes"] = lay_down(c, sid, values, voters)
    bootstrap = cluster.bootstrap_controllers
    try:

        async def go() -> None:
            ctl = Controllers(cluster.controllers)
            spawned = time.monotonic()
            for c in cluster.controllers:
                c.start()
            row["ready_s"] = round(await ctl.create(["ready"], 1, STEP_S), 2)
            await wait_log_end(bootstrap, empty.node_id, sid.offset, STEP_S)
            row["standby_catchup_s"] = round(time.monotonic() - spawned, 2)
            if kind == "pykraft":
                # The longest the standby's event loop was held while it installed the
                # snapshot (loaded on the side, in slices); the seeded ones loaded theirs at
                # start, in one go, before serving.
                await asyncio.sleep(2)
                # One scrape each, so both figures cover the same samples.
                scraped = [c.scrape() for c in (empty, *seeded)]
                for name, key in (("lag", "loop"), ("held", "held")):
                    metric = f"pykraft_event_loop_{name}_max_ever_ms"
                    row[f"standby_{key}_max_ms"] = round(scraped[0].get(metric, -1))
                    row[f"start_{key}_max_ms"] = [round(m.get(metric, -1)) for m in scraped[1:]]
            await asyncio.sleep(5)
            rss = []
            heaps = []
            for c in cluster.controllers:
                assert c.process is not None
                if kind == "kafka":
                    heap = kafka_heap_used_mb(c.process.pid)
                    if heap is not None:
                        heaps.append(heap)
                rss.append(rss_mb(c.process.pid))
            row["rss_mb"] = [round(x) for x in rss]
            row["rss_bytes_per_partition"] = round(max(rss) * 2**20 / partitions)
            if heaps:
                row["heap_used_mb"] = [round(x) for x in heaps]
                row["heap_bytes_per_partition"] = round(max(heaps) * 2**20 / partitions)
            started = time.monotonic()
            for batch in range(20):
                await ctl.create([f"ct-{batch}-{i}" for i in range(10)], 10, STEP_S)
            row["create_partitions_per_s"] = round(2_000 / (time.monotonic() - started))
            failovers, restarts, loaded = [], [], []
            for rep in range(reps):
                info = await describe(bootstrap)
                victim = next(c for c in cluster.controllers if c.node_id == info.leader_id)
                hwm = info.high_watermark
                victim.kill()
                failovers.append(await ctl.create([f"failover-{rep}"], 1, STEP_S))
                after = len(victim.text())
                spawned = time.monotonic()
                victim.start()
                survivors = ",".join(c.address for c in cluster.controllers if c is not victim)
                await wait_log_end(survivors, victim.node_id, hwm, STEP_S)
                restarts.append(time.monotonic() - spawned)
                # Its image loaded and replayed to the high watermark: ready to lead (the
                # next kill may elect it).
                await asyncio.get_running_loop().run_in_executor(
                    None,
                    lambda v=victim, a=after: v.wait_for(IMAGE_CAUGHT_UP[kind], STEP_S, after=a),
                )
                loaded.append(time.monotonic() - spawned)
            row["failover_s"] = [round(x, 2) for x in failovers]
            row["restart_s"] = [round(x, 2) for x in restarts]
            row["restart_image_s"] = [round(x, 2) for x in loaded]
            await broker_start_s(cluster.brokers[0], ctl, row)
            # Last: the topics it creates would change the size the other figures are for.
            try:
                row["snapshot_write_s"] = await snapshot_write_s(kind, cluster.controllers, ctl)
            except TimeoutError as e:
                row["snapshot_error"] = str(e)
            ctl.close()

        asyncio.run(go())
    finally:
        cluster.kill()
    if kind == "pykraft":
        row["loop_stalls"] = [
            {
                "node": c.node_id,
                "late_ms": int(m[1]),
                "core_wait_ms": m[2],
                "at": m[3].rstrip().splitlines()[-6:],
            }
            for c in cluster.controllers
            for m in re.finditer(STALL_STACK, c.text())
        ]
    return row


def table(rows: list[dict[str, Any]]) -> str:
    def med(xs: list[float]) -> float:
        return sorted(xs)[len(xs) // 2] if xs else float("nan")

    lines = [
        "| partitions | controllers | snapshot MB | ready s | standby catch-up s | RSS MB "
        "(max) | B/partition (RSS; Kafka heap) | CreateTopics p/s | snapshot write s (max) | "
        "failover s (p50) | "
        "restart s (p50): raft / image | broker to RUNNING s: new / restart | "
        "loop late ms: install / start load | loop held ms: install / start load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['partitions']:,} | {r['controllers']} | error: {r['error']} |")
            continue
        per = f"{r['rss_bytes_per_partition']:,}"
        if "heap_bytes_per_partition" in r:
            per += f"; heap {r['heap_bytes_per_partition']:,}"
        lines.append(
            f"| {r['partitions']:,} | {r['controllers']} | {r['snapshot_bytes'] / 1e6:.1f} | "
            f"{r['ready_s']} | {r['standby_catchup_s']} | {max(r['rss_mb']):,} | {per} | "
            f"{r['create_partitions_per_s']:,} | {max(r.get('snapshot_write_s') or ['-'])} | "
            f"{med(r['failover_s'])} | "
            f"{med(r['restart_s'])} / {med(r.get('restart_image_s') or [])} | "
            f"{r.get('broker_start_s', '-')} / {r.get('broker_restart_s', '-')} | "
            f"{r.get('standby_loop_max_ms', '-')} / {max(r.get('start_loop_max_ms') or [0]) or '-'} | "
            f"{r.get('standby_held_max_ms', '-')} / {max(r.get('start_held_max_ms') or [0]) or '-'} |"
        )
    return "\n".join(lines)


def heartbeat_table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| brokers | controllers | heartbeats | p50 ms | p99 ms | active controller CPU % |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['brokers']:,} | {r['controllers']} | error: {r['error']} |")
            continue
        lines.append(
            f"| {r['brokers']:,} | {r['controllers']} | {r['heartbeats']:,} | {r['p50_ms']} | "
            f"{r['p99_ms']} | {r['controller_cpu_pct']} |"
        )
    return "\n".join(lines)


def _error_row(row: dict[str, Any], e: Exception, logs: Path) -> dict[str, Any]:
    row["error"] = f"{type(e).__name__}: {e}"[:300]
    for log in sorted(logs.glob("*/*.log")) + sorted(logs.glob("*.log")):
        print(f"# {log.name}:")
        print("\n".join(log.read_text(errors="replace").splitlines()[-15:]))
    return row


def run_scale(
    partitions: list[int], brokers: list[int], kinds: list[str], reps: int
) -> list[dict[str, Any]]:
    """Every point of both axes, a row each (``bench`` "scale" or "cluster_heartbeats")."""
    from wl_cluster import heartbeats_and_catchup

    os.environ[SERVER_JVM_ENV] = KAFKA_JVM
    dist = KafkaDist.get("4")
    work = Path(tempfile.mkdtemp(prefix="pykraft-scale-"))
    rows: list[dict[str, Any]] = []
    try:
        for count in brokers:
            for kind in kinds:
                try:
                    got = heartbeats_and_catchup(kind, dist, work, False, {"heartbeats"}, count)
                except Exception as e:
                    row = {"bench": "cluster_heartbeats", "controllers": kind, "brokers": count}
                    got = [_error_row(row, e, work / f"{kind}-load")]
                for row in got:
                    emit(row)
                rows += got
                shutil.rmtree(work / f"{kind}-load", ignore_errors=True)
        for size in partitions:
            started = time.monotonic()
            values, sid = snapshot_values(size)
            print(f"# {size:,} partitions: image built in {time.monotonic() - started:.1f} s")
            for kind in kinds:
                try:
                    row = measure(kind, dist, work, values, sid, reps)
                except Exception as e:
                    row = {"bench": "scale", "controllers": kind, "partitions": size}
                    row = _error_row(row, e, work / f"{kind}-{size}")
                emit(row)
                rows.append(row)
                shutil.rmtree(work / f"{kind}-{size}", ignore_errors=True)
            del values
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--partitions", type=int, nargs="*", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--brokers", type=int, nargs="*", default=[100, 1_000, 5_000])
    parser.add_argument("--kinds", default="pykraft,kafka")
    parser.add_argument("--reps", type=int, default=2)
    args = parser.parse_args()
    rows = run_scale(args.partitions, args.brokers, args.kinds.split(","), args.reps)
    print(heartbeat_table([r for r in rows if r["bench"] == "cluster_heartbeats"]))
    print(table([r for r in rows if r["bench"] == "scale"]))


if __name__ == "__main__":
    main()
