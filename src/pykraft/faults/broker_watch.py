"""The watch over the Kafka brokers of a fault run: what each broker tells a client.

Every ``SAMPLE_S`` each running broker is asked, on its own connection, for the metadata of
the workload's topics (Metadata v12, as a client asks). From the answers:

- *offline time*: a partition is offline while the freshest answer (highest leader epoch)
  names no leader; each offline interval's length is kept;
- *leader epochs never go back*: within one broker process's life, the leader epoch it
  reports for a partition never decreases;
- *alive brokers*: the brokers a broker lists are the unfenced ones it knows
  (``alive_in_others``: listed by some other broker answering now); the run measures the
  time from a heal to the broker listed again, and checks a broker cut off from the
  controllers drops out of the list (fenced) and leads nothing.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pykraft.faults.cluster import FaultCluster, Node
from pykraft.net.client import Connection
from pykraft.protocol import ApiKey
from pykraft.protocol.apis import request_schema
from pykraft.protocol.build import make

__all__ = ["BrokerView", "BrokerWatch", "PartitionView"]

SAMPLE_S = 0.5
_TIMEOUT_MS = 1_500
_METADATA_VERSION = 12


@dataclass(frozen=True, slots=True)
class PartitionView:
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class BrokerView:
    broker_id: int
    at: float  # monotonic
    alive: frozenset[int]  # the brokers it lists
    partitions: dict[tuple[str, int], PartitionView]


@dataclass
class BrokerWatch:
    cluster: FaultCluster
    topics: tuple[str, ...]
    views: dict[int, BrokerView] = field(default_factory=dict)  # newest answer per broker
    offline_ms: list[float] = field(default_factory=list)
    epochs_back: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    _offline_since: dict[tuple[str, int], float] = field(default_factory=dict)
    _epochs: dict[tuple[int, int, str, int], int] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._main, name="broker-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        now = time.monotonic()
        with self.lock:
            self.offline_ms += [(now - t) * 1000 for t in self._offline_since.values()]
            self._offline_since.clear()

    # -- what the run asks ------------------------------------------------------------------

    def alive_in_others(self, broker_id: int, since: float) -> bool:
        """Another broker, answering after ``since``, lists ``broker_id`` as alive."""
        with self.lock:
            return any(
                v.at > since and broker_id in v.alive
                for b, v in self.views.items()
                if b != broker_id
            )

    def fenced_in_others(self, broker_id: int, since: float) -> bool:
        """Every other broker answering after ``since`` leaves ``broker_id`` out; at least
        one answered."""
        with self.lock:
            others = [v for b, v in self.views.items() if b != broker_id and v.at > since]
            return bool(others) and all(broker_id not in v.alive for v in others)

    def freshest(self) -> dict[tuple[str, int], PartitionView]:
        """Per partition, the answer with the highest leader epoch."""
        with self.lock:
            return _freshest(self.views.values())

    def led_by(self, broker_id: int, since: float) -> list[tuple[str, int]]:
        """Partitions the freshest answers after ``since`` say ``broker_id`` leads."""
        with self.lock:
            fresh = _freshest(v for v in self.views.values() if v.at > since)
        return sorted(k for k, p in fresh.items() if p.leader == broker_id)

    # -- the loop ---------------------------------------------------------------------------

    def _main(self) -> None:
        asyncio.run(self._loop())

    async def _loop(self) -> None:
        conns: dict[tuple[int, int], Connection] = {}
        try:
            while not self._stop.is_set():
                started = time.monotonic()
                brokers = [b for b in self.cluster.brokers.values() if b.running and not b.paused]
                answers = await asyncio.gather(*(self._ask(b, conns) for b in brokers))
                now = time.monotonic()
                with self.lock:
                    for node, view in zip(brokers, answers, strict=True):
                        if view is not None:
                            self._judge(node, view)
                    self._offline(now)
                await asyncio.sleep(max(0.0, SAMPLE_S - (time.monotonic() - started)))
        finally:
            for conn in conns.values():
                conn.abort()

    async def _ask(self, node: Node, conns: dict[tuple[int, int], Connection]) -> BrokerView | None:
        key = (node.node_id, node.incarnation)
        try:
            conn = conns.get(key)
            if conn is None or conn.closed:
                conn = await Connection.open(
                    node.host, node.port, timeout_ms=_TIMEOUT_MS, client_id="pykraft-faults-watch"
                )
                conns[key] = conn
            request = make(
                request_schema(ApiKey.METADATA, _METADATA_VERSION),
                {
                    "topics": [{"topic_id": None, "name": t} for t in self.topics],
                    "allow_auto_topic_creation": False,
                    "include_topic_authorized_operations": False,
                },
            )
            answer: Any = await conn.request(request, timeout_ms=_TIMEOUT_MS)
        except (ConnectionError, TimeoutError, OSError):
            stale = conns.pop(key, None)
            if stale is not None:
                stale.abort()
            return None
        partitions = {
            (str(t.name), int(p.partition_index)): PartitionView(
                int(p.leader_id),
                int(p.leader_epoch),
                tuple(int(b) for b in p.isr_nodes),
                tuple(int(b) for b in p.replica_nodes),
            )
            for t in answer.topics
            if int(t.error_code) == 0
            for p in t.partitions
        }
        alive = frozenset(int(b.node_id) for b in answer.brokers)
        return BrokerView(node.node_id, time.monotonic(), alive, partitions)

    def _judge(self, node: Node, view: BrokerView) -> None:
        self.views[node.node_id] = view
        for (topic, index), p in view.partitions.items():
            key = (node.node_id, node.incarnation, topic, index)
            last = self._epochs.get(key, -1)
            if p.leader_epoch < last:
                self.epochs_back.append(
                    f"broker {node.node_id} reported {topic}-{index} at leader epoch "
                    f"{p.leader_epoch} after {last}"
                )
            self._epochs[key] = max(last, p.leader_epoch)

    def _offline(self, now: float) -> None:
        for key, p in _freshest(self.views.values()).items():
            since = self._offline_since.get(key)
            if p.leader < 0 and since is None:
                self._offline_since[key] = now
            elif p.leader >= 0 and since is not None:
                self.offline_ms.append((now - since) * 1000)
                del self._offline_since[key]


def _freshest(views: Iterable[BrokerView]) -> dict[tuple[str, int], PartitionView]:
    best: dict[tuple[str, int], PartitionView] = {}
    for view in views:
        for key, p in view.partitions.items():
            if key not in best or p.leader_epoch > best[key].leader_epoch:
                best[key] = p
    return best
