"""Broker sessions on the active controller (Kafka 4.x's ``BrokerHeartbeatTracker``).

Theory of operation. Sessions are not metadata: they live only on the active controller, are
kept by each BrokerHeartbeat (``touch``) and are started afresh for every unfenced broker when
a controller becomes active (``reset``). A broker not heard from for ``broker.session.
timeout.ms`` is fenced by the controller's periodic check (``expired``). A session also
holds the metadata offset each broker last reported, which controlled shutdown waits on
(``lowest_active_offset``), and the offset its controlled shutdown was written at.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pykraft.metadata.image import BrokerState, Image

__all__ = ["BrokerSessions"]


@dataclass(slots=True)
class BrokerSessions:
    """The active controller's view of each broker's liveness (not metadata): Kafka 4.x's
    ``BrokerHeartbeatTracker``. A session belongs to one registration, (broker id, broker
    epoch): it starts at a heartbeat (or, for a broker unfenced when this controller
    activated, at activation) and lives ``session_timeout_ms`` past the last one, fenced or
    not. So a broker that stopped cleanly (fenced by its controlled shutdown) still holds its
    session until it expires, and a new incarnation is refused with
    DUPLICATE_BROKER_REGISTRATION until then, as Kafka refuses it.
    Invariant: the keys of ``contact_ms`` are registered brokers."""

    session_timeout_ms: int
    contact_ms: dict[int, tuple[int, int]] = field(default_factory=dict)  # id: (epoch, ms)
    metadata_offset: dict[int, int] = field(default_factory=dict)
    shutdown_offset: dict[int, int] = field(default_factory=dict)

    def reset(self, image: Image, now_ms: int) -> None:
        """A new active controller: every unfenced broker's session starts now (Kafka's
        ``ClusterControlManager.activate``); a fenced broker has none until it heartbeats."""
        self.contact_ms = {
            b.broker_id: (b.epoch, now_ms) for b in image.brokers.values() if not b.fenced
        }
        self.metadata_offset = {}
        self.shutdown_offset = {}

    def touch(self, broker: BrokerState, now_ms: int, metadata_offset: int) -> None:
        self.contact_ms[broker.broker_id] = (broker.epoch, now_ms)
        self.metadata_offset[broker.broker_id] = metadata_offset

    def forget(self, broker_id: int) -> None:
        self.contact_ms.pop(broker_id, None)
        self.metadata_offset.pop(broker_id, None)
        self.shutdown_offset.pop(broker_id, None)

    def valid(self, broker: BrokerState, now_ms: int) -> bool:
        """This registration was heard from within the session timeout (Kafka's
        ``hasValidSession``: fenced or not)."""
        contact = self.contact_ms.get(broker.broker_id)
        return (
            contact is not None
            and contact[0] == broker.epoch
            and contact[1] + self.session_timeout_ms >= now_ms
        )

    def expired(self, image: Image, now_ms: int) -> list[int]:
        """Unfenced brokers whose session has run out, oldest contact first."""
        out = [
            (self._contact(b, now_ms), b.broker_id)
            for b in image.brokers.values()
            if not b.fenced and not self.valid(b, now_ms)
        ]
        return [b for _, b in sorted(out)]

    def next_expiry_ms(self, image: Image) -> int | None:
        times = [
            self._contact(b, 0) + self.session_timeout_ms
            for b in image.brokers.values()
            if not b.fenced and b.broker_id in self.contact_ms
        ]
        return min(times) if times else None

    def _contact(self, broker: BrokerState, default: int) -> int:
        contact = self.contact_ms.get(broker.broker_id)
        return contact[1] if contact is not None and contact[0] == broker.epoch else default

    def lowest_active_offset(self, image: Image) -> int:
        """The lowest metadata offset an active broker reported (a huge number if none)."""
        offsets = [
            self.metadata_offset.get(b.broker_id, -1) for b in image.brokers.values() if b.active
        ]
        return min(offsets) if offsets else 1 << 62
