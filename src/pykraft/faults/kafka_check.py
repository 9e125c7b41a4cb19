"""The checker of a fault run with Kafka brokers: nothing a broker acknowledged is lost.

After the last heal, once every broker is back and every partition has a leader:

- ``read_back``: every partition of ``acked`` read from its start with a fresh consumer;
  each acknowledged record must be at its partition and offset (else *lost*); no value may
  appear twice (else *duplicated*: idempotence failed); per producer and partition the
  sequence numbers increase with the offset (else *out of order*);
- the transactional topic read with ``read_committed``: each committed transaction's
  records present exactly once, no aborted transaction's record visible;
- the consumer group's commits never move backwards, and the offsets the group holds at the
  end are at least the last commit that succeeded;
- topics: one whose creation succeeded and that nobody deleted exists; one whose deletion
  succeeded does not;
- ``check_metadata_log``: in each controller's metadata log no record makes a leader outside
  the ISR it leaves, none elects a leader that was in neither the ISR nor the ELR before
  (or that the reassignment completing in that record brought in), no election is unclean
  (leader recovery state RECOVERING) unless unclean election was enabled;
- ``compare_views``: every broker's metadata, asked at the end, equals the image the
  controllers' log replays to at that point (leader, leader epoch, ISR, replicas).
"""

from __future__ import annotations

import collections
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.errors import KafkaError

from pykraft.faults.broker_watch import BrokerView
from pykraft.faults.kafka_workload import (
    ACKED_TOPIC,
    GROUP,
    TX_SIZE,
    TX_TOPIC,
    KafkaWorkload,
    TopicOp,
)
from pykraft.interop.load import end_offsets
from pykraft.metadata import records as r
from pykraft.metadata.image import NO_LEADER, NO_LEADER_CHANGE, Image
from pykraft.node.metadata_files import load_image

__all__ = ["KafkaVerdict", "check_metadata_log", "check_workload", "compare_views"]

_RECOVERING = 1
_READ_TIMEOUT_S = 60.0


@dataclass
class KafkaVerdict:
    acked: int = 0
    read: int = 0  # records read back from ``acked``
    checked: int = 0  # acknowledgements found at their offsets
    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    out_of_order: list[str] = field(default_factory=list)
    transactions: list[str] = field(default_factory=list)
    tx_checked: int = 0
    offsets: list[str] = field(default_factory=list)
    topics: list[str] = field(default_factory=list)
    elections: list[str] = field(default_factory=list)
    views: list[str] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)  # checks that could not read
    # Deleted topics listed again after a create of theirs went unanswered (not a failure).
    recreated: list[str] = field(default_factory=list)
    leader_changes: int = 0  # in the metadata log, for the report
    # The metadata clients' history (metadata_clients.py): the checker's answer, and the
    # smallest failing sub-history when it is not linearizable.
    linearizability: str = ""
    not_linearizable: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (
            self.lost
            or self.duplicated
            or self.out_of_order
            or self.transactions
            or self.offsets
            or self.topics
            or self.elections
            or self.views
            or self.unchecked
            or self.not_linearizable
        )

    def problems(self) -> list[tuple[str, list[str]]]:
        return [
            ("LOST", self.lost),
            ("DUPLICATED", self.duplicated),
            ("OUT OF ORDER", self.out_of_order),
            ("TRANSACTION", self.transactions),
            ("OFFSETS BACK", self.offsets),
            ("TOPIC", self.topics),
            ("UNSAFE ELECTION", self.elections),
            ("VIEW", self.views),
            ("UNCHECKED", self.unchecked),
            ("NOT LINEARIZABLE", self.not_linearizable),
        ]


# -- the records ------------------------------------------------------------------------------


