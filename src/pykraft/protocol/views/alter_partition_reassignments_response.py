"""Typed views of ALTER_PARTITION_REASSIGNMENTS's response, v0-v1, as the handlers build it (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TypedDict

from collections.abc import Sequence
from datetime import timedelta

__all__ = ['AlterPartitionReassignmentsResponse', 'ReassignablePartitionResponse', 'ReassignableTopicResponse']


class ReassignablePartitionResponse(TypedDict, total=False):
    partition_index: int
    error_code: int
    error_message: str | None


class ReassignableTopicResponse(TypedDict, total=False):
    name: str
    partitions: Sequence[ReassignablePartitionResponse]


class AlterPartitionReassignmentsResponse(TypedDict, total=False):
    throttle_time: int | timedelta
    error_code: int
    error_message: str | None
    responses: Sequence[ReassignableTopicResponse]
    allow_replication_factor_change: bool
