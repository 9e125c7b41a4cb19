"""Typed views of UPDATE_FEATURES's request, v0-v2 (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kio.static.primitive import i16
from kio.static.primitive import i32Timedelta

__all__ = ['FeatureUpdateKey', 'UpdateFeaturesRequest']


class FeatureUpdateKey(Protocol):
    @property
    def feature(self) -> str: ...
    @property
    def max_version_level(self) -> i16: ...


class UpdateFeaturesRequest(Protocol):
    @property
    def timeout(self) -> i32Timedelta: ...
    @property
    def feature_updates(self) -> tuple[FeatureUpdateKey, ...]: ...


if TYPE_CHECKING:
    from kio.schema.update_features.v0.request import UpdateFeaturesRequest as _V0
    from kio.schema.update_features.v1.request import UpdateFeaturesRequest as _V1
    from kio.schema.update_features.v2.request import UpdateFeaturesRequest as _V2

    def _every_version_is_a_view(v0: _V0, v1: _V1, v2: _V2) -> tuple[UpdateFeaturesRequest, ...]:
        return (v0, v1, v2,)
