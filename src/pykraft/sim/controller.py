"""The metadata controller in the simulator (the ``controller`` profile): on every node the
real ``QuorumController`` over the real core, hosted as ``pykraft.node.controller_host``
hosts it on a real node, but synchronously and with virtual time; and the controller
invariants, checked whenever a node's image moves.

``SimController`` (one per node) replays committed metadata records up to the high watermark
(whole batches, after the node's application applied them), activates on an established
leader (writing its activation records), writes a request's records as one batch through
``RaftCore.append`` and applies them at once, and answers once they commit (``deliver`` is
called with the response then; with None when leadership was lost first). A node that stops
leading with applied-but-uncommitted records rebuilds its image from its snapshot and the
committed log. Snapshots carry the image's records after the application's state record.

``ControllerChecker`` holds the invariants of issue 15 part 4, over *committed* images
(standbys' images, and an active controller's whenever it holds nothing uncommitted):

* ``image-structure``: a partition's leader is in its ISR, the ISR within its replicas,
  topic names and ids one to one (``Image.check``), on every image, active ones included;
* ``partition-epochs-monotonic``: along one node's committed log a partition's leader epoch
  and partition epoch never decrease;
* ``fenced-leads-nothing``: in a committed image every partition leader is a registered,
  unfenced broker not in controlled shutdown;
* ``topic-all-or-nothing``: a committed topic has partitions 0..n-1, n >= 1;
* ``broker-epochs``: broker epochs in an image are distinct, and along one node's committed
  log a broker's epoch never decreases;
* ``images-equal``: two nodes whose committed images are at the same offset hold the same
  image (the records a snapshot of each would hold);
* ``reassignment-limits`` (KIP-435): with limits set, a committed step in flight never
  removes more than ``reassignment.parallel.replica.count`` replicas nor adds more (the
  simulated topics keep min.insync.replicas at 1, so its exception never applies), and no
  more partitions than ``reassignment.parallel.partition.count`` have a stepped move in
  flight; a final target is never empty and never names a broker twice.
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
import random
import uuid
from collections.abc import Callable
from typing import Any

from pykraft.controller.brokers import register_broker_version
from pykraft.controller.config import ControllerConfig
from pykraft.controller.image import BROKER_RESOURCE, Image
from pykraft.controller.partitions import partition_version
from pykraft.controller.quorum_controller import Context, QuorumController, Result
from pykraft.controller.steps import Limits
from pykraft.metadata.serde import decode_record, encode_record
from pykraft.raft.config import NotLeaderError
from pykraft.raft.core import RaftCore
from pykraft.raft.interfaces import ReplicatedLog, SnapshotStore
from pykraft.raft.roles import Leader
from pykraft.raft.types import OffsetAndEpoch
from pykraft.records import decode_records, iter_batches
from pykraft.sim.history import InvariantViolation

__all__ = ["CLUSTER_ID", "ControllerChecker", "SimController"]

CLUSTER_ID = "sim-cluster"
_READ_BYTES = 256 * 1024
Deliver = Callable[[dict[str, Any] | None], None]


class SimController:
    """Invariant: ``position`` is the next log offset to replay; while ``active`` every
    record below it is in the image."""

    def __init__(
        self, node_id: int, config: ControllerConfig, seed: int, checker: ControllerChecker
    ) -> None:
        self.node_id = node_id
        self.config = config
        self.seed = seed
        self.checker = checker
        self.controller = self._new_controller()
        self.position = 0
        self.epoch = -1
        self._waiters: list[tuple[int, int, Deliver, dict[str, Any]]] = []
        self._seq = itertools.count()
        self.writes = 0

    def _new_controller(self) -> QuorumController:
        # A stream per controller object: a restarted controller must not draw the topic
        # ids it drew before (a deleted topic's id would come back).
        self._generation = getattr(self, "_generation", 0) + 1
        return QuorumController(
            self.config,
            node_id=self.node_id,
            cluster_id=CLUSTER_ID,
            rng=random.Random(self.seed * 1_000_033 + self._generation),
        )

    @property
    def image(self) -> Image:
        return self.controller.image

    @property
    def active(self) -> bool:
        return self.controller.active

    # -- the log -----------------------------------------------------------------------------

    def reset(self) -> None:
        """A stopped node: nothing in memory survives."""
        self.controller = self._new_controller()
        self.position = 0
        self.epoch = -1
        self._fail_waiters()
        self.checker.forget(self.node_id)

    def load_snapshot(self, store: SnapshotStore, snapshot_id: OffsetAndEpoch) -> None:
        self.controller = self._new_controller()
        self.checker.forget(self.node_id)
        size = store.size(snapshot_id)
        assert size is not None
        data = store.read(snapshot_id, 0, size)
        for header, pos in iter_batches(data):
            if header.is_control:
                continue
            for record in decode_records(data[pos : pos + header.size]):
                if record.value is not None:
                    value, version = decode_record(record.value)
                    self.controller.replay(value, version, snapshot_id.offset - 1)
        self.position = snapshot_id.offset

    def _rebuild(self, core: RaftCore, log: ReplicatedLog, store: SnapshotStore) -> None:
        latest = store.latest()
        if latest is None:
            self.controller = self._new_controller()
            self.checker.forget(self.node_id)
            self.position = log.start_offset
        else:
            self.load_snapshot(store, latest)
        self._replay(log, core.high_watermark)

    def _replay(self, log: ReplicatedLog, high_watermark: int) -> None:
        while self.position < high_watermark:
            data = log.read(self.position, _READ_BYTES)
            if not data:
                return
            moved = False
            for header, pos in iter_batches(data):
                if header.last_offset >= high_watermark:
                    return
                if header.last_offset < self.position:
                    continue
                moved = True
                if not header.is_control:
                    for record in decode_records(data[pos : pos + header.size]):
                        if record.offset >= self.position and record.value is not None:
                            value, version = decode_record(record.value)
                            self.controller.replay(value, version, record.offset)
                self.position = header.last_offset + 1
            if not moved:
                return

    def sync(self, core: RaftCore, log: ReplicatedLog, store: SnapshotStore, now_ms: int) -> None:
        """After the node's Ready: replay, (de)activate, answer what committed, check."""
        role = core.state
        leader = role if isinstance(role, Leader) else None
        if self.active and (leader is None or leader.epoch != self.epoch):
            self.controller.deactivate()
            self.epoch = -1
            self._fail_waiters()
            if self.position > core.high_watermark:
                self._rebuild(core, log, store)
        hwm = core.high_watermark
        if self.position < hwm:
            self._replay(log, hwm)
        if (
            not self.active
            and leader is not None
            and hwm > leader.epoch_start_offset
            and self.position >= hwm
        ):
            self.epoch = leader.epoch
            records = self.controller.activate(now_ms, None)
            if records:
                self.write(core, log, records, now_ms)
        self._resolve(core.high_watermark)
        committed = not self.active or self.position <= core.high_watermark
        self.checker.check(self.node_id, self.image, self.position, committed)

    # -- writes ------------------------------------------------------------------------------

    def context(self, core: RaftCore, log: ReplicatedLog, now_ms: int) -> Context:
        return Context(now_ms=now_ms, next_offset=log.end_offset, kraft_version=core.kraft_version)

    def write(
        self, core: RaftCore, log: ReplicatedLog, records: list[tuple[Any, int]], now_ms: int
    ) -> int | None:
        values = [encode_record(record, version) for record, version in records]
        base = log.end_offset
        try:
            last = core.append(values, now_ms)
        except NotLeaderError:
            return None
        assert last == base + len(values) - 1
        for i, (record, version) in enumerate(records):
            self.controller.replay(record, version, base + i)
        self.position = last + 1
        self.controller.wrote(now_ms)
        self.writes += 1
        return last

    def handle(
        self,
        core: RaftCore,
        log: ReplicatedLog,
        api_key: int,
        version: int,
        request: Any,
        now_ms: int,
        deliver: Deliver,
    ) -> None:
        """Handle a request; ``deliver(response fields)`` once its records committed, or
        ``deliver(None)`` if this controller is not (or stops being) active first."""
        if not self.active:
            deliver(None)
            return
        result: Result = self.controller.handle(
            api_key, version, request, self.context(core, log, now_ms)
        )
        last = log.end_offset - 1
        if result.records:
            written = self.write(core, log, result.records, now_ms)
            if written is None:
                deliver(None)
                return
            last = written
            if result.on_written is not None:
                result.on_written(last)
        heapq.heappush(self._waiters, (last, next(self._seq), deliver, result.response))
        self._resolve(core.high_watermark)

    def tick(self, core: RaftCore, log: ReplicatedLog, now_ms: int) -> None:
        if self.active:
            records = self.controller.tick(self.context(core, log, now_ms))
            if records:
                self.write(core, log, records, now_ms)

    def _resolve(self, high_watermark: int) -> None:
        while self._waiters and self._waiters[0][0] < high_watermark:
            _, _, deliver, response = heapq.heappop(self._waiters)
            deliver(response)

    def _fail_waiters(self) -> None:
        waiters, self._waiters = self._waiters, []
        for _, _, deliver, _ in waiters:
            deliver(None)

    # -- snapshots ---------------------------------------------------------------------------

    def snapshot_values(self, offset: int) -> list[bytes] | None:
        """The image's records for a snapshot ending at ``offset``; None when the image is
        not exactly the committed state there."""
        if self.position != offset:
            return None
        mv = self.controller.metadata_version
        return [
            encode_record(record, version)
            for record, version in self.image.records(
                partition_version(mv), register_broker_version(mv)
            )
        ]


