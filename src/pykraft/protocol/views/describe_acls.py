"""Typed views of DESCRIBE_ACLS's request, v1-v3 (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kio.static.primitive import i8

__all__ = ['DescribeAclsRequest']


class DescribeAclsRequest(Protocol):
    @property
    def resource_type_filter(self) -> i8: ...
    @property
    def resource_name_filter(self) -> str | None: ...
    @property
    def pattern_type_filter(self) -> i8: ...
    @property
    def principal_filter(self) -> str | None: ...
    @property
    def host_filter(self) -> str | None: ...
    @property
    def operation(self) -> i8: ...
    @property
    def permission_type(self) -> i8: ...


if TYPE_CHECKING:
    from kio.schema.describe_acls.v1.request import DescribeAclsRequest as _V1
    from kio.schema.describe_acls.v2.request import DescribeAclsRequest as _V2
    from kio.schema.describe_acls.v3.request import DescribeAclsRequest as _V3

    def _every_version_is_a_view(v1: _V1, v2: _V2, v3: _V3) -> tuple[DescribeAclsRequest, ...]:
        return (v1, v2, v3,)
