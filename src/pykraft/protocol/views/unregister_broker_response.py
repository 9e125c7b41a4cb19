"""Typed views of UNREGISTER_BROKER's response, v0-v0, as the handlers build it (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TypedDict

from datetime import timedelta

__all__ = ['UnregisterBrokerResponse']


class UnregisterBrokerResponse(TypedDict, total=False):
    throttle_time: int | timedelta
    error_code: int
    error_message: str | None
