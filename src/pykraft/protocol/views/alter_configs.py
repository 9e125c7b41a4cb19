"""Typed views of ALTER_CONFIGS's request, v0-v2 (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kio.static.primitive import i8

__all__ = ['AlterConfigsRequest', 'AlterConfigsResource', 'AlterableConfig']


class AlterableConfig(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> str | None: ...


class AlterConfigsResource(Protocol):
    @property
    def resource_type(self) -> i8: ...
    @property
    def resource_name(self) -> str: ...
    @property
    def configs(self) -> tuple[AlterableConfig, ...]: ...


class AlterConfigsRequest(Protocol):
    @property
    def resources(self) -> tuple[AlterConfigsResource, ...]: ...
    @property
    def validate_only(self) -> bool: ...


if TYPE_CHECKING:
    from kio.schema.alter_configs.v0.request import AlterConfigsRequest as _V0
    from kio.schema.alter_configs.v1.request import AlterConfigsRequest as _V1
    from kio.schema.alter_configs.v2.request import AlterConfigsRequest as _V2

    def _every_version_is_a_view(v0: _V0, v1: _V1, v2: _V2) -> tuple[AlterConfigsRequest, ...]:
        return (v0, v1, v2,)
