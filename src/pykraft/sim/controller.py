"""The metadata controller in the simulator (the ``controller`` profile): on every node the
real ``QuorumController`` over the real core, hosted by the same sans-I/O state machine the
node runs (``pykraft.controller.log_listener.MetaLogListener``: replay, activation, revert to
the committed offset, writes, commit waiters), but synchronously and with virtual time; and
the controller invariants, checked whenever a node's image moves.

``SimController`` (one per node) adapts the listener to the simulator: a request's response
is delivered once its records commit (``deliver(None)`` when leadership was lost first or
the node is not the active controller). Snapshots carry the image's records after the
application's state record.

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
* ``reassignment-limits`` (KIP-435): with limits set, the replicas being added across the
  cluster never exceed ``reassignment.max.concurrent.replica.movements``; a committed step
  in flight never removes more than ``reassignment.parallel.replica.count`` replicas nor
  adds more (the
  simulated topics keep min.insync.replicas at 1, so its exception never applies), and no
  more partitions than ``reassignment.parallel.partition.count`` have a stepped move in
  flight; a final target is never empty and never names a broker twice.
* ``elr-structure`` (KIP-966): a partition's ELR is within its replicas, never shares a
  broker with its ISR nor names one twice, and is empty while the ISR is not below the
  topic's min.insync.replicas; LastKnownElr holds at most one broker, and a partition whose
  ISR is empty has no leader;
* ``leader-from-isr-or-elr``: checked on every batch the active controller writes, record by
  record: a PartitionChangeRecord that gives a partition a new leader takes it from the
  partition's ISR, or from its ELR, as they were before that record (or, answering a
  leader's AlterPartition, from the ISR the leader asked for), unless the election is unclean (the partition is then RECOVERING: unclean.leader.election.enable, or the last
  known leader of KIP-966).
"""

from __future__ import annotations

import hashlib
import random
import uuid
from collections.abc import Callable
from typing import Any

from pykraft.controller.brokers import register_broker_version
from pykraft.controller.config import ControllerConfig
from pykraft.controller.errors import ApiError
from pykraft.controller.log_listener import MetaLogListener
from pykraft.controller.partitions import effective_min_isr
from pykraft.controller.quorum_controller import QuorumController
from pykraft.controller.result import RecordList, Response
from pykraft.controller.snapshot_generator import SnapshotGenerator
from pykraft.controller.steps import Limits
from pykraft.metadata import records as r
from pykraft.metadata.image import BROKER_RESOURCE, NO_LEADER_CHANGE, Image, PartitionState
from pykraft.metadata.parts.topics import state_fields
from pykraft.metadata.serde import encode_record
from pykraft.protocol.apis import ApiKey
from pykraft.raft.core import RaftCore
from pykraft.sim.history import InvariantViolation

__all__ = ["CLUSTER_ID", "ControllerChecker", "SimController"]

CLUSTER_ID = "sim-cluster"
Deliver = Callable[[Response | None], None]


