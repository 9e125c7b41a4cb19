"""The one table of the APIs a pykraft node's listener answers and its core sends: for each,
the versions served, who answers it, the core's request and response classes and the
converter module between them and kio's wire messages (``net/convert/``), who the sender is
as the core sees it, and how long a server may hold the request on purpose.

The node's listener (``net/server.py``, ``node/inbound.py``), the peer client
(``net/client.py``) and the admin client read everything from here; adding an API means
adding one row and, for the core's, one converter module. The served version ranges are the
``versions`` column; ``KRAFT_APIS`` (the quorum's RPCs, what a peer speaks) and
``SERVED_APIS`` (everything a node's listener answers) are derived from it. An embedding
application (the metadata controller) adds its own rows at start (``Application.api_rows``),
as Kafka keeps the controller's APIs apart in ApiMessageType.

Why these ranges:

* Fetch 13-18: KRaft needs the tagged fields of flexible Fetch (DivergingEpoch, CurrentLeader,
  SnapshotId, v12+) and topic ids (v13+); v17 adds ReplicaDirectoryId (KIP-853); v18 the
  fetching replica's HighWatermark (KIP-1166), on which the leader answers at once instead of
  holding the long poll (``raft/replication.py``).
* Every other quorum RPC: all versions in Kafka's schemas. AddRaftVoter v1 (KIP-1186
  AckWhenCommitted) is in kio and in newer upstream schemas.
* UpdateFeatures 0-2: v1 replaced AllowDowngrade with UpgradeType; v2 answers only at the top
  level. ListPartitionReassignments v1 is KIP-435's (``protocol/ext.py``).
* Metadata 1-13 and DescribeCluster 0-2: cluster discovery, as Kafka's controllers answer it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from pykraft.net.convert import (
    Converters,
    describe_quorum,
    features,
    fetch,
    fetch_snapshot,
    quorum_epoch,
    reassign,
    registration,
    vote,
    voters,
)
from pykraft.protocol import API_VERSIONS_ROW, ApiKey, ApiTable, ApiVersionRange, ErrorCode
from pykraft.raft import messages as m

__all__ = [
    "ADMIN_SOURCE_ID",
    "KRAFT_APIS",
    "NODE_APIS",
    "SERVED_APIS",
    "Answerer",
    "NodeApi",
    "by_key",
    "by_request",
    "by_response",
]

ADMIN_SOURCE_ID: Final = -1  # the "source" of an admin client's request, for the core


class Answerer(enum.Enum):
    """Who answers a request arriving on a node's listener."""

    CORE = "core"  # decoded, stepped into the consensus core, answered when it responds
    NODE = "node"  # answered at once from the node's state, even during a flush
    LISTENER = "listener"  # the server answers it itself (ApiVersions)
    NONE = "none"  # the core only sends it


_NOT_CONVERTED: Final = Converters()  # an API the core never sees


def _no_hold(_body: Any, _voter_change_timeout_ms: int) -> int:
    return 0


def _own_timeout(body: Any, _voter_change_timeout_ms: int) -> int:
    return int(body.timeout_ms)


def _voter_change(_body: Any, voter_change_timeout_ms: int) -> int:
    """A leader answers a voter change once it committed, or timed out."""
    return voter_change_timeout_ms


def _admin(_body: Any) -> int:
    return ADMIN_SOURCE_ID


@dataclass(frozen=True, slots=True)
class NodeApi:
    """One API of a node. ``versions``: the range served (and sent); ``answerer``: who
    answers it on the listener; ``quorum``: one of the quorum's own RPCs (KIP-595/630/853/
    996), which a peer client speaks; ``request``/``response``/``converters``: the core's
    messages and their wire conversion (None for APIs the core never sees); ``source``: the
    sender's id as the core sees it (an admin client's is ``ADMIN_SOURCE_ID``); ``hold_ms``:
    how long the server may take to answer on purpose (a long poll, a voter change
    committing), given the voter-change timeout; ``sent``: the core sends it to peers."""

    key: ApiKey
    versions: tuple[int, int]
    answerer: Answerer = Answerer.CORE
    quorum: bool = True
    request: type | None = None
    response: type | None = None
    converters: Converters = _NOT_CONVERTED
    source: Callable[[Any], int] = _admin
    hold_ms: Callable[[Any, int], int] = _no_hold
    sent: bool = False

    @property
    def version_range(self) -> ApiVersionRange:
        return ApiVersionRange(self.key, *self.versions)


