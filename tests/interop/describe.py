"""A topic's partitions as a broker reports them, through kafka-python (Metadata), in the shape
of a ``kafka-topics --describe`` line (``Partition``, ``Leader``, ``Replicas``, ``Isr``).

For the waits of the interop tests: polling with Kafka's tool starts a JVM per poll (2-4 s on
a 2-core machine with a cluster running); the client answers in milliseconds. Where the tool's
own output is what a test proves, the test still runs the tool."""

from __future__ import annotations

from collections.abc import Callable

from kafka import KafkaAdminClient

__all__ = ["every", "partitions", "whole"]


def partitions(bootstrap: str, topic: str) -> list[dict[str, str]]:
    """One dict per partition, by partition index; empty while the topic is unknown or no
    broker answers (a broker restarting: the caller asks again)."""
    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    except Exception:
        return []
    try:
        (described,) = admin.describe_topics([topic])
    except Exception:
        return []
    finally:
        admin.close()
    if described["error_code"]:
        return []

    def ids(nodes: list[int]) -> str:
        return ",".join(str(n) for n in nodes)

    return [
        {
            "Partition": str(p["partition_index"]),
            "Leader": "none" if p["leader_id"] < 0 else str(p["leader_id"]),
            "Replicas": ids(p["replica_nodes"]),
            "Isr": ids(p["isr_nodes"]),
        }
        for p in sorted(described["partitions"], key=lambda p: p["partition_index"])
    ]


def every(bootstrap: str, topic: str, holds: Callable[[dict[str, str]], bool]) -> bool:
    """The topic is known and ``holds`` for each of its partitions."""
    parts = partitions(bootstrap, topic)
    return bool(parts) and all(holds(p) for p in parts)


def whole(bootstrap: str, topic: str) -> bool:
    """Every partition led, every replica in the ISR."""
    return every(
        bootstrap,
        topic,
        lambda p: (
            p["Leader"] != "none" and set(p["Isr"].split(",")) == set(p["Replicas"].split(","))
        ),
    )
