"""Typed views of CREATE_DELEGATION_TOKEN's request, v1-v3 (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kio.static.primitive import i64Timedelta

__all__ = ['CreatableRenewers', 'CreateDelegationTokenRequest']


class CreatableRenewers(Protocol):
    @property
    def principal_type(self) -> str: ...
    @property
    def principal_name(self) -> str: ...


class CreateDelegationTokenRequest(Protocol):
    @property
    def renewers(self) -> tuple[CreatableRenewers, ...]: ...
    @property
    def max_lifetime(self) -> i64Timedelta: ...


if TYPE_CHECKING:
    from kio.schema.create_delegation_token.v1.request import CreateDelegationTokenRequest as _V1
    from kio.schema.create_delegation_token.v2.request import CreateDelegationTokenRequest as _V2
    from kio.schema.create_delegation_token.v3.request import CreateDelegationTokenRequest as _V3

    def _every_version_is_a_view(v1: _V1, v2: _V2, v3: _V3) -> tuple[CreateDelegationTokenRequest, ...]:
        return (v1, v2, v3,)
