"""FileLog benchmark: append with one fsync per flush, then sequential read.

    .venv/bin/python bench/bench_log.py [--dir DIR] [--records N]

For batches of 1, 100 and 1000 records of 100 bytes: build + append + flush (one fsync per
batch), reporting records/s, MB/s and fsyncs/s; then read the log back sequentially with
1 MiB reads. Not a test: numbers depend on the disk.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from pykraft.records import build_batch, iter_batches
from pykraft.storage import FileLog

VALUE = bytes(range(100))
TS = 1_700_000_000_000


def bench_append(path: Path, batch_records: int, records_total: int) -> tuple[float, int]:
    log = FileLog.open(path, segment_bytes=256 * 1024 * 1024)
    values = [VALUE] * batch_records
    batches = records_total // batch_records
    fsyncs = 0
    start = time.perf_counter()
    for _ in range(batches):
        log.append(build_batch(log.end_offset, 1, values, TS))
        log.flush()
        fsyncs += 1
    elapsed = time.perf_counter() - start
    total_bytes = sum(size for _, _, size in log.segments())
    log.close()
    records = batches * batch_records
    print(
        f"append {batch_records:5d}-record batches: {records / elapsed:12,.0f} records/s "
        f"{total_bytes / elapsed / 1e6:8.1f} MB/s {fsyncs / elapsed:9,.0f} fsyncs/s "
        f"({records} records in {elapsed:.2f} s)"
    )
    return elapsed, total_bytes


def bench_read(path: Path, max_bytes: int = 1 << 20) -> None:
    log = FileLog.open(path, segment_bytes=256 * 1024 * 1024)
    start = time.perf_counter()
    offset, total, records = log.start_offset, 0, 0
    while offset < log.end_offset:
        data = log.read(offset, max_bytes)
        total += len(data)
        last = None
        for header, _ in iter_batches(data, verify_crc=False):
            last = header
            records += header.record_count
        assert last is not None
        offset = last.next_offset
    elapsed = time.perf_counter() - start
    log.close()
    print(
        f"sequential read (1 MiB reads): {total / elapsed / 1e6:8.1f} MB/s "
        f"{records / elapsed:12,.0f} records/s ({total / 1e6:.1f} MB)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", type=Path, default=None, help="scratch dir (default: tmp)")
    parser.add_argument("--records", type=int, default=1_000_000)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-log-", dir=args.dir))
    try:
        print(f"FileLog benchmark in {root} ({os.cpu_count()} cpus)")
        for batch_records, total in ((1, 5_000), (100, 200_000), (1000, args.records)):
            bench_append(root / f"b{batch_records}", batch_records, total)
        bench_read(root / "b1000")
    finally:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
