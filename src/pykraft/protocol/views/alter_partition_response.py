"""Typed views of ALTER_PARTITION's response, v2-v3, as the handlers build it (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TypedDict

from collections.abc import Sequence
from datetime import timedelta
from uuid import UUID

__all__ = ['AlterPartitionResponse', 'PartitionData', 'TopicData']


class PartitionData(TypedDict, total=False):
    partition_index: int
    error_code: int
    leader_id: int
    leader_epoch: int
    isr: Sequence[int]
    leader_recovery_state: int
    partition_epoch: int


class TopicData(TypedDict, total=False):
    topic_id: UUID | None
    partitions: Sequence[PartitionData]


class AlterPartitionResponse(TypedDict, total=False):
    throttle_time: int | timedelta
    error_code: int
    topics: Sequence[TopicData]
