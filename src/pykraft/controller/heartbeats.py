"""BrokerHeartbeat on the controller: each broker's next state, and the records a change of
state writes (Kafka's ``BrokerHeartbeatManager.calculateNextBrokerState`` and the broker
parts of ``ReplicationControlManager`` it calls).

Theory of operation. A registered broker heartbeats every ``broker.heartbeat.interval.ms``;
each heartbeat says how far it has replayed the metadata log and whether it wants to be
fenced or to shut down. The next state follows Kafka's ``calculateNextBrokerState``:

* FENCED: wantShutDown -> SHUTDOWN_NOW; !wantFence and caught up (its metadata offset has
  reached its own RegisterBrokerRecord) -> UNFENCED; else FENCED;
* UNFENCED: wantFence -> FENCED (or SHUTDOWN_NOW with wantShutDown); wantShutDown ->
  CONTROLLED_SHUTDOWN while it still leads a partition, else SHUTDOWN_NOW;
* CONTROLLED_SHUTDOWN: SHUTDOWN_NOW once it leads nothing and every active broker has
  replayed past the offset where its controlled shutdown was written.

A change of state writes records in one batch: fencing (and SHUTDOWN_NOW) removes the broker
from every ISR, electing new leaders where it led (``brokers.fence_records``), then
``BrokerRegistrationChangeRecord(Fenced=1)``; unfencing writes ``Fenced=-1`` and elects it
where partitions have no leader; controlled shutdown writes ``InControlledShutdown=1`` and
moves its leaderships and ISR memberships away. A heartbeat that names other cordoned
directories (KIP-1066) writes them too.
"""

from __future__ import annotations

import uuid
from collections.abc import Container
from dataclasses import dataclass
from typing import Final

from pykraft.controller.brokers import (
    check_broker_epoch,
    fence_records,
    leader_and_isr_updates,
    leads_any,
    partitions_with,
)
from pykraft.controller.partitions import acceptor
from pykraft.controller.result import RecordList
from pykraft.controller.sessions import BrokerSessions
from pykraft.metadata import records as r
from pykraft.metadata.image import NO_LEADER, BrokerState, Image
from pykraft.metadata.versions import IBP_4_3_IV0
from pykraft.protocol import views

__all__ = [
    "CONTROLLED_SHUTDOWN",
    "FENCED",
    "SHUTDOWN_NOW",
    "UNFENCED",
    "Heartbeat",
    "heartbeat",
]

UNFENCE: Final = -1

FENCED: Final = "FENCED"
UNFENCED: Final = "UNFENCED"
CONTROLLED_SHUTDOWN: Final = "CONTROLLED_SHUTDOWN"
SHUTDOWN_NOW: Final = "SHUTDOWN_NOW"


@dataclass(frozen=True, slots=True)
class Heartbeat:
    records: RecordList
    caught_up: bool
    fenced: bool
    in_controlled_shutdown: bool
    should_shut_down: bool
    next_state: str


def _current_state(broker: BrokerState) -> str:
    if broker.fenced:
        return FENCED
    if broker.in_controlled_shutdown:
        return CONTROLLED_SHUTDOWN
    return UNFENCED


