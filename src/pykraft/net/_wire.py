"""What every kio <-> core conversion shares: the metadata partition's name on the wire, the
kio schema module of an API version, and the conversion errors."""

from __future__ import annotations

import importlib
import uuid
from functools import cache
from types import ModuleType
from typing import Final

from kio.static.protocol import RequestPayload, ResponsePayload

from pykraft.protocol import ApiKey, request_schema, response_schema

__all__ = [
    "METADATA_PARTITION",
    "METADATA_TOPIC",
    "METADATA_TOPIC_ID",
    "InvalidResponse",
    "RejectedRequest",
    "VersionTooOld",
    "kio_module",
    "message_version",
]

METADATA_TOPIC: Final = "__cluster_metadata"
METADATA_PARTITION: Final = 0
METADATA_TOPIC_ID: Final = uuid.UUID(int=1)
"""Kafka's ``Uuid.METADATA_TOPIC_ID`` (``AAAAAAAAAAAAAAAAAAAAAQ``), used by Fetch v13+."""


class RejectedRequest(Exception):
    """An inbound request the core must not see; ``response`` is Kafka's answer to it."""

    def __init__(self, reason: str, response: ResponsePayload) -> None:
        super().__init__(reason)
        self.response = response


class VersionTooOld(Exception):
    """The request cannot be expressed at the version the peer speaks (a pre-vote below
    Vote v2)."""


class InvalidResponse(Exception):
    """A response that does not answer the request (wrong topic, partition, shape)."""


@cache
def kio_module(api_key: ApiKey, version: int, kind: str) -> ModuleType:
    """kio's ``request`` or ``response`` schema module of ``api_key`` at ``version`` (found
    through kio's own index: one table of APIs, kio's)."""
    schema = (
        request_schema(api_key, version) if kind == "request" else response_schema(api_key, version)
    )
    return importlib.import_module(schema.__module__)


def message_version(message: RequestPayload | ResponsePayload) -> int:
    return int(message.__version__)
