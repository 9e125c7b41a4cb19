"""The metadata controller on a node: the I/O around the sans-I/O hosting state machine
``pykraft.controller.log_listener.MetaLogListener`` (the node's
:class:`~pykraft.node.application.Application`).

Theory of operation. What follows the log -- replaying committed records, loading
snapshots, activating on an established leader, reverting to the committed offset when
leadership is lost, writing a request's records as one batch -- is the listener's, and runs
the same in the simulator. This module adds what needs a process:

*When.* ``after_ready`` (after every ``Ready`` the node performed) schedules one ``_sync``
inside ``RaftNode.run`` (never during a thread flush), which calls ``MetaLogListener.sync``
and then looks at snapshots, timers and the migration driver. A replica whose own image
cannot be trusted to lead (a committed record failed to replay) or whose log refuses a
ZooKeeper migration halts the node with one line when it would become active.

*Requests* (what Apache Kafka's brokers send their controllers: pykraft must be a controller
they cannot tell from Kafka's, SPEC F2). The APIs of ``CONTROLLER_API_VERSIONS`` go to the
controller when active
(otherwise NOT_CONTROLLER at once, which sends a Kafka broker looking for the new active
controller; so too while its image loads at start, when only super users pass the
authorizer); reads (``READ_APIS``) are answered by any controller from its image as of the
committed offset. The response is sent once the request's records (or everything appended
before it) committed, or REQUEST_TIMED_OUT past the request's own timeout. Envelope (a broker
forwarding a client's request) is unwrapped by ``node/envelope.py``.

*Time.* One loop timer calls the controller's tick at its next deadline (session expiry,
the idle NoOpRecord, KIP-435 steps).

*Snapshots.* ``node/snapshot_policy.py`` says when; the image is written at the replay
position when every applied record is committed (the node writes it and moves its log start).
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from kio.static.protocol import ResponsePayload

from pykraft.controller import registration
from pykraft.controller.authorization import Caller
from pykraft.controller.config import ControllerConfig
from pykraft.controller.errors import ApiError
from pykraft.controller.log_listener import (
    LOAD_SLICE_RECORDS,
    NOT_ACTIVE,
    ActivationRefused,
    Handled,
    LeaderChange,
    MetaLogListener,
)
from pykraft.controller.migration import MigrationRefused
from pykraft.controller.quorum_controller import (
    SUPPORTED_FEATURES,
    Context,
    QuorumController,
    error_fields,
)
from pykraft.controller.result import RecordList
from pykraft.metadata.image import Image, ImageError
from pykraft.metadata.serde import MetadataRecordError
from pykraft.net.answer import Answer
from pykraft.net.convert import KRAFT_VERSION_FEATURE
from pykraft.net.sasl import SCRAM_MECHANISM_TYPES, ScramCredential
from pykraft.net.security import Session
from pykraft.node.cluster_check import cluster_refusal
from pykraft.node.collector import ImageFreezer
from pykraft.node.controller_metrics import (
    NodeFigures,
    controller_metrics,
    event_families,
    loader_families,
)
from pykraft.node.envelope import envelope, envelope_error
from pykraft.node.ghost_controllers import GhostControllers
from pykraft.node.health import controller_reasons
from pykraft.node.kraft_upgrade import KraftUpgrades
from pykraft.node.loggers import logger_answer
from pykraft.node.metadata_files import load_image
from pykraft.node.metrics import Extra
from pykraft.node.performance import EventPerformanceMonitor, event_name
from pykraft.node.reconfigure import Watch
from pykraft.node.request_fields import (
    REASSIGNMENT_KEYS,
    add_voter_reassignment,
    caller_of,
    deadline_ms,
    kraft_version_upgrade,
    only_kraft_version,
    only_metadata_partition,
)
from pykraft.node.request_fields import timeout_ms as request_timeout_ms
from pykraft.node.snapshot_emitter import SnapshotEmitter
from pykraft.node.snapshot_policy import SnapshotPolicy
from pykraft.protocol import ApiKey, ApiVersionRange, DecodedRequest, ErrorCode, error_response
from pykraft.protocol.apis import ApiTable, response_schema
from pykraft.protocol.build import make
from pykraft.protocol.controller_apis import CONTROLLER_API_VERSIONS, READ_APIS
from pykraft.raft.api import RaftApi
from pykraft.raft.interfaces import Ready
from pykraft.storage import StorageError

if TYPE_CHECKING:
    from pykraft.node.driver import RaftNode
    from pykraft.node.migration_host import MigrationHost

__all__ = ["ControllerHost", "load_image"]

log = logging.getLogger("pykraft.controller")

LOADING: Final = "This controller is loading its metadata image"


class ControllerHost:
    """Invariant: ``listener`` holds the controller once ``started``; every request that
    reached the active controller is answered exactly once (``Answer``)."""

    def __init__(
        self,
        node: RaftNode,
        config: ControllerConfig,
        *,
        bootstrap: dict[str, int] | None,
        bootstrap_records: Sequence[Any] = (),
        rng: random.Random | None = None,
    ) -> None:
        self.node = node
        self.config = config
        self.bootstrap = bootstrap
        self.bootstrap_records = tuple(bootstrap_records)
        self._rng = rng or random.Random()
        self.listener: MetaLogListener | None = None
        self._sync_scheduled = False
        self._timer: asyncio.TimerHandle | None = None
        self._snapshots = SnapshotPolicy(config.snapshot_max_bytes, config.snapshot_interval_ms)
        self._emitter = SnapshotEmitter(node, self._snapshots, self._snapshot_end)
        self._new_leaders = 0  # leaders of the quorum seen (NewActiveControllersCount)
        self._freezer = ImageFreezer()  # the image out of the cyclic collector's reach
        self._stopped = False
        self.controller_features: dict[int, dict[str, tuple[int, int]]] = {}
        self._ghosts = GhostControllers()  # registrations UpdateFeatures may ignore
        self.migration: MigrationHost | None = None  # when zookeeper.metadata.migration.enable
        self.performance = EventPerformanceMonitor.of(node.config)
        self._kraft_upgrades = KraftUpgrades(self._process, self._error)
        self.watches: list[Watch] = []  # reconfiguration without a restart (server.py)

    # -- what other modules read ---------------------------------------------------------------

    @property
    def controller(self) -> QuorumController | None:
        """The controller serving requests: None until the start-up load is in."""
        listener = self.listener
        return None if listener is None or listener.cold else listener.controller

    @property
    def position(self) -> int:
        """The next log offset the controller replays."""
        return 0 if self.listener is None else self.listener.position

    @property
    def replayed_committed(self) -> bool:
        core = self.node.core
        return core is not None and self.position <= core.high_watermark

    def now_ms(self) -> int:
        return self.node.now_ms()

    def run(self, step: Callable[[], None]) -> None:
        self.node.run(step)

    @property
    def metadata_errors(self) -> int:
        return 0 if self.listener is None else self.listener.metadata_errors

    @property
    def served_apis(self) -> ApiTable:
        return self.node.served_apis

    @property
    def active(self) -> bool:
        return self.controller is not None and self.controller.active

    def answer(self, request: DecodedRequest, session: Session) -> Answer:
        """This node's answer: the controller's, else the node's (the quorum's APIs)."""
        return self.handle(request, session) or self.node.handle_request(request, session)

    def _core(self) -> RaftApi:
        core = self.node.core
        assert core is not None
        return core

    # -- Application --------------------------------------------------------------------------

    def api_rows(self) -> tuple[ApiVersionRange, ...]:
        rows = [ApiVersionRange(k, lo, hi) for k, (lo, hi) in CONTROLLER_API_VERSIONS.items()]
        rows.append(ApiVersionRange(ApiKey.ENVELOPE, 0, 0))
        return tuple(rows)

    def started(self) -> None:
        node = self.node
        self._snapshots.last_ms = self._emitter.latest_ms = node.now_ms()
        node_id = node.config.node_id

        def new_controller() -> QuorumController:
            return QuorumController(
                self.config, node_id=node_id, cluster_id=node.cluster_id, rng=self._rng
            )

        listener = MetaLogListener(
            new_controller,
            bootstrap=self.bootstrap,
            bootstrap_records=self.bootstrap_records,
            report=log.error,
            on_applied=self._snapshots.applied,
        )
        self.listener = listener
        # The newest snapshot loads in slices on the loop's turns while the raft runs (the
        # listener is cold meanwhile: see its docstring); the first sync starts it.
        listener.begin_load()
        asyncio.get_running_loop().call_soon(self._run_sync)
        self._sync_scheduled = True
        log.info("metadata controller started node.id=%d", node_id)
        self.performance.start(asyncio.get_running_loop())
        if self.config.zk_migration_enabled:
            from pykraft.node.migration_host import MigrationHost  # kazoo only when migrating

            self.migration = MigrationHost(self, node.config.zookeeper_connect, node_id)
            self.migration.poke()

    def stopped(self) -> None:
        self._stopped = True
        self.performance.stop()
        self._emitter.stopped = True
        if self.migration is not None:
            self.migration.stop()
        if self._timer is not None:
            self._timer.cancel()
        if self.listener is not None:
            self.listener.waiters.fail_all()

    def features(self) -> tuple[Mapping[str, tuple[int, int]], Mapping[str, int], int]:
        """The finalized features as of the committed offset (ApiVersions)."""
        controller = self.controller
        if controller is None:
            return SUPPORTED_FEATURES, {}, -1
        image = controller.image
        with image.timeline.at_committed():
            return SUPPORTED_FEATURES, dict(image.features), image.features_epoch

    def image(self) -> Image | None:
        return None if self.controller is None else self.controller.image

    def scram_credential(self, mechanism: str, user: str) -> ScramCredential | None:
        """From the UserScramCredentialRecords applied so far (Kafka's ScramPublisher)."""
        image, kind = self.image(), SCRAM_MECHANISM_TYPES.get(mechanism)
        rec = None if image is None or kind is None else image.scram.credential(user, kind)
        if rec is None:
            return None
        return ScramCredential(
            bytes(rec.salt), bytes(rec.stored_key), bytes(rec.server_key), int(rec.iterations)
        )

    def not_ready(self) -> list[str]:
        """Why the metadata controller is not ready (``health.controller_reasons``)."""
        return controller_reasons(self.listener, self._core())

    def metrics(self) -> list[Extra]:
        """Kafka's controller metrics (``controller_metrics.py``) and the image's freeze."""
        controller, listener, emitter = self.controller, self.listener, self._emitter
        if controller is None or listener is None:
            return []
        core, now = self._core(), self.node.now_ms()
        figures = NodeFigures(core.leader_id, listener.snapshot_loads, now, emitter.latest_bytes)
        figures.snapshot_ms, figures.new_leaders = emitter.latest_ms, self._new_leaders
        figures.applied_timestamp_ms = listener.applied_timestamp_ms
        figures.wall_ms = core.config.timestamp_ms(now)
        migration = None if self.migration is None else self.migration.figures()
        committed, errors = core.high_watermark - 1, self.metadata_errors
        return [
            *loader_families(controller, figures),
            *event_families(self.performance, self.node.loop_lag.idle.ratio()),
            *controller_metrics(controller, committed, errors, migration),
            self._freezer.metric(),
            *(family for watch in self.watches for family in watch.metrics()),
        ]

    def after_ready(self, ready: Ready) -> None:
        self._kraft_upgrades.completed(ready.completed)
        if ready.leader_change is not None and ready.leader_change.leader_id >= 0:
            self._new_leaders += 1  # Kafka's NewActiveControllersCount
        if ready.snapshot_loaded is not None:
            if self.listener is not None:
                # A frozen image to hand back to the collector once the new one is in; none
                # while the start-up load runs (the image in use is the empty one).
                # A side load cut short left its frozen part behind: collected the same way.
                self._freezer.replacing(self.listener.loading)
                self.listener.snapshot_loaded()
        elif ready.high_watermark is None and ready.leader_change is None:
            return  # nothing the controller follows changed
        if not self._sync_scheduled and not self._stopped:
            self._sync_scheduled = True
            asyncio.get_running_loop().call_soon(self._run_sync)

    def handle(self, request: DecodedRequest, session: Session) -> Answer | None:
        api_key = request.api_key
        if api_key == ApiKey.ENVELOPE:
            return envelope(self, request, session)
        if api_key == ApiKey.CONTROLLER_REGISTRATION:
            self._controller_registration(request.message)
            return None
        if api_key == ApiKey.UPDATE_FEATURES and only_kraft_version(request.message):
            return None  # the quorum's own feature (D10): the core
        if api_key in REASSIGNMENT_KEYS and only_metadata_partition(request.message):
            return None  # the voter set's reassignment (KIP-642): the core
        if api_key not in CONTROLLER_API_VERSIONS:
            return None
        loggers = logger_answer(self.listener, self.node.config.node_id, request, session)
        if loggers is not None:  # this node's own log levels (BROKER_LOGGER), active or not
            return Answer(loggers)
        controller = self.controller
        if controller is None:
            # Loading its image at start: the broker looks for the active controller.
            return Answer(self._error(request, ErrorCode.not_controller, LOADING))
        caller = caller_of(session, request.client_id)
        if api_key in READ_APIS:
            answer = Answer()
            name = event_name(api_key)
            self.performance.timed(name, lambda: self._run_request(request, answer, caller))
            return answer
        if not controller.active:
            return Answer(self._error(request, ErrorCode.not_controller, NOT_ACTIVE))
        answer = Answer()
        core = self._core()
        level = kraft_version_upgrade(request.message, core.kraft_version)
        if level is not None:  # with other features: the quorum's upgrade first
            now = self.node.now_ms()
            upgrades = self._kraft_upgrades
            self.node.run(lambda: upgrades.start(core, request, answer, caller, level, now))
        else:
            received = time.monotonic_ns()
            self.node.run(lambda: self._process(request, answer, caller, received_ns=received))
        return answer

    def refuse(self, request: DecodedRequest, session: Session) -> ResponsePayload | None:
        """Kafka's ControllerApis cluster check, before anything else looks at ``request``
        (the quorum's RPCs included): the error response when the session's principal lacks
        the operation the API needs on the cluster (``cluster_check.py``); None to go on."""
        refused = cluster_refusal(self.listener, request, session)
        if refused is None:
            return None
        if request.api_key == ApiKey.ENVELOPE:
            return envelope_error(request.api_version, refused[0])
        return self._error(request, *refused)

    # -- requests -----------------------------------------------------------------------------

    def _run_request(
        self,
        request: DecodedRequest,
        answer: Answer,
        caller: Caller | None = None,
        kraft_version: int | None = None,
    ) -> Handled | None:
        """Run ``request`` through the listener and build its response; on a refusal or a
        failure ``answer`` is set and None returned. ``kraft_version``: the level the
        controller is to see (a validate-only upgrade that the quorum accepted)."""
        listener = self.listener
        api_key, version = request.api_key, request.api_version
        if answer.done:
            return None
        if listener is None:
            answer.set(self._error(request, ErrorCode.not_controller, NOT_ACTIVE))
            return None
        try:
            context = self._context()
            if caller is not None:
                context = dataclasses.replace(context, caller=caller)
            if kraft_version is not None:
                context = dataclasses.replace(context, kraft_version=kraft_version)
            handled = listener.handle(self._core(), api_key, version, request.message, context)
            response = handled.response
            if api_key == ApiKey.LIST_PARTITION_REASSIGNMENTS:
                response = add_voter_reassignment(self._core(), request.message, response)
            payload = make(response_schema(api_key, version), response)
        except ApiError as e:
            answer.set(self._error(request, e.code, e.message))
            return None
        except (OSError, StorageError):
            raise  # the node stops on it (RaftNode._storage_failed)
        except (MetadataRecordError, ImageError, KeyError, TypeError, ValueError) as e:
            # A bug in a handler or in its answer: the node keeps running, the client gets
            # an error, the operator a count and a traceback.
            listener.metadata_errors += 1
            log.exception("controller failed on %s v%d: %s", ApiKey(api_key).name, version, e)
            answer.set(self._error(request, ErrorCode.unknown_server_error, str(e)))
            return None
        if handled.commit_offset < 0:  # a read: answered at once
            answer.set(payload)
            return None
        self._answer_after_commit(request, answer, payload, handled.commit_offset)
        return handled

    def _process(
        self,
        request: DecodedRequest,
        answer: Answer,
        caller: Caller | None = None,
        kraft_version: int | None = None,
        received_ns: int | None = None,
    ) -> None:
        controller, api_key = self.controller, request.api_key
        if controller is None or not controller.active:
            if not answer.done:
                answer.set(self._error(request, ErrorCode.not_controller, NOT_ACTIVE))
            return
        deadline = deadline_ms(api_key, request.message, self.config.broker_heartbeat_interval_ms)
        expired = self.performance.expired(api_key, received_ns, deadline)
        if expired is not None:  # Kafka's event queue: past its deadline, never run
            answer.set(self._error(request, ErrorCode.request_timed_out, expired))
            return
        run = lambda: self._run_request(request, answer, caller, kraft_version)  # noqa: E731
        self.performance.timed(event_name(api_key), run, received_ns)

    def _answer_after_commit(
        self, request: DecodedRequest, answer: Answer, payload: ResponsePayload, offset: int
    ) -> None:
        def send(committed: bool) -> None:
            if committed:
                answer.set(payload)
            else:
                answer.set(self._error(request, ErrorCode.not_controller, NOT_ACTIVE))

        self.after_commit(offset, send)
        timeout_ms = request_timeout_ms(request.message)
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
            fields = error_fields(api_key, version, request.message, code, message)
            payload: ResponsePayload = make(response_schema(api_key, version), fields)
        except (LookupError, TypeError, ValueError, AttributeError):
            payload = error_response(
                api_key, version, code, error_message=message, apis=self.node.served_apis
            )
        return payload

    def _context(self) -> Context:
        core, node_id, now_ms = self._core(), self.node.config.node_id, self.node.now_ms()
        own = {**SUPPORTED_FEATURES, KRAFT_VERSION_FEATURE: core.config.kraft_versions}
        registered = self.controller.image.controllers.values() if self.controller else ()
        controllers = {c.controller_id: dict(c.features) for c in registered}
        controllers.update(self.controller_features)
        controllers[node_id] = own
        assert self.listener is not None
        required = self._ghosts.required(core, controllers, node_id, now_ms)
        return self.listener.context(core, now_ms, required)

    def write(self, records: RecordList) -> int | None:
        """Append ``records`` as one batch and apply them; the last offset (None if the node
        is no longer leader)."""
        assert self.listener is not None
        return self.listener.write(self._core(), records, self.node.now_ms())

    def after_commit(self, offset: int, fn: Callable[[bool], None]) -> None:
        """``fn(True)`` once ``offset`` committed, ``fn(False)`` if leadership is lost first."""
        assert self.listener is not None
        self.listener.after_commit(self._core(), offset, fn)

    # -- ControllerRegistration ---------------------------------------------------------------

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
        listener = self.listener
        core = self.node.core
        if listener is None or core is None or self._stopped:
            return
        epoch = listener.epoch
        try:
            change = listener.sync(core, self.node.now_ms(), LOAD_SLICE_RECORDS)
        except (MigrationRefused, ActivationRefused) as e:
            self.node.halt(f"cannot become the active controller: {e}", e)
            return
        if listener.more and not self._sync_scheduled:
            # The slice is spent: the rest on a later turn, after what the loop has waiting.
            self._sync_scheduled = True
            asyncio.get_running_loop().call_soon(self._run_sync)
            # What the slice built is as long-lived as the image: frozen at once, so that the
            # collector's full collections, which the load's allocations trigger, never walk
            # the image being built (at 100,000 partitions they held the loop 45 ms each).
            gc.freeze()
        if self._freezer.after_sync(listener, core.high_watermark):
            self._snapshots.reloaded()
        if change is LeaderChange.DEACTIVATED or (change is LeaderChange.ACTIVATED and epoch >= 0):
            log.info(
                "no longer the active controller epoch=%d (%d uncommitted changes reverted)",
                epoch,
                listener.reverted,
            )
            if self.migration is not None:
                self.migration.leadership_changed(-1)
        if change is LeaderChange.ACTIVATED:
            log.info(
                "active controller epoch=%d position=%d metadata.version=%s",
                listener.epoch,
                listener.position,
                listener.image.metadata_version,
            )
            if self.migration is not None:
                self.migration.leadership_changed(listener.epoch)
        self._emitter.maybe_start()
        self._schedule_tick()
        if self.migration is not None:
            self.migration.image_changed(listener.image)
        for watch in self.watches:
            watch.check(listener.image)

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
        listener = self.listener
        if listener is None or not listener.active:
            return
        self.performance.timed("periodicTick", lambda: listener.tick(self._core(), self._context()))
        self._schedule_tick()

    # -- snapshots ----------------------------------------------------------------------------

    def request_snapshot(self) -> None:
        """A snapshot as soon as the image is exactly the committed state (SIGUSR1)."""
        self._emitter.request()

    def _snapshot_end(self) -> tuple[Image, int] | None:
        listener, core = self.listener, self.node.core
        if listener is None or core is None or listener.cold:
            return None
        end = listener.snapshot_end(core)
        return None if end is None else (listener.image, end)
