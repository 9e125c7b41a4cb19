"""Typed views of DESCRIBE_CONFIGS's request, v1-v4 (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kio.static.primitive import i8

__all__ = ['DescribeConfigsRequest', 'DescribeConfigsResource']


class DescribeConfigsResource(Protocol):
    @property
    def resource_type(self) -> i8: ...
    @property
    def resource_name(self) -> str: ...
    @property
    def configuration_keys(self) -> tuple[str, ...] | None: ...


class DescribeConfigsRequest(Protocol):
    @property
    def resources(self) -> tuple[DescribeConfigsResource, ...]: ...
    @property
    def include_synonyms(self) -> bool: ...


if TYPE_CHECKING:
    from kio.schema.describe_configs.v1.request import DescribeConfigsRequest as _V1
    from kio.schema.describe_configs.v2.request import DescribeConfigsRequest as _V2
    from kio.schema.describe_configs.v3.request import DescribeConfigsRequest as _V3
    from kio.schema.describe_configs.v4.request import DescribeConfigsRequest as _V4

    def _every_version_is_a_view(v1: _V1, v2: _V2, v3: _V3, v4: _V4) -> tuple[DescribeConfigsRequest, ...]:
        return (v1, v2, v3, v4,)
