"""Typed views of ALTER_USER_SCRAM_CREDENTIALS's response, v0-v0, as the handlers build it (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TypedDict

from collections.abc import Sequence
from datetime import timedelta

__all__ = ['AlterUserScramCredentialsResponse', 'AlterUserScramCredentialsResult']


class AlterUserScramCredentialsResult(TypedDict, total=False):
    user: str
    error_code: int
    error_message: str | None


class AlterUserScramCredentialsResponse(TypedDict, total=False):
    throttle_time: int | timedelta
    results: Sequence[AlterUserScramCredentialsResult]
