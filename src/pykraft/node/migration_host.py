"""The ZooKeeper side of KIP-866 on a controller node: runs the migration driver's
(``pykraft.controller.migration``) ZooKeeper work through kazoo on one worker thread, never on
the event loop, and feeds each result back to the driver inside ``RaftNode.run``.

What each action does in ZooKeeper (Kafka 3.9's ``ZkMigrationClient`` / ``KafkaZkClient``,
docs/kafka/ZK-MIGRATION.md section 3):

* ``recover`` -- create Kafka's top-level paths, then read ``/migration`` (or create it with
  the empty state);
* ``read_brokers`` -- the ids under ``/brokers/ids`` and in every topic's assignment;
* ``claim`` -- in one multi: ``/controller_epoch`` bumped (conditional on its version),
  ``/controller`` replaced by a *persistent* node naming this controller with its KRaft epoch;
  refused when ``/controller`` already names a KRaft epoch at least ours. Then ``/migration``
  is written unconditionally to learn its zkVersion (KAFKA-16171);
* ``load`` -- every znode read (``zk_client.read_snapshot``) and turned into records; the host
  appends them in one turn (Begin ... End: nothing interleaves) and, once committed, writes
  ``/migration`` with the offset and epoch of the last batch, conditional on its version;
* ``sync`` -- the full reconciliation: ZooKeeper (as the load read it, or read again) made to
  say what the whole image says, FULL UpdateMetadata/LeaderAndIsr after it; from then on the
  image notes what each record changes (``Image.track_changes``) and the worker keeps a model
  of what ZooKeeper holds (``zk_writes.ZkModel``);
* ``dual_write`` -- each committed change: only the topics, configs and producer id block
  the changes touched (``MetadataDelta``) reconciled against the model, no ZooKeeper read;
  INCREMENTAL UpdateMetadata/LeaderAndIsr of those topics, FULL requests to a broker that is
  new or restarted (a new epoch) or that missed the last ones (Kafka's
  ``KRaftMigrationZkWriter.handleDelta`` and ``MigrationPropagator``). Any failure, a new
  image (a snapshot loaded) or a leadership change goes back to the full path.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Protocol

from pykraft.controller import migration as m
from pykraft.metadata.delta import MetadataDelta
from pykraft.migration import propagator, zk_data, zk_writes
from pykraft.node.controller_metrics import MigrationFigures
from pykraft.node.zk_brokers import LegacyBrokers, Send
from pykraft.node.zk_worker import ZkWorker

if TYPE_CHECKING:
    from pykraft.controller.config import ControllerConfig
    from pykraft.controller.quorum_controller import QuorumController
    from pykraft.controller.result import RecordList
    from pykraft.metadata.image import Image

__all__ = ["MigrationHost", "MigrationSite"]

log = logging.getLogger("pykraft.migration")

RESEND_DELAY_S: Final = 1.0


class MigrationSite(Protocol):
    """What the migration uses of the controller node it runs on (``ControllerHost``)."""

    @property
    def config(self) -> ControllerConfig: ...

    @property
    def controller(self) -> QuorumController | None: ...

    @property
    def replayed_committed(self) -> bool:
        """Everything the controller has replayed is committed."""
        ...

    def now_ms(self) -> int: ...

    def run(self, step: Callable[[], None]) -> None:
        """Run ``step`` on the loop with the core stepped after it (``RaftNode.run``)."""
        ...

    def write(self, records: RecordList) -> int | None: ...

    def after_commit(self, offset: int, fn: Callable[[bool], None]) -> None: ...


class MigrationHost:
    """Invariant: the driver has at most one action outstanding, run on ``_executor``."""

    def __init__(self, site: MigrationSite, zookeeper_connect: str, node_id: int) -> None:
        self.site = site
        self.zookeeper_connect = zookeeper_connect
        self.driver = m.MigrationDriver(node_id)
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="pykraft-zk")
        self._timer: asyncio.TimerHandle | None = None
        self._stopped = False
        self._last_reason = ""
        self._brokers = LegacyBrokers(node_id)  # the ZooKeeper-mode brokers' channels
        # Where the replicas were at the last requests sent (StopReplica for the dropped ones).
        self._replicas: propagator.ReplicaMap | None = None
        # Brokers the last FULL requests did not reach, and the timer that retries them.
        self._undelivered: frozenset[int] = frozenset()
        self._resend: asyncio.TimerHandle | None = None
        # The delta path (loop side): the image whose changes are tracked since the last
        # successful reconciliation, and whether that reconciliation succeeded.
        self._tracked: Any = None
        self._delta_ok = False
        # The brokers the last requests reached, with the epochs they had (loop side).
        self._sent: dict[int, int] = {}
        self.zk = ZkWorker(zookeeper_connect, self._brokers)  # the worker thread's side
        self._migrating_seen: tuple[int, ...] = ()  # ZooKeeper brokers registered, last look

    # -- the loop side ----------------------------------------------------------------------------

    def leadership_changed(self, active_epoch: int) -> None:
        self.driver.leadership_changed(active_epoch)
        self.poke()

    def image_changed(self, image: Image) -> None:
        """The controller's image moved: look again now if a ZooKeeper broker registered (as
        Kafka's driver wakes on cluster deltas), else at the driver's own time."""
        migrating = tuple(
            sorted(b.broker_id for b in image.brokers.values() if b.is_migrating_zk_broker)
        )
        if migrating != self._migrating_seen:
            self._migrating_seen = migrating
            self.driver.retry_at_ms = 0
        self.poke()

    def figures(self) -> MigrationFigures:
        """What the controller metrics read (``controller_metrics.MigrationFigures``)."""
        driver = self.driver
        dual_write = driver.state.value == "DUAL_WRITE"
        return MigrationFigures(
            driver.leadership.metadata_offset if dual_write else None,
            self.zk.snapshot_write_ms,
            self.zk.delta_write_ms,
        )

    def poke(self) -> None:
        """Run the driver's next action, if one is due (on the loop, inside node.run)."""
        controller = self.site.controller
        if self._stopped or controller is None:
            return
        driver = self.driver
        before = driver.state
        # Only committed state is mirrored: nothing while applied records await commit.
        # NoOpRecords change nothing ZooKeeper holds: the last other record is what counts.
        committed = controller.image.last_change_offset if self.site.replayed_committed else -1
        action = driver.next_action(controller.image, self.site.now_ms(), committed)
        if driver.state != before:
            log.info("migration driver state %s -> %s", before.value, driver.state.value)
            self.poke()
            return
        if driver.waiting_reason and driver.waiting_reason != self._last_reason:
            log.info("%s", driver.waiting_reason)
        self._last_reason = driver.waiting_reason
        if action is None:
            self._schedule()
            return
        image = controller.image
        epoch = driver.leadership.controller_epoch
        want = None
        scope: MetadataDelta | None = None
        sends: list[Send] = []
        if action.kind in ("sync", "dual_write"):
            if action.kind == "dual_write" and self._delta_ok and self._tracked is image:
                # Everything applied is committed here (``committed`` above).
                scope = image.take_changes(image.last_offset)
            else:
                image.track_changes(True)
                self._tracked = image
                self._delta_ok = False
            want = zk_writes.desired(image, epoch, scope)
        if action.kind == "send_full":
            sends = self._full_requests(image, action.leadership, delta=False)
        elif action.kind == "dual_write":
            sends = self._dual_write_requests(image, action.leadership, scope)
        zk = self.zk
        work: dict[str, Callable[[], Any]] = {
            "recover": zk.recover,
            "read_brokers": zk.read_brokers,
            "claim": lambda: zk.claim(action.leadership, self.site.now_ms()),
            "load": lambda: zk.load(epoch),
            "write_state": lambda: zk.write_state(action.leadership),
            "sync": lambda: zk.sync(want, action.leadership),
            "send_full": lambda: self._brokers.send(sends),
            "dual_write": lambda: zk.dual_write(want, action.leadership, sends, scope),
        }
        future = asyncio.get_running_loop().run_in_executor(self._executor, work[action.kind])
        future.add_done_callback(
            lambda f: self.site.run(lambda: self._done(action, f, image, epoch))
        )

    def _done(self, action: m.Action, future: asyncio.Future[Any], image: Any, epoch: int) -> None:
        driver = self.driver
        before = driver.state
        now = self.site.now_ms()
        error = future.exception()
        if error is not None:
            log.warning("migration %s failed: %s", action.kind, error)
            self._delta_ok = False  # the next write reconciles everything again
            driver.on_error(f"{action.kind}: {error}", now)
        elif action.kind == "recover":
            driver.on_recovered(future.result())
        elif action.kind == "read_brokers":
            zk_brokers, assigned = future.result()
            controller = self.site.controller
            assert controller is not None  # set at start, before this host exists
            driver.on_brokers(controller.image, zk_brokers, assigned, now)
        elif action.kind == "claim":
            result = future.result()
            if result is not None:
                log.info(
                    "claimed ZooKeeper controllership: /controller names %d, controller epoch %d",
                    result.controller_id,
                    result.zk_controller_epoch,
                )
            driver.on_claimed(result, now)
        elif action.kind == "load":
            self._append_load(future.result(), epoch)
        elif action.kind == "write_state":
            log.info("Finished initial migration of ZK metadata to KRaft")
            driver.on_state_written(future.result())
        elif action.kind == "sync":
            log.info(
                "synced ZooKeeper with the metadata at offset %d", action.leadership.metadata_offset
            )
            self._delta_ok = True
            driver.on_synced(future.result())
        elif action.kind == "dual_write":
            leadership, self._undelivered = future.result()
            self._delta_ok = True
            driver.on_synced(leadership)
            driver.on_sent()
        elif action.kind == "send_full":
            self._undelivered = future.result()
            log.info(
                "sent FULL UpdateMetadata and LeaderAndIsr to brokers %s", driver.migrating_brokers
            )
            driver.on_sent()
        if action.kind in ("send_full", "dual_write") and self._undelivered:
            self._schedule_resend()
        if driver.state != before:
            log.info("migration driver state %s -> %s", before.value, driver.state.value)
        self.poke()

    def _append_load(self, load: zk_data.MigrationLoad, epoch: int) -> None:
        controller = self.site.controller
        if controller is None or not controller.active or self.driver.active_epoch != epoch:
            self.driver.on_error("leadership changed during the load", self.site.now_ms())
            return
        batches = m.migration_records(load.batches, self.site.config.migration_min_batch_size)
        last = None
        for batch in batches:
            last = self.site.write(batch)
            if last is None:  # leadership moved: the next leader aborts the transaction
                self.driver.on_error("leadership changed during the load", self.site.now_ms())
                return
        assert last is not None
        counts = load.counts()
        for reason in load.refused:
            log.warning("not migrated: %s", reason)
        if load.skipped_deletions:
            log.info("not migrating pending deleted topics: %s", ", ".join(load.skipped_deletions))
        log.info(
            "Completed migration of metadata from ZooKeeper to KRaft. %s. The current metadata "
            "offset is now %d with an epoch of %d. Saw %d brokers in the migrated metadata %s.",
            ", ".join(f"{k}={v}" for k, v in sorted(counts.items())) or "No records",
            last,
            epoch,
            len(load.broker_ids),
            sorted(load.broker_ids),
        )
        self.driver.on_loaded(last, epoch)

        def committed(ok: bool) -> None:
            if ok and self.driver.active_epoch == epoch:
                self.driver.on_committed()
                self.poke()

        self.site.after_commit(last, committed)

    def _full_requests(
        self,
        image: Any,
        leadership: m.ZkLeadership,
        *,
        delta: bool,
        only: frozenset[int] | None = None,
    ) -> list[Send]:
        """What every unfenced migrating broker (of ``only``, when given: a resend) is sent,
        built on the loop from the image (the worker thread never reads it): FULL
        UpdateMetadata and LeaderAndIsr, and with ``delta`` StopReplica for the replicas
        dropped since the last requests."""
        listener = self.site.config.inter_broker_listener_name
        brokers = [
            b
            for b in image.brokers.values()
            if b.is_migrating_zk_broker and not b.fenced and (only is None or b.broker_id in only)
        ]
        if only is not None:
            delta = False
        else:
            self.driver.migrating_brokers = tuple(sorted(b.broker_id for b in brokers))
        common = {
            "controller_id": self.driver.node_id,
            "zk_controller_epoch": leadership.zk_controller_epoch,
        }
        replicas = propagator.replica_map(image)
        stops = (
            propagator.stop_replicas(
                self._replicas, replicas, {b.broker_id: b.epoch for b in brokers}, **common
            )
            if delta and self._replicas is not None
            else {}
        )
        if only is None:
            self._replicas = replicas
        out = []
        for b in sorted(brokers, key=lambda b: b.broker_id):
            endpoint = propagator.inter_broker_endpoint(b, listener)
            if endpoint is None:
                continue
            update, lisr = self._requests_for(image, leadership, b, None)
            self._sent[b.broker_id] = b.epoch
            out.append(
                Send(b.broker_id, endpoint[0], endpoint[1], update, lisr, stops.get(b.broker_id))
            )
        return out

    def _requests_for(
        self,
        image: Any,
        leadership: m.ZkLeadership,
        broker: Any,
        names: frozenset[str] | None,
    ) -> tuple[Any, Any]:
        """UpdateMetadata and LeaderAndIsr for ``broker``: FULL, or INCREMENTAL of the topics
        ``names`` (LeaderAndIsr None when it replicates none of them)."""
        update = propagator.full_update_metadata(
            image,
            controller_id=self.driver.node_id,
            zk_controller_epoch=leadership.zk_controller_epoch,
            kraft_epoch=leadership.controller_epoch,
            broker_epoch=broker.epoch,
            topics_only=names,
        )
        lisr = propagator.full_leader_and_isr(
            image,
            broker.broker_id,
            controller_id=self.driver.node_id,
            zk_controller_epoch=leadership.zk_controller_epoch,
            kraft_epoch=leadership.controller_epoch,
            listener=self.site.config.inter_broker_listener_name,
            topics_only=names,
        )
        return update, lisr

    def _dual_write_requests(
        self, image: Any, leadership: m.ZkLeadership, scope: MetadataDelta | None
    ) -> list[Send]:
        """A dual write's requests: FULL ones after a full reconciliation; else INCREMENTAL
        UpdateMetadata/LeaderAndIsr of the topics in ``scope`` (UpdateMetadata also when only
        registrations changed), StopReplica for the replicas they dropped, and FULL ones to a
        broker with a new epoch (registered or restarted since the last requests)."""
        if scope is None:
            return self._full_requests(image, leadership, delta=True)
        listener = self.site.config.inter_broker_listener_name
        brokers = sorted(
            (b for b in image.brokers.values() if b.is_migrating_zk_broker and not b.fenced),
            key=lambda b: b.broker_id,
        )
        self.driver.migrating_brokers = tuple(b.broker_id for b in brokers)
        common = {
            "controller_id": self.driver.node_id,
            "zk_controller_epoch": leadership.zk_controller_epoch,
        }
        names = scope.topic_names()
        before = {k: v for k, v in (self._replicas or {}).items() if v[0] in names}
        after = propagator.replica_map(image, names)
        if self._replicas is not None:
            for key in before:
                self._replicas.pop(key, None)
            self._replicas.update(after)
        stops = propagator.stop_replicas(
            before, after, {b.broker_id: b.epoch for b in brokers}, **common
        )
        out = []
        for b in brokers:
            endpoint = propagator.inter_broker_endpoint(b, listener)
            if endpoint is None:
                continue
            if self._sent.get(b.broker_id) != b.epoch:
                update, lisr = self._requests_for(image, leadership, b, None)
            else:
                update, lisr = self._requests_for(image, leadership, b, names)
                if not names and not scope.brokers:
                    update = None
            stop = stops.get(b.broker_id)
            if update is not None or lisr is not None or stop is not None:
                out.append(Send(b.broker_id, endpoint[0], endpoint[1], update, lisr, stop))
            self._sent[b.broker_id] = b.epoch
        return out

    def _schedule_resend(self) -> None:
        if self._resend is None and not self._stopped:
            self._resend = asyncio.get_running_loop().call_later(
                RESEND_DELAY_S, lambda: self.site.run(self._send_again)
            )

    def _send_again(self) -> None:
        """FULL requests again to the brokers the last ones did not reach (the current image;
        on the worker thread after any action in flight)."""
        self._resend = None
        controller = self.site.controller
        driver = self.driver
        if self._stopped or controller is None or driver.state != m.DriverState.DUAL_WRITE:
            return
        sends = self._full_requests(
            controller.image, driver.leadership, delta=False, only=self._undelivered
        )
        future = asyncio.get_running_loop().run_in_executor(
            self._executor, self._brokers.send, sends
        )

        def done(f: asyncio.Future[frozenset[int]]) -> None:
            if f.exception() is None:
                self._undelivered = f.result()
                if self._undelivered:
                    self._schedule_resend()

        future.add_done_callback(lambda f: self.site.run(lambda: done(f)))

    def _schedule(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        deadline = self.driver.next_deadline_ms()
        if deadline is None or self._stopped:
            return
        delay = max(0.0, (deadline - self.site.now_ms()) / 1000)
        self._timer = asyncio.get_running_loop().call_later(delay, lambda: self.site.run(self.poke))

    def stop(self) -> None:
        self._stopped = True
        for timer in (self._timer, self._resend):
            if timer is not None:
                timer.cancel()
        self._executor.submit(self.zk.close)
        self._executor.shutdown(wait=False)
