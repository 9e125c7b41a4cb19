"""Typed views of CREATE_ACLS's request, v1-v3 (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kio.static.primitive import i8

__all__ = ['AclCreation', 'CreateAclsRequest']


class AclCreation(Protocol):
    @property
    def resource_type(self) -> i8: ...
    @property
    def resource_name(self) -> str: ...
    @property
    def resource_pattern_type(self) -> i8: ...
    @property
    def principal(self) -> str: ...
    @property
    def host(self) -> str: ...
    @property
    def operation(self) -> i8: ...
    @property
    def permission_type(self) -> i8: ...


class CreateAclsRequest(Protocol):
    @property
    def creations(self) -> tuple[AclCreation, ...]: ...


if TYPE_CHECKING:
    from kio.schema.create_acls.v1.request import CreateAclsRequest as _V1
    from kio.schema.create_acls.v2.request import CreateAclsRequest as _V2
    from kio.schema.create_acls.v3.request import CreateAclsRequest as _V3

    def _every_version_is_a_view(v1: _V1, v2: _V2, v3: _V3) -> tuple[CreateAclsRequest, ...]:
        return (v1, v2, v3,)
