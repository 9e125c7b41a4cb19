"""Kafka's API keys, kio's message classes by (api key, version), and the :class:`ApiTable`
type: which APIs a listener serves at which versions, as data.

An :class:`ApiTable` is what a listener advertises in its ApiVersions response and what the
request decoder checks before it parses a body. The tables pykraft serves are built from
the rows of ``pykraft.net.apis`` (the quorum's and the node's) and of the metadata
controller (``protocol/controller_apis.py``: the admin client reads it too) with
:meth:`ApiTable.with_apis`; the message types come from kio by (api key, version).

A table checks kio's index when it is built (``has_schemas``) and imports nothing: a message
class is imported the first time a message of its version is read or written. Importing every
version of every API a controller serves took about 0.6 s of CPU at each process start, where
a node speaks one or two versions of each (tests/protocol/test_codec.py imports them all).
A server imports the newest version of each API before it serves (``import_newest``).
"""

from __future__ import annotations

import enum
import importlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import Final, Literal, cast

import kio.index
from kio.schema.index import api_key_map, schema_name_map
from kio.static.constants import EntityType
from kio.static.protocol import RequestPayload, ResponsePayload

__all__ = [
    "BROKER_ENDPOINT_TYPE",
    "CONTROLLER_ENDPOINT_TYPE",
    "ApiKey",
    "ApiTable",
    "ApiVersionRange",
    "has_schemas",
    "import_newest",
    "kio_module",
    "request_schema",
    "response_schema",
]


class ApiKey(enum.IntEnum):
    """Kafka's API keys (``org.apache.kafka.common.protocol.ApiKeys``) that pykraft uses."""

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    LEADER_AND_ISR = 4  # ZooKeeper-era controller -> broker (KIP-866 migration)
    STOP_REPLICA = 5
    UPDATE_METADATA = 6
    CONTROLLED_SHUTDOWN = 7
    FIND_COORDINATOR = 10
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    INIT_PRODUCER_ID = 22
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    CREATE_DELEGATION_TOKEN = 38
    RENEW_DELEGATION_TOKEN = 39
    EXPIRE_DELEGATION_TOKEN = 40
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    ALTER_CLIENT_QUOTAS = 49
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    VOTE = 52
    BEGIN_QUORUM_EPOCH = 53
    END_QUORUM_EPOCH = 54
    DESCRIBE_QUORUM = 55
    ALTER_PARTITION = 56
    UPDATE_FEATURES = 57
    ENVELOPE = 58
    FETCH_SNAPSHOT = 59
    DESCRIBE_CLUSTER = 60
    BROKER_REGISTRATION = 62
    BROKER_HEARTBEAT = 63
    UNREGISTER_BROKER = 64
    ALLOCATE_PRODUCER_IDS = 67
    CONTROLLER_REGISTRATION = 70
    ASSIGN_REPLICAS_TO_DIRS = 73
    ADD_RAFT_VOTER = 80
    REMOVE_RAFT_VOTER = 81
    UPDATE_RAFT_VOTER = 82
    UNREGISTER_CONTROLLER = 94  # Kafka 4.4.0 (protocol/ext.py)


@cache
def request_schema(api_key: int, api_version: int) -> type[RequestPayload]:
    """kio's request class for (api key, version), or pykraft's for the versions Kafka does
    not define (``ext``); ``LookupError`` if there is none."""
    from .ext import EXTENSIONS

    extension = EXTENSIONS.get((api_key, api_version))
    if extension is not None:
        return cast("type[RequestPayload]", extension[0])
    try:
        return kio.index.load_request_schema(api_key, api_version)
    except kio.index.KioIndexError as e:
        raise LookupError(f"kio has no request schema for {api_key} v{api_version}") from e


@cache
def response_schema(api_key: int, api_version: int) -> type[ResponsePayload]:
    """kio's response class for (api key, version), or pykraft's (``ext``);
    ``LookupError`` if there is none."""
    from .ext import EXTENSIONS

    extension = EXTENSIONS.get((api_key, api_version))
    if extension is not None:
        return cast("type[ResponsePayload]", extension[1])
    try:
        return kio.index.load_response_schema(api_key, api_version)
    except kio.index.KioIndexError as e:
        raise LookupError(f"kio has no response schema for {api_key} v{api_version}") from e


