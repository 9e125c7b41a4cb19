"""Typed views of BROKER_REGISTRATION's request, v0-v4 (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kio.schema.types import BrokerId
from kio.static.primitive import i16
from kio.static.primitive import u16
from uuid import UUID

__all__ = ['BrokerRegistrationRequest', 'Feature', 'Listener']


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


class BrokerRegistrationRequest(Protocol):
    @property
    def broker_id(self) -> BrokerId: ...
    @property
    def cluster_id(self) -> str: ...
    @property
    def incarnation_id(self) -> UUID | None: ...
    @property
    def listeners(self) -> tuple[Listener, ...]: ...
    @property
    def features(self) -> tuple[Feature, ...]: ...
    @property
    def rack(self) -> str | None: ...


if TYPE_CHECKING:
    from kio.schema.broker_registration.v0.request import BrokerRegistrationRequest as _V0
    from kio.schema.broker_registration.v1.request import BrokerRegistrationRequest as _V1
    from kio.schema.broker_registration.v2.request import BrokerRegistrationRequest as _V2
    from kio.schema.broker_registration.v3.request import BrokerRegistrationRequest as _V3
    from kio.schema.broker_registration.v4.request import BrokerRegistrationRequest as _V4

    def _every_version_is_a_view(v0: _V0, v1: _V1, v2: _V2, v3: _V3, v4: _V4) -> tuple[BrokerRegistrationRequest, ...]:
        return (v0, v1, v2, v3, v4,)
