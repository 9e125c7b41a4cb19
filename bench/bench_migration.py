"""KIP-866 migration speed, pykraft beside Kafka 3.9 (issue 18's benchmark):

    .venv/bin/python bench/bench_migration.py [--topics 10000] [--partitions 10] [--runs 1]

1. A real ZooKeeper (3.8, from Kafka 3.9's jars) is filled through kazoo with ``--topics``
   topics of ``--partitions`` partitions each (RF 3 over brokers 0-2), in the znode formats
   Kafka 3.9 writes (topic znode version 3 with topic ids, partition state version 1, an empty
   topic config each), plus ``/cluster/id`` and ``/controller_epoch``. Its data directory is
   kept and restored before every run, so both controllers migrate the same ZooKeeper.
2. For each side, one controller with ``zookeeper.metadata.migration.enable=true`` is
   formatted at release 3.9 and started: Kafka 3.9.2's own (``kafka.Kafka``) or pykraft's.
   Brokers 0-2 appear as Kafka's ZooKeeper brokers in migration mode do: an ephemeral
   ``/brokers/ids/N`` in ZooKeeper, and BrokerRegistration (IsMigratingZkBroker) plus
   heartbeats over the wire to the controller (this script; no broker data plane is needed
   for the copy, and 100,000 partitions would not fit three real brokers on two cores).
3. Measured from each controller's own log: from its driver's transition into ZK_MIGRATION
   (Kafka: "transitioning from BECOME_CONTROLLER to ZK_MIGRATION"; pykraft: "BECOME_CONTROLLER
   -> ZK_MIGRATION") to its transition into DUAL_WRITE: the copy of every znode into one
   metadata transaction, its commit, the ``/migration`` write, the reconciliation of ZooKeeper
   and the FULL requests to the brokers. Printed per run with the ratio pykraft / Kafka.
4. Dual write (issue 26): ``--changes`` topic config changes, one at a time, sent to the
   controller (IncrementalAlterConfigs through the project's admin client), each timed from
   the request to the moment ZooKeeper's ``/config/topics/<t>`` holds the new value (read
   through kazoo every 5 ms): what a change costs while ZooKeeper is mirrored. p50 and max
   per side; ``--side pykraft`` runs one side (for a before/after of one commit).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import itertools
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from kazoo.client import KazooClient

from pykraft.admin import AdminClient
from pykraft.admin.metadata import alter_topic_configs
from pykraft.interop.kafka import KafkaDist
from pykraft.interop.migrating import (
    MigratingBrokerStandIns,
    fill_zookeeper,
    migrating_controller,
)
from pykraft.interop.zookeeper import ZooKeeperServer

CLUSTER_ID = "MigBenchCluster0000001"[:22]
TIMESTAMP = re.compile(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})")
# The driver's transitions as each controller logs them: the copy starts entering
# ZK_MIGRATION and ends entering SYNC_KRAFT_TO_ZK; the reconciliation ends entering
# KRAFT_CONTROLLER_TO_BROKER_COMM; the FULL requests end entering DUAL_WRITE.
PHASES = ("ZK_MIGRATION", "SYNC_KRAFT_TO_ZK", "KRAFT_CONTROLLER_TO_BROKER_COMM", "DUAL_WRITE")
MARK = {"kafka": "to {} state", "pykraft": "-> {}"}


def stamp(line: str) -> float:
    m = TIMESTAMP.search(line)
    assert m, line
    return datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()


def wait_phases(log: Path, side: str, timeout_s: float) -> tuple[list[float], str]:
    """The timestamps of the four transitions (PHASES), and the load's log line."""
    deadline = time.monotonic() + timeout_s
    text = ""
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace") if log.exists() else ""
        lines = [
            ln
            for ln in text.splitlines()
            if "transitioning" in ln or "->" in ln or "Completed migration" in ln
        ]
        marks = [
            next((ln for ln in lines if MARK[side].format(phase) in ln), None) for phase in PHASES
        ]
        if all(marks):
            loaded = next((ln for ln in lines if "Completed migration of metadata" in ln), "")
            return [stamp(m) for m in marks if m], loaded
        time.sleep(0.5)
    raise TimeoutError(f"{side}: no DUAL_WRITE within {timeout_s} s:\n{text[-4000:]}")