def has_schemas(api_key: int, api_version: int) -> bool:
    """Whether there are request and response classes for (api key, version), from kio's
    index (or ``ext``) without importing them: a node imports a version's module the first
    time a message of it is read or written (``request_schema``)."""
    from .ext import EXTENSIONS

    if (api_key, api_version) in EXTENSIONS:
        return True
    name = api_key_map.get(api_key)
    entities = schema_name_map.get(name, {}).get(api_version, {}) if name is not None else {}
    return EntityType.request in entities and EntityType.response in entities


def import_newest(table: ApiTable) -> None:
    """Imports the request and response classes of each API's newest version in ``table``:
    what a node's peers of the same build and current Kafka brokers speak. A server calls it
    before it serves, so that the first message of each kind does not hold its event loop
    while a module is imported (about 0.25 s for a controller's table, where all versions
    took 0.6 s)."""
    for row in table:
        request_schema(row.api_key, row.max_version)
        response_schema(row.api_key, row.max_version)


@cache
def kio_module(api_key: int, api_version: int, kind: Literal["request", "response"]) -> ModuleType:
    """The module of ``request_schema``'s or ``response_schema``'s class: where the message's
    nested entity classes are (``mod.FeatureUpdateKey``). The one lookup by (API, version)."""
    schema = (
        request_schema(api_key, api_version)
        if kind == "request"
        else response_schema(api_key, api_version)
    )
    return importlib.import_module(schema.__module__)


@dataclass(frozen=True, slots=True)
class ApiVersionRange:
    """One row of the table: an API served at every version in ``[min_version, max_version]``.

    Invariant: ``0 <= min_version <= max_version`` and kio has request and response classes
    for every version in the range (checked by :class:`ApiTable`).
    """

    api_key: int
    min_version: int
    max_version: int

    def __contains__(self, api_version: object) -> bool:
        return isinstance(api_version, int) and self.min_version <= api_version <= self.max_version

    @property
    def versions(self) -> range:
        return range(self.min_version, self.max_version + 1)


class ApiTable:
    """An immutable set of :class:`ApiVersionRange`, at most one per API key."""

    __slots__ = ("_ranges",)

    def __init__(self, ranges: Iterable[ApiVersionRange]) -> None:
        by_key: dict[int, ApiVersionRange] = {}
        for row in ranges:
            if row.api_key in by_key:
                raise ValueError(f"api key {row.api_key} listed twice")
            if not 0 <= row.min_version <= row.max_version:
                raise ValueError(f"bad version range {row}")
            for version in row.versions:
                # A version we promise that kio cannot speak fails here, at import time.
                if not has_schemas(row.api_key, version):
                    raise LookupError(f"kio has no schema for {_name(row.api_key)} v{version}")
            by_key[row.api_key] = row
        self._ranges = dict(sorted(by_key.items()))

    def with_apis(self, *rows: ApiVersionRange) -> ApiTable:
        """A copy with ``rows`` added (replacing any row for the same API key)."""
        keys = {row.api_key for row in rows}
        return ApiTable([*(r for r in self if r.api_key not in keys), *rows])

    def get(self, api_key: int) -> ApiVersionRange | None:
        return self._ranges.get(api_key)

    def supports(self, api_key: int, api_version: int) -> bool:
        row = self._ranges.get(api_key)
        return row is not None and api_version in row

    def __iter__(self) -> Iterator[ApiVersionRange]:
        return iter(self._ranges.values())

    def __len__(self) -> int:
        return len(self._ranges)

    def __contains__(self, api_key: object) -> bool:
        return api_key in self._ranges

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ApiTable) and self._ranges == other._ranges

    def __hash__(self) -> int:
        return hash(tuple(self._ranges.values()))

    def __repr__(self) -> str:
        rows = ", ".join(
            f"{_name(r.api_key)} {r.min_version}-{r.max_version}" for r in self._ranges.values()
        )
        return f"ApiTable({rows})"


def _name(api_key: int) -> str:
    try:
        return ApiKey(api_key).name
    except ValueError:
        return str(api_key)


BROKER_ENDPOINT_TYPE: Final = 1  # DescribeCluster's EndpointType (KIP-919)
CONTROLLER_ENDPOINT_TYPE: Final = 2
