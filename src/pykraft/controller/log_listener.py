"""The metadata controller on the quorum's log: one sans-I/O hosting state machine (Kafka's
``QuorumController.QuorumMetaLogListener``: handleCommit, handleLoadSnapshot,
handleLeaderChange), driven by the node (``node/controller_host.py``, asyncio, sockets, files)
and by the simulator (``sim/controller.py``, virtual time) alike, so that the simulator tests
what runs.

Theory of operation.

*Committed records* (``sync``, after every ``Ready`` the host performed). The listener reads
the log from ``position`` up to the high watermark, whole batches only, decodes each metadata
record and replays it; control batches are skipped. A snapshot the replica loaded (a
follower that fetched one: ``snapshot_loaded``), or a position below the log start, reloads
the image from the newest snapshot first (``load_snapshot``).

*Loading in slices.* With ``max_records`` (the node's host passes ``LOAD_SLICE_RECORDS``),
``sync`` replays at most that many records and sets ``more`` when it stopped early: the host
calls it again on a later turn of its event loop, so a large log never holds the loop. A
snapshot installed from the leader is loaded *on the side*: a fresh controller replays it
slice by slice while the old image (at its old position: consistent, only behind) keeps
answering reads; it replaces the old one when complete (``loaded`` names it once). The
simulator does too with ``SimConfig.sync_slice_records``. The start-up load goes the same
way (``begin_load``): the replica's raft starts at once (it votes, fetches and acknowledges
while its image loads, as Kafka's raft client runs beside its metadata loader), and until
the snapshot is in the listener is ``cold``: the host answers controller requests with
NOT_CONTROLLER and lets only super users past its authorizer (Kafka's authorizer before its
initial load). Without a budget (``max_records`` None) every load is one go
(``load_snapshot``).

*Leadership.* On the raft leader, once its epoch is established (the high watermark passed
its LeaderChange) and everything committed is replayed, the controller activates and the
listener writes its activation records; from then on the image records what each applied
record changes (``Image.record_uncommitted``), forgotten as records commit. When the replica
stops leading, the controller deactivates and the image is *reverted* to the last committed
offset in memory (Kafka's ``OffsetControlManager.deactivate`` -> ``revertToSnapshot``): in
time proportional to what had not committed, not to the log.

*Failed replays.* A committed record that cannot be replayed (a record pykraft cannot
decode, or one the image refuses) is counted in ``metadata_errors`` and reported once; the
standby keeps following the log, so an operator sees the count (MetadataErrorCount). Such an
image may differ from the active controller's, so this replica refuses to become the active
controller: ``sync`` raises :class:`ActivationRefused` (the node halts with one line, as
Kafka's fatal fault handler does on any replay failure; docs/DECISIONS.md).

*Writes.* ``write`` appends records as one batch through ``RaftApi.append`` and applies them
to the image at once; ``handle`` runs one request (records written, the response fields
returned with the offset that must commit before it is sent); reads (``READ_APIS``) are
answered from the image *as of the committed offset* (``Image.at_committed``): a client never
sees a config or feature level that a failover then loses. ``after_commit`` calls back once
an offset committed (or with False when leadership is lost first).

*Bounds.* One user operation may produce at most ``MAX_RECORDS_PER_USER_OP`` records (Kafka's
``QuorumController.MAX_RECORDS_PER_USER_OP``, 10,000; ``controller/errors.py``): CreateTopics
and CreatePartitions count what they would write before building anything, and every
operation's records are counted again here; more is refused with Kafka's POLICY_VIOLATION
"Unable to perform excessively large batch operation.", nothing written.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Final

from kio.schema.errors import ErrorCode

from pykraft.controller.errors import ApiError, check_op_size
from pykraft.controller.quorum_controller import Context, QuorumController
from pykraft.controller.result import RecordList, Response
from pykraft.metadata.image import Image, ImageError
from pykraft.metadata.serde import MetadataRecord, MetadataRecordError, decode_record, encode_record
from pykraft.protocol.controller_apis import READ_APIS
from pykraft.raft.api import RaftApi
from pykraft.raft.config import NotLeaderError
from pykraft.raft.types import OffsetAndEpoch
from pykraft.records import (
    BatchHeader,
    IncompleteBatch,
    decode_records,
    decode_values,
    iter_batches,
)

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = [
    "LOAD_SLICE_RECORDS",
    "NOT_ACTIVE",
    "ActivationRefused",
    "CommitWaiters",
    "Handled",
    "LeaderChange",
    "MetaLogListener",
]

READ_CHUNK_BYTES: Final = 1 << 20
# A snapshot is read this much at a time while it loads: a million partitions are 123 MB,
# whose read in one go held the loop over 100 ms in the load's first slice.
SNAPSHOT_READ_BYTES: Final = 4 << 20
# Records replayed per sync in the node: 5,000 took 66-82 ms (102 ms once, three nodes
# loading on two cores) on this project's machine, too close to the 100 ms the loop may be
# held (bench/bench_scale.py's loop lag); 2,500 still gave 109 ms once at a million
# partitions (three controllers loading at once on two cores): 2,000. With the kept
# encodings and the compiled image, 2,000 gave 208-259 ms and 1,000 gave 39-107 ms, and ready
# came sooner (bench/ANALYSIS.md section 21): 1,000.
LOAD_SLICE_RECORDS: Final = 1_000
# A snapshot's records are decoded and replayed up to this many at a time by one compiled
# call (``QuorumController.replay_encoded``), never more than the sync's budget has left.
SNAPSHOT_CHUNK_RECORDS: Final = 100


@dataclass(slots=True)
class _SideLoad:
    """A snapshot being loaded into a fresh controller beside the one in use."""

    snapshot_id: OffsetAndEpoch
    controller: QuorumController
    steps: Iterator[int]  # records replayed by each step


NOT_ACTIVE: Final = "This controller is not the active controller"


class ActivationRefused(Exception):
    """This replica's image cannot be trusted to lead (a committed record failed to
    replay): it must not become the active controller."""


class LeaderChange(Enum):
    """What a ``sync`` did to this controller's leadership."""

    ACTIVATED = "activated"
    DEACTIVATED = "deactivated"


