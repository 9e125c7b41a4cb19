"""Typed views of DELETE_TOPICS's response, v1-v6, as the handlers build it (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TypedDict

from collections.abc import Sequence
from datetime import timedelta
from uuid import UUID

__all__ = ['DeletableTopicResult', 'DeleteTopicsResponse']


class DeletableTopicResult(TypedDict, total=False):
    name: str | None
    error_code: int
    error_message: str | None
    topic_id: UUID | None


class DeleteTopicsResponse(TypedDict, total=False):
    throttle_time: int | timedelta
    responses: Sequence[DeletableTopicResult]