class SimController:
    """One node's controller: the listener, and the checker called after each sync."""

    def __init__(
        self, node_id: int, config: ControllerConfig, seed: int, checker: ControllerChecker
    ) -> None:
        self.node_id = node_id
        self.config = config
        self.seed = seed
        self.checker = checker
        self.slice_records: int | None = None  # SimConfig.sync_slice_records
        self._generation = 0
        self.replay_errors: list[str] = []
        self.listener = MetaLogListener(
            self._new_controller,
            report=self.replay_errors.append,
            check_write=lambda image, records: check_elections(
                node_id, image, records, leader_vouched=self._handling == ApiKey.ALTER_PARTITION
            ),
        )
        self._handling: int | None = None  # the API whose records are being written

    def _new_controller(self) -> QuorumController:
        # A stream per controller object: a restarted controller must not draw the topic
        # ids it drew before (a deleted topic's id would come back).
        self._generation += 1
        return QuorumController(
            self.config,
            node_id=self.node_id,
            cluster_id=CLUSTER_ID,
            rng=random.Random(self.seed * 1_000_033 + self._generation),
        )

    @property
    def image(self) -> Image:
        return self.listener.image

    @property
    def active(self) -> bool:
        return self.listener.active

    @property
    def writes(self) -> int:
        return self.listener.writes

    # -- the log -----------------------------------------------------------------------------

    def reset(self) -> None:
        """A stopped node: nothing in memory survives."""
        self.listener.reset()
        self.checker.forget(self.node_id)

    def load_snapshot(self, core: RaftCore) -> None:
        """At start: the newest snapshot (or nothing) into a fresh image; in slices by the
        next syncs when they are sliced, as the node loads it."""
        if self.slice_records is None:
            self.listener.load_snapshot(core)
        else:
            self.listener.begin_load()
        self.checker.forget(self.node_id)

    def snapshot_loaded(self) -> None:
        """The core installed a fetched snapshot: the next sync starts over from it."""
        self.listener.snapshot_loaded()
        self.checker.forget(self.node_id)

    def sync(self, core: RaftCore, now_ms: int) -> None:
        """After the node's Ready: the listener's sync, then the invariants over the
        committed image (the active controller's as of its committed offset)."""
        listener = self.listener
        # In slices when configured, as the node does (the rest at this node's next event):
        # a snapshot installed from the leader loads on the side while the old image is
        # checked.
        listener.sync(core, now_ms, self.slice_records)
        if listener.metadata_errors:
            raise InvariantViolation(
                "replay-clean",
                f"node {self.node_id}: {self.replay_errors[0]}",
                self.node_id,
            )
        image = self.image
        if not self.active or listener.position <= core.high_watermark:
            if not self.active:
                self.checker.reverted(self.node_id)
            self.checker.check(self.node_id, image, listener.position, True)
            return
        self.checker.check(self.node_id, image, listener.position, False)
        with image.timeline.at_committed():
            # The active controller's committed view must equal what its standbys replayed.
            self.checker.check(self.node_id, image, core.high_watermark, True)

    # -- writes ------------------------------------------------------------------------------

    def write(self, core: RaftCore, records: RecordList, now_ms: int) -> int | None:
        return self.listener.write(core, records, now_ms)

    def handle(
        self,
        core: RaftCore,
        api_key: int,
        version: int,
        request: Any,
        now_ms: int,
        deliver: Deliver,
    ) -> None:
        """Handle a request; ``deliver(response fields)`` once its records committed, or
        ``deliver(None)`` if this controller is not (or stops being) active first."""
        listener = self.listener
        if not listener.active:
            deliver(None)
            return
        self._handling = api_key
        try:
            handled = listener.handle(
                core, api_key, version, request, listener.context(core, now_ms)
            )
        except ApiError:
            deliver(None)
            raise
        finally:
            self._handling = None
        response = handled.response
        listener.after_commit(
            core, handled.commit_offset, lambda ok: deliver(response if ok else None)
        )

    def tick(self, core: RaftCore, now_ms: int) -> None:
        listener = self.listener
        if listener.active:
            listener.tick(core, listener.context(core, now_ms))

    # -- snapshots ---------------------------------------------------------------------------

    def snapshot_values(self, offset: int) -> list[bytes] | None:
        """The image's records for a snapshot ending at ``offset``; None when the image is
        not exactly the committed state there."""
        if self.listener.position != offset:
            return None
        return SnapshotGenerator(self.image, offset).all_values()


def check_elections(
    node_id: int, image: Image, records: RecordList, *, leader_vouched: bool = False
) -> None:
    """``leader-from-isr-or-elr`` over one batch (module docstring): the partitions' ISR,
    ELR, leader and recovery state followed record by record from ``image``.
    ``leader_vouched``: the batch answers a leader's AlterPartition, so the ISR a record sets
    holds replicas the leader took in (a reassignment may complete and elect one of them)."""
    # (topic id, partition) -> (ISR, ELR, leader, leader recovery state)
    state: dict[tuple[uuid.UUID, int], tuple[tuple[int, ...], tuple[int, ...], int, int]] = {}
    for record, _version in records:
        if isinstance(record, r.PartitionRecord):
            state[(record.topic_id, record.partition_id)] = (
                record.isr,
                record.eligible_leader_replicas or (),
                record.leader,
                record.leader_recovery_state,
            )
            continue
        if not isinstance(record, r.PartitionChangeRecord):
            continue
        key = (record.topic_id, record.partition_id)
        if key not in state:
            p = image.partition(*key)
            if p is None:
                continue
            state[key] = (p.isr, p.elr or (), p.leader, p.leader_recovery_state)
        isr, elr, leader, recovery = state[key]
        if record.leader_recovery_state != -1:
            recovery = record.leader_recovery_state
        new_leader = leader if record.leader == NO_LEADER_CHANGE else record.leader
        clean = recovery != 1
        vouched = record.isr if leader_vouched and record.isr is not None else ()
        eligible = (*isr, *elr, *vouched)
        if new_leader >= 0 and new_leader != leader and clean and new_leader not in eligible:
            raise InvariantViolation(
                "leader-from-isr-or-elr",
                f"node {node_id}: partition {key[0]}-{key[1]} gets leader {new_leader}, "
                f"outside its ISR {isr} and ELR {elr}, in a clean election",
                node_id,
            )
        state[key] = (
            isr if record.isr is None else record.isr,
            elr if record.eligible_leader_replicas is None else record.eligible_leader_replicas,
            new_leader,
            recovery,
        )


