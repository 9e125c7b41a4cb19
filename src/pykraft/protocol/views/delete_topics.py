"""Typed views of DELETE_TOPICS's request, v1-v6 (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kio.schema.types import TopicName
from kio.static.primitive import i32Timedelta

__all__ = ['DeleteTopicsRequest']


class DeleteTopicsRequest(Protocol):
    @property
    def timeout(self) -> i32Timedelta: ...


if TYPE_CHECKING:
    from kio.schema.delete_topics.v1.request import DeleteTopicsRequest as _V1
    from kio.schema.delete_topics.v2.request import DeleteTopicsRequest as _V2
    from kio.schema.delete_topics.v3.request import DeleteTopicsRequest as _V3
    from kio.schema.delete_topics.v4.request import DeleteTopicsRequest as _V4
    from kio.schema.delete_topics.v5.request import DeleteTopicsRequest as _V5
    from kio.schema.delete_topics.v6.request import DeleteTopicsRequest as _V6

    def _every_version_is_a_view(v1: _V1, v2: _V2, v3: _V3, v4: _V4, v5: _V5, v6: _V6) -> tuple[DeleteTopicsRequest, ...]:
        return (v1, v2, v3, v4, v5, v6,)
