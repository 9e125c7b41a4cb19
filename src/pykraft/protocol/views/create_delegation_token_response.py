"""Typed views of CREATE_DELEGATION_TOKEN's response, v1-v3, as the handlers build it (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TypedDict

from datetime import datetime
from datetime import timedelta

__all__ = ['CreateDelegationTokenResponse']


class CreateDelegationTokenResponse(TypedDict, total=False):
    error_code: int
    principal_type: str
    principal_name: str
    issue_timestamp: int | datetime
    expiry_timestamp: int | datetime
    max_timestamp: int | datetime
    token_id: str
    hmac: bytes
    throttle_time: int | timedelta
    token_requester_principal_type: str
    token_requester_principal_name: str
