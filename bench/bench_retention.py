"""What keeping the metadata log within ``metadata.max.retention.*`` costs at 1,000,000
partitions (issue 46 item 6):

    .venv/bin/python bench/bench_retention.py [--partitions 1000000] [--generations 3]
        [--out bench/results/retention.json]

The real metadata controller with six brokers and ``--partitions`` partitions (topics of 100,
RF 3); its snapshot's records, written ``--generations`` times to a real metadata log (real
segments, fsync), with a real snapshot file after each generation, as a controller whose
metadata was rewritten that many times between snapshots would hold them. The snapshots'
LastContainedLogTimestamp are over eight days old but for the newest (one day): by size at a
million partitions and by age at any size, the check picks the newest. Timed, on the thread
that would be the node's event loop:

* ``check_ms``: the retention check a node makes at each frozen snapshot and every 60 s
  (``node/log_retention.LogRetention``: every snapshot's size and header timestamp, the
  log's bytes from each candidate start), with Kafka's defaults (100 MiB, 7 days): it picks
  the newest snapshot;
* ``clean_ms``: what the core then does (``RaftCore.delete_before_snapshot``'s file work:
  the log start moved, the segments and the snapshots before it deleted);
* ``idle_check_ms``: the same check once nothing is left to clean (the cost every 60 s of a
  quiet controller).

Each must stay under the 100 ms the event loop may be held.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _common import publish
from bench_elr import build
from pykraft.controller.snapshot_generator import SnapshotGenerator
from pykraft.node.log_retention import LogRetention
from pykraft.node.snapshot_emitter import SNAPSHOT_SLICE_RECORDS
from pykraft.raft.snapshots import RaftSnapshotWriter
from pykraft.raft.types import OffsetAndEpoch
from pykraft.records import build_batch
from pykraft.storage import FileLog, FileSnapshotStore

PER_TOPIC = 100
DAY_MS = 24 * 3600 * 1000
BATCH_RECORDS = 2_000


def timed_ms(step: object) -> tuple[float, object]:
    assert callable(step)
    start = time.perf_counter()
    value = step()
    return (time.perf_counter() - start) * 1000, value


def write_generation(log: FileLog, values: list[bytes], timestamp_ms: int) -> None:
    for i in range(0, len(values), BATCH_RECORDS):
        log.append(build_batch(log.end_offset, 1, values[i : i + BATCH_RECORDS], timestamp_ms))
    log.flush()


def write_snapshot(store: FileSnapshotStore, values: list[bytes], end: int, now_ms: int) -> None:
    sid = OffsetAndEpoch(end, 1)
    writer = RaftSnapshotWriter(store.create(sid), sid, now_ms, lambda _: None)
    for i in range(0, len(values), SNAPSHOT_SLICE_RECORDS):
        writer.append(values[i : i + SNAPSHOT_SLICE_RECORDS], now_ms)
    writer.seal(now_ms)
    writer.make_durable()
    writer.freeze(now_ms)


def measure(partitions: int, generations: int, tmp: Path) -> dict[str, object]:
    started = time.perf_counter()
    cluster = build(25, partitions // PER_TOPIC, PER_TOPIC)
    image = cluster.c.image
    generator = SnapshotGenerator(image, image.last_offset + 1)
    values: list[bytes] = []
    while not generator.done:
        values.extend(generator.next_values(SNAPSHOT_SLICE_RECORDS))
    built_s = time.perf_counter() - started
    log = FileLog.open(tmp / "log")
    store = FileSnapshotStore.open(tmp / "snapshots")
    now_ms = int(time.time() * 1000)
    for g in range(generations):
        newest = g == generations - 1
        stamp = now_ms - (DAY_MS if newest else (8 + generations - g) * DAY_MS)
        write_generation(log, values, stamp)
        write_snapshot(store, values, log.end_offset, stamp)
    written_s = time.perf_counter() - started - built_s
    log_mb = log.bytes_kept_from(0) / 1e6
    snapshot_mb = sum(store.size(s) or 0 for s in store.snapshot_ids()) / 1e6
    retention = LogRetention(log, store, wall_clock_ms=lambda: now_ms)
    latest = store.latest()
    assert latest is not None
    check_ms, target = timed_ms(lambda: retention(latest, log))
    assert target == latest, (target, latest)

    def clean() -> None:
        log.delete_before(latest)
        store.delete_before(latest)

    clean_ms, _ = timed_ms(clean)
    idle_ms, again = timed_ms(lambda: retention(latest, log))
    assert again is None and log.start_offset == latest.offset
    return {
        "partitions": partitions,
        "records per generation": len(values),
        "generations": generations,
        "log MB": round(log_mb, 1),
        "snapshots MB": round(snapshot_mb, 1),
        "build s": round(built_s, 1),
        "write s": round(written_s, 1),
        "check_ms": round(check_ms, 2),
        "clean_ms": round(clean_ms, 2),
        "idle_check_ms": round(idle_ms, 2),
        "under 100 ms": max(check_ms, clean_ms, idle_ms) < 100,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--partitions", type=int, default=1_000_000)
    parser.add_argument("--generations", type=int, default=3)
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results" / "retention.json"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-retention-") as tmp:
        row = measure(args.partitions, args.generations, Path(tmp))
    publish(row, args.out)


if __name__ == "__main__":
    main()
