"""Typed views of ALTER_CLIENT_QUOTAS's request, v0-v1 (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kio.static.primitive import f64

__all__ = ['AlterClientQuotasRequest', 'EntityData', 'EntryData', 'OpData']


class OpData(Protocol):
    @property
    def key(self) -> str: ...
    @property
    def value(self) -> f64: ...
    @property
    def remove(self) -> bool: ...


class EntityData(Protocol):
    @property
    def entity_type(self) -> str: ...
    @property
    def entity_name(self) -> str | None: ...


class EntryData(Protocol):
    @property
    def entity(self) -> tuple[EntityData, ...]: ...
    @property
    def ops(self) -> tuple[OpData, ...]: ...


class AlterClientQuotasRequest(Protocol):
    @property
    def entries(self) -> tuple[EntryData, ...]: ...
    @property
    def validate_only(self) -> bool: ...


if TYPE_CHECKING:
    from kio.schema.alter_client_quotas.v0.request import AlterClientQuotasRequest as _V0
    from kio.schema.alter_client_quotas.v1.request import AlterClientQuotasRequest as _V1

    def _every_version_is_a_view(v0: _V0, v1: _V1) -> tuple[AlterClientQuotasRequest, ...]:
        return (v0, v1,)
