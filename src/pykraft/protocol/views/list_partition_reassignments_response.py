"""Typed views of LIST_PARTITION_REASSIGNMENTS's response, v0-v1, as the handlers build it (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TypedDict

from collections.abc import Sequence
from datetime import timedelta

__all__ = ['CurrentPartitionReassignmentBatch', 'CurrentTopicReassignmentBatch', 'ListPartitionReassignmentsResponse', 'OngoingPartitionReassignment', 'OngoingTopicReassignment']


class CurrentPartitionReassignmentBatch(TypedDict, total=False):
    partition_id: int
    current_brokers: Sequence[int]
    target_brokers: Sequence[int]


class CurrentTopicReassignmentBatch(TypedDict, total=False):
    name: str
    partitions: Sequence[CurrentPartitionReassignmentBatch]


class OngoingPartitionReassignment(TypedDict, total=False):
    partition_index: int
    replicas: Sequence[int]
    adding_replicas: Sequence[int]
    removing_replicas: Sequence[int]
    final_replicas: Sequence[int]


class OngoingTopicReassignment(TypedDict, total=False):
    name: str
    partitions: Sequence[OngoingPartitionReassignment]


class ListPartitionReassignmentsResponse(TypedDict, total=False):
    throttle_time: int | timedelta
    error_code: int
    error_message: str | None
    topics: Sequence[OngoingTopicReassignment]
    throttle_time_ms: int
    current_batch: Sequence[CurrentTopicReassignmentBatch]
