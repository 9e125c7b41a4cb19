"""What the controller's request path reads of a request before the controller sees it: which
requests the quorum answers itself (kraft.version alone, the metadata partition's
reassignment), a kraft.version upgrade that comes with other features, the caller, the
request's own timeout and how long it may wait to be processed (its deadline); and the voter
set's reassignment a ListPartitionReassignments answer adds (KIP-642).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, cast

from pykraft.controller.authorization import Caller
from pykraft.controller.quorum_controller import METADATA_TOPIC
from pykraft.controller.result import Response
from pykraft.net.convert import KRAFT_VERSION_FEATURE
from pykraft.net.convert.reassign import progress_listing
from pykraft.net.security import Session
from pykraft.protocol import ApiKey
from pykraft.raft.api import RaftApi

__all__ = [
    "REASSIGNMENT_KEYS",
    "add_voter_reassignment",
    "caller_of",
    "deadline_ms",
    "kraft_version_upgrade",
    "only_kraft_version",
    "only_metadata_partition",
    "timeout_ms",
]

REASSIGNMENT_KEYS: Final = frozenset(
    {ApiKey.ALTER_PARTITION_REASSIGNMENTS, ApiKey.LIST_PARTITION_REASSIGNMENTS}
)


def only_metadata_partition(m: Any) -> bool:
    topics: Any = getattr(m, "topics", None)
    return bool(topics) and all(t.name == METADATA_TOPIC for t in topics)


def caller_of(session: Session, client_id: str | None = None) -> Caller:
    principal = session.principal
    return Caller(
        str(principal),
        session.client_host,
        session.forwarded,
        principal.token_authenticated,
        session.security_protocol.name,
        client_id or "",
    )


def only_kraft_version(m: Any) -> bool:
    updates = getattr(m, "feature_updates", ())
    return bool(updates) and all(u.feature == KRAFT_VERSION_FEATURE for u in updates)


def timeout_ms(m: Any) -> int:
    """The request's ``timeout`` / ``timeout_ms`` field in milliseconds (0: none)."""
    value = getattr(m, "timeout", None)
    if value is None:
        value = getattr(m, "timeout_ms", None)
    if value is None:
        return 0
    if hasattr(value, "total_seconds"):
        return int(value.total_seconds() * 1000)
    return int(value)


def kraft_version_upgrade(m: Any, current: int) -> int | None:
    """The kraft.version level an UpdateFeatures asks for beside other features, when it is
    above ``current`` (``kafka-features upgrade --release-version`` sends it with them); else
    None (the controller answers kraft.version at its current level, or refuses a downgrade)."""
    for update in getattr(m, "feature_updates", ()):
        if update.feature == KRAFT_VERSION_FEATURE and int(update.max_version_level) > current:
            return int(update.max_version_level)
    return None


def deadline_ms(api_key: int, m: Any, heartbeat_interval_ms: int) -> int | None:
    """How long a request may wait before it is processed, as Kafka's ControllerApis gives
    its events a deadline: a BrokerHeartbeat two heartbeat intervals, a request with its
    own timeout that long; None: no deadline."""
    if api_key == ApiKey.BROKER_HEARTBEAT:
        return 2 * heartbeat_interval_ms
    own = timeout_ms(m)
    return own if own > 0 else None


def add_voter_reassignment(core: RaftApi, m: Any, response: Response) -> Response:
    """ListPartitionReassignments of everything (or naming the metadata partition) also
    lists the voter set's move (KIP-642), which the quorum keeps."""
    topics = m.topics
    named = topics is None or any(t.name == METADATA_TOPIC for t in topics)
    if not named or core.role != "leader":
        return response
    listing = progress_listing(core.reassignment_progress())
    if listing is None:
        return response
    topics = cast(Sequence[object], response.get("topics", ()))
    return {**response, "topics": [*topics, listing]}
