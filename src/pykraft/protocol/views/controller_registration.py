"""Typed views of CONTROLLER_REGISTRATION's request, v0-v0 (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kio.static.primitive import i16
from kio.static.primitive import i32
from kio.static.primitive import u16
from uuid import UUID

__all__ = ['ControllerRegistrationRequest', 'Feature', 'Listener']


class Feature(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def min_supported_version(self) -> i16: ...
    @property
    def max_supported_version(self) -> i16: ...


class Listener(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def host(self) -> str: ...
    @property
    def port(self) -> u16: ...
    @property
    def security_protocol(self) -> i16: ...


class ControllerRegistrationRequest(Protocol):
    @property
    def controller_id(self) -> i32: ...
    @property
    def incarnation_id(self) -> UUID | None: ...
    @property
    def zk_migration_ready(self) -> bool: ...
    @property
    def listeners(self) -> tuple[Listener, ...]: ...
    @property
    def features(self) -> tuple[Feature, ...]: ...


if TYPE_CHECKING:
    from kio.schema.controller_registration.v0.request import ControllerRegistrationRequest as _V0

    def _every_version_is_a_view(v0: _V0) -> tuple[ControllerRegistrationRequest, ...]:
        return (v0,)