@dataclass(frozen=True, slots=True)
class Handled:
    """A request the active controller ran: its response fields, sent once
    ``commit_offset`` committed (the last record it wrote, or the log end before it)."""

    response: Response
    commit_offset: int
    records: int


class CommitWaiters:
    """Callbacks waiting for an offset to commit, called ``fn(True)`` in offset order once
    the high watermark passes it, or ``fn(False)`` when leadership is lost. Invariant: the
    heap holds only offsets at or above the last high watermark resolved."""

    __slots__ = ("_heap", "_seq")

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, Callable[[bool], None]]] = []  # (offset, seq, fn)
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self._heap)

    def add(self, offset: int, high_watermark: int, fn: Callable[[bool], None]) -> None:
        if offset < high_watermark:
            fn(True)
            return
        heapq.heappush(self._heap, (offset, next(self._seq), fn))

    def resolve(self, high_watermark: int) -> None:
        heap = self._heap
        while heap and heap[0][0] < high_watermark:
            _, _, fn = heapq.heappop(heap)
            fn(True)

    def fail_all(self) -> None:
        heap, self._heap = self._heap, []
        for _, _, fn in heap:
            fn(False)


def _ignore(message: str) -> None:
    del message


def _snapshot_batches(
    core: RaftApi, snapshot_id: OffsetAndEpoch
) -> Iterator[tuple[BatchHeader, bytes]]:
    """Each batch of the snapshot (header, bytes), read ``SNAPSHOT_READ_BYTES`` at a time
    (more when one batch is larger); ``IncompleteBatch`` if the file ends inside one."""
    store = core.snapshots
    size = store.size(snapshot_id) or 0
    position, want = 0, SNAPSHOT_READ_BYTES
    while position < size:
        data = store.read(snapshot_id, position, want)
        used = 0
        try:
            for header, pos in iter_batches(data):
                yield header, data[pos : pos + header.size]
                used = pos + header.size
        except IncompleteBatch:
            if used == 0:
                if position + len(data) >= size:
                    raise
                want *= 2  # a batch larger than the window
        position += used


