"""Typed views of ASSIGN_REPLICAS_TO_DIRS's request, v0-v0 (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kio.schema.types import BrokerId
from kio.static.primitive import i32
from kio.static.primitive import i64
from uuid import UUID

__all__ = ['AssignReplicasToDirsRequest', 'DirectoryData', 'PartitionData', 'TopicData']


class PartitionData(Protocol):
    @property
    def partition_index(self) -> i32: ...


class TopicData(Protocol):
    @property
    def topic_id(self) -> UUID | None: ...
    @property
    def partitions(self) -> tuple[PartitionData, ...]: ...


class DirectoryData(Protocol):
    @property
    def id_(self) -> UUID | None: ...
    @property
    def topics(self) -> tuple[TopicData, ...]: ...


class AssignReplicasToDirsRequest(Protocol):
    @property
    def broker_id(self) -> BrokerId: ...
    @property
    def broker_epoch(self) -> i64: ...
    @property
    def directories(self) -> tuple[DirectoryData, ...]: ...


if TYPE_CHECKING:
    from kio.schema.assign_replicas_to_dirs.v0.request import AssignReplicasToDirsRequest as _V0

    def _every_version_is_a_view(v0: _V0) -> tuple[AssignReplicasToDirsRequest, ...]:
        return (v0,)
