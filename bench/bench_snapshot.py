"""A metadata snapshot of a large image, in memory (issue 30: the event loop never held more
than 100 ms by a snapshot; snapshot load in seconds):

    .venv/bin/python bench/bench_snapshot.py [--partitions 100000 1000000]

The real metadata controller with six brokers and ``--partitions`` partitions (topics of 100,
RF 3) built through CreateTopics. Then, as a running controller does it: the snapshot's
records generated in slices of ``SNAPSHOT_SLICE_RECORDS`` (``SnapshotGenerator``), each
slice framed as one batch and written to a real snapshot file (the longest slice is the
longest the event loop is held, with the garbage collections that fell in it); the file
sealed and made durable (fsync, CRC check: a node does that off its event loop) and
published (on the loop); and the snapshot loaded back (decoded and replayed into a fresh
image, as a restarted controller does). Also the memory the image takes (RSS growth) and the
longest full garbage collection with the image in memory.
"""

from __future__ import annotations

import argparse
import gc
import resource
import tempfile
import time
from pathlib import Path

from bench_elr import build
from pykraft.controller.snapshot_generator import SnapshotGenerator
from pykraft.metadata.image import Image
from pykraft.metadata.serde import decode_record
from pykraft.node.snapshot_emitter import SNAPSHOT_SLICE_RECORDS
from pykraft.raft.snapshots import RaftSnapshotWriter
from pykraft.raft.types import OffsetAndEpoch
from pykraft.storage import FileSnapshotStore

PER_TOPIC = 100


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def measure(partitions: int) -> dict[str, float]:
    gc.collect()
    before = rss_mb()
    start = time.perf_counter()
    cluster = build(25, partitions // PER_TOPIC, PER_TOPIC)
    built_s = time.perf_counter() - start
    gc.collect()
    image = cluster.c.image
    image.record_uncommitted(False)
    grown = rss_mb() - before
    start = time.perf_counter()
    gc.collect()
    full_gc_ms = (time.perf_counter() - start) * 1000
    gc.freeze()  # as a controller does after loading its image from a snapshot
    start = time.perf_counter()
    gc.collect()
    frozen_gc_ms = (time.perf_counter() - start) * 1000
    gc.unfreeze()
    generator = SnapshotGenerator(image, image.last_offset + 1)
    values: list[bytes] = []
    slices: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        store = FileSnapshotStore.open(Path(tmp))
        sid = OffsetAndEpoch(generator.end, 1)
        writer = RaftSnapshotWriter(store.create(sid), sid, 0, lambda _: None)
        start = time.perf_counter()
        while not generator.done:
            t = time.perf_counter()
            chunk = generator.next_values(SNAPSHOT_SLICE_RECORDS)
            writer.append(chunk, 0)
            slices.append((time.perf_counter() - t) * 1000)
            values.extend(chunk)
        generated_s = time.perf_counter() - start
        writer.seal(0)
        start = time.perf_counter()
        writer.make_durable()
        durable_s = time.perf_counter() - start
        start = time.perf_counter()
        writer.freeze(0)
        publish_ms = (time.perf_counter() - start) * 1000
        snapshot_mb = (store.size(sid) or 0) / 1e6
    slices.sort()
    start = time.perf_counter()
    loaded = Image()
    for offset, value in enumerate(values):
        record, version = decode_record(value)
        loaded.replay(record, version, offset)
    load_s = time.perf_counter() - start
    assert loaded.topics_image.partition_count == image.topics_image.partition_count == partitions
    return {
        "partitions": partitions,
        "records": len(values),
        "snapshot MB": snapshot_mb,
        "build s": built_s,
        "image RSS MB": grown,
        "bytes/partition": grown * 2**20 / partitions,
        "full gc ms": full_gc_ms,
        "after freeze ms": frozen_gc_ms,
        "generate s": generated_s,
        "slice p50 ms": slices[len(slices) // 2],
        "slice max ms": slices[-1],
        "durable s (off loop)": durable_s,
        "publish ms": publish_ms,
        "load s": load_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--partitions", type=int, nargs="+", default=[100_000])
    args = parser.parse_args()
    rows = [measure(n) for n in args.partitions]
    keys = list(rows[0])
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for row in rows:
        print(
            "| "
            + " | ".join(f"{row[k]:,.0f}" if row[k] >= 100 else f"{row[k]:.2f}" for k in keys)
            + " |"
        )


if __name__ == "__main__":
    main()
