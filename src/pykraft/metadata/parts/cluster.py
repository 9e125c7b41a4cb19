"""Brokers and controllers registered (Kafka's ``ClusterImage``, replayed as
``ClusterControlManager.replay``).

Theory of operation. A RegisterBrokerRecord registers a broker at an epoch (the record's
offset, given by the controller), replacing any older registration; the change, fence and
unfence records name that epoch and are refused for another one (a log that names a
registration that does not exist cannot be replayed); an UnregisterBrokerRecord of another
epoch is ignored, as in Kafka. A RegisterControllerRecord registers a controller's endpoints
and supported features; an UnregisterControllerRecord (4.4-IV2, KIP-1312) removes it. A
snapshot writes the controllers then the brokers, by id.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

from pykraft.metadata import records as r
from pykraft.metadata.parts.errors import ImageError
from pykraft.metadata.timeline import NOW, PinnedView, Timeline

__all__ = ["BrokerState", "ClusterImage", "ControllerState", "broker_record"]


@dataclass(slots=True)
class BrokerState:
    broker_id: int
    incarnation_id: uuid.UUID
    epoch: int  # the offset of its RegisterBrokerRecord
    endpoints: tuple[r.register_broker_record.BrokerEndpoint, ...]
    features: dict[str, tuple[int, int]]
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool
    log_dirs: tuple[uuid.UUID, ...]
    is_migrating_zk_broker: bool = False
    # KIP-1066 (4.3-IV0): the directories its last heartbeat said are cordoned (no new
    # replicas); None until it says (a new registration starts uncordoned).
    cordoned_log_dirs: tuple[uuid.UUID, ...] | None = None
    # The offset its RegisterBrokerRecord was replayed at (the snapshot's for a registration
    # loaded from one): a heartbeat at or past it is caught up. Not metadata: not in records().
    register_offset: int = -1

    @property
    def active(self) -> bool:
        """May lead and be in an ISR: unfenced and not shutting down."""
        return not self.fenced and not self.in_controlled_shutdown

    @property
    def has_uncordoned_dirs(self) -> bool:
        """May get new replicas (Kafka's ``hasUncordonedDirs``): no directories known, none
        cordoned, or one not cordoned."""
        if not self.log_dirs or self.cordoned_log_dirs is None:
            return True
        return any(d not in self.cordoned_log_dirs for d in self.log_dirs)


@dataclass(slots=True)
class ControllerState:
    controller_id: int
    incarnation_id: uuid.UUID
    zk_migration_ready: bool
    endpoints: tuple[r.register_controller_record.ControllerEndpoint, ...]
    features: dict[str, tuple[int, int]]


class ClusterImage:
    """Invariant (``check``): each registration is kept under its own id."""

    def __init__(self, timeline: Timeline) -> None:
        self._tl = timeline
        self.brokers: dict[int, BrokerState] = {}
        self.controllers: dict[int, ControllerState] = {}

    def replay_register(self, rec: r.RegisterBrokerRecord, offset: int) -> None:
        features = {
            f.name: (f.min_supported_version, f.max_supported_version) for f in rec.features
        }
        broker = BrokerState(
            broker_id=rec.broker_id,
            incarnation_id=rec.incarnation_id,
            epoch=rec.broker_epoch,
            endpoints=rec.end_points,
            features=features,
            rack=rec.rack or None,
            fenced=rec.fenced,
            in_controlled_shutdown=rec.in_controlled_shutdown,
            log_dirs=rec.log_dirs,
            is_migrating_zk_broker=rec.is_migrating_zk_broker,
            cordoned_log_dirs=rec.cordoned_log_dirs,
            register_offset=offset,
        )
        self._tl.put(self.brokers, rec.broker_id, broker)

    def _broker(self, broker_id: int, epoch: int, what: str) -> BrokerState:
        broker = self.brokers.get(broker_id)
        if broker is None or broker.epoch != epoch:
            raise ImageError(f"{what} for broker {broker_id} epoch {epoch}: not registered so")
        return broker

    def replay_change(self, rec: r.BrokerRegistrationChangeRecord, version: int) -> None:
        broker = self._broker(rec.broker_id, rec.broker_epoch, "BrokerRegistrationChange")
        tl = self._tl
        if rec.fenced == 1:
            tl.assign(broker, "fenced", True)
        elif rec.fenced == -1:
            tl.assign(broker, "fenced", False)
        if rec.in_controlled_shutdown == 1:
            tl.assign(broker, "in_controlled_shutdown", True)
        if version >= 2 and rec.log_dirs:
            tl.assign(broker, "log_dirs", rec.log_dirs)
        if version >= 3 and rec.cordoned_log_dirs is not None:
            tl.assign(broker, "cordoned_log_dirs", rec.cordoned_log_dirs)

    def replay_fence(self, rec: r.FenceBrokerRecord) -> None:
        self._tl.assign(self._broker(rec.id, rec.epoch, "FenceBroker"), "fenced", True)

    def replay_unfence(self, rec: r.UnfenceBrokerRecord) -> None:
        self._tl.assign(self._broker(rec.id, rec.epoch, "UnfenceBroker"), "fenced", False)

    def replay_unregister(self, rec: r.UnregisterBrokerRecord) -> None:
        broker = self.brokers.get(rec.broker_id)
        if broker is not None and broker.epoch == rec.broker_epoch:
            self._tl.delete(self.brokers, rec.broker_id)

    def replay_register_controller(self, rec: r.RegisterControllerRecord) -> None:
        controller = ControllerState(
            rec.controller_id,
            rec.incarnation_id,
            rec.zk_migration_ready,
            rec.end_points,
            {f.name: (f.min_supported_version, f.max_supported_version) for f in rec.features},
        )
        self._tl.put(self.controllers, rec.controller_id, controller)

    def replay_unregister_controller(self, rec: r.UnregisterControllerRecord) -> None:
        """Kafka 4.4-IV2: the controller's registration is gone (it left the quorum)."""
        self._tl.delete(self.controllers, rec.controller_id)

    def records(
        self, broker_version: int, view: PinnedView = NOW
    ) -> Iterator[tuple[r.RegisterControllerRecord | r.RegisterBrokerRecord, int]]:
        for _, c in sorted(view.items(self.controllers)):
            yield controller_record(view.obj(c)), 0
        for _, b in sorted(view.items(self.brokers)):
            yield broker_record(view.obj(b), broker_version), broker_version

    def check(self) -> None:
        for broker_id, b in self.brokers.items():
            assert b.broker_id == broker_id, (broker_id, b)
        for controller_id, c in self.controllers.items():
            assert c.controller_id == controller_id, (controller_id, c)


def controller_record(c: ControllerState) -> r.RegisterControllerRecord:
    return r.RegisterControllerRecord(
        controller_id=c.controller_id,
        incarnation_id=c.incarnation_id,
        zk_migration_ready=c.zk_migration_ready,
        end_points=c.endpoints,
        features=tuple(
            r.register_controller_record.ControllerFeature(
                name=n, min_supported_version=lo, max_supported_version=hi
            )
            for n, (lo, hi) in sorted(c.features.items())
        ),
    )


def broker_record(b: BrokerState, version: int) -> r.RegisterBrokerRecord:
    return r.RegisterBrokerRecord(
        broker_id=b.broker_id,
        is_migrating_zk_broker=b.is_migrating_zk_broker and version >= 2,
        incarnation_id=b.incarnation_id,
        broker_epoch=b.epoch,
        end_points=b.endpoints,
        features=tuple(
            r.register_broker_record.BrokerFeature(
                name=n, min_supported_version=lo, max_supported_version=hi
            )
            for n, (lo, hi) in sorted(b.features.items())
        ),
        rack=b.rack,
        fenced=b.fenced,
        in_controlled_shutdown=b.in_controlled_shutdown and version >= 1,
        log_dirs=b.log_dirs if version >= 3 else (),
        cordoned_log_dirs=b.cordoned_log_dirs if version >= 4 else None,
    )