def heartbeat(
    image: Image,
    sessions: BrokerSessions,
    request: views.BrokerHeartbeatRequest,
    *,
    register_offset: int,
    now_ms: int,
    unclean: Container[uuid.UUID],
) -> Heartbeat:
    """The records and reply of one BrokerHeartbeat; raises ApiError (STALE_BROKER_EPOCH)."""
    broker_id = int(request.broker_id)
    broker = check_broker_epoch(image, broker_id, int(request.broker_epoch))
    offset = int(request.current_metadata_offset)
    caught_up = offset >= register_offset
    current = _current_state(broker)
    want_fence, want_shutdown = bool(request.want_fence), bool(request.want_shut_down)
    nxt = current
    if current == FENCED:
        if want_shutdown:
            nxt = SHUTDOWN_NOW
        elif not want_fence and caught_up:
            nxt = UNFENCED
    elif current == UNFENCED:
        if want_fence:
            nxt = SHUTDOWN_NOW if want_shutdown else FENCED
        elif want_shutdown:
            nxt = CONTROLLED_SHUTDOWN if leads_any(image, broker_id) else SHUTDOWN_NOW
    else:  # CONTROLLED_SHUTDOWN
        if not leads_any(image, broker_id):
            shutdown_at = sessions.shutdown_offset.get(broker_id, 0)
            if shutdown_at <= sessions.lowest_active_offset(image):
                nxt = SHUTDOWN_NOW
    records: RecordList = _cordoned_records(image, broker, request)
    if nxt != current:
        if nxt in (FENCED, SHUTDOWN_NOW):
            if not broker.fenced:
                records += fence_records(image, broker, unclean)
        elif nxt == UNFENCED:
            records += _unfence_records(image, broker, unclean)
        elif nxt == CONTROLLED_SHUTDOWN:
            records += _controlled_shutdown_records(image, broker, unclean)
    sessions.touch(broker, now_ms, offset)
    return Heartbeat(
        records=records,
        caught_up=caught_up,
        fenced=nxt in (FENCED, SHUTDOWN_NOW),
        in_controlled_shutdown=nxt == CONTROLLED_SHUTDOWN,
        should_shut_down=nxt == SHUTDOWN_NOW,
        next_state=nxt,
    )


def _cordoned_records(
    image: Image, broker: BrokerState, request: views.BrokerHeartbeatRequest
) -> RecordList:
    """KIP-1066 (4.3-IV0, heartbeat v2): the cordoned directories a heartbeat names, when
    they differ from the registration's, as BrokerRegistrationChangeRecord v3 (Kafka's
    ``handleDirectoriesCordoned``); a heartbeat without the field changes nothing."""
    cordoned = getattr(request, "cordoned_log_dirs", None)
    if cordoned is None or (image.metadata_version or 0) < IBP_4_3_IV0:
        return []
    dirs = tuple(sorted(cordoned))
    if broker.cordoned_log_dirs is not None and set(dirs) == set(broker.cordoned_log_dirs):
        return []
    return [
        (
            r.BrokerRegistrationChangeRecord(
                broker_id=broker.broker_id, broker_epoch=broker.epoch, cordoned_log_dirs=dirs
            ),
            3,
        )
    ]


def _unfence_records(
    image: Image, broker: BrokerState, unclean: Container[uuid.UUID]
) -> RecordList:
    records: RecordList = [
        (
            r.BrokerRegistrationChangeRecord(
                broker_id=broker.broker_id, broker_epoch=broker.epoch, fenced=UNFENCE
            ),
            0,
        )
    ]
    # The image's index of partitions without a leader (no walk over every partition), in
    # a fixed order: what the active controller writes must not depend on a set's history.
    leaderless = [
        image.topics[t].partitions[pid] for t, pid in sorted(image.topics_image.leaderless)
    ]
    records.extend(
        leader_and_isr_updates(
            image, leaderless, acceptor(image, adding=broker.broker_id), NO_LEADER, unclean
        )
    )
    return records


def _controlled_shutdown_records(
    image: Image, broker: BrokerState, unclean: Container[uuid.UUID]
) -> RecordList:
    records: RecordList = []
    if not broker.in_controlled_shutdown:
        records.append(
            (
                r.BrokerRegistrationChangeRecord(
                    broker_id=broker.broker_id, broker_epoch=broker.epoch, in_controlled_shutdown=1
                ),
                1,
            )
        )
    records.extend(
        leader_and_isr_updates(
            image,
            partitions_with(image, broker.broker_id),
            acceptor(image, removing=broker.broker_id),
            broker.broker_id,
            unclean,
        )
    )
    return records
