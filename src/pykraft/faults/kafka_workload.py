"""The workload of a fault run with real Kafka brokers: what users stake their data on.

Real Kafka clients (kafka-python) against the run's Kafka brokers, each in a thread of its own:

- ``producers`` idempotent producers (``acks=all``, ``enable.idempotence``) writing
  ``"<producer>:<seq>"`` to topic ``acked`` (RF 3, ``min.insync.replicas=2``), record ``seq``
  to partition ``seq % partitions``; every acknowledgement is kept with its partition and
  offset (``Ack``);
- one transactional producer: transactions of ``TX_SIZE`` records to topic ``tx``, each
  committed or aborted; which ones committed (and which aborted for sure) is kept;
- a consumer in group ``faults`` reading ``acked`` and committing its position after each
  poll; every successful commit is kept (committed offsets may never move backwards);
- an admin creating a topic every few seconds and deleting the one created two steps
  before, and reordering the replicas of an ``acked`` partition (a reassignment that moves
  its preferred leader); every answer is kept;
- ``metadata_clients.CLIENTS`` admins creating, deleting, growing and configuring a few
  topics at random, each operation's invocation and answer kept in ``history`` for the
  linearizability check (``metadata_clients.py``).

Nothing here judges: ``kafka_check.py`` does, after the last heal. Client errors are counted
by kind (``outcomes``); a client that fails is made again, as an application would.
"""

from __future__ import annotations

import collections
import functools
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.errors import KafkaError

from pykraft.faults.linearizable import History
from pykraft.faults.metadata_clients import CLIENTS, run_client

__all__ = [
    "ACKED_TOPIC",
    "GROUP",
    "TX_PARTITIONS",
    "TX_SIZE",
    "TX_TOPIC",
    "Ack",
    "KafkaWorkload",
    "TopicOp",
]

ACKED_TOPIC = "acked"
TX_TOPIC = "tx"
GROUP = "faults"
TX_SIZE = 4
TX_PARTITIONS = 3
_CLIENT_TIMEOUT_MS = 5_000
_TOPIC_ALREADY_EXISTS = 36


@dataclass(frozen=True, slots=True)
class Ack:
    producer: int
    seq: int
    partition: int
    offset: int

    @property
    def value(self) -> bytes:
        return f"{self.producer}:{self.seq}".encode()


@dataclass(frozen=True, slots=True)
class TopicOp:
    op: str  # create | delete
    topic: str
    ok: bool  # the answer said so (False: an error or no answer; the outcome is unknown)