NODE_APIS: Final = (
    NodeApi(
        ApiKey.API_VERSIONS,
        (API_VERSIONS_ROW.min_version, API_VERSIONS_ROW.max_version),
        Answerer.LISTENER,
        request=m.ApiVersionsRequest,
        response=m.ApiVersionsResponse,
        converters=features.API_VERSIONS_CONVERTERS,
        sent=True,  # the leader's probe of a would-be voter's kraft.version range (D4)
    ),
    NodeApi(
        ApiKey.FETCH,
        (13, 18),
        request=m.FetchRequest,
        response=m.FetchResponse,
        converters=fetch.CONVERTERS,
        source=lambda body: body.replica_key.id,
        hold_ms=lambda body, _timeout: int(body.max_wait_ms),  # the long poll (B6)
        sent=True,
    ),
    NodeApi(
        ApiKey.VOTE,
        (0, 2),
        request=m.VoteRequest,
        response=m.VoteResponse,
        converters=vote.CONVERTERS,
        source=lambda body: body.candidate_key.id,
        sent=True,
    ),
    NodeApi(
        ApiKey.BEGIN_QUORUM_EPOCH,
        (0, 1),
        request=m.BeginQuorumEpochRequest,
        response=m.BeginQuorumEpochResponse,
        converters=quorum_epoch.BEGIN_CONVERTERS,
        source=lambda body: body.leader_id,
        sent=True,
    ),
    NodeApi(
        ApiKey.END_QUORUM_EPOCH,
        (0, 1),
        request=m.EndQuorumEpochRequest,
        response=m.EndQuorumEpochResponse,
        converters=quorum_epoch.END_CONVERTERS,
        source=lambda body: body.leader_id,
        sent=True,
    ),
    NodeApi(
        ApiKey.DESCRIBE_QUORUM,
        (0, 2),
        Answerer.NODE,  # from the core's state at once (the core can answer it too)
        request=m.DescribeQuorumRequest,
        response=m.DescribeQuorumResponse,
        converters=describe_quorum.CONVERTERS,
    ),
    NodeApi(
        ApiKey.FETCH_SNAPSHOT,
        (0, 1),
        request=m.FetchSnapshotRequest,
        response=m.FetchSnapshotResponse,
        converters=fetch_snapshot.CONVERTERS,
        source=lambda body: body.replica_key.id,
        sent=True,
    ),
    NodeApi(
        ApiKey.ADD_RAFT_VOTER,
        (0, 1),
        request=m.AddRaftVoterRequest,
        response=m.AddRaftVoterResponse,
        converters=voters.ADD_CONVERTERS,
        hold_ms=_own_timeout,
        sent=True,  # an auto-joining controller's (D9)
    ),
    NodeApi(
        ApiKey.REMOVE_RAFT_VOTER,
        (0, 0),
        request=m.RemoveRaftVoterRequest,
        response=m.RemoveRaftVoterResponse,
        converters=voters.REMOVE_CONVERTERS,
        hold_ms=_voter_change,
        sent=True,  # an auto-joining controller removing its old incarnation (D9)
    ),
    NodeApi(
        ApiKey.UPDATE_RAFT_VOTER,
        (0, 0),
        request=m.UpdateRaftVoterRequest,
        response=m.UpdateRaftVoterResponse,
        converters=voters.UPDATE_CONVERTERS,
        source=lambda body: body.voter_key.id,
        hold_ms=_voter_change,
        sent=True,
    ),
    NodeApi(
        ApiKey.UPDATE_FEATURES,
        (0, 2),
        quorum=False,
        request=m.UpdateFeaturesRequest,
        response=m.UpdateFeaturesResponse,
        converters=features.UPDATE_FEATURES_CONVERTERS,
        hold_ms=_own_timeout,
    ),
    NodeApi(
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        (0, 1),
        quorum=False,
        request=m.AlterVotersRequest,
        response=m.AlterVotersResponse,
        converters=reassign.ALTER_CONVERTERS,
        hold_ms=_own_timeout,
    ),
    NodeApi(
        ApiKey.LIST_PARTITION_REASSIGNMENTS,
        (0, 1),
        quorum=False,
        request=m.ListVoterReassignmentRequest,
        response=m.ListVoterReassignmentResponse,
        converters=reassign.LIST_CONVERTERS,
    ),
    NodeApi(
        ApiKey.CONTROLLER_REGISTRATION,
        (0, 0),
        quorum=False,
        request=m.ControllerRegistrationRequest,
        response=m.ControllerRegistrationResponse,
        converters=registration.CONVERTERS,
        source=lambda body: body.controller_id,
    ),
    # SASL (docs/kafka/SECURITY-CONTRACT.md 2): the listener answers them itself
    # (net/sasl.py). SaslHandshake v0 (raw tokens without Kafka headers) is not served.
    NodeApi(ApiKey.SASL_HANDSHAKE, (0, 1), Answerer.LISTENER, quorum=False),
    NodeApi(ApiKey.SASL_AUTHENTICATE, (0, 2), Answerer.LISTENER, quorum=False),
    NodeApi(ApiKey.METADATA, (1, 13), Answerer.NODE, quorum=False),
    NodeApi(ApiKey.DESCRIBE_CLUSTER, (0, 2), Answerer.NODE, quorum=False),
)

