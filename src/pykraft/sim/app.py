"""The simulated application: a tiny replicated state machine over the metadata log.

Its state is the number of application records committed and a running digest over the
committed batches' CRCs (``history.mix_digest``), so two nodes that applied the same
committed prefix hold equal states. Every batch it applies is checked against the global
``CommittedHistory``: this is where "committed data never changes" is verified on every node,
incrementally, as each node's high watermark advances.

It snapshots its state now and then (``wants_snapshot``) as one record whose value is
``SNAPSHOT_PREFIX + b"<applied end>:<records>:<digest>"`` (the core frames it with the
SnapshotHeader and SnapshotFooter control batches), and reloads it after a restart or after
its node installed a snapshot fetched from the leader.
"""

from __future__ import annotations

from pykraft.metadata.tagged import tagged_noop, tagged_value
from pykraft.raft.interfaces import ReplicatedLog, SnapshotStore
from pykraft.raft.types import OffsetAndEpoch
from pykraft.records import BATCH_FIELDS, BATCH_LENGTH_OVERHEAD, decode_records, iter_batches
from pykraft.sim.history import CommittedHistory, InvariantViolation, mix_digest

SNAPSHOT_PREFIX = b"pykraft-sim-state:"
_READ_BYTES = 64 * 1024


class StateMachine:
    """Invariant: ``applied_end`` is a committed batch boundary and (``records``,
    ``digest``) equal ``history.state_at(applied_end)``."""

    __slots__ = (
        "_history",
        "applied_end",
        "digest",
        "node_id",
        "records",
        "records_since_snapshot",
        "snapshot_every_records",
        "tagged",
    )

    def __init__(self, node_id: int, history: CommittedHistory, snapshot_every_records: int):
        self.node_id = node_id
        self._history = history
        self.snapshot_every_records = snapshot_every_records
        self.applied_end = 0
        self.records = 0
        self.digest = 0
        self.records_since_snapshot = 0
        # Under the metadata controller every record must be a metadata record: the state
        # goes in a NoOpRecord's tagged field (pykraft.metadata.tagged).
        self.tagged = False

    def reset(self) -> None:
        self.applied_end = self.records = self.digest = self.records_since_snapshot = 0

    def apply(self, log: ReplicatedLog, high_watermark: int) -> int:
        """Apply every whole batch below ``high_watermark``; returns batches applied."""
        applied = 0
        history = self._history
        by_base = history.by_base
        unpack_from = BATCH_FIELDS.unpack_from
        node = self.node_id
        # Bound: every pass applies at least one batch (>= 1 offset) or raises.
        for _ in range(max(0, high_watermark - self.applied_end)):
            if self.applied_end >= high_watermark:
                break
            data = log.read(self.applied_end, _READ_BYTES)
            if not data:
                raise InvariantViolation(
                    "apply-readable",
                    f"node {node} cannot read committed offset {self.applied_end} (log "
                    f"[{log.start_offset}, {log.end_offset}), high watermark {high_watermark})",
                    node,
                )
            pos = 0
            size = len(data)
            while pos < size:
                base, length, epoch, _magic, crc, _attrs, delta = unpack_from(data, pos)
                pos += BATCH_LENGTH_OVERHEAD + length
                nxt = base + delta + 1
                if nxt > high_watermark:
                    return applied
                if base != self.applied_end:
                    raise InvariantViolation(
                        "committed-unchanged",
                        f"node {node} applied up to {self.applied_end} but its log has a batch "
                        f"[{base}, {nxt}) there",
                        node,
                    )
                entry = by_base.get(base)
                if (
                    entry is None
                    or entry.next_offset != nxt
                    or entry.epoch != epoch
                    or (entry.crc != crc)
                ):
                    history.check(base, nxt, epoch, crc, node, "application")  # raises
                    raise AssertionError("unreachable")
                assert entry is not None
                self.records += entry.data_records
                self.records_since_snapshot += entry.data_records
                self.digest = mix_digest(self.digest, crc)
                self.applied_end = nxt
                applied += 1
        return applied

    def wants_snapshot(self) -> bool:
        return self.records_since_snapshot >= self.snapshot_every_records

    def snapshot_value(self, snapshot_id: OffsetAndEpoch) -> bytes:
        """The one record of application state a snapshot at ``applied_end`` holds."""
        assert snapshot_id.offset == self.applied_end, (snapshot_id, self.applied_end)
        self.records_since_snapshot = 0
        value = SNAPSHOT_PREFIX + b"%d:%d:%d" % (self.applied_end, self.records, self.digest)
        return tagged_noop(value) if self.tagged else value

    def load_snapshot(self, store: SnapshotStore, snapshot_id: OffsetAndEpoch) -> None:
        """Reload the state from a snapshot and check it against the committed history."""
        node = self.node_id
        size = store.size(snapshot_id)
        if size is None:
            raise InvariantViolation(
                "snapshot-loadable", f"node {node} has no snapshot {snapshot_id}", node
            )
        data = store.read(snapshot_id, 0, size)
        state: tuple[int, int, int] | None = None
        for header, pos in iter_batches(data, verify_crc=True):
            if header.is_control:
                continue
            for record in decode_records(data[pos : pos + header.size]):
                value = tagged_value(record.value) or record.value
                if value is not None and value.startswith(SNAPSHOT_PREFIX):
                    fields = value[len(SNAPSHOT_PREFIX) :].split(b":")
                    end, records, digest = (int(x) for x in fields)
                    state = (end, records, digest)
        if state is None:
            # A snapshot of the empty prefix may carry no application record.
            state = (snapshot_id.offset, 0, 0)
        end, records, digest = state
        expected = self._history.state_at(snapshot_id.offset)
        if end != snapshot_id.offset or expected is None or expected != (records, digest):
            raise InvariantViolation(
                "snapshot-committed",
                f"node {node}: snapshot {snapshot_id} holds state (end {end}, records "
                f"{records}, digest {digest:#x}) but the committed prefix at "
                f"{snapshot_id.offset} has {expected}",
                node,
            )
        self.applied_end, self.records, self.digest = end, records, digest
        self.records_since_snapshot = 0
