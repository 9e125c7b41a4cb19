"""Typed views of CREATE_PARTITIONS's request, v0-v3 (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kio.schema.types import BrokerId
from kio.schema.types import TopicName
from kio.static.primitive import i32
from kio.static.primitive import i32Timedelta

__all__ = ['CreatePartitionsAssignment', 'CreatePartitionsRequest', 'CreatePartitionsTopic']


class CreatePartitionsAssignment(Protocol):
    @property
    def broker_ids(self) -> tuple[BrokerId, ...]: ...


class CreatePartitionsTopic(Protocol):
    @property
    def name(self) -> TopicName: ...
    @property
    def count(self) -> i32: ...
    @property
    def assignments(self) -> tuple[CreatePartitionsAssignment, ...] | None: ...


class CreatePartitionsRequest(Protocol):
    @property
    def topics(self) -> tuple[CreatePartitionsTopic, ...]: ...
    @property
    def timeout(self) -> i32Timedelta: ...
    @property
    def validate_only(self) -> bool: ...


if TYPE_CHECKING:
    from kio.schema.create_partitions.v0.request import CreatePartitionsRequest as _V0
    from kio.schema.create_partitions.v1.request import CreatePartitionsRequest as _V1
    from kio.schema.create_partitions.v2.request import CreatePartitionsRequest as _V2
    from kio.schema.create_partitions.v3.request import CreatePartitionsRequest as _V3

    def _every_version_is_a_view(v0: _V0, v1: _V1, v2: _V2, v3: _V3) -> tuple[CreatePartitionsRequest, ...]:
        return (v0, v1, v2, v3,)