KRAFT_APIS: Final = ApiTable(api.version_range for api in NODE_APIS if api.quorum)
"""The RPCs of the KRaft quorum (KIP-595, KIP-630, KIP-853, KIP-996) and ApiVersions: what a
peer channel speaks."""
SERVED_APIS: Final = ApiTable(api.version_range for api in NODE_APIS)
"""Everything a node's listener answers before an application adds its own rows."""

_BY_KEY: Final[dict[int, NodeApi]] = {int(api.key): api for api in NODE_APIS}
_BY_REQUEST: Final = {api.request: api for api in NODE_APIS if api.request is not None}
_BY_RESPONSE: Final = {api.response: api for api in NODE_APIS if api.response is not None}
assert len(_BY_REQUEST) == len(_BY_RESPONSE), "one row per message class"


def by_key(api_key: int) -> NodeApi | None:
    """The row of an inbound request's API, or None when the node does not serve it."""
    return _BY_KEY.get(api_key)


def by_request(body: m.AnyRequest) -> NodeApi:
    return _BY_REQUEST[type(body)]


def by_response(body: m.AnyResponse) -> NodeApi | None:
    return _BY_RESPONSE.get(type(body))


# -- the conversions, through the table ---------------------------------------------------
# For callers that hold a message, not a row: the admin client, the tests.


def request_from_kio(message: Any, *, local_id: int) -> m.AnyRequest:
    """The core's view of an inbound request the core serves; raises ``RejectedRequest``."""
    api = _BY_KEY[int(message.__api_key__)]
    decode = api.converters.request_from_kio
    assert decode is not None, api.key
    body: m.AnyRequest = decode(message, local_id)
    return body


def response_to_kio(body: m.AnyResponse, version: int, *, listener_name: str) -> Any:
    """The wire form of the core's response at the request's ``version``."""
    api = by_response(body)
    encode = None if api is None else api.converters.response_to_kio
    assert encode is not None, type(body)
    return encode(body, version, listener_name)


def request_to_kio(body: m.AnyRequest, version: int) -> Any:
    """The wire form of a request the core sends; raises ``VersionTooOld``."""
    encode = by_request(body).converters.request_to_kio
    assert encode is not None, type(body)
    return encode(body, version)


def response_from_kio(message: Any, *, request: m.AnyRequest, listener_name: str) -> Any:
    """The core's view of the answer to ``request``; raises ``InvalidResponse``."""
    decode = by_request(request).converters.response_from_kio
    assert decode is not None, type(request)
    return decode(message, request, listener_name)


def error_answer(request: m.AnyRequest, error: ErrorCode) -> Any:
    """The core's view of an answer to ``request`` that only carries ``error``."""
    answer = by_request(request).converters.error_answer
    assert answer is not None, type(request)
    return answer(request, error)
