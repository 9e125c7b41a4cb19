"""Typed views of LIST_PARTITION_REASSIGNMENTS's request, v0-v1 (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kio.schema.types import TopicName
from kio.static.primitive import i32
from kio.static.primitive import i32Timedelta

__all__ = ['ListPartitionReassignmentsRequest', 'ListPartitionReassignmentsTopics']


class ListPartitionReassignmentsTopics(Protocol):
    @property
    def name(self) -> TopicName | str: ...
    @property
    def partition_indexes(self) -> tuple[i32, ...] | tuple[int, ...]: ...


class ListPartitionReassignmentsRequest(Protocol):
    @property
    def topics(self) -> tuple[ListPartitionReassignmentsTopics, ...] | None: ...


if TYPE_CHECKING:
    from kio.schema.list_partition_reassignments.v0.request import ListPartitionReassignmentsRequest as _V0
    from pykraft.protocol.generated.list_partition_reassignments_request import ListPartitionReassignmentsRequest as _V1

    def _every_version_is_a_view(v0: _V0, v1: _V1) -> tuple[ListPartitionReassignmentsRequest, ...]:
        return (v0, v1,)
