"""Typed views of CREATE_TOPICS's response, v2-v7, as the handlers build it (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TypedDict

from collections.abc import Sequence
from datetime import timedelta
from uuid import UUID

__all__ = ['CreatableTopicConfigs', 'CreatableTopicResult', 'CreateTopicsResponse']


class CreatableTopicConfigs(TypedDict, total=False):
    name: str
    value: str | None
    read_only: bool
    config_source: int
    is_sensitive: bool


class CreatableTopicResult(TypedDict, total=False):
    name: str
    error_code: int
    error_message: str | None
    topic_config_error_code: int
    num_partitions: int
    replication_factor: int
    configs: Sequence[CreatableTopicConfigs] | None
    topic_id: UUID | None


class CreateTopicsResponse(TypedDict, total=False):
    throttle_time: int | timedelta
    topics: Sequence[CreatableTopicResult]
