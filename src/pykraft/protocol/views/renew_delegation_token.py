"""Typed views of RENEW_DELEGATION_TOKEN's request, v1-v2 (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kio.static.primitive import i64Timedelta

__all__ = ['RenewDelegationTokenRequest']


class RenewDelegationTokenRequest(Protocol):
    @property
    def hmac(self) -> bytes: ...
    @property
    def renew_period(self) -> i64Timedelta: ...


if TYPE_CHECKING:
    from kio.schema.renew_delegation_token.v1.request import RenewDelegationTokenRequest as _V1
    from kio.schema.renew_delegation_token.v2.request import RenewDelegationTokenRequest as _V2

    def _every_version_is_a_view(v1: _V1, v2: _V2) -> tuple[RenewDelegationTokenRequest, ...]:
        return (v1, v2,)
