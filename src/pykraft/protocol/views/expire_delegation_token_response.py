"""Typed views of EXPIRE_DELEGATION_TOKEN's response, v1-v2, as the handlers build it (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TypedDict

from datetime import datetime
from datetime import timedelta

__all__ = ['ExpireDelegationTokenResponse']


class ExpireDelegationTokenResponse(TypedDict, total=False):
    error_code: int
    expiry_timestamp: int | datetime
    throttle_time: int | timedelta
