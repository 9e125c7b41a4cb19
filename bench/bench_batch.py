"""pykraft's hand-written record batches (``records/_batch.py``) against kio's record batch
code, the library pykraft uses for the wire protocol (issue 14, "one of each"):

    .venv/bin/python bench/bench_batch.py [--batches 500] [--records 100] [--repeat 3]

Encode: ``build_batch`` against kio's ``write_new_batch`` (kio's records built from the same
values, as a caller of kio must); decode: ``decode_records`` against kio's ``read_batch``,
both with the CRC check. Two value shapes: every value 100 bytes (a metadata log's common
case, pykraft's interleaving fast path) and lengths 20-300 bytes. The best of ``--repeat``
runs, in records per second, and the ratio pykraft / kio. The two are also each other's
oracle in ``tests/records/test_records.py`` (random batches written by one, read by the other).
"""

from __future__ import annotations

import argparse
import datetime
import io
import random
import sys
import time
from collections.abc import Callable

from kio.records.readers import read_batch
from kio.records.schema import NewRecordBatch
from kio.records.schema import Record as KioRecord
from kio.records.writers import write_new_batch
from kio.static.primitive import TZAwareMicros, i8, i16, i32, i64

from pykraft.records import build_batch, decode_records

STAMP_MS = 1_700_000_000_000


def best(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm (kio builds its readers lazily)
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def measure(
    shape: str, batches: list[list[bytes]], stamp: TZAwareMicros, repeat: int, total: int
) -> None:
    def ours_encode() -> list[bytes]:
        return [build_batch(i * 1000, 3, values, STAMP_MS) for i, values in enumerate(batches)]

    def kio_encode() -> list[bytes]:
        out = []
        for i, values in enumerate(batches):
            records = tuple(
                KioRecord(
                    attributes=i8(0),
                    timestamp=stamp,
                    offset=i64(i * 1000 + j),
                    key=None,
                    value=value,
                    headers=(),
                )
                for j, value in enumerate(values)
            )
            buf = io.BytesIO()
            write_new_batch(
                buf,
                NewRecordBatch(
                    producer_id=i64(-1),
                    producer_epoch=i16(-1),
                    partition_leader_epoch=i32(3),
                    base_sequence=i32(-1),
                    records=records,
                    attributes=i16(0),
                ),
            )
            out.append(buf.getvalue())
        return out

    encoded = ours_encode()
    assert [bytes(b) for b in encoded] == kio_encode()  # the same bytes, both ways
    rows = [
        ("encode", best(ours_encode, repeat), best(kio_encode, repeat)),
        (
            "decode",
            best(lambda: [decode_records(b) for b in encoded], repeat),
            best(lambda: [read_batch(b, 0) for b in encoded], repeat),
        ),
    ]
    for name, ours, theirs in rows:
        print(
            f"{shape:16s} {name}: pykraft {total / ours:12,.0f} records/s, kio "
            f"{total / theirs:12,.0f} records/s, pykraft/kio speed {theirs / ours:5.1f}x"
        )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", type=int, default=500)
    parser.add_argument("--records", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = random.Random(7)
    stamp = TZAwareMicros(datetime.datetime.fromtimestamp(STAMP_MS / 1000, datetime.UTC))
    shapes = {
        "100 B values": lambda: [rng.randbytes(100) for _ in range(args.records)],
        "20-300 B values": lambda: [
            rng.randbytes(rng.randint(20, 300)) for _ in range(args.records)
        ],
    }
    total = args.batches * args.records
    print(f"{args.batches} batches x {args.records} records, best of {args.repeat}")
    for shape, make in shapes.items():
        measure(shape, [make() for _ in range(args.batches)], stamp, args.repeat, total)
    return 0


if __name__ == "__main__":
    sys.exit(main())
