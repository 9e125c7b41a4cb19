"""Typed views of UNREGISTER_CONTROLLER's response, v0-v0, as the handlers build it (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TypedDict


__all__ = ['UnregisterControllerResponse']


class UnregisterControllerResponse(TypedDict, total=False):
    throttle_time_ms: int
    error_code: int
    error_message: str | None
