"""Benchmark: encode and decode a ~1 MiB Fetch v17 response whose records stay raw bytes.

Run: ``.venv/bin/python bench/bench_protocol.py``.  Target: decode <= 2 ms per response.
The payload is real v2 record batches from ``pykraft.records.build_batch`` (1 KiB values).
Decode includes the length preflight, kio's parse and the frame split; no record is decoded.
"""

from __future__ import annotations

import datetime
import time
import uuid
from collections.abc import Callable

from kio.schema.fetch.v17 import response as fetch
from kio.static.primitive import i32, i64

from pykraft.protocol import ErrorCode, FrameDecoder, decode_response, encode_response
from pykraft.records import build_batch

TARGET_BYTES = 1 << 20
VALUE = b"v" * 1024


def records_payload() -> bytes:
    batches = []
    size = 0
    offset = 0
    while size < TARGET_BYTES:
        batch = build_batch(offset, 3, [VALUE] * 64, 1_700_000_000_000)
        batches.append(batch)
        size += len(batch)
        offset += 64
    return b"".join(batches)


def fetch_response(records: bytes) -> fetch.FetchResponse:
    partition = fetch.PartitionData(
        partition_index=i32(0),
        error_code=ErrorCode.none,
        high_watermark=i64(123_456),
        log_start_offset=i64(0),
        aborted_transactions=None,
        records=records,
    )
    topic = fetch.FetchableTopicResponse(topic_id=uuid.uuid4(), partitions=(partition,))
    return fetch.FetchResponse(
        throttle_time=datetime.timedelta(0), error_code=ErrorCode.none, responses=(topic,)
    )


def per_call_ms(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    fn()  # warm caches (kio builds readers/writers lazily)
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return samples[len(samples) // 2], samples[int(len(samples) * 0.95)]


def main() -> None:
    records = records_payload()
    message = fetch_response(records)
    data = encode_response(7, message)
    frame = data[4:]
    in_flight = {7: (1, 17)}

    def stream_decode() -> object:
        decoder = FrameDecoder()
        for i in range(0, len(data), 65536):
            decoder.feed(data[i : i + 65536])
        got = decoder.next_frame()
        assert got is not None
        return decode_response(got, in_flight)

    decoded = decode_response(frame, in_flight).message
    assert isinstance(decoded, fetch.FetchResponse)
    assert decoded.responses[0].partitions[0].records == records

    rows = [
        ("encode_response (framed)", per_call_ms(lambda: encode_response(7, message), 200)),
        (
            "decode_response (one frame)",
            per_call_ms(lambda: decode_response(frame, in_flight), 200),
        ),
        ("FrameDecoder 64 KiB chunks + decode", per_call_ms(stream_decode, 100)),
    ]
    print(f"Fetch v17 response: {len(data):,} bytes framed, records {len(records):,} bytes raw")
    print(f"{'operation':<38}{'median ms':>10}{'p95 ms':>10}")
    for name, (median, p95) in rows:
        print(f"{name:<38}{median:>10.3f}{p95:>10.3f}")
    print("target: decode <= 2 ms")


if __name__ == "__main__":
    main()
