"""Typed views of CREATE_TOPICS's request, v2-v7 (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kio.schema.types import BrokerId
from kio.schema.types import TopicName
from kio.static.primitive import i16
from kio.static.primitive import i32
from kio.static.primitive import i32Timedelta

__all__ = ['CreatableReplicaAssignment', 'CreatableTopic', 'CreatableTopicConfig', 'CreateTopicsRequest']


class CreatableTopicConfig(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> str | None: ...


class CreatableReplicaAssignment(Protocol):
    @property
    def partition_index(self) -> i32: ...
    @property
    def broker_ids(self) -> tuple[BrokerId, ...]: ...


class CreatableTopic(Protocol):
    @property
    def name(self) -> TopicName: ...
    @property
    def num_partitions(self) -> i32: ...
    @property
    def replication_factor(self) -> i16: ...
    @property
    def assignments(self) -> tuple[CreatableReplicaAssignment, ...]: ...
    @property
    def configs(self) -> tuple[CreatableTopicConfig, ...]: ...


class CreateTopicsRequest(Protocol):
    @property
    def topics(self) -> tuple[CreatableTopic, ...]: ...
    @property
    def timeout(self) -> i32Timedelta: ...
    @property
    def validate_only(self) -> bool: ...


if TYPE_CHECKING:
    from kio.schema.create_topics.v2.request import CreateTopicsRequest as _V2
    from kio.schema.create_topics.v3.request import CreateTopicsRequest as _V3
    from kio.schema.create_topics.v4.request import CreateTopicsRequest as _V4
    from kio.schema.create_topics.v5.request import CreateTopicsRequest as _V5
    from kio.schema.create_topics.v6.request import CreateTopicsRequest as _V6
    from kio.schema.create_topics.v7.request import CreateTopicsRequest as _V7

    def _every_version_is_a_view(v2: _V2, v3: _V3, v4: _V4, v5: _V5, v6: _V6, v7: _V7) -> tuple[CreateTopicsRequest, ...]:
        return (v2, v3, v4, v5, v6, v7,)
