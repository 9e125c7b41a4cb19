"""Typed views of UPDATE_FEATURES's response, v0-v2, as the handlers build it (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TypedDict

from collections.abc import Sequence
from datetime import timedelta

__all__ = ['UpdatableFeatureResult', 'UpdateFeaturesResponse']


class UpdatableFeatureResult(TypedDict, total=False):
    feature: str
    error_code: int
    error_message: str | None


class UpdateFeaturesResponse(TypedDict, total=False):
    throttle_time: int | timedelta
    error_code: int
    error_message: str | None
    results: Sequence[UpdatableFeatureResult]
