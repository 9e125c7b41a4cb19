"""Typed views of BROKER_HEARTBEAT's response, v0-v2, as the handlers build it (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TypedDict

from datetime import timedelta

__all__ = ['BrokerHeartbeatResponse']


class BrokerHeartbeatResponse(TypedDict, total=False):
    throttle_time: int | timedelta
    error_code: int
    is_caught_up: bool
    is_fenced: bool
    should_shut_down: bool
