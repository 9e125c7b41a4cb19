"""Typed views of DESCRIBE_CONFIGS's response, v1-v4, as the handlers build it (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TypedDict

from collections.abc import Sequence
from datetime import timedelta

__all__ = ['DescribeConfigsResourceResult', 'DescribeConfigsResponse', 'DescribeConfigsResult', 'DescribeConfigsSynonym']


class DescribeConfigsSynonym(TypedDict, total=False):
    name: str
    value: str | None
    source: int


class DescribeConfigsResourceResult(TypedDict, total=False):
    name: str
    value: str | None
    read_only: bool
    config_source: int
    is_sensitive: bool
    synonyms: Sequence[DescribeConfigsSynonym]
    config_type: int
    documentation: str | None


class DescribeConfigsResult(TypedDict, total=False):
    error_code: int
    error_message: str | None
    resource_type: int
    resource_name: str
    configs: Sequence[DescribeConfigsResourceResult]


class DescribeConfigsResponse(TypedDict, total=False):
    throttle_time: int | timedelta
    results: Sequence[DescribeConfigsResult]
