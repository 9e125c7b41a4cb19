"""Typed views of BROKER_REGISTRATION's response, v0-v4, as the handlers build it (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TypedDict

from datetime import timedelta

__all__ = ['BrokerRegistrationResponse']


class BrokerRegistrationResponse(TypedDict, total=False):
    throttle_time: int | timedelta
    error_code: int
    broker_epoch: int