def _check_elr(node_id: int, position: int, name: str, p: PartitionState, min_isr: int) -> None:
    elr = p.elr or ()
    problem = None
    if len(set(elr)) != len(elr) or set(elr) & set(p.isr) or not set(elr) <= set(p.replicas):
        problem = f"ELR {elr} with ISR {p.isr} and replicas {p.replicas}"
    elif elr and len(p.isr) >= min_isr:
        problem = f"ELR {elr} with ISR {p.isr}, not below min.insync.replicas {min_isr}"
    elif len(p.last_known_elr or ()) > 1:
        problem = f"LastKnownElr {p.last_known_elr}"
    elif not p.isr and p.leader >= 0:
        problem = f"leader {p.leader} with an empty ISR"
    if problem is not None:
        raise InvariantViolation(
            "elr-structure",
            f"node {node_id} at {position}: {name}-{p.partition_id} has {problem}",
            node_id,
        )


def image_digest(image: Image) -> str:
    """What a snapshot of ``image`` would hold, as a digest for comparing two nodes' images
    in one simulation: its records besides the topics, encoded, and every topic and
    partition by its fields (each partition's whole state but its kept encoding, summed so
    that the order the partitions were made in does not count). Hashing the fields costs a
    tenth of encoding each PartitionRecord at every committed offset."""
    mv = image.metadata_version or 7
    digest = hashlib.blake2b(digest_size=16)
    for record, version in image.records_besides_topics(register_broker_version(mv)):
        digest.update(encode_record(record, version))
    total = 0
    for topic in image.topics.values():
        total += hash((topic.name, topic.topic_id))
        for p in topic.partitions.values():
            total += hash(state_fields(p))
    digest.update((total & (1 << 64) - 1).to_bytes(8, "big"))
    return digest.hexdigest()


class ControllerChecker:
    """See the module docstring."""

    def __init__(self) -> None:
        # node -> ((topic id, partition) -> (leader epoch, partition epoch)), broker epochs
        self._epochs: dict[int, dict[tuple[uuid.UUID, int], tuple[int, int]]] = {}
        self._broker_epochs: dict[int, dict[int, int]] = {}
        self._digests: dict[int, tuple[str, int]] = {}  # offset -> (digest, node that saw it)
        self._last_checked: dict[int, int] = {}
        # (node, committed) -> (id of the image, position) last checked for its structure
        self._structure_checked: dict[tuple[int, bool], tuple[int, int]] = {}
        self.checks = 0
        # Distinct KIP-435 steps seen in flight in committed images: (partition, its target).
        self.steps_seen: set[tuple[uuid.UUID, int, tuple[int, ...]]] = set()

    def forget(self, node_id: int) -> None:
        """The node's image starts over (restart, snapshot load, rebuild)."""
        self._epochs.pop(node_id, None)
        self._broker_epochs.pop(node_id, None)
        self._last_checked.pop(node_id, None)
        self._structure_checked.pop((node_id, True), None)
        self.reverted(node_id)

    def reverted(self, node_id: int) -> None:
        """The node is not (or no longer) the active controller: its uncommitted records are
        gone, and those at the same positions later may differ."""
        self._structure_checked.pop((node_id, False), None)

    def check(self, node_id: int, image: Image, position: int, committed: bool) -> None:
        # The image's structure once per state (the committed one and, on the active
        # controller, the one with its uncommitted records): an image changes only by
        # replaying (its position moves on), by being replaced (``forget``) or, uncommitted
        # records, by a revert (``reverted``).
        state = (id(image), position)
        if self._structure_checked.get((node_id, committed)) != state:
            try:
                image.check()
            except AssertionError as e:
                raise InvariantViolation(
                    "image-structure", f"node {node_id}: {e}", node_id
                ) from None
            self._structure_checked[(node_id, committed)] = state
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
                _check_elr(node_id, position, topic.name, p, effective_min_isr(image, p))
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
        self._check_broker_epochs(node_id, image, position)
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

    def _check_broker_epochs(self, node_id: int, image: Image, position: int) -> None:
        """``broker-epochs``: brokers' epochs distinct, and none goes back on a node."""
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

    def _check_reassignments(self, node_id: int, image: Image, position: int) -> None:
        limits = Limits.from_configs(image.configs.get((BROKER_RESOURCE, ""), {}))
        moving = [p for p in (image.partition(*k) for k in image.moving) if p and p.adding]
        adding = sum(len(p.adding) for p in moving)
        if adding > limits.replica_movements and len(moving) > 1:  # one alone may exceed it
            raise InvariantViolation(
                "reassignment-limits",
                f"node {node_id} at {position}: {adding} replicas being added with "
                f"reassignment.max.concurrent.replica.movements {limits.replica_movements}",
                node_id,
            )
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