class MetaLogListener:
    """Invariant: ``position`` is the next log offset to replay; every record below it is in
    the image; only while ``controller.active`` may the image hold records at or above the
    high watermark (applied when written), and then the image can revert them."""

    def __init__(
        self,
        new_controller: Callable[[], QuorumController],
        *,
        bootstrap: Mapping[str, int] | None = None,
        bootstrap_records: Sequence[MetadataRecord] = (),
        report: Callable[[str], None] = _ignore,
        on_applied: Callable[[int], None] | None = None,
        check_write: Callable[[Image, RecordList], None] | None = None,
    ) -> None:
        self._new_controller = new_controller
        # Called with the image and each batch before it is written (the simulator's
        # per-record invariants); None in the node.
        self.check_write = check_write
        self.bootstrap = dict(bootstrap) if bootstrap is not None else None
        self.bootstrap_records = tuple(bootstrap_records)
        self.report = report  # one line per failed replay (the host logs it)
        self.on_applied = on_applied  # bytes of records applied (the snapshot policy)
        self.controller = new_controller()
        self.position = 0
        self.epoch = -1  # the epoch the controller is active in
        self.metadata_errors = 0
        self.writes = 0
        self.reverted = 0  # changes undone by the last deactivation (tests, logs)
        self.waiters = CommitWaiters()
        self._reload = False
        self._side: _SideLoad | None = None
        self._budget: int | None = None  # records left in this sync's slice (None: no limit)
        self.more = False  # the last sync stopped at its budget: call it again
        self.loaded: OffsetAndEpoch | None = None  # a side load just completed (the host logs)
        self.cold = False  # the start-up load (``begin_load``) has not completed yet
        self.snapshot_loads = 0  # snapshots loaded (Kafka's HandleLoadSnapshotCount)
        # The append time (wall clock ms) of the last batch applied: a committed batch's own
        # timestamp, or the time the active controller wrote one (Kafka's OffsetControlManager
        # feeding LastAppliedRecordTimestamp); 0 before the first.
        self.applied_timestamp_ms = 0

    @property
    def image(self) -> Image:
        return self.controller.image

    @property
    def active(self) -> bool:
        return self.controller.active

    # -- the log ---------------------------------------------------------------------------------

    def reset(self) -> None:
        """A stopped replica: nothing in memory survives (the simulator's crash)."""
        self.controller = self._new_controller()
        self.position = 0
        self.epoch = -1
        self._side = None
        self.cold = False
        self.waiters.fail_all()

    @property
    def loading(self) -> bool:
        """A snapshot is being loaded on the side (see the module docstring)."""
        return self._side is not None

    def snapshot_loaded(self) -> None:
        """The replica loaded a snapshot (``Ready.snapshot_loaded``): the next ``sync``
        starts over from it."""
        self._reload = True

    def begin_load(self) -> None:
        """At start: the newest snapshot is loaded by the next ``sync`` calls, in slices
        when they have a budget; ``cold`` until it is in (see the module docstring)."""
        self.controller = self._new_controller()
        self.epoch = -1
        self.position = 0
        self._side = None
        self._reload = True
        self.cold = True

    def load_snapshot(self, core: RaftApi) -> OffsetAndEpoch | None:
        """The newest snapshot into a fresh image, in one go; ``position`` = its end offset
        (or the log start without one). The snapshot's id, if any."""
        self.controller = self._new_controller()
        self.epoch = -1
        self.cold = False
        self.position = core.log.start_offset
        store = core.snapshots
        latest = store.latest()
        if latest is None:
            return None
        if latest.offset == 0:
            # The 0-0 checkpoint holds the state before the first record: nothing, or (Kafka
            # 4.4's format, KIP-1170) the bootstrap records, written into the log at
            # activation as those of bootstrap.checkpoint (storage/bootstrap.py).
            return latest
        for _ in self._snapshot_steps(core, latest, self.controller):
            pass
        self.position = max(self.position, latest.offset)
        self.snapshot_loads += 1
        return latest

    def _snapshot_steps(
        self, core: RaftApi, snapshot_id: OffsetAndEpoch, controller: QuorumController
    ) -> Iterator[int]:
        """Replay the snapshot's records into ``controller``, yielding how many after each
        chunk: at most ``SNAPSHOT_CHUNK_RECORDS`` and what is left of the sync's budget
        (a whole batch without one). Every record takes the offset before the snapshot's
        end. Not counted as applied: a snapshot's records are already in one (the policy's
        bytes since the last snapshot, as Kafka resets them on a load)."""
        offset = snapshot_id.offset - 1
        where = f"snapshot {snapshot_id}"
        for header, batch in _snapshot_batches(core, snapshot_id):
            if header.is_control:
                continue
            values = [v for v in decode_values(batch) if v is not None]
            start = 0
            while start < len(values):
                budget = self._budget
                end = (
                    len(values)
                    if budget is None
                    else start + max(1, min(SNAPSHOT_CHUNK_RECORDS, budget))
                )
                part = values[start:end]
                start = end
                for error in controller.replay_encoded(part, offset):
                    self._failed(where, offset, error)
                yield len(part)

    def _begin_side_load(self, core: RaftApi) -> None:
        latest = core.snapshots.latest()
        if latest is None or latest.offset == 0:
            self._side = None
            self.load_snapshot(core)  # nothing to replay
            return
        controller = self._new_controller()
        self._side = _SideLoad(latest, controller, self._snapshot_steps(core, latest, controller))

    def _continue_side_load(self) -> bool:
        """Replay the side load within the budget; True once it replaced the image."""
        side = self._side
        assert side is not None
        if self._budget is None:
            for _ in side.steps:
                pass
        else:
            # The steps read the budget left (``_snapshot_steps``): it is kept up to date.
            for replayed in side.steps:
                self._budget -= replayed
                if self._budget <= 0:
                    # Maybe exactly at the end: the next slice finds the steps exhausted.
                    return False
        self._side = None
        self.controller = side.controller
        self.epoch = -1
        self.position = side.snapshot_id.offset
        self.loaded = side.snapshot_id
        self.snapshot_loads += 1
        self.cold = False
        return True

    def sync(
        self, core: RaftApi, now_ms: int, max_records: int | None = None
    ) -> LeaderChange | None:
        """After a ``Ready`` the host performed: reload, deactivate, replay what committed,
        activate, answer what committed; at most ``max_records`` records replayed (``more``
        says whether it stopped there). Raises ``ActivationRefused`` (see the module
        docstring) and the controller's ``MigrationRefused``."""
        self._budget = max_records
        self.more = False
        if self._reload or (self._side is None and self.position < core.log.start_offset):
            self._reload = False
            if max_records is None:
                self._side = None
                self.load_snapshot(core)
            else:
                self._begin_side_load(core)
        if self._side is not None and not self._continue_side_load():
            self.more = True
            return None
        epoch_start = core.leader_epoch_start_offset  # None unless this replica leads
        change: LeaderChange | None = None
        if self.active and (epoch_start is None or core.epoch != self.epoch):
            self.deactivate(core.high_watermark)
            change = LeaderChange.DEACTIVATED
        hwm = core.high_watermark
        if self.position < hwm:
            self._replay_committed(core, hwm)
        if (
            not self.active
            and epoch_start is not None
            and hwm > epoch_start
            and self.position >= hwm
        ):
            self._activate(core, core.epoch, now_ms)
            change = LeaderChange.ACTIVATED
        self.committed(core.high_watermark)
        return change

    def committed(self, high_watermark: int) -> None:
        """Everything below ``high_watermark`` committed: answer its waiters, let the
        image forget how to undo it."""
        self.waiters.resolve(high_watermark)
        self.image.committed(high_watermark - 1)

    def _replay_committed(self, core: RaftApi, high_watermark: int) -> None:
        log = core.log
        while self.position < high_watermark:
            if self._budget is not None and self._budget <= 0:
                self.more = True
                return
            data = log.read(self.position, READ_CHUNK_BYTES)
            if not data:
                return
            progressed = False
            for header, pos in iter_batches(data):
                if header.last_offset >= high_watermark:
                    return
                if header.last_offset < self.position:
                    continue
                progressed = True
                self.applied_timestamp_ms = header.max_timestamp
                if not header.is_control:
                    for record in decode_records(data[pos : pos + header.size]):
                        if record.offset >= self.position and record.value is not None:
                            self._replay_value(record.value, record.offset, "metadata record")
                self.position = header.last_offset + 1
                if self._budget is not None:
                    self._budget -= header.last_offset - header.base_offset + 1
                    if self._budget <= 0:
                        break  # the slice is spent: the while loop's check says so
            if not progressed:
                return

    def _replay_value(self, value: bytes, offset: int, where: str) -> None:
        if self.on_applied is not None:
            self.on_applied(len(value))
        try:
            record, version = decode_record(value)
            self.controller.replay(record, version, offset, value)
        except (MetadataRecordError, ImageError) as e:
            self._failed(where, offset, str(e))

    def _failed(self, where: str, offset: int, error: str) -> None:
        # Kafka's controller stops on such a record; a pykraft standby counts it and goes on
        # following (MetadataErrorCount) but will not lead (module docstring).
        self.metadata_errors += 1
        self.report(f"{where} at offset {offset} cannot be replayed: {error}")

    # -- leadership ------------------------------------------------------------------------------

    def _activate(self, core: RaftApi, epoch: int, now_ms: int) -> None:
        if self.metadata_errors:
            raise ActivationRefused(
                f"{self.metadata_errors} committed metadata record(s) failed to replay on "
                "this controller, so its image may differ from the log's; it will not "
                "become the active controller"
            )
        controller = self.controller
        try:
            records = controller.activate(now_ms, self.bootstrap, self.bootstrap_records)
        except Exception:
            controller.deactivate()
            raise
        self.epoch = epoch
        controller.image.record_uncommitted(True)
        if records:
            self.write(core, records, now_ms)

    def deactivate(self, high_watermark: int) -> None:
        """No longer the active controller: fail what waits for a commit, and revert the
        image to the last committed offset."""
        self.controller.deactivate()
        self.epoch = -1
        self.waiters.fail_all()
        image = self.image
        self.reverted = image.revert(high_watermark - 1)
        image.record_uncommitted(False)
        self.position = min(self.position, high_watermark)

    # -- writes ----------------------------------------------------------------------------------

    def context(
        self,
        core: RaftApi,
        now_ms: int,
        controller_features: dict[int, dict[str, tuple[int, int]]] | None = None,
    ) -> Context:
        return Context(
            now_ms=now_ms,
            # The offset this request's first record will get: after any scheduled records.
            next_offset=core.log.end_offset + core.scheduled_count,
            kraft_version=core.kraft_version,
            controller_features=controller_features or {},
            wall_clock_ms=core.config.timestamp_ms(now_ms),
        )

    def write(self, core: RaftApi, records: RecordList, now_ms: int) -> int | None:
        """Append ``records`` as one batch and apply them; the last offset (None if this
        replica is no longer the leader). A storage error propagates (the node stops)."""
        if self.check_write is not None:
            self.check_write(self.image, records)
        values = [encode_record(record, version) for record, version in records]
        try:
            # After any records the application scheduled (RaftCore.schedule_append).
            last = core.append(values, now_ms)
        except NotLeaderError as e:
            self.report(f"controller write refused: {e}")
            return None
        base = last - len(values) + 1
        controller = self.controller
        for i, (record, version) in enumerate(records):
            controller.replay(record, version, base + i, values[i])
        self.position = last + 1
        self.applied_timestamp_ms = core.config.timestamp_ms(now_ms)
        if self.on_applied is not None:
            self.on_applied(sum(len(v) for v in values))
        controller.wrote(now_ms)
        self.writes += 1
        return last

    def handle(
        self, core: RaftApi, api_key: int, version: int, request: DataclassInstance, ctx: Context
    ) -> Handled:
        """Run one request on the active controller (reads on any): records written, the
        response and the offset that must commit first. Raises ``ApiError`` for a request
        refused as a whole (nothing written)."""
        controller = self.controller
        if api_key in READ_APIS:
            image = controller.image
            with image.timeline.at_committed():
                result = controller.handle(api_key, version, request, ctx)
            return Handled(result.response, -1, 0)
        result = controller.handle(api_key, version, request, ctx)
        count = len(result.records)
        check_op_size(count)  # the handlers that can build many records check first
        last = core.log.end_offset - 1
        if result.records:
            written = self.write(core, result.records, ctx.now_ms)
            if written is None:
                raise ApiError(ErrorCode.not_controller, NOT_ACTIVE)
            last = written
            if result.on_written is not None:
                result.on_written(last)
        return Handled(result.response, last, count)

    def after_commit(self, core: RaftApi, offset: int, fn: Callable[[bool], None]) -> None:
        """``fn(True)`` once ``offset`` committed, ``fn(False)`` if leadership is lost
        first."""
        self.waiters.add(offset, core.high_watermark, fn)

    def tick(self, core: RaftApi, ctx: Context) -> int | None:
        """The active controller's periodic work (fencing, idle NoOpRecords, KIP-435
        steps); the last offset written, if any."""
        if not self.active:
            return None
        records = self.controller.tick(ctx)
        return self.write(core, records, ctx.now_ms) if records else None

    # -- snapshots -------------------------------------------------------------------------------

    def snapshot_end(self, core: RaftApi) -> int | None:
        """The end offset a snapshot of the image would have now, or None when the image
        holds records that have not committed (or nothing past the log start)."""
        end = self.position
        if end > core.high_watermark or end <= core.log.start_offset:
            return None
        return end
