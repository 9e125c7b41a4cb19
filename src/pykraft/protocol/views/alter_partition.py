"""Typed views of ALTER_PARTITION's request, v2-v3 (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kio.schema.types import BrokerId
from kio.static.primitive import i32
from kio.static.primitive import i64
from kio.static.primitive import i8
from uuid import UUID

__all__ = ['AlterPartitionRequest', 'PartitionData', 'TopicData']


class PartitionData(Protocol):
    @property
    def partition_index(self) -> i32: ...
    @property
    def leader_epoch(self) -> i32: ...
    @property
    def leader_recovery_state(self) -> i8: ...
    @property
    def partition_epoch(self) -> i32: ...


class TopicData(Protocol):
    @property
    def topic_id(self) -> UUID | None: ...
    @property
    def partitions(self) -> tuple[PartitionData, ...]: ...


class AlterPartitionRequest(Protocol):
    @property
    def broker_id(self) -> BrokerId: ...
    @property
    def broker_epoch(self) -> i64: ...
    @property
    def topics(self) -> tuple[TopicData, ...]: ...


if TYPE_CHECKING:
    from kio.schema.alter_partition.v2.request import AlterPartitionRequest as _V2
    from kio.schema.alter_partition.v3.request import AlterPartitionRequest as _V3

    def _every_version_is_a_view(v2: _V2, v3: _V3) -> tuple[AlterPartitionRequest, ...]:
        return (v2, v3,)
