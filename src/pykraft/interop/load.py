"""Client load on a real Kafka cluster, for the tests and the benchmarks: a kafka-python
producer thread (acks=all, one request in flight, retries) writing sequence numbers, each send
timed to its acknowledgement, and the check that everything acknowledged is consumable, in
order per partition. Needs kafka-python (the ``dev`` extra), the project's independent client.

``end_offsets`` works around a bug of kafka-python 3.0.12 (``Fetcher._fetch_offsets_by_times_async``):
a ListOffsets answered NOT_LEADER_OR_FOLLOWER for a partition is resent to the same broker at
once, without a metadata refresh or a backoff, until the call times out (30 s, ~18,000
requests), where Kafka's Java client (``OffsetFetcher``) refreshes its metadata and retries
the new leader. A consumer whose first metadata came from a broker that had not yet applied a
leader change never recovers. ``tests/interop/test_kafka_cluster.py`` reproduces it and fails
once a kafka-python release fixes it (this workaround can then go)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaTimeoutError

__all__ = ["Load", "assert_nothing_lost", "consume_all", "end_offsets", "missing"]

END_OFFSETS_TRY_MS = 5_000  # one consumer's try; then a new one, with metadata asked anew
END_OFFSETS_TRIES = 6


@dataclass
class Load:
    """A producer thread (acks=all, one request in flight, retries) writing sequence numbers;
    what the brokers acknowledged, per partition, in order."""

    bootstrap: str
    topic: str
    linger_ms: int = 5
    pause_s: float = 0.0  # after each send (0: a 20 ms pause every 200 sends)
    acked: dict[int, list[int]] = field(default_factory=dict)
    # Acknowledgement latencies (ms) by the ``window`` current when each record was sent.
    window: str = "all"
    latencies: dict[str, list[float]] = field(default_factory=dict)
    errors: int = 0
    sent: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        producer = KafkaProducer(
            bootstrap_servers=self.bootstrap,
            acks="all",
            retries=1_000,
            max_in_flight_requests_per_connection=1,
            request_timeout_ms=10_000,
            linger_ms=self.linger_ms,
        )
        lock = threading.Lock()

        def ok(n: int, sent: float, window: str, meta: Any) -> None:
            with lock:
                self.acked.setdefault(meta.partition, []).append(n)
                self.latencies.setdefault(window, []).append((time.monotonic() - sent) * 1000)

        def failed(_e: Exception) -> None:
            with lock:
                self.errors += 1

        n = 0
        while not self._stop.is_set():
            future = producer.send(self.topic, str(n).encode())
            future.add_callback(ok, n, time.monotonic(), self.window).add_errback(failed)
            n += 1
            self.sent = n
            if self.pause_s:
                time.sleep(self.pause_s)
            elif n % 200 == 0:
                time.sleep(0.02)
        producer.flush(timeout=60)
        producer.close(timeout=30)

    def stop(self) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join(timeout=120)

    def count(self) -> int:
        return sum(len(v) for v in self.acked.values())


def consume_all(bootstrap: str, topic: str, partitions: int) -> dict[int, list[int]]:
    """Every record of every partition, from the beginning to the end offsets now."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=30_000
    )
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    seen: dict[int, list[int]] = {p: [] for p in range(partitions)}
    try:  # closed whatever fails: no client thread outlives the call
        ends = end_offsets(bootstrap, tps)
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        remaining = {tp.partition for tp in tps if ends[tp] > 0}
        for message in consumer:
            seen[message.partition].append(int(message.value))
            if message.offset + 1 >= ends[TopicPartition(topic, message.partition)]:
                remaining.discard(message.partition)
            if not remaining:
                break
    finally:
        consumer.close()
    assert not remaining, f"partitions not read to their end: {sorted(remaining)}"
    return seen


def end_offsets(
    bootstrap: str, tps: list[TopicPartition], **consumer_config: Any
) -> dict[TopicPartition, int]:
    """Each partition's end offset (as ``KafkaConsumer.end_offsets``), asked by a new consumer
    each ``END_OFFSETS_TRY_MS`` until one answers (kafka-python's stale-leader loop: see the
    module's docstring); the last try's timeout is raised."""
    tries_left = END_OFFSETS_TRIES
    while True:
        tries_left -= 1
        consumer = KafkaConsumer(
            bootstrap_servers=bootstrap, enable_auto_commit=False, **consumer_config
        )
        try:
            answer: dict[TopicPartition, int] = consumer.end_offsets(
                tps, timeout_ms=END_OFFSETS_TRY_MS
            )
            return answer
        except KafkaTimeoutError:
            if not tries_left:
                raise
        finally:
            consumer.close()


def missing(load: Load, seen: dict[int, list[int]]) -> int:
    """How many acknowledged records are not in ``seen``."""
    present = {v for values in seen.values() for v in values}
    return sum(1 for values in load.acked.values() for v in values if v not in present)


def assert_nothing_lost(load: Load, seen: dict[int, list[int]]) -> None:
    """Every acknowledged record is there, and per partition in the order acknowledged."""
    for partition, acked in load.acked.items():
        present = seen.get(partition, [])
        positions = {v: i for i, v in enumerate(present)}
        missing = [v for v in acked if v not in positions]
        assert not missing, (partition, missing[:10], len(missing))
        order = [positions[v] for v in acked]
        assert order == sorted(order), f"partition {partition} out of order"
