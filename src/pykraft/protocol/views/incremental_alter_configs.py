"""Typed views of INCREMENTAL_ALTER_CONFIGS's request, v0-v1 (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kio.static.primitive import i8

__all__ = ['AlterConfigsResource', 'AlterableConfig', 'IncrementalAlterConfigsRequest']


class AlterableConfig(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def config_operation(self) -> i8: ...
    @property
    def value(self) -> str | None: ...


class AlterConfigsResource(Protocol):
    @property
    def resource_type(self) -> i8: ...
    @property
    def resource_name(self) -> str: ...
    @property
    def configs(self) -> tuple[AlterableConfig, ...]: ...


class IncrementalAlterConfigsRequest(Protocol):
    @property
    def resources(self) -> tuple[AlterConfigsResource, ...]: ...
    @property
    def validate_only(self) -> bool: ...


if TYPE_CHECKING:
    from kio.schema.incremental_alter_configs.v0.request import IncrementalAlterConfigsRequest as _V0
    from kio.schema.incremental_alter_configs.v1.request import IncrementalAlterConfigsRequest as _V1

    def _every_version_is_a_view(v0: _V0, v1: _V1) -> tuple[IncrementalAlterConfigsRequest, ...]:
        return (v0, v1,)
