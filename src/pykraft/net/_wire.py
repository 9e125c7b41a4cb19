"""What every kio <-> core conversion shares: the metadata partition's name on the wire, the
kio schema module of an API version, and the conversion errors."""

from __future__ import annotations

import importlib
import uuid
from functools import cache
from types import ModuleType
from typing import Final

from kio.static.protocol import RequestPayload, ResponsePayload

from pykraft.protocol import ApiKey

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

_PACKAGE: Final = {
    ApiKey.VOTE: "vote",
    ApiKey.BEGIN_QUORUM_EPOCH: "begin_quorum_epoch",
    ApiKey.END_QUORUM_EPOCH: "end_quorum_epoch",
    ApiKey.FETCH: "fetch",
    ApiKey.FETCH_SNAPSHOT: "fetch_snapshot",
    ApiKey.ADD_RAFT_VOTER: "add_raft_voter",
    ApiKey.REMOVE_RAFT_VOTER: "remove_raft_voter",
    ApiKey.UPDATE_RAFT_VOTER: "update_raft_voter",
    ApiKey.DESCRIBE_QUORUM: "describe_quorum",
    ApiKey.UPDATE_FEATURES: "update_features",
    ApiKey.API_VERSIONS: "api_versions",
}


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
    """kio's ``request`` or ``response`` schema module of ``api_key`` at ``version``."""
    return importlib.import_module(f"kio.schema.{_PACKAGE[api_key]}.v{version}.{kind}")


def message_version(message: RequestPayload | ResponsePayload) -> int:
    return int(message.__version__)
