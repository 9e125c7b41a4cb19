"""Typed views of CREATE_PARTITIONS's response, v0-v3, as the handlers build it (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TypedDict

from collections.abc import Sequence
from datetime import timedelta

__all__ = ['CreatePartitionsResponse', 'CreatePartitionsTopicResult']


class CreatePartitionsTopicResult(TypedDict, total=False):
    name: str
    error_code: int
    error_message: str | None


class CreatePartitionsResponse(TypedDict, total=False):
    throttle_time: int | timedelta
    results: Sequence[CreatePartitionsTopicResult]
