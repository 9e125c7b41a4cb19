"""Typed views of DESCRIBE_ACLS's response, v1-v3, as the handlers build it (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TypedDict

from collections.abc import Sequence
from datetime import timedelta

__all__ = ['AclDescription', 'DescribeAclsResource', 'DescribeAclsResponse']


class AclDescription(TypedDict, total=False):
    principal: str
    host: str
    operation: int
    permission_type: int


class DescribeAclsResource(TypedDict, total=False):
    resource_type: int
    resource_name: str
    pattern_type: int
    acls: Sequence[AclDescription]


class DescribeAclsResponse(TypedDict, total=False):
    throttle_time: int | timedelta
    error_code: int
    error_message: str | None
    resources: Sequence[DescribeAclsResource]