def dual_write_latencies(controller: str, zookeeper: str, changes: int) -> list[float]:
    """Seconds from each config change's request to ZooKeeper holding it (step 4)."""
    topic = "topic-00000"
    path = f"/config/topics/{topic}"
    zk = KazooClient(hosts=zookeeper, timeout=30)
    zk.start()

    async def run() -> list[float]:
        seen: list[float] = []
        async with AdminClient(controller, bootstrap_controllers=True) as admin:
            for i in range(changes):
                value = str(3_600_000 + i)
                started = time.monotonic()
                result = await alter_topic_configs(admin, topic, {"retention.ms": value})
                if result.error:
                    raise RuntimeError(f"IncrementalAlterConfigs: {result}")
                deadline = started + 120
                while value.encode() not in (zk.get(path)[0] or b""):
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"{path} never held retention.ms={value}")
                    await asyncio.sleep(0.005)
                seen.append(time.monotonic() - started)
        return seen

    try:
        return asyncio.run(run())
    finally:
        zk.stop()
        zk.close()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--partitions", type=int, default=10, help="per topic")
    parser.add_argument("--runs", type=int, default=1, help="runs per side (alternating)")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--changes", type=int, default=20, help="dual-write changes timed")
    parser.add_argument("--side", choices=("both", "kafka", "pykraft"), default="both")
    args = parser.parse_args()
    sides = ("kafka", "pykraft") if args.side == "both" else (args.side,)
    dist = KafkaDist.get("3.9")
    tmp = Path(tempfile.mkdtemp(prefix="bench-migration-"))
    zookeeper = ZooKeeperServer(dist, tmp)
    zookeeper.start()
    try:
        written, seconds = fill_zookeeper(
            zookeeper.connect, CLUSTER_ID, args.topics, args.partitions
        )
        print(
            f"ZooKeeper: {args.topics:,} topics x {args.partitions} partitions = "
            f"{args.topics * args.partitions:,} partitions, {written:,} znodes written in "
            f"{seconds:.1f} s",
            flush=True,
        )
        zookeeper.stop()
        pristine = tmp / "zookeeper-pristine"
        shutil.copytree(zookeeper.data, pristine)
        results: dict[str, list[float]] = {"kafka": [], "pykraft": []}
        latencies: dict[str, list[float]] = {"kafka": [], "pykraft": []}
        for run in range(args.runs):
            for side in sides:
                shutil.rmtree(zookeeper.data)
                shutil.copytree(pristine, zookeeper.data)
                zookeeper.start()
                base = tmp / f"{side}-{run}"
                base.mkdir()
                server = migrating_controller(side, dist, base, zookeeper.connect, CLUSTER_ID)
                server.start()
                brokers = MigratingBrokerStandIns(
                    zookeeper.connect, ("127.0.0.1", server.port), CLUSTER_ID
                )
                try:
                    brokers.start()
                    marks, loaded = wait_phases(server.log, side, args.timeout)
                    if brokers.error is not None:
                        raise RuntimeError(f"brokers: {brokers.error!r}")
                    if args.changes:
                        try:
                            timed = dual_write_latencies(
                                f"127.0.0.1:{server.port}", zookeeper.connect, args.changes
                            )
                        except Exception as e:  # reported: the copy's figures still count
                            print(f"    {side}: dual-write phase failed: {e!r}", flush=True)
                        else:
                            latencies[side] += timed
                            print(
                                f"    {side}: dual write, request to ZooKeeper holding it: "
                                f"p50 {statistics.median(timed) * 1000:.0f} ms, "
                                f"max {max(timed) * 1000:.0f} ms over {len(timed)} changes",
                                flush=True,
                            )
                finally:
                    brokers.stop()
                    server.kill()
                    zookeeper.stop()
                total = marks[-1] - marks[0]
                copy, sync, send = (b - a for a, b in itertools.pairwise(marks))
                results[side].append(total)
                print(
                    f"run {run + 1} {side:8s}: copy to dual write {total:6.2f} s = copy "
                    f"{copy:6.2f} s + reconcile ZooKeeper {sync:6.2f} s + FULL requests "
                    f"{send:5.2f} s",
                    flush=True,
                )
                print(f"    {loaded.split('] ', 1)[-1][:200]}", flush=True)
        if len(sides) == 2:
            kafka, ours = min(results["kafka"]), min(results["pykraft"])
            print(
                f"migration of {args.topics:,} topics / {args.topics * args.partitions:,} "
                f"partitions, start of the copy to dual write (best of {args.runs}): Kafka 3.9 "
                f"{kafka:.2f} s, pykraft {ours:.2f} s, ratio pykraft/Kafka {ours / kafka:.2f}x"
            )
        for side in sides:
            if latencies[side]:
                print(
                    f"dual write at {args.topics * args.partitions:,} partitions, {side}: p50 "
                    f"{statistics.median(latencies[side]) * 1000:.0f} ms, max "
                    f"{max(latencies[side]) * 1000:.0f} ms ({len(latencies[side])} changes)"
                )
    finally:
        zookeeper.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