def read_topic(
    bootstrap: str, topic: str, *, committed_only: bool = False
) -> dict[int, list[tuple[int, bytes]]]:
    """Every record of ``topic``: partition -> [(offset, value)], from the start to the end
    offsets asked for first."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        isolation_level="read_committed" if committed_only else "read_uncommitted",
        request_timeout_ms=10_000,
    )
    try:
        known = consumer.partitions_for_topic(topic)
        if not known:
            raise TimeoutError(f"{topic}: no partitions in the brokers' metadata")
        parts = [TopicPartition(topic, p) for p in sorted(known)]
        ends = end_offsets(
            bootstrap,
            parts,
            isolation_level="read_committed" if committed_only else "read_uncommitted",
        )
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        out: dict[int, list[tuple[int, bytes]]] = {tp.partition: [] for tp in parts}
        deadline = time.monotonic() + _READ_TIMEOUT_S
        while any(consumer.position(tp) < ends[tp] for tp in parts):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic}: not read to its end in {_READ_TIMEOUT_S:.0f} s")
            for tp, batch in consumer.poll(timeout_ms=1000).items():
                out[tp.partition] += [(int(m.offset), bytes(m.value)) for m in batch]
        return out
    finally:
        consumer.close()


def check_workload(workload: KafkaWorkload, verdict: KafkaVerdict) -> None:
    """Everything the clients were told, against what the brokers hold now. A check that
    cannot read what it needs (the cluster does not answer) is a failure of the run too
    (``unchecked``), and the others still run."""
    steps: list[tuple[str, Callable[[], None]]] = [
        (
            f"{ACKED_TOPIC} read back",
            lambda: _check_acked(workload, read_topic(workload.bootstrap, ACKED_TOPIC), verdict),
        ),
        (f"{TX_TOPIC} read back", lambda: _check_transactions(workload, verdict)),
        ("group offsets", lambda: _check_offsets(workload, verdict)),
        ("topics", lambda: _check_topics(workload, verdict)),
    ]
    for name, step in steps:
        try:
            step()
        except (KafkaError, TimeoutError) as e:
            verdict.unchecked.append(f"{name}: {type(e).__name__}: {e}")


def _check_acked(
    workload: KafkaWorkload, log: dict[int, list[tuple[int, bytes]]], verdict: KafkaVerdict
) -> None:
    at = {(p, offset): value for p, records in log.items() for offset, value in records}
    verdict.acked = len(workload.acks)
    verdict.read = len(at)
    for ack in workload.acks:
        found = at.get((ack.partition, ack.offset))
        if found != ack.value:
            verdict.lost.append(
                f"{ack.value.decode()} acknowledged at {ACKED_TOPIC}-{ack.partition}@"
                f"{ack.offset}; the log holds {found!r}"
            )
        else:
            verdict.checked += 1
    counts = collections.Counter(at.values())
    verdict.duplicated += [f"{v.decode()} x{n}" for v, n in counts.items() if n > 1]
    for partition, records in log.items():
        last: dict[str, int] = {}
        for offset, value in records:
            producer, _, seq = value.decode().partition(":")
            if int(seq) <= last.get(producer, -1):
                verdict.out_of_order.append(
                    f"{ACKED_TOPIC}-{partition}@{offset}: producer {producer} seq {seq} after "
                    f"{last[producer]}"
                )
            last[producer] = max(int(seq), last.get(producer, -1))


def _check_transactions(workload: KafkaWorkload, verdict: KafkaVerdict) -> None:
    """With ``read_committed``. A commit is acknowledged once the coordinator logged it;
    its markers reach the partitions after that, so the topic is read again (for up to
    ``_READ_TIMEOUT_S``) until every committed transaction is visible."""
    deadline = time.monotonic() + _READ_TIMEOUT_S
    while True:
        log = read_topic(workload.bootstrap, TX_TOPIC, committed_only=True)
        seen = collections.Counter(value for records in log.values() for _, value in records)
        if time.monotonic() > deadline or all(
            seen[f"t:{n}:0".encode()] for n in workload.tx_committed
        ):
            break
        time.sleep(1.0)
    for n in workload.tx_committed:
        for i in range(TX_SIZE):
            value = f"t:{n}:{i}".encode()
            if seen[value] != 1:
                verdict.transactions.append(
                    f"committed transaction {n}: {value.decode()} read {seen[value]} times"
                )
        verdict.tx_checked += 1
    for n in workload.tx_aborted:
        visible = [i for i in range(TX_SIZE) if seen[f"t:{n}:{i}".encode()]]
        if visible:
            verdict.transactions.append(f"aborted transaction {n}: records {visible} visible")


def _check_offsets(workload: KafkaWorkload, verdict: KafkaVerdict) -> None:
    last: dict[int, int] = {}
    for _t, partition, offset in workload.commits:
        if offset < last.get(partition, -1):
            verdict.offsets.append(
                f"group {GROUP} committed {ACKED_TOPIC}-{partition} at {offset} after "
                f"{last[partition]}"
            )
        last[partition] = max(offset, last.get(partition, -1))
    probe = KafkaConsumer(
        bootstrap_servers=workload.bootstrap, group_id=GROUP, enable_auto_commit=False
    )
    try:
        for partition, offset in sorted(last.items()):
            held = probe.committed(TopicPartition(ACKED_TOPIC, partition))
            if held is None or held < offset:
                verdict.offsets.append(
                    f"group {GROUP} holds {ACKED_TOPIC}-{partition} at {held}, below the "
                    f"commit of {offset} that succeeded"
                )
    finally:
        probe.close()


def _check_topics(workload: KafkaWorkload, verdict: KafkaVerdict) -> None:
    admin = KafkaAdminClient(bootstrap_servers=workload.bootstrap, request_timeout_ms=10_000)
    try:
        present = set(admin.list_topics())
    finally:
        admin.close()
    verdict.topics.extend(topic_results_disagree(workload.topic_ops, present, verdict))


def topic_results_disagree(
    ops: list[TopicOp], present: set[str], verdict: KafkaVerdict
) -> list[str]:
    """What the final topic listing contradicts. A create without a successful answer may
    still take effect at any later time (a broker retries a forwarded CreateTopics across a
    controller failover until it is answered, seen re-creating a topic 7 s after the
    client's delete of it succeeded): a deleted topic listed again after such a create is
    counted in ``verdict.recreated``, not a disagreement."""
    out: list[str] = []
    attempted_delete = {op.topic for op in ops if op.op == "delete"}
    uncertain_create = {op.topic for op in ops if op.op == "create" and not op.ok}
    for op in ops:
        if op.ok and op.op == "create" and op.topic not in attempted_delete:
            if op.topic not in present:
                out.append(f"{op.topic}: created, never deleted, missing")
        elif op.ok and op.op == "delete" and op.topic in present:
            if op.topic in uncertain_create:
                verdict.recreated.append(op.topic)
            else:
                out.append(f"{op.topic}: deleted, still listed")
    return out


# -- the metadata log -------------------------------------------------------------------------


def check_metadata_log(
    metadata_log_dir: Path,
    *,
    label: str,
    unclean_allowed: bool = False,
    verdict: KafkaVerdict,
) -> Image:
    """The election rules over every record of one controller's log (module docstring),
    its findings named ``label``; the image the whole log replays to."""

    def name(image: Image, topic_id: uuid.UUID, partition: int) -> str:
        topic = image.topics.get(topic_id)
        return f"{topic.name if topic is not None else topic_id}-{partition}"

    def before(image: Image, record: Any, offset: int) -> None:
        if not isinstance(record, r.PartitionChangeRecord):
            return
        p = image.partition(record.topic_id, record.partition_id)
        if p is None or record.leader in (NO_LEADER_CHANGE, NO_LEADER):
            return
        if record.leader != p.leader:
            verdict.leader_changes += 1
            vouched = record.isr if record.replicas is not None and record.isr else ()
            eligible = {*p.isr, *(p.elr or ()), *vouched}
            if record.leader not in eligible and not unclean_allowed:
                verdict.elections.append(
                    f"{label} @{offset}: "
                    f"{name(image, record.topic_id, record.partition_id)} "
                    f"gets leader {record.leader}, in neither its ISR {p.isr} nor its ELR "
                    f"{p.elr or ()}"
                )
        if record.leader_recovery_state == _RECOVERING and not unclean_allowed:
            verdict.elections.append(
                f"{label} @{offset}: unclean election of "
                f"{name(image, record.topic_id, record.partition_id)} (leader "
                f"{record.leader}) with unclean election off"
            )

    def after(image: Image, record: Any, offset: int) -> None:
        if not isinstance(record, r.PartitionChangeRecord | r.PartitionRecord):
            return
        p = image.partition(record.topic_id, record.partition_id)
        if p is not None and p.leader >= 0 and p.leader not in p.isr:
            verdict.elections.append(
                f"{label} @{offset}: {name(image, p.topic_id, p.partition_id)} led by "
                f"{p.leader}, outside its ISR {p.isr}"
            )

    return load_image(metadata_log_dir, before_replay=before, after_replay=after)


def compare_views(
    image: Image, views: Iterable[BrokerView], topics: Iterable[str], verdict: KafkaVerdict
) -> None:
    """Each broker's answer against the image (leader, leader epoch, ISR, replicas)."""
    ids: dict[str, uuid.UUID] = {t.name: t.topic_id for t in image.topics.values()}
    for view in views:
        for topic in topics:
            topic_id = ids.get(topic)
            if topic_id is None:
                verdict.views.append(f"{topic}: not in the controllers' log")
                continue
            for (name, index), seen in sorted(view.partitions.items()):
                if name != topic:
                    continue
                p = image.partition(topic_id, index)
                want = (
                    None
                    if p is None
                    else (p.leader, p.leader_epoch, tuple(sorted(p.isr)), p.replicas)
                )
                got = (seen.leader, seen.leader_epoch, tuple(sorted(seen.isr)), seen.replicas)
                if want != got:
                    verdict.views.append(
                        f"broker {view.broker_id}: {topic}-{index} (leader, epoch, ISR, "
                        f"replicas) {got}; the log says {want}"
                    )
