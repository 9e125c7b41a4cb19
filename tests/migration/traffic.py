"""Continuous produce and consume through a migration (kafka-python): a producer thread sends
with ``acks=all`` and records every value the cluster acknowledged; a consumer thread reads the
same partitions from the start. ``finish`` stops producing and waits until the consumer has
seen every acknowledged value: an acknowledged record that never comes back was lost."""

from __future__ import annotations

import threading
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition


class Traffic:
    def __init__(self, bootstrap: str, topic: str, partitions: int, *, interval_s: float = 0.02):
        self.bootstrap = bootstrap
        self.topic = topic
        self.partitions = partitions
        self.interval_s = interval_s
        self.acked: set[bytes] = set()
        self.failed = 0
        self.consumed: set[bytes] = set()
        self._lock = threading.Lock()
        self._stop_producing = threading.Event()
        self._stop_consuming = threading.Event()
        self._threads = [
            threading.Thread(target=self._produce, name="traffic-produce", daemon=True),
            threading.Thread(target=self._consume, name="traffic-consume", daemon=True),
        ]

    def start(self) -> Traffic:
        for thread in self._threads:
            thread.start()
        return self

    def _acked(self, value: bytes) -> None:
        with self._lock:
            self.acked.add(value)

    def _failed(self) -> None:
        with self._lock:
            self.failed += 1

    def _produce(self) -> None:
        producer = KafkaProducer(
            bootstrap_servers=self.bootstrap,
            acks="all",
            retries=20,
            retry_backoff_ms=200,
            request_timeout_ms=15_000,
            max_block_ms=60_000,
        )
        i = 0
        while not self._stop_producing.is_set():
            value = f"live-{i}".encode()
            i += 1
            future = producer.send(self.topic, value)
            future.add_callback(lambda _meta, v=value: self._acked(v))
            future.add_errback(lambda _error: self._failed())
            time.sleep(self.interval_s)
        producer.flush(timeout=120)
        producer.close(timeout=30)

    def _consume(self) -> None:
        consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            request_timeout_ms=30_000,
        )
        consumer.assign([TopicPartition(self.topic, p) for p in range(self.partitions)])
        while not self._stop_consuming.is_set():
            got = [m.value for batch in consumer.poll(timeout_ms=500).values() for m in batch]
            with self._lock:
                self.consumed.update(got)
        consumer.close()

    def finish(self, timeout_s: float = 120) -> set[bytes]:
        """Stop producing; return the acknowledged values the consumer has not seen within
        ``timeout_s`` (empty: nothing lost)."""
        self._stop_producing.set()
        self._threads[0].join(timeout=180)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self._lock:
                missing = self.acked - self.consumed
            if not missing:
                break
            time.sleep(0.5)
        self._stop_consuming.set()
        self._threads[1].join(timeout=30)
        with self._lock:
            return self.acked - self.consumed