def image_digest(image: Image) -> str:
    """What a snapshot of ``image`` would hold, as a digest."""
    mv = image.metadata_version or 7
    records = image.records(partition_version(mv), register_broker_version(mv))
    digest = hashlib.blake2b(digest_size=16)
    for record, version in records:
        digest.update(encode_record(record, version))
    return digest.hexdigest()


class ControllerChecker:
    """See the module docstring."""

    def __init__(self) -> None:
        # node -> ((topic id, partition) -> (leader epoch, partition epoch)), broker epochs
        self._epochs: dict[int, dict[tuple[uuid.UUID, int], tuple[int, int]]] = {}
        self._broker_epochs: dict[int, dict[int, int]] = {}
        self._digests: dict[int, tuple[str, int]] = {}  # offset -> (digest, node that saw it)
        self._last_checked: dict[int, int] = {}
        self.checks = 0
        # Distinct KIP-435 steps seen in flight in committed images: (partition, its target).
        self.steps_seen: set[tuple[uuid.UUID, int, tuple[int, ...]]] = set()

    def forget(self, node_id: int) -> None:
        """The node's image starts over (restart, snapshot load, rebuild)."""
        self._epochs.pop(node_id, None)
        self._broker_epochs.pop(node_id, None)
        self._last_checked.pop(node_id, None)

    def check(self, node_id: int, image: Image, position: int, committed: bool) -> None:
        try:
            image.check()
        except AssertionError as e:
            raise InvariantViolation("image-structure", f"node {node_id}: {e}", node_id) from None
        if not committed or self._last_checked.get(node_id) == position:
            return
        self._last_checked[node_id] = position
        self.checks += 1
        active_brokers = {b for b, s in image.brokers.items() if s.active}
        epochs = self._epochs.setdefault(node_id, {})
        for topic in image.topics.values():
            ids = sorted(topic.partitions)
            if not ids or ids != list(range(len(ids))):
                raise InvariantViolation(
                    "topic-all-or-nothing",
                    f"node {node_id} at {position}: topic {topic.name} has partitions {ids}",
                    node_id,
                )
            for p in topic.partitions.values():
                if p.leader >= 0 and p.leader not in active_brokers:
                    raise InvariantViolation(
                        "fenced-leads-nothing",
                        f"node {node_id} at {position}: {topic.name}-{p.partition_id} is led "
                        f"by broker {p.leader}, which is fenced, shutting down or unknown",
                        node_id,
                    )
                key = (p.topic_id, p.partition_id)
                before = epochs.get(key)
                now = (p.leader_epoch, p.partition_epoch)
                if before is not None and (now[0] < before[0] or now[1] < before[1]):
                    raise InvariantViolation(
                        "partition-epochs-monotonic",
                        f"node {node_id} at {position}: {topic.name}-{p.partition_id} "
                        f"epochs (leader, partition) went from {before} to {now}",
                        node_id,
                    )
                epochs[key] = now
        seen_epochs = [b.epoch for b in image.brokers.values()]
        if len(set(seen_epochs)) != len(seen_epochs):
            raise InvariantViolation(
                "broker-epochs", f"node {node_id} at {position}: epochs {seen_epochs}", node_id
            )
        brokers = self._broker_epochs.setdefault(node_id, {})
        for b in image.brokers.values():
            if b.epoch < brokers.get(b.broker_id, -1):
                raise InvariantViolation(
                    "broker-epochs",
                    f"node {node_id} at {position}: broker {b.broker_id}'s epoch went from "
                    f"{brokers[b.broker_id]} to {b.epoch}",
                    node_id,
                )
            brokers[b.broker_id] = b.epoch
        self._check_reassignments(node_id, image, position)
        digest = image_digest(image)
        first = self._digests.get(position)
        if first is None:
            self._digests[position] = (digest, node_id)
        elif first[0] != digest:
            raise InvariantViolation(
                "images-equal",
                f"node {node_id}'s image at offset {position} differs from node {first[1]}'s",
                node_id,
            )

    def _check_reassignments(self, node_id: int, image: Image, position: int) -> None:
        limits = Limits.from_configs(image.configs.get((BROKER_RESOURCE, ""), {}))
        stepping_moves = 0
        for topic_id, index in sorted(image.stepping):
            p = image.partition(topic_id, index)
            assert p is not None and p.final_target is not None
            where = f"node {node_id} at {position}: {image.topics[topic_id].name}-{index}"
            final = p.final_target
            if not final or len(set(final)) != len(final):
                raise InvariantViolation(
                    "reassignment-limits", f"{where} has the final target {final}", node_id
                )
            if not p.adding and not p.removing:
                continue
            stepping_moves += 1
            self.steps_seen.add((topic_id, index, p.replicas))
            if len(p.adding) > limits.replicas or len(p.removing) > limits.replicas:
                raise InvariantViolation(
                    "reassignment-limits",
                    f"{where} steps adding {p.adding} and removing {p.removing} with "
                    f"reassignment.parallel.replica.count {limits.replicas}",
                    node_id,
                )
        if stepping_moves > limits.partitions:
            raise InvariantViolation(
                "reassignment-limits",
                f"node {node_id} at {position}: {stepping_moves} partitions step at once with "
                f"reassignment.parallel.partition.count {limits.partitions}",
                node_id,
            )
