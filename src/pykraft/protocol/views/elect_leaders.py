"""Typed views of ELECT_LEADERS's request, v0-v2 (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kio.schema.types import TopicName
from kio.static.primitive import i32
from kio.static.primitive import i32Timedelta

__all__ = ['ElectLeadersRequest', 'TopicPartitions']


class TopicPartitions(Protocol):
    @property
    def topic(self) -> TopicName: ...
    @property
    def partitions(self) -> tuple[i32, ...]: ...


class ElectLeadersRequest(Protocol):
    @property
    def topic_partitions(self) -> tuple[TopicPartitions, ...] | None: ...
    @property
    def timeout(self) -> i32Timedelta: ...


if TYPE_CHECKING:
    from kio.schema.elect_leaders.v0.request import ElectLeadersRequest as _V0
    from kio.schema.elect_leaders.v1.request import ElectLeadersRequest as _V1
    from kio.schema.elect_leaders.v2.request import ElectLeadersRequest as _V2

    def _every_version_is_a_view(v0: _V0, v1: _V1, v2: _V2) -> tuple[ElectLeadersRequest, ...]:
        return (v0, v1, v2,)
