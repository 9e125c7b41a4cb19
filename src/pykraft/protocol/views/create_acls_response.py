"""Typed views of CREATE_ACLS's response, v1-v3, as the handlers build it (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TypedDict

from collections.abc import Sequence
from datetime import timedelta

__all__ = ['AclCreationResult', 'CreateAclsResponse']


class AclCreationResult(TypedDict, total=False):
    error_code: int
    error_message: str | None


class CreateAclsResponse(TypedDict, total=False):
    throttle_time: int | timedelta
    results: Sequence[AclCreationResult]
