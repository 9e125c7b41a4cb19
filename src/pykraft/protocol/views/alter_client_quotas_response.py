"""Typed views of ALTER_CLIENT_QUOTAS's response, v0-v1, as the handlers build it (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TypedDict

from collections.abc import Sequence
from datetime import timedelta

__all__ = ['AlterClientQuotasResponse', 'EntityData', 'EntryData']


class EntityData(TypedDict, total=False):
    entity_type: str
    entity_name: str | None


class EntryData(TypedDict, total=False):
    error_code: int
    error_message: str | None
    entity: Sequence[EntityData]


class AlterClientQuotasResponse(TypedDict, total=False):
    throttle_time: int | timedelta
    entries: Sequence[EntryData]
