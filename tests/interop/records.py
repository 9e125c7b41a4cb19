"""Reading a topic's records back as a client would: the values a consumer sees."""

from __future__ import annotations

from collections.abc import Callable

from kafka import KafkaConsumer

__all__ = ["consume_values"]


def consume_values(bootstrap: str, topic: str, enough: Callable[[set[int]], bool]) -> set[int]:
    """The integer values read from the start of ``topic`` until ``enough`` of them (or 20 s
    without a new record)."""
    consumer = KafkaConsumer(
        topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=20_000
    )
    seen: set[int] = set()
    try:
        for message in consumer:
            seen.add(int(message.value))
            if enough(seen):
                break
    finally:
        consumer.close()
    return seen
