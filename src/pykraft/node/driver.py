"""The node: one ``RaftCore`` driven by real files, sockets and timers on an asyncio loop; the
node holds it as a ``raft.api.RaftApi`` (the calls docs/CONTRACTS.md documents).

Theory of operation. Every input to the core -- a decoded request, a response or a failed
request from a peer channel, a timer, an application append -- ends in :meth:`RaftNode._pump`,
which performs the core's ``Ready`` exactly as its docstring orders:

1. ``messages``: sent at once, before the flush: responses complete the pending inbound
   request they answer (matched by the request id this driver gave it) and are written to
   its socket in that call; requests are written to the peer's connection. A leader's Fetch
   answers carrying records it has not flushed yet leave here, so its followers' fsyncs
   overlap its own (it counts its own offset only once flushed, B13);
2. ``must_flush``: one ``FileLog.flush`` (one fsync for everything appended since the last
   one, which is how appends are batched), then ``RaftCore.on_flushed``, then
   ``messages_after_flush`` (a follower's next Fetch, a candidate's votes: they state our log
   end offset, so no peer may see an offset a crash could lose);
3. ``snapshot_to_make_durable``: a snapshot fetched from the leader is complete; its fsync
   and final check run on a thread with the core frozen as for a thread flush (below), then
   ``RaftCore.on_snapshot_durable`` installs it. At a million partitions that fsync met
   100-200 ms of other writers' I/O on the standby's loop;
4. ``snapshot_loaded`` / ``high_watermark`` / ``leader_change``: told to the application
   (commit futures, the optional ``on_commit`` callback, a log line);
5. ``next_deadline_ms``: one loop timer calls ``poll`` then.

The network edges (``pykraft.net``) call in and out synchronously: requests and peers'
responses are stepped from the socket's ``data_received``, answers written inside ``_pump``;
nothing waits for a turn of the loop's ready queue (a commit crosses the edges four times).

Where the flush runs is ``flush.py``'s (inline while fast, on a thread while slow). While
a thread flush runs the core is *frozen*: every input (request, response, timer, append) is
queued in ``_deferred`` and stepped when the flush completes, and ``ready()`` is not called,
so the log is never written while being flushed (FileLog is not thread-safe, and
``flushed_offset`` must mean exactly what reached the disk). ``_deferred`` is bounded by its
producers: each connection has at most ``in_flight_max`` requests, each peer channel a
bounded backlog, there is one poll timer and one linger timer.

After a flush the core may have more to say (``on_flushed`` can commit), so the pump asks
again.

The clock is the loop's monotonic clock in milliseconds; the core never reads it itself.
Request ids: the core numbers the requests it sends; this driver numbers the requests it
receives (separately: a response body answers an inbound id, a request body uses the core's).
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import functools
import logging
import random
import time
import uuid
from collections.abc import Callable, Sequence

from kio.static.protocol import ResponsePayload

from pykraft.net.answer import Answer
from pykraft.net.security import Session
from pykraft.net.server import KafkaServer
from pykraft.node import spec_trace_file
from pykraft.node.appender import Appender
from pykraft.node.appends import AppendLostError
from pykraft.node.application import Application
from pykraft.node.config import NodeConfig
from pykraft.node.endpoint import HealthSource, NodeEndpoint, open_endpoint
from pykraft.node.events import VoterSetLog, log_ready, log_started, log_transition
from pykraft.node.flush import Flusher
from pykraft.node.inbound import (
    SERVED_APIS,
    answer_at_once,
    api_versions_response,
    refusal,
)
from pykraft.node.log_retention import PeriodicClean
from pykraft.node.loop_lag import LoopLag
from pykraft.node.metrics import (
    RaftMetrics,
    Snapshot,
    snapshot_of,
)
from pykraft.node.outbound import Router
from pykraft.node.process_metrics import process_families
from pykraft.node.registration import ControllerRegistrar
from pykraft.node.storage import NodeStartError, new_core, open_storage
from pykraft.protocol import (
    DecodedRequest,
)
from pykraft.raft.api import RaftApi
from pykraft.raft.interfaces import Ready, SnapshotWriter
from pykraft.raft.messages import (
    Outbound,
)
from pykraft.raft.roles import Role
from pykraft.raft.snapshots import RaftSnapshotWriter
from pykraft.raft.types import OffsetAndEpoch
from pykraft.storage import (
    FileLog,
    StorageError,
)

__all__ = ["AppendLostError", "NodeStartError", "RaftNode"]

log = logging.getLogger("pykraft.node")


class RaftNode:
    """A KRaft controller process's quorum machinery. Create, ``await start()``, then use
    :meth:`append` / :meth:`wait_committed`; ``await shutdown()`` resigns gracefully.
    Embedders: ``gc.freeze()`` once started, as ``pykraft server`` does (see node/server.py)."""

    def __init__(
        self,
        config: NodeConfig,
        *,
        rng: random.Random | None = None,
        on_commit: Callable[[int], None] | None = None,
    ) -> None:
        self.config = config
        self.on_commit = on_commit
        self._rng = rng or random.Random()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.core: RaftApi | None = None
        self._log: FileLog | None = None
        self._server: KafkaServer | None = None
        self._router = Router(config, self)  # peer channels, inbound requests (outbound.py)
        self._timer: asyncio.Handle | None = None  # uvloop: a Handle when already due
        self._timer_ms = 0  # when it fires, in now_ms()
        self._appender: Appender | None = None  # the application's appends, once started
        self._cleaner: PeriodicClean | None = None  # metadata log retention between snapshots
        self._stopping = False
        self.failed: BaseException | None = None  # a fatal storage error stopped the node
        self._flusher = Flusher()  # inline, or on the fsync thread while flushes are slow
        # Set while a thread flush or a fetched snapshot's durable step runs: the core frozen.
        self._flushing: asyncio.Future[None] | None = None
        self._fatal_stop: asyncio.Future[None] | None = None
        self._deferred: collections.deque[Callable[[], None]] = collections.deque()
        self.metrics: RaftMetrics | None = None
        self.loop_lag = LoopLag()  # the longest the loop was held (node/loop_lag.py)
        self._voter_log = VoterSetLog()
        self._metrics_server: NodeEndpoint | None = None  # metrics.port: metrics, health
        self.stopped = asyncio.Event()
        self.cluster_id = ""
        self.directory_id: uuid.UUID | None = None
        self.listener = config.controller_listener
        self._registrar: ControllerRegistrar | None = None
        # What runs on the log (pykraft.node.application): the metadata controller in
        # ``pykraft server``; None for a bare quorum (benchmarks, embedders).
        self.application: Application | None = None
        self.served_apis = SERVED_APIS

    # -- lifecycle ------------------------------------------------------------------------

    def now_ms(self) -> int:
        assert self._loop is not None
        return int(self._loop.time() * 1000)

    @property
    def server(self) -> KafkaServer:
        """The listener (its port; its TLS context replaced by ``node/reconfigure.py``)."""
        assert self._server is not None
        return self._server

    @property
    def port(self) -> int:
        return self.server.port

    async def start(self) -> None:
        """Open storage, build the core, start listening. Raises NodeStartError."""
        self._loop = asyncio.get_running_loop()
        self._appender = Appender(self, self._loop, self.config.quorum_append_linger_ms)
        self._router.start(self._loop)
        cfg = self.config
        storage = open_storage(cfg)
        self.cluster_id = storage.cluster_id
        self.directory_id = storage.directory_id
        self._log = storage.log
        app = self.application  # SCRAM credentials come from its image
        if app is not None:
            self.served_apis = SERVED_APIS.with_apis(*app.api_rows())
        self._server = KafkaServer(
            self.handle_request,
            listener_name=self.listener.name,
            host=self.listener.host,
            port=self.listener.port,
            apis=self.served_apis,
            frame_max_bytes=cfg.socket_request_max_bytes,
            api_versions=self._api_versions,
            security=cfg.security,
            credentials=lambda m, u: None if app is None else app.scram_credential(m, u),
        )
        await self._server.start()
        # Batches carry wall-clock CreateTime (Kafka's), timers the loop's monotonic clock.
        clock_offset_ms = int(time.time() * 1000) - self.now_ms()
        core = new_core(cfg, storage, self._rng, self.now_ms(), clock_offset_ms)
        core.on_transition = self._on_transition
        spec_trace_file.attach(cfg.spec_trace_file, cfg.node_id, core)
        self.core = core
        self._cleaner = PeriodicClean(self._loop, self.run, core)
        self._cleaner.start()
        self._registrar = ControllerRegistrar(
            cfg.node_id,
            core.endpoints,
            core.config.kraft_versions,
            timeout_ms=cfg.quorum_request_timeout_ms,
            security=None if cfg.security is None else cfg.security.client,
        )
        self.metrics = RaftMetrics(self.now_ms(), cfg.quorum_fetch_timeout_ms)
        self.loop_lag.start(self._loop, stall_stack_ms=cfg.event_loop_stall_stack_ms)
        if cfg.metrics_port is not None:
            health = HealthSource(cfg, lambda: self.core, self.now_ms, self.application)
            self._metrics_server = open_endpoint(self._loop, cfg, self.metrics_snapshot, health)
        log_started(cfg.node_id, self.directory_id, self.cluster_id, self.listener, self.port, core)
        if self.application is not None:
            self.application.started()
        self._pump()

    async def shutdown(self) -> None:
        """Graceful: a leader resigns (EndQuorumEpoch), the log is flushed, sockets close."""
        if self._stopping:
            return
        core = self.core
        if core is not None and self.failed is None:
            await self._flush_done()
            core.shutdown(self.now_ms())
            self._pump()
            await self._flush_done()
            # Give EndQuorumEpoch a moment to leave before the channels close.
            await asyncio.sleep(0.05)
        self._stopping = True
        self.loop_lag.stop()
        if self._timer is not None:
            self._timer.cancel()
        if self._cleaner is not None:
            self._cleaner.stop()
        if self._appender is not None:
            self._appender.stop(ConnectionError("node shutting down"))
        if self.application is not None:
            self.application.stopped()
        if self._server is not None:
            await self._server.close()
        await self._router.close()
        if self._registrar is not None:
            await self._registrar.close()
        if self._metrics_server is not None:
            self._metrics_server.close()
        await self._flush_done()
        if self._log is not None:
            self._log.close(clean=self.failed is None)
        self._flusher.shutdown()
        log.info("node stopped node.id=%d", self.config.node_id)
        self.stopped.set()

    # -- the pump -------------------------------------------------------------------------

    def run(self, step: Callable[[], None]) -> None:
        """Run ``step`` (which may append to the core) when the core is not frozen by a
        flush, then perform what it made ready: how the application writes."""
        self._input(step)

    @property
    def log(self) -> FileLog:
        assert self._log is not None
        return self._log

    def _input(self, step: Callable[[], None]) -> None:
        """Step the core now, or after the running flush (see the module docstring)."""
        if self.core is None or self._stopping:
            return
        if self._flushing is not None:
            self._deferred.append(step)
            return
        if self._step(step):
            self._pump()

    def _step(self, step: Callable[[], None]) -> bool:
        """Run ``step``; a storage error (a full disk, a failed write) stops the node."""
        if self.failed is not None:
            return False
        try:
            self._poll_overdue()
            step()
        except (OSError, StorageError) as e:
            self._storage_failed("metadata log write", e)
            return False
        return True

    def _poll_overdue(self) -> None:
        """Fire the core's timers that expired before this input, as Kafka's poll does
        (``pollCurrentState`` before the inbound message). The loop runs socket callbacks
        before due timers, so after a stall (a paused process, a long flush) a peer's answer
        would otherwise reach the core first and mask the overdue fetch timeout."""
        timer, core = self._timer, self.core
        if timer is None or core is None or self._timer_ms > self.now_ms():
            return
        timer.cancel()
        self._timer = None
        core.poll(self.now_ms())

    def _pump(self) -> None:
        core = self.core
        log_ = self._log
        assert log_ is not None and self._loop is not None
        while (
            core is not None and not self._stopping and self._flushing is None and not self.failed
        ):
            try:
                ready = core.ready(self.now_ms())
            except (OSError, StorageError) as e:
                self._storage_failed("metadata log write", e)
                return
            for message in ready.messages:  # they never wait for our flush (Ready, step 1)
                self._send(message)
            if not ready.must_flush:
                self._perform(ready)
                if not self._make_durable(ready):
                    return
                continue  # the install may say more (snapshot_loaded)
            if not self._flusher.in_thread:
                try:
                    self._flusher.flush(log_)
                except (OSError, StorageError) as e:
                    self._storage_failed("log flush", e)
                    return
                core.on_flushed(self.now_ms())
                self._perform(ready)
                self._make_durable(ready)
                continue  # on_flushed may have released more
            # Invariant: while _flushing is set, nothing writes the log and ready() is not
            # called.
            flushing = self._flusher.submit(self._loop, log_)
            self._flushing = flushing
            flushing.add_done_callback(functools.partial(self._flushed, ready=ready))
            return

    def _storage_failed(self, what: str, error: BaseException) -> None:
        # As Kafka halts on a failed metadata log write or flush: what reached the disk is
        # unknown. The next start truncates a torn tail; nothing acknowledged depends on it.
        self.halt(
            f"{what} failed, stopping the node: {error} (metadata.log.dir="
            f"{self.config.metadata_log_dir}; free space or fix the disk, then start the node "
            "again)",
            error,
        )

    def halt(self, message: str, error: BaseException) -> None:
        """Stop the node after a fatal error (one CRITICAL line; the process exits 1), as
        Kafka's fatal fault handler does."""
        if self.failed is not None:
            return
        log.critical("%s", message)
        self.failed = error
        self._deferred.clear()
        self._fatal_stop = asyncio.ensure_future(self.shutdown())

    def _flushed(self, flush: asyncio.Future[None], ready: Ready) -> None:
        core = self.core
        assert core is not None
        self._flushing = None
        error = flush.exception() if not flush.cancelled() else ConnectionError("cancelled")
        if error is not None:
            self._storage_failed("log flush", error)
            return
        core.on_flushed(self.now_ms())
        self._perform(ready)
        if not self._make_durable(ready):
            self._step_deferred()

    def _step_deferred(self) -> None:
        """The core thawed: step what arrived meanwhile, then pump."""
        deferred, self._deferred = self._deferred, collections.deque()
        for step in deferred:
            if not self._step(step):
                return
        self._pump()

    def _make_durable(self, ready: Ready) -> bool:
        """Ready's durable step for a fetched snapshot (its fsync and final check) on a
        thread, the core frozen until ``_snapshot_durable``; True if one started."""
        writer = ready.snapshot_to_make_durable
        if writer is None or self.failed is not None:
            return False
        assert self._loop is not None and self._flushing is None
        durable = self._loop.run_in_executor(None, writer.make_durable)
        self._flushing = durable
        durable.add_done_callback(functools.partial(self._snapshot_durable, writer=writer))
        return True

    def _snapshot_durable(self, done: asyncio.Future[None], writer: SnapshotWriter) -> None:
        core = self.core
        assert core is not None
        self._flushing = None
        error = done.exception() if not done.cancelled() else ConnectionError("cancelled")
        valid = error is None
        if isinstance(error, ValueError):
            # Refused bytes: dropped, and fetched again (as the core did when it froze them).
            log.warning("fetched snapshot %s refused: %s", writer.snapshot_id, error)
        elif error is not None:
            self._storage_failed("snapshot write", error)
            return
        try:
            core.on_snapshot_durable(writer, valid, self.now_ms())
        except (OSError, StorageError) as e:
            self._storage_failed("snapshot install", e)
            return
        self._step_deferred()

    async def _flush_done(self) -> None:
        while self._flushing is not None:
            await asyncio.shield(self._flushing)
            await asyncio.sleep(0)  # let the done callback run

    def _perform(self, ready: Ready) -> None:
        """Ready's steps after the flush (``messages`` were sent before it)."""
        for message in ready.messages_after_flush:
            self._send(message)
        log_ready(ready)
        if ready.high_watermark is not None:
            if self._appender is not None:
                self._appender.committed(ready.high_watermark)
            if self.on_commit is not None:
                self.on_commit(ready.high_watermark)
        if ready.leader_change is not None:
            change = ready.leader_change
            if self._registrar is not None:
                self._registrar.leader_changed(change.leader_id, change.epoch, self.leader_address)
        assert self.core is not None
        self._voter_log.update(self.config.node_id, self.core, bool(self.config.quorum_voters))
        self._schedule_poll(ready.next_deadline_ms)
        if self.application is not None:
            self.application.after_ready(ready)

    def _api_versions(self, api_version: int) -> ResponsePayload:
        """ApiVersions: the served APIs, the kraft.version range the core supports
        (``RaftConfig.kraft_versions``) and, once running, the finalized kraft.version."""
        features = None if self.application is None else self.application.features()
        return api_versions_response(api_version, self.core, self.served_apis, features)

    def metrics_snapshot(self) -> Snapshot | None:
        """The raft-metrics group now (on the loop thread); None before start."""
        if self.core is None or self.metrics is None:
            return None
        snapshot = snapshot_of(
            self.core, self.metrics, self.now_ms(), static_voters=bool(self.config.quorum_voters)
        )
        extra = list(self.application.metrics()) if self.application is not None else []
        extra += process_families(
            self._server, self._log, self._flusher, self.loop_lag, self._router.peers.stats
        )
        return dataclasses.replace(snapshot, extra=tuple(extra))

    def _schedule_poll(self, deadline_ms: int) -> None:
        assert self._loop is not None
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self._loop.call_at(deadline_ms / 1000, self._poll)
        self._timer_ms = deadline_ms

    def _poll(self) -> None:
        self._timer = None
        core = self.core
        if core is not None:
            self._input(lambda: core.poll(self.now_ms()))

    def _on_transition(self, old: Role, new: Role) -> None:
        if self.metrics is not None:
            self.metrics.on_role(self.now_ms(), new.name, new.name in ("leader", "follower"))
        log_transition(self.config.node_id, old, new)

    # -- outbound and inbound (outbound.py) ---------------------------------------------------

    def _send(self, message: Outbound) -> None:
        self._router.send(message)

    def voter_addresses(self) -> dict[int, tuple[str, int]]:
        """Each voter's address on the controller listener (``Router.voter_addresses``)."""
        return self._router.voter_addresses(self.core)

    def leader_address(self) -> tuple[str, int] | None:
        return self._router.leader_address(self.core)

    def handle_request(self, request: DecodedRequest, session: Session) -> Answer:
        """A request from the listener (or an Envelope's inner request): answered here, or
        stepped into the core (whose response ``_send`` writes through the ``Answer``, in the
        same call when the core answers at once)."""
        core = self.core
        if self.application is not None:
            refused = self.application.refuse(request, session)
            if refused is not None:
                return Answer(refused)
        if core is not None:
            at_once = answer_at_once(self, core, request)
            if at_once is not None:
                return Answer(at_once)
            if self.application is not None and not self._stopping:
                handled = self.application.handle(request, session)
                if handled is not None:
                    return handled
        refused = refusal(request, core is not None and not self._stopping, self.served_apis)
        if refused is not None or core is None:
            assert refused is not None
            return Answer(refused)
        return self._router.step_in(core, request, session, self.config.node_id)

    # -- the embedding application's API (A3) -----------------------------------------------

    async def append(self, values: Sequence[bytes]) -> int:
        """Append records as the leader, batched for ``controller.quorum.append.linger.ms``;
        returns the offset of the last of ``values`` once appended (not yet committed: see
        :meth:`wait_committed`). Raises ``NotLeaderError`` on a non-leader."""
        return await self._appending().append(values)

    def schedule_append(self, values: Sequence[bytes]) -> int:
        """Kafka's ``RaftClient.scheduleAppend``: take records for the next batch and return
        the offset the last of them will have, without a future or a turn of the loop per
        call. They are appended with the linger batch (``controller.quorum.append.linger.ms``,
        or at once past ``APPEND_BATCH_RECORDS_MAX`` records); the ``on_commit`` callback or
        :meth:`wait_committed` with the epoch (``core.epoch`` now) tells when they commit.
        Raises ``NotLeaderError`` on a non-leader. Records scheduled when leadership is lost
        never reach the log: :meth:`wait_committed` with the epoch raises
        ``AppendLostError`` for them."""
        return self._appending().schedule_append(values)

    def _appending(self) -> Appender:
        if self._appender is None:
            raise ConnectionError("node is not running")
        return self._appender

    # -- what the appender uses (node/appender.AppendHost) ----------------------------------

    @property
    def stopping(self) -> bool:
        return self._stopping

    @property
    def flushing(self) -> bool:
        return self._flushing is not None

    def defer(self, step: Callable[[], None]) -> None:
        self._deferred.append(step)

    def step_now(self, step: Callable[[], None]) -> None:
        if self._step(step):
            self._pump()

    def epoch_at(self, offset: int) -> int | None:
        assert self._log is not None
        return self._log.epoch_at(offset)

    async def create_snapshot(
        self, write: Callable[[RaftSnapshotWriter], None], end_offset: int | None = None
    ) -> OffsetAndEpoch:
        """A snapshot of the committed log below ``end_offset`` (default: the high
        watermark). ``write`` appends the application's state to the writer at once, then
        the snapshot is frozen (``freeze_snapshot``). On an error the snapshot is dropped."""
        writer = self.open_snapshot(end_offset)
        try:
            write(writer)
        except BaseException:
            writer.abort()
            raise
        return await self.freeze_snapshot(writer)

    def open_snapshot(self, end_offset: int | None = None) -> RaftSnapshotWriter:
        """A writer for a snapshot of the committed log below ``end_offset`` (default: the
        high watermark), for an application that appends its state over several turns of
        the event loop and then calls ``freeze_snapshot`` (or ``abort``s the writer)."""
        core = self.core
        if core is None or self._stopping:
            raise ConnectionError("node is not running")
        end = core.high_watermark if end_offset is None else end_offset
        return core.create_snapshot(end, self.now_ms())

    async def freeze_snapshot(self, writer: RaftSnapshotWriter) -> OffsetAndEpoch:
        """Seal the snapshot, make it durable off the event loop (its fsync and CRC check
        take seconds for a large image: ``make_durable`` touches only its own file), then
        publish it, after which the log start may move past it. On an error, or if the node
        stopped meanwhile, the snapshot is dropped."""
        try:
            writer.seal(self.now_ms())
            await asyncio.get_running_loop().run_in_executor(None, writer.make_durable)
            if self.core is None or self._stopping:
                raise ConnectionError("node is not running")
            await self._flush_done()  # freezing moves the log start: never during a flush
            writer.freeze(self.now_ms())
        except BaseException:
            writer.abort()
            raise
        self._pump()
        return writer.snapshot_id

    async def wait_committed(self, offset: int, epoch: int | None = None) -> None:
        """Wait until ``offset`` is below the high watermark. With ``epoch`` (the epoch the
        record was appended in), raise :class:`AppendLostError` if the committed log holds
        another epoch's record at that offset (it was truncated by a new leader)."""
        await self._appending().wait_committed(offset, epoch)

    async def run_until_stopped(self) -> None:
        await self.stopped.wait()
