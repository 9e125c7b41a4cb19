"""Typed views of UNREGISTER_BROKER's request, v0-v0 (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kio.schema.types import BrokerId

__all__ = ['UnregisterBrokerRequest']


class UnregisterBrokerRequest(Protocol):
    @property
    def broker_id(self) -> BrokerId: ...


if TYPE_CHECKING:
    from kio.schema.unregister_broker.v0.request import UnregisterBrokerRequest as _V0

    def _every_version_is_a_view(v0: _V0) -> tuple[UnregisterBrokerRequest, ...]:
        return (v0,)
