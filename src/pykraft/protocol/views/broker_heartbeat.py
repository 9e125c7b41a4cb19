"""Typed views of BROKER_HEARTBEAT's request, v0-v2 (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kio.schema.types import BrokerId
from kio.static.primitive import i64

__all__ = ['BrokerHeartbeatRequest']


class BrokerHeartbeatRequest(Protocol):
    @property
    def broker_id(self) -> BrokerId: ...
    @property
    def broker_epoch(self) -> i64: ...
    @property
    def current_metadata_offset(self) -> i64: ...
    @property
    def want_fence(self) -> bool: ...
    @property
    def want_shut_down(self) -> bool: ...


if TYPE_CHECKING:
    from kio.schema.broker_heartbeat.v0.request import BrokerHeartbeatRequest as _V0
    from kio.schema.broker_heartbeat.v1.request import BrokerHeartbeatRequest as _V1
    from kio.schema.broker_heartbeat.v2.request import BrokerHeartbeatRequest as _V2

    def _every_version_is_a_view(v0: _V0, v1: _V1, v2: _V2) -> tuple[BrokerHeartbeatRequest, ...]:
        return (v0, v1, v2,)
