"""Restart time of a node on a big log: the recovery point at work (issue 13, part 3).

    .venv/bin/python bench/bench_restart.py [--gib 10] [--tails-mib 0,64,256,1024] [--dir DIR]

A single-voter ``kraft_node.py`` is started once (it formats its directory and is elected),
stopped, and its log filled to ``--gib`` GiB with 1 MiB batches of its epoch written straight
through ``FileLog`` (fsynced; closed cleanly). Then, each in a fresh node process, timed from
the spawn to the node's ``started`` line (storage opened and the core built, listening) and to
its first ``status`` as leader:

- ``clean``: after a clean shutdown (the node's own ``quit``): nothing is scanned;
- ``kill -9, tail T MiB``: T MiB appended and fsynced past the recovery point, then the
  writer ends without closing (as a kill -9 leaves the files; the recovery point moves only
  every 16 MiB, so the tail is what a crash leaves to scan); the node is then also killed
  with SIGKILL and started again;
- ``no checkpoint``: the checkpoint files removed, as a log written before they existed:
  every segment is scanned (the behaviour before; the ratio is against this).

Each line gives the bytes the open scanned (from the node's log line). Not a test: the
figures depend on the disk; the targets (issue 13) are <= 2 s after a clean shutdown and,
after kill -9, a time that grows with the tail, not with the log.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import struct
import sys
import tempfile
import time
from pathlib import Path

from _common import Cluster, install_reaper
from pykraft.records import build_batch
from pykraft.storage import FileLog
from wl_kraft import KAFKA_DEFAULTS, KraftCluster

MIB = 1 << 20
TS = 1_700_000_000_000
_SCANNED = re.compile(r"(\d+) bytes after the recovery point")


def one_mib_batch(epoch: int) -> bytes:
    return build_batch(0, epoch, [os.urandom(1000)] * 1040, TS)


def append_mib(log: FileLog, batch: bytearray, mib: int, flush_every: int = 64) -> None:
    """``mib`` copies of ``batch`` renumbered (the base offset is outside the CRC)."""
    for i in range(mib):
        struct.pack_into(">q", batch, 0, log.end_offset)
        log.append(bytes(batch))
        if i % flush_every == flush_every - 1:
            log.flush()
    log.flush()


def timed_start(kc: KraftCluster) -> tuple[float, float, int | None]:
    """(s to ``started``, s to leader, bytes scanned) of a fresh node process."""
    t0 = time.monotonic()
    child = kc.start(1)
    started = time.monotonic() - t0
    while kc.status(1)["role"] != "leader":
        time.sleep(0.01)
    leader = time.monotonic() - t0
    text = child.log_path.read_text(errors="replace")
    found = _SCANNED.findall(text)
    return started, leader, int(found[-1]) if found else None


def stop(kc: KraftCluster, *, clean: bool) -> None:
    child = kc.nodes[1]
    if clean:
        child.send({"cmd": "quit"})
        child.proc.wait(timeout=120)
    else:
        child.kill(signal.SIGKILL)
        child.proc.wait(timeout=30)
    child.reap()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gib", type=float, default=10.0)
    parser.add_argument("--tails-mib", default="0,64,256,1024")
    parser.add_argument("--dir", type=Path, default=None, help="scratch dir (default: tmp)")
    args = parser.parse_args()
    install_reaper()
    os.environ["PYKRAFT_BENCH_LOG"] = "INFO"  # the node's log says what its open scanned
    tails = [int(t) for t in args.tails_mib.split(",")]
    root = Path(tempfile.mkdtemp(prefix="bench-restart-", dir=args.dir))
    rows: list[tuple[str, float, float, int | None]] = []
    try:
        with Cluster(root) as cluster:
            kc = KraftCluster(cluster, timeouts=KAFKA_DEFAULTS, voters=1)
            kc.start_all()
            kc.wait_leader()
            stop(kc, clean=True)
            partition = kc.node_dir(1) / "__cluster_metadata-0"
            log = FileLog.open(partition)
            batch = bytearray(one_mib_batch(log.last_fetched_epoch()))
            t0 = time.monotonic()
            append_mib(log, batch, int(args.gib * 1024))
            log.close(clean=True)
            size = sum(p.stat().st_size for p in partition.glob("*.log"))
            print(
                f"log filled: {size / 2**30:.2f} GiB in {time.monotonic() - t0:.1f} s "
                f"({len(list(partition.glob('*.log')))} segments)",
                flush=True,
            )
            for _ in range(2):  # the first start after the fill also warms the imports
                rows.append(("clean", *timed_start(kc)))
                stop(kc, clean=True)
            for tail in tails:
                # The writer: a large checkpoint interval keeps the recovery point where the
                # clean stop put it; ending without close() leaves what a kill -9 leaves.
                log = FileLog.open(partition, checkpoint_interval_bytes=1 << 62)
                append_mib(log, bytearray(one_mib_batch(log.last_fetched_epoch())), tail)
                del log  # no close: no checkpoint, no marker (the fds go with the object)
                rows.append((f"kill -9, tail {tail} MiB", *timed_start(kc)))
                stop(kc, clean=False)
                # The node's own start wrote nothing past the point either (kill -9 again):
                # stop cleanly once so the next tail starts from a clean recovery point.
                timed_start(kc)
                stop(kc, clean=True)
            for name in ("recovery-point-offset-checkpoint", ".kafka_cleanshutdown"):
                (partition / name).unlink(missing_ok=True)
            rows.append(("no checkpoint (scan all)", *timed_start(kc)))
            stop(kc, clean=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"\nnode restart on a {args.gib:g} GiB log ({os.cpu_count()} cpus)")
    print(f"{'case':28s} {'to started s':>12s} {'to leader s':>12s} {'scanned MiB':>12s}")
    for name, started, leader, scanned in rows:
        mib = "?" if scanned is None else f"{scanned / MIB:.0f}"
        print(f"{name:28s} {started:12.2f} {leader:12.2f} {mib:>12s}")


if __name__ == "__main__":
    sys.exit(main())
