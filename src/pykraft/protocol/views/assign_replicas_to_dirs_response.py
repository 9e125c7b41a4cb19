"""Typed views of ASSIGN_REPLICAS_TO_DIRS's response, v0-v0, as the handlers build it (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TypedDict

from collections.abc import Sequence
from datetime import timedelta
from uuid import UUID

__all__ = ['AssignReplicasToDirsResponse', 'DirectoryData', 'PartitionData', 'TopicData']


class PartitionData(TypedDict, total=False):
    partition_index: int
    error_code: int


class TopicData(TypedDict, total=False):
    topic_id: UUID | None
    partitions: Sequence[PartitionData]


class DirectoryData(TypedDict, total=False):
    id_: UUID | None
    topics: Sequence[TopicData]


class AssignReplicasToDirsResponse(TypedDict, total=False):
    throttle_time: int | timedelta
    error_code: int
    directories: Sequence[DirectoryData]