@dataclass
class KafkaWorkload:
    bootstrap: str
    partitions: int = 6
    producers: int = 2
    rate: float = 100.0  # records per second per producer
    acks: list[Ack] = field(default_factory=list)
    sent: collections.Counter[int] = field(default_factory=collections.Counter)
    tx_committed: list[int] = field(default_factory=list)
    tx_aborted: list[int] = field(default_factory=list)
    commits: list[tuple[float, int, int]] = field(default_factory=list)  # (t, partition, offset)
    topic_ops: list[TopicOp] = field(default_factory=list)
    reassignments: collections.Counter[str] = field(default_factory=collections.Counter)
    outcomes: collections.Counter[str] = field(default_factory=collections.Counter)
    history: History = field(default_factory=History)  # the metadata clients' operations
    seed: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    _producers: list[KafkaProducer] = field(default_factory=list)  # open ones
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    # -- set-up and lifetime --------------------------------------------------------------

    def create_topics(self, replication: int = 3) -> None:
        """``acked`` and ``tx`` (RF ``replication``, min.insync.replicas 2)."""
        configs = {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"}
        topics = [
            NewTopic(ACKED_TOPIC, self.partitions, replication, topic_configs=configs),
            NewTopic(TX_TOPIC, TX_PARTITIONS, replication, topic_configs=configs),
        ]
        deadline = time.monotonic() + 30
        while True:
            admin = self._admin()
            try:
                result = admin.create_topics(topics, raise_errors=False)
                codes = {t["name"]: t["error_code"] for t in result["topics"]}
                if all(code in (0, _TOPIC_ALREADY_EXISTS) for code in codes.values()):
                    return
                raise RuntimeError(f"the workload's topics not created: {codes}")
            except KafkaError:
                # A client that bootstrapped from a broker whose cache is not yet complete
                # may name a controller it cannot dial (UnknownBrokerIdError): again.
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
            finally:
                admin.close()

    def start(self) -> None:
        loops: list[tuple[str, Callable[[], None]]] = [
            (f"producer-{i}", functools.partial(self._produce, i)) for i in range(self.producers)
        ]
        loops += [
            ("transactions", self._transact),
            ("consumer", self._consume),
            ("admin", self._administer),
        ]
        loops += [
            (f"metadata-{i}", functools.partial(self._metadata_ops, i)) for i in range(CLIENTS)
        ]
        for name, loop in loops:
            thread = threading.Thread(target=self._guard(name, loop), name=name, daemon=True)
            self._threads.append(thread)
            thread.start()

    def stop(self, timeout_s: float = 30.0) -> None:
        """Stop the loops; one still blocked after ``timeout_s`` (kafka-python's
        ``commit_transaction`` waits without a bound while no coordinator answers) is left
        behind (a daemon thread) and counted: what it was doing has no known outcome."""
        self._stop.set()
        deadline = time.monotonic() + timeout_s
        for thread in self._threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                self._count(f"{thread.name}: abandoned at the stop")
        self._threads.clear()
        with self.lock:
            left = list(self._producers)
        for producer in left:  # an abandoned thread's: its sender thread must not live on
            close_producer(producer, 0.0)

    def _guard(self, name: str, loop: Callable[[], None]) -> Callable[[], None]:
        """Run ``loop`` again (new clients) after anything it did not handle."""

        def run() -> None:
            while not self._stop.is_set():
                try:
                    loop()
                except Exception as e:  # a client that broke: count it, start again
                    self._count(f"{name}: {type(e).__name__}")
                    self._stop.wait(1.0)

        return run

    def _count(self, outcome: str) -> None:
        with self.lock:
            self.outcomes[outcome] += 1

    def _admin(self) -> KafkaAdminClient:
        return KafkaAdminClient(
            bootstrap_servers=self.bootstrap, request_timeout_ms=_CLIENT_TIMEOUT_MS
        )

    # -- the loops --------------------------------------------------------------------------

    def _open_producer(self, **config: Any) -> KafkaProducer:
        producer = KafkaProducer(bootstrap_servers=self.bootstrap, **config)
        with self.lock:
            self._producers.append(producer)
        return producer

    def _close_producer(self, producer: KafkaProducer, timeout_s: float) -> None:
        close_producer(producer, timeout_s)
        with self.lock:
            if producer in self._producers:
                self._producers.remove(producer)

    def _produce(self, producer_id: int) -> None:
        producer = self._open_producer(
            acks="all",
            enable_idempotence=True,
            linger_ms=5,
            request_timeout_ms=_CLIENT_TIMEOUT_MS,
            delivery_timeout_ms=60_000,
            max_block_ms=10_000,
        )
        interval = 1.0 / self.rate
        try:
            while not self._stop.is_set():
                with self.lock:
                    seq = self.sent[producer_id]
                    self.sent[producer_id] += 1
                partition = seq % self.partitions
                future = producer.send(
                    ACKED_TOPIC, f"{producer_id}:{seq}".encode(), partition=partition
                )
                future.add_callback(self._acked, producer_id, seq)
                future.add_errback(lambda e: self._count(f"produce: {type(e).__name__}"))
                self._stop.wait(interval)
            producer.flush(timeout=60)
        finally:
            self._close_producer(producer, 10.0)

    def _acked(self, producer_id: int, seq: int, meta: Any) -> None:
        with self.lock:
            self.acks.append(Ack(producer_id, seq, int(meta.partition), int(meta.offset)))

    def _transact(self) -> None:
        producer = self._open_producer(
            transactional_id="faults-tx",
            request_timeout_ms=_CLIENT_TIMEOUT_MS,
            max_block_ms=10_000,
        )
        try:
            producer.init_transactions()
            while not self._stop.is_set():
                with self.lock:
                    n = self.sent[-1]
                    self.sent[-1] += 1
                producer.begin_transaction()
                try:
                    sends = [
                        producer.send(TX_TOPIC, f"t:{n}:{i}".encode(), partition=i % TX_PARTITIONS)
                        for i in range(TX_SIZE)
                    ]
                    if n % 5 == 4:  # every fifth is aborted on purpose
                        producer.abort_transaction()
                        with self.lock:
                            self.tx_aborted.append(n)
                    elif self._commit(producer, sends):
                        with self.lock:
                            self.tx_committed.append(n)
                    else:
                        # The client said committed though a record of it was never
                        # acknowledged (Kafka's Java producer refuses such a commit):
                        # the outcome is the client's, not checked as committed.
                        self._count("transaction: committed with a send that failed")
                except KafkaError as e:
                    self._count(f"transaction: {type(e).__name__}")
                    return  # the outcome is unknown; a new producer fences this one
                self._stop.wait(0.2)
        finally:
            self._close_producer(producer, 10.0)

    @staticmethod
    def _commit(producer: KafkaProducer, sends: list[Any]) -> bool:
        """Commit; whether every record of the transaction was acknowledged too."""
        producer.commit_transaction()
        return all(f.is_done and f.succeeded() for f in sends)

    def _consume(self) -> None:
        consumer = KafkaConsumer(
            ACKED_TOPIC,
            bootstrap_servers=self.bootstrap,
            group_id=GROUP,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            request_timeout_ms=_CLIENT_TIMEOUT_MS + 1000,
            session_timeout_ms=6_000,
            heartbeat_interval_ms=1_000,
        )
        try:
            while not self._stop.is_set():
                batches = consumer.poll(timeout_ms=500)
                if not batches:
                    continue
                positions = {tp: consumer.position(tp) for tp in batches}
                try:
                    consumer.commit()
                except KafkaError as e:
                    self._count(f"commit: {type(e).__name__}")
                    continue
                now = time.monotonic()
                with self.lock:
                    for tp, offset in positions.items():
                        self.commits.append((now, tp.partition, int(offset)))
        finally:
            consumer.close()

    def _administer(self) -> None:
        """Topic churn and reassignments. After a client error the admin is made again: its
        idea of the controller (a broker named in an older Metadata answer) may be stale."""
        admin = self._admin()
        try:
            step = len([op for op in self.topic_ops if op.op == "create"])
            while not self._stop.wait(3.0):
                failed = self._topic_step(admin, step)
                if step % 3 == 2:
                    failed = self._reassign(admin, step) or failed
                step += 1
                if failed:
                    return
        finally:
            admin.close()

    def _metadata_ops(self, client: int) -> None:
        """A metadata client (``metadata_clients.run_client``) until the stop or a client
        error; then a new admin client after a pause."""
        admin = self._admin()
        try:
            rng = random.Random(self.seed * 1_000 + client * 100 + len(self.history.operations))
            run_client(client, admin, self.history, rng, self._stop)
        finally:
            admin.close()
        self._stop.wait(0.5)

    def _topic_step(self, admin: KafkaAdminClient, step: int) -> bool:
        """Create ``churn-<step>``, delete ``churn-<step - 2>``; whether the client failed."""
        failed = False
        ops = [("create", f"churn-{step}")]
        if step >= 2:
            ops.append(("delete", f"churn-{step - 2}"))
        for op, topic in ops:
            try:
                if op == "create":
                    answer = admin.create_topics([NewTopic(topic, 1, 3)], raise_errors=False)
                else:
                    answer = admin.delete_topics([topic], raise_errors=False)
                codes = [t["error_code"] for t in answer["topics"]]
                ok = all(code == 0 for code in codes)
                for code in codes:
                    if code:
                        self._count(f"{op}: error code {code}")  # 36: TOPIC_ALREADY_EXISTS
            except KafkaError as e:
                self._count(f"{op}: {type(e).__name__}")
                ok, failed = False, True
            with self.lock:
                self.topic_ops.append(TopicOp(op, topic, ok))
        return failed

    def _reassign(self, admin: KafkaAdminClient, step: int) -> bool:
        """Rotate the replicas of one ``acked`` partition: its preferred leader moves.
        Whether the client failed."""
        partition = step % self.partitions
        try:
            described = admin.describe_topics([ACKED_TOPIC])[0]["partitions"]
            current = next(p for p in described if p["partition_index"] == partition)
            replicas = list(current["replica_nodes"])
            if len(replicas) < 2:
                return False
            rotated = replicas[1:] + replicas[:1]
            answer = admin.alter_partition_reassignments(
                {TopicPartition(ACKED_TOPIC, partition): rotated}
            )
        except KafkaError as e:
            with self.lock:
                self.reassignments[f"no answer ({type(e).__name__})"] += 1
            return True
        errors = [e for e in answer.values() if e is not None]
        with self.lock:
            self.reassignments["accepted" if not errors else errors[0].__name__] += 1
        return False


def close_producer(producer: KafkaProducer, timeout_s: float) -> None:
    """Close for sure. kafka-python's ``close`` flushes first and raises when the flush
    times out, leaving its sender thread running (retrying, drawing from the global
    ``random``, for the rest of the process); then the sender is force-closed."""
    try:
        producer.close(timeout=timeout_s)
        return
    except KafkaError:
        pass
    sender = getattr(producer, "_sender", None)  # kafka-python has no public way
    if sender is not None:
        sender.force_close()
        sender.join(5.0)
