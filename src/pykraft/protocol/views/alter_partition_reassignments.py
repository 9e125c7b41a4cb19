"""Typed views of ALTER_PARTITION_REASSIGNMENTS's request, v0-v1 (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kio.schema.types import BrokerId
from kio.schema.types import TopicName
from kio.static.primitive import i32
from kio.static.primitive import i32Timedelta

__all__ = ['AlterPartitionReassignmentsRequest', 'ReassignablePartition', 'ReassignableTopic']


class ReassignablePartition(Protocol):
    @property
    def partition_index(self) -> i32: ...
    @property
    def replicas(self) -> tuple[BrokerId, ...] | None: ...


class ReassignableTopic(Protocol):
    @property
    def name(self) -> TopicName: ...
    @property
    def partitions(self) -> tuple[ReassignablePartition, ...]: ...


class AlterPartitionReassignmentsRequest(Protocol):
    @property
    def timeout(self) -> i32Timedelta: ...
    @property
    def topics(self) -> tuple[ReassignableTopic, ...]: ...


if TYPE_CHECKING:
    from kio.schema.alter_partition_reassignments.v0.request import AlterPartitionReassignmentsRequest as _V0
    from kio.schema.alter_partition_reassignments.v1.request import AlterPartitionReassignmentsRequest as _V1

    def _every_version_is_a_view(v0: _V0, v1: _V1) -> tuple[AlterPartitionReassignmentsRequest, ...]:
        return (v0, v1,)
