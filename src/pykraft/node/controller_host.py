"""The metadata controller on a node: the I/O around ``pykraft.controller.QuorumController``
(the node's :class:`~pykraft.node.application.Application`).

Theory of operation.

*Committed records.* ``_sync`` (after every ``Ready`` the node performed) reads the log from
``position`` up to the high watermark, whole batches only, decodes each metadata record and
replays it; control batches are skipped. A snapshot the node loaded (a follower that fetched
one), or a position below the log start, reloads the image from the newest snapshot first.

*Leadership.* On the raft leader, once its epoch is established (the high watermark passed
its LeaderChange) and everything committed is replayed, the controller activates and writes
its activation records. It deactivates when the node stops leading; if it had applied
records that had not committed, the image is rebuilt from the snapshot and the committed
log, so it again holds only committed state.

*Requests.* The APIs of ``CONTROLLER_API_VERSIONS`` go to the controller when active
(otherwise NOT_CONTROLLER at once, which sends a Kafka broker looking for the new active
controller). Each runs inside ``RaftNode.run`` (never during a thread flush): the controller
gets the offset its records will take, returns records and response; the records are
appended as one batch, applied to the image at once, and the response is sent once
everything appended so far has committed. Envelope (a broker forwarding a client's request)
is unwrapped, its inner request handled as if sent directly (or by the node, for quorum
RPCs), and the inner response wrapped with the inner correlation id.

*Time.* One loop timer calls ``QuorumController.tick`` at its next deadline (session expiry,
the idle NoOpRecord).

*Snapshots.* After ``metadata.log.max.record.bytes.between.snapshots`` bytes of records, at a
moment when every applied record is committed, the image is written as a snapshot at the
replay position (the node writes it and moves its log start).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from kio.static.protocol import ResponsePayload

from pykraft.controller import registration
from pykraft.controller.config import ControllerConfig
from pykraft.controller.errors import ApiError
from pykraft.controller.image import Image, ImageError
from pykraft.controller.migration import MigrationRefused
from pykraft.controller.quorum_controller import (
    CONTROLLER_API_VERSIONS,
    METADATA_TOPIC,
    READ_APIS,
    SUPPORTED_FEATURES,
    Context,
    QuorumController,
    error_fields,
)
from pykraft.metadata.serde import MetadataRecordError, decode_record, encode_record
from pykraft.net.convert import KRAFT_VERSION_FEATURE
from pykraft.net.convert.reassign import metadata_listing
from pykraft.net.server import Answer
from pykraft.node.appends import CommitWaiters
from pykraft.node.controller_metrics import controller_metrics
from pykraft.node.envelope import envelope
from pykraft.node.metadata_files import load_image, snapshot_values, write_chunks
from pykraft.node.snapshot_policy import SnapshotPolicy
from pykraft.protocol import ApiKey, ApiVersionRange, DecodedRequest, ErrorCode, error_response
from pykraft.protocol.apis import response_schema
from pykraft.protocol.build import make
from pykraft.raft import reassignment
from pykraft.raft.interfaces import Ready
from pykraft.raft.roles import Leader
from pykraft.records import decode_records, iter_batches
from pykraft.storage import StorageError, read_snapshot

if TYPE_CHECKING:
    from pykraft.node.migration_host import MigrationHost

__all__ = ["ControllerHost", "load_image"]

log = logging.getLogger("pykraft.controller")

READ_CHUNK_BYTES: Final = 1 << 20
NOT_ACTIVE: Final = "This controller is not the active controller"


class ControllerHost:
    """Invariant: ``position`` is the next log offset to replay; on the active controller
    every record below it is in the image (replayed or applied at append)."""

    def __init__(
        self,
        node: Any,  # RaftNode (not imported: the node imports this module's protocol)
        config: ControllerConfig,
        *,
        bootstrap: dict[str, int] | None,
        rng: random.Random | None = None,
    ) -> None:
        self.node = node
        self.config = config
        self.bootstrap = bootstrap
        self.controller: QuorumController | None = None
        self._rng = rng or random.Random()
        self.position = 0
        self._waiters = CommitWaiters()  # requests answered once their records commit
        self._sync_scheduled = False
        self._reload = False
        self._epoch = -1  # the epoch the controller is active in
        self._timer: asyncio.TimerHandle | None = None
        self._snapshots = SnapshotPolicy(config.snapshot_max_bytes, config.snapshot_interval_ms)
        self._snapshot_task: asyncio.Future[None] | None = None
        self._stopped = False
        self.metadata_errors = 0
        self.controller_features: dict[int, dict[str, tuple[int, int]]] = {}
        self.migration: MigrationHost | None = None  # when zookeeper.metadata.migration.enable
        self._migrating_seen: tuple[int, ...] = ()

    # -- Application --------------------------------------------------------------------------

    def api_rows(self) -> tuple[ApiVersionRange, ...]:
        rows = [ApiVersionRange(k, lo, hi) for k, (lo, hi) in CONTROLLER_API_VERSIONS.items()]
        rows.append(ApiVersionRange(ApiKey.ENVELOPE, 0, 0))
        return tuple(rows)

    def started(self) -> None:
        node = self.node
        self._snapshots.last_ms = node.now_ms()
        self.controller = QuorumController(
            self.config, node_id=node.config.node_id, cluster_id=node.cluster_id, rng=self._rng
        )
        self._load_snapshot()
        log.info(
            "metadata controller started node.id=%d position=%d", node.config.node_id, self.position
        )
        if self.config.zk_migration_enabled:
            from pykraft.node.migration_host import MigrationHost  # kazoo only when migrating

            self.migration = MigrationHost(self, node.config.zookeeper_connect, node.config.node_id)
            self.migration.poke()

    def stopped(self) -> None:
        self._stopped = True
        if self.migration is not None:
            self.migration.stop()
        if self._timer is not None:
            self._timer.cancel()
        self._waiters.fail_all()

    def features(self) -> tuple[Mapping[str, tuple[int, int]], Mapping[str, int], int]:
        controller = self.controller
        if controller is None:
            return SUPPORTED_FEATURES, {}, -1
        image = controller.image
        return SUPPORTED_FEATURES, dict(image.features), image.features_epoch

    def image(self) -> Image | None:
        return None if self.controller is None else self.controller.image

    def metrics(self) -> list[tuple[str, str, float]]:
        """Kafka's controller metrics (``controller_metrics.py``)."""
        if self.controller is None:
            return []
        committed = self.node.core.high_watermark - 1
        return controller_metrics(self.controller, committed, self.metadata_errors, self.migration)

    def after_ready(self, ready: Ready) -> None:
        if ready.snapshot_loaded is not None:
            self._reload = True
        elif ready.high_watermark is None and ready.leader_change is None:
            return  # nothing the controller follows changed
        if not self._sync_scheduled and not self._stopped:
            self._sync_scheduled = True
            asyncio.get_running_loop().call_soon(self._run_sync)

    def handle(self, request: DecodedRequest, listener_name: str) -> Answer | None:
        api_key = request.api_key
        if api_key == ApiKey.ENVELOPE:
            return envelope(self, request, listener_name)
        if api_key == ApiKey.CONTROLLER_REGISTRATION:
            self._controller_registration(request.message)
            return None
        if api_key == ApiKey.UPDATE_FEATURES and _only_kraft_version(request.message):
            return None  # the quorum's own feature (D10): the core
        if api_key in REASSIGNMENT_KEYS and _only_metadata_partition(request.message):
            return None  # the voter set's reassignment (KIP-642): the core
        if api_key not in CONTROLLER_API_VERSIONS:
            return None
        controller = self.controller
        if controller is None:
            return Answer(self._error(request, ErrorCode.broker_not_available))
        if api_key in READ_APIS:
            return Answer(self._read(request))
        if not controller.active:
            return Answer(self._error(request, ErrorCode.not_controller, NOT_ACTIVE))
        answer = Answer()
        self.node.run(lambda: self._process(request, answer))
        return answer

    # -- requests -----------------------------------------------------------------------------

    def _read(self, request: DecodedRequest) -> ResponsePayload:
        """A read answered from this controller's image at once (any controller)."""
        controller = self.controller
        assert controller is not None
        api_key, version = request.api_key, request.api_version
        try:
            result = controller.handle(api_key, version, request.message, self._context())
            payload: ResponsePayload = make(response_schema(api_key, version), result.response)
        except ApiError as e:
            return self._error(request, e.code, e.message)
        except Exception as e:
            self.metadata_errors += 1
            log.exception("controller failed on %s v%d: %s", ApiKey(api_key).name, version, e)
            return self._error(request, ErrorCode.unknown_server_error, str(e))
        return payload

    def _add_voter_reassignment(self, m: Any, response: dict[str, Any]) -> None:
        """ListPartitionReassignments of everything (or naming the metadata partition)
        also lists the voter set's move (KIP-642), which the quorum keeps."""
        topics = m.topics
        named = topics is None or any(t.name == METADATA_TOPIC for t in topics)
        core = self.node.core
        if not named or core is None:
            return
        voters = reassignment.handle_list(core)
        listing = metadata_listing(voters) if voters.error == ErrorCode.none else None
        if listing is not None:
            response["topics"] = [*response["topics"], listing]

    def _process(self, request: DecodedRequest, answer: Answer) -> None:
        controller = self.controller
        api_key, version = request.api_key, request.api_version
        if answer.done:
            return
        if controller is None or not controller.active:
            answer.set(self._error(request, ErrorCode.not_controller, NOT_ACTIVE))
            return
        ctx = self._context()
        try:
            result = controller.handle(api_key, version, request.message, ctx)
            if api_key == ApiKey.LIST_PARTITION_REASSIGNMENTS:
                self._add_voter_reassignment(request.message, result.response)
            payload = make(response_schema(api_key, version), result.response)
        except ApiError as e:
            answer.set(self._error(request, e.code, e.message))
            return
        except Exception as e:  # a bug: the node keeps running, the client gets an error
            self.metadata_errors += 1
            log.exception("controller failed on %s v%d: %s", ApiKey(api_key).name, version, e)
            answer.set(self._error(request, ErrorCode.unknown_server_error, str(e)))
            return
        if result.records:
            last = self.write(result.records)
            if last is None:
                answer.set(self._error(request, ErrorCode.not_controller, NOT_ACTIVE))
                return
            if result.on_written is not None:
                result.on_written(last)
        else:
            last = self.node.log.end_offset - 1

        def send(committed: bool) -> None:
            if committed:
                answer.set(payload)
            else:
                answer.set(self._error(request, ErrorCode.not_controller, NOT_ACTIVE))

        self.after_commit(last, send)
        timeout_ms = _timeout_ms(request.message)
        if timeout_ms > 0 and not answer.done:
            # Kafka's ControllerApis: the request's own timeout is the deadline of its write;
            # past it the client gets REQUEST_TIMED_OUT (the records may still commit later).
            def expire() -> None:
                answer.set(
                    self._error(
                        request,
                        ErrorCode.request_timed_out,
                        f"the records did not commit within {timeout_ms} ms",
                    )
                )

            asyncio.get_running_loop().call_later(timeout_ms / 1000, expire)

    def _error(
        self, request: DecodedRequest, code: ErrorCode, message: str | None = None
    ) -> ResponsePayload:
        """``request`` refused with ``code``, per item where the API has no top-level
        error (Kafka's getErrorResponse)."""
        api_key, version = request.api_key, request.api_version
        try:
            fields = error_fields(api_key, request.message, code, message)
            payload: ResponsePayload = make(response_schema(api_key, version), fields)
        except (LookupError, TypeError, ValueError, AttributeError):
            payload = error_response(
                api_key, version, code, error_message=message, apis=self.node.served_apis
            )
        return payload

    def _context(self) -> Context:
        core = self.node.core
        own = {**SUPPORTED_FEATURES, KRAFT_VERSION_FEATURE: core.config.kraft_versions}
        controllers = {
            c.controller_id: dict(c.features)
            for c in (self.controller.image.controllers.values() if self.controller else ())
        }
        controllers.update(self.controller_features)
        controllers[self.node.config.node_id] = own
        return Context(
            now_ms=self.node.now_ms(),
            next_offset=self.node.log.end_offset,
            kraft_version=core.kraft_version,
            controller_features=controllers,
        )

    def write(self, records: list[tuple[Any, int]]) -> int | None:
        """Append ``records`` as one batch and apply them; the last offset (None if the node
        is no longer leader)."""
        controller = self.controller
        core = self.node.core
        assert controller is not None
        values = [encode_record(record, version) for record, version in records]
        base = self.node.log.end_offset
        now = self.node.now_ms()
        try:
            last = core.append(values, now)
        except (OSError, StorageError):
            raise  # the node stops on it (RaftNode._storage_failed)
        except Exception as e:  # NotLeaderError: leadership moved inside this turn
            log.info("controller write refused: %s", e)
            return None
        assert last == base + len(values) - 1, (base, last, len(values))
        for i, (record, version) in enumerate(records):
            controller.replay(record, version, base + i)
        self.position = last + 1
        self._snapshots.applied(sum(len(v) for v in values))
        controller.wrote(now)
        return int(last)

    # -- ControllerRegistration ---------------------------------------------------------------

    def after_commit(self, offset: int, fn: Callable[[bool], None]) -> None:
        """``fn(True)`` once ``offset`` committed, ``fn(False)`` if leadership is lost first."""
        self._waiters.add(offset, self.node.core.high_watermark, fn)

    def _controller_registration(self, m: Any) -> None:
        """The core answers it (D10's registry); the active controller also writes a
        RegisterControllerRecord (KIP-919) when it is new or changed."""
        self.controller_features[int(m.controller_id)] = registration.supported_features(m)
        controller = self.controller
        if controller is None or not controller.active:
            return
        record = registration.controller_record(controller.image, controller.metadata_version, m)
        if record is None:
            return

        def write() -> None:
            if self.controller is not None and self.controller.active:
                self.write([(record, 0)])

        self.node.run(write)

    # -- the committed log --------------------------------------------------------------------

    def _run_sync(self) -> None:
        self._sync_scheduled = False
        if not self._stopped:
            self.node.run(self._sync)

    def _sync(self) -> None:
        controller = self.controller
        core = self.node.core
        if controller is None or core is None or self._stopped:
            return
        if self._reload or self.position < self.node.log.start_offset:
            self._reload = False
            self._rebuild()
        leader = core.state if isinstance(core.state, Leader) else None
        if controller.active and (leader is None or leader.epoch != self._epoch):
            self._deactivate()
        hwm = core.high_watermark
        if self.position < hwm:
            self._replay_committed(hwm)
        if (
            not controller.active
            and leader is not None
            and hwm > leader.epoch_start_offset
            and self.position >= hwm
        ):
            self._activate(leader.epoch)
        self._waiters.resolve(core.high_watermark)
        self._maybe_snapshot()
        self._schedule_tick()
        if self.migration is not None:
            migrating = tuple(
                sorted(
                    b.broker_id
                    for b in controller.image.brokers.values()
                    if b.is_migrating_zk_broker
                )
            )
            if migrating != self._migrating_seen:
                # A ZooKeeper broker registered: the driver looks again now (as Kafka's
                # driver wakes on cluster deltas), not at its next backoff.
                self._migrating_seen = migrating
                self.migration.driver.retry_at_ms = 0
            self.migration.poke()

    def _replay_committed(self, high_watermark: int) -> None:
        controller = self.controller
        assert controller is not None
        log_ = self.node.log
        while self.position < high_watermark:
            data = log_.read(self.position, READ_CHUNK_BYTES)
            if not data:
                return
            progressed = False
            for header, pos in iter_batches(data):
                if header.last_offset >= high_watermark:
                    return
                if header.last_offset < self.position:
                    continue
                progressed = True
                if not header.is_control:
                    self._replay_batch(data[pos : pos + header.size])
                self.position = header.last_offset + 1
            if not progressed:
                return

    def _replay_batch(self, batch: bytes) -> None:
        controller = self.controller
        assert controller is not None
        for record in decode_records(batch):
            if record.offset < self.position or record.value is None:
                continue
            self._snapshots.applied(len(record.value))
            try:
                value, version = decode_record(record.value)
                controller.replay(value, version, record.offset)
            except (MetadataRecordError, ImageError) as e:
                # Kafka's controller stops on such a record; pykraft counts it, logs it and
                # goes on (MetadataErrorCount), so an operator sees it and the quorum lives.
                self.metadata_errors += 1
                log.error("metadata record at offset %d cannot be replayed: %s", record.offset, e)

    def _load_snapshot(self) -> None:
        """The newest snapshot into a fresh image; position = its end offset."""
        controller = self.controller
        assert controller is not None
        controller.reset()
        core = self.node.core
        store = core.snapshots
        latest = store.latest()
        self.position = self.node.log.start_offset
        if latest is None:
            return
        contents = read_snapshot(store, latest)
        offset = latest.offset - 1
        for record in contents.records:
            if record.value is None:
                continue
            try:
                value, version = decode_record(record.value)
                controller.replay(value, version, offset)
            except (MetadataRecordError, ImageError) as e:
                self.metadata_errors += 1
                log.error("snapshot %s record cannot be replayed: %s", latest, e)
        self.position = max(self.position, latest.offset)
        log.info("metadata image loaded from snapshot %s", latest)

    def _rebuild(self) -> None:
        self._load_snapshot()
        self._snapshots.reloaded()

    # -- leadership ---------------------------------------------------------------------------

    def _activate(self, epoch: int) -> None:
        controller = self.controller
        assert controller is not None
        now = self.node.now_ms()
        try:
            records = controller.activate(now, self.bootstrap)
        except MigrationRefused as e:
            controller.deactivate()
            self.node.halt(f"cannot become the active controller: {e}", e)
            return
        self._epoch = epoch
        log.info(
            "active controller epoch=%d position=%d metadata.version=%s",
            epoch,
            self.position,
            controller.image.metadata_version,
        )
        if records:
            self.write(records)
        if self.migration is not None:
            self.migration.leadership_changed(epoch)

    def _deactivate(self) -> None:
        controller = self.controller
        assert controller is not None
        controller.deactivate()
        self._waiters.fail_all()
        log.info("no longer the active controller epoch=%d", self._epoch)
        self._epoch = -1
        if self.migration is not None:
            self.migration.leadership_changed(-1)
        if self.position > self.node.core.high_watermark:
            # Applied records that had not committed: back to the committed state.
            self._rebuild()

    # -- time ---------------------------------------------------------------------------------

    def _schedule_tick(self) -> None:
        controller = self.controller
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if controller is None or self._stopped:
            return
        deadline = controller.next_deadline_ms()
        if deadline is None:
            return
        loop = asyncio.get_running_loop()
        delay = max(0.0, (deadline - self.node.now_ms()) / 1000)
        self._timer = loop.call_later(delay, lambda: self.node.run(self._tick))

    def _tick(self) -> None:
        self._timer = None
        controller = self.controller
        if controller is None or not controller.active:
            return
        records = controller.tick(self._context())
        if records:
            self.write(records)
        self._schedule_tick()

    # -- snapshots ----------------------------------------------------------------------------

    def request_snapshot(self) -> None:
        """A snapshot as soon as the image is exactly the committed state (on demand:
        ``pykraft server`` calls this on SIGUSR1)."""
        self._snapshots.request()
        self.node.run(self._maybe_snapshot)

    def _maybe_snapshot(self) -> None:
        controller = self.controller
        core = self.node.core
        now = self.node.now_ms()
        if controller is None or not self._snapshots.due(now):
            return
        end = self.position
        if end > core.high_watermark or end <= self.node.log.start_offset:
            return  # applied records not committed yet, or nothing new
        values = self.snapshot_values()
        self._snapshots.started(now)
        self._snapshot_task = asyncio.ensure_future(self._snapshot(values, end))

    def snapshot_values(self) -> list[bytes]:
        assert self.controller is not None
        return snapshot_values(self.controller)

    async def _snapshot(self, values: list[bytes], end: int) -> None:
        started = time.monotonic()
        try:
            sid = await self.node.create_snapshot(
                lambda writer: write_chunks(writer, values, self.node.now_ms()), end
            )
        except Exception as e:
            log.warning("metadata snapshot at %d not written: %s", end, e)
        else:
            log.info(
                "metadata snapshot written snapshot_id=%s records=%d in %.0f ms",
                sid,
                len(values),
                (time.monotonic() - started) * 1000,
            )
        finally:
            self._snapshots.finished()


REASSIGNMENT_KEYS: Final = frozenset(
    {ApiKey.ALTER_PARTITION_REASSIGNMENTS, ApiKey.LIST_PARTITION_REASSIGNMENTS}
)


def _only_metadata_partition(m: Any) -> bool:
    topics: Any = getattr(m, "topics", None)
    return bool(topics) and all(t.name == METADATA_TOPIC for t in topics)


def _only_kraft_version(m: Any) -> bool:
    updates = getattr(m, "feature_updates", ())
    return bool(updates) and all(u.feature == KRAFT_VERSION_FEATURE for u in updates)


def _timeout_ms(m: Any) -> int:
    """The request's ``timeout`` / ``timeout_ms`` field in milliseconds (0: none)."""
    value = getattr(m, "timeout", None)
    if value is None:
        value = getattr(m, "timeout_ms", None)
    if value is None:
        return 0
    if hasattr(value, "total_seconds"):
        return int(value.total_seconds() * 1000)
    return int(value)
