"""Typed views of ALLOCATE_PRODUCER_IDS's request, v0-v0 (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kio.schema.types import BrokerId
from kio.static.primitive import i64

__all__ = ['AllocateProducerIdsRequest']


class AllocateProducerIdsRequest(Protocol):
    @property
    def broker_id(self) -> BrokerId: ...
    @property
    def broker_epoch(self) -> i64: ...


if TYPE_CHECKING:
    from kio.schema.allocate_producer_ids.v0.request import AllocateProducerIdsRequest as _V0

    def _every_version_is_a_view(v0: _V0) -> tuple[AllocateProducerIdsRequest, ...]:
        return (v0,)
