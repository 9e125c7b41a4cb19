"""Typed views of ELECT_LEADERS's response, v0-v2, as the handlers build it (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TypedDict

from collections.abc import Sequence
from datetime import timedelta

__all__ = ['ElectLeadersResponse', 'PartitionResult', 'ReplicaElectionResult']


class PartitionResult(TypedDict, total=False):
    partition_id: int
    error_code: int
    error_message: str | None


class ReplicaElectionResult(TypedDict, total=False):
    topic: str
    partition_result: Sequence[PartitionResult]


class ElectLeadersResponse(TypedDict, total=False):
    throttle_time: int | timedelta
    replica_election_results: Sequence[ReplicaElectionResult]
    error_code: int
