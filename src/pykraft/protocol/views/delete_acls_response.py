"""Typed views of DELETE_ACLS's response, v1-v3, as the handlers build it (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TypedDict

from collections.abc import Sequence
from datetime import timedelta

__all__ = ['DeleteAclsFilterResult', 'DeleteAclsMatchingAcl', 'DeleteAclsResponse']


class DeleteAclsMatchingAcl(TypedDict, total=False):
    error_code: int
    error_message: str | None
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


class DeleteAclsFilterResult(TypedDict, total=False):
    error_code: int
    error_message: str | None
    matching_acls: Sequence[DeleteAclsMatchingAcl]


class DeleteAclsResponse(TypedDict, total=False):
    throttle_time: int | timedelta
    filter_results: Sequence[DeleteAclsFilterResult]
