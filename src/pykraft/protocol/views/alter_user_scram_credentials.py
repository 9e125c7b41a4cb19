"""Typed views of ALTER_USER_SCRAM_CREDENTIALS's request, v0-v0 (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kio.static.primitive import i32
from kio.static.primitive import i8

__all__ = ['AlterUserScramCredentialsRequest', 'ScramCredentialDeletion', 'ScramCredentialUpsertion']


class ScramCredentialUpsertion(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def mechanism(self) -> i8: ...
    @property
    def iterations(self) -> i32: ...
    @property
    def salt(self) -> bytes: ...
    @property
    def salted_password(self) -> bytes: ...


class ScramCredentialDeletion(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def mechanism(self) -> i8: ...


class AlterUserScramCredentialsRequest(Protocol):
    @property
    def deletions(self) -> tuple[ScramCredentialDeletion, ...]: ...
    @property
    def upsertions(self) -> tuple[ScramCredentialUpsertion, ...]: ...


if TYPE_CHECKING:
    from kio.schema.alter_user_scram_credentials.v0.request import AlterUserScramCredentialsRequest as _V0

    def _every_version_is_a_view(v0: _V0) -> tuple[AlterUserScramCredentialsRequest, ...]:
        return (v0,)
