"""Typed views of INCREMENTAL_ALTER_CONFIGS's response, v0-v1, as the handlers build it (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TypedDict

from collections.abc import Sequence
from datetime import timedelta

__all__ = ['AlterConfigsResourceResponse', 'IncrementalAlterConfigsResponse']


class AlterConfigsResourceResponse(TypedDict, total=False):
    error_code: int
    error_message: str | None
    resource_type: int
    resource_name: str


class IncrementalAlterConfigsResponse(TypedDict, total=False):
    throttle_time: int | timedelta
    responses: Sequence[AlterConfigsResourceResponse]
