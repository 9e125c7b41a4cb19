"""The one table of the APIs the consensus core speaks: for each, the core's request and
response classes, the converters between them and kio's wire messages, who the sender is as
the core sees it, and how long a server may hold the request on purpose.

The node's listener (``node/inbound.py``) and the peer client (``net/client.py``) read
everything from here; adding an API to the core means adding one row and its converters.
Which *versions* a listener serves is the ``protocol.ApiTable`` it is given (``KRAFT_APIS``
plus the rows of ``convert_voters.FEATURE_APIS``, ``convert_reassign.REASSIGNMENT_API_VERSIONS``
and ``node.cluster.CLUSTER_APIS``), as Kafka keeps them apart in ApiMessageType.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from kio.static.protocol import RequestPayload, ResponsePayload

from pykraft.net.convert import (
    error_response_for,
    request_from_kio,
    request_to_kio,
    response_from_kio,
    response_to_kio,
)
from pykraft.net.convert_reassign import reassign_request_from_kio, reassign_response_to_kio
from pykraft.net.convert_voters import (
    voter_request_from_kio,
    voter_request_to_kio,
    voter_response_from_kio,
    voter_response_to_kio,
)
from pykraft.protocol import ApiKey, ErrorCode
from pykraft.raft import messages as m

__all__ = [
    "ADMIN_SOURCE_ID",
    "CORE_APIS",
    "Converters",
    "CoreApi",
    "by_key",
    "by_request",
    "by_response",
]

ADMIN_SOURCE_ID: Final = -1  # the "source" of an admin client's request, for the core


@dataclass(frozen=True, slots=True)
class Converters:
    """One converter module's directions. ``request_to_kio`` and ``response_from_kio`` are
    None for APIs the core only serves. ``unsupported`` is the core's answer when the peer
    speaks no version of the API we do (None: the request simply failed)."""

    request_from_kio: Callable[[RequestPayload, int], Any]  # (message, local node id)
    response_to_kio: Callable[[Any, int, str], ResponsePayload]  # (body, version, listener)
    request_to_kio: Callable[[Any, int], RequestPayload] | None = None  # (body, version)
    response_from_kio: Callable[[ResponsePayload, Any, str], Any] | None = None
    unsupported: Callable[[Any], Any] = lambda _request: None


REPLICATION: Final = Converters(
    request_from_kio=lambda message, local_id: request_from_kio(message, local_id=local_id),
    response_to_kio=lambda body, version, listener: response_to_kio(
        body, version, listener_name=listener
    ),
    request_to_kio=request_to_kio,
    response_from_kio=lambda message, request, listener: response_from_kio(
        message, request=request, listener_name=listener
    ),
    unsupported=lambda request: error_response_for(request, ErrorCode.unsupported_version),
)
"""Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch, FetchSnapshot (``convert.py``)."""

VOTERS: Final = Converters(
    request_from_kio=lambda message, _local_id: voter_request_from_kio(message),
    response_to_kio=lambda body, version, listener: voter_response_to_kio(
        body, version, listener_name=listener
    ),
    request_to_kio=voter_request_to_kio,
    response_from_kio=lambda message, request, listener: voter_response_from_kio(
        message, request=request, listener_name=listener
    ),
)
"""KIP-853's voter changes, DescribeQuorum, UpdateFeatures, ApiVersions (``convert_voters``)."""

REASSIGNMENT: Final = Converters(
    request_from_kio=lambda message, _local_id: reassign_request_from_kio(message),
    response_to_kio=lambda body, version, _listener: reassign_response_to_kio(body, version),
)
"""KIP-642's voter reassignment and KIP-919's ControllerRegistration (``convert_reassign``)."""


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
class CoreApi:
    """One API of the core. ``source``: the sender's id as the core sees it (an admin
    client's is ``ADMIN_SOURCE_ID``); ``hold_ms``: how long the server may take to answer
    on purpose (a long poll, a voter change committing), given the voter-change timeout;
    ``served``: a listener hands it to the core; ``sent``: the core sends it to peers."""

    key: ApiKey
    request: type
    response: type
    converters: Converters
    source: Callable[[Any], int] = _admin
    hold_ms: Callable[[Any, int], int] = _no_hold
    served: bool = True
    sent: bool = False


CORE_APIS: Final = (
    CoreApi(
        ApiKey.VOTE,
        m.VoteRequest,
        m.VoteResponse,
        REPLICATION,
        source=lambda body: body.candidate_key.id,
        sent=True,
    ),
    CoreApi(
        ApiKey.BEGIN_QUORUM_EPOCH,
        m.BeginQuorumEpochRequest,
        m.BeginQuorumEpochResponse,
        REPLICATION,
        source=lambda body: body.leader_id,
        sent=True,
    ),
    CoreApi(
        ApiKey.END_QUORUM_EPOCH,
        m.EndQuorumEpochRequest,
        m.EndQuorumEpochResponse,
        REPLICATION,
        source=lambda body: body.leader_id,
        sent=True,
    ),
    CoreApi(
        ApiKey.FETCH,
        m.FetchRequest,
        m.FetchResponse,
        REPLICATION,
        source=lambda body: body.replica_key.id,
        hold_ms=lambda body, _timeout: int(body.max_wait_ms),  # the long poll (B6)
        sent=True,
    ),
    CoreApi(
        ApiKey.FETCH_SNAPSHOT,
        m.FetchSnapshotRequest,
        m.FetchSnapshotResponse,
        REPLICATION,
        source=lambda body: body.replica_key.id,
        sent=True,
    ),
    CoreApi(
        ApiKey.ADD_RAFT_VOTER,
        m.AddRaftVoterRequest,
        m.AddRaftVoterResponse,
        VOTERS,
        hold_ms=_own_timeout,
        sent=True,  # an auto-joining controller's (D9)
    ),
    CoreApi(
        ApiKey.REMOVE_RAFT_VOTER,
        m.RemoveRaftVoterRequest,
        m.RemoveRaftVoterResponse,
        VOTERS,
        hold_ms=_voter_change,
        sent=True,  # an auto-joining controller removing its old incarnation (D9)
    ),
    CoreApi(
        ApiKey.UPDATE_RAFT_VOTER,
        m.UpdateRaftVoterRequest,
        m.UpdateRaftVoterResponse,
        VOTERS,
        source=lambda body: body.voter_key.id,
        hold_ms=_voter_change,
        sent=True,
    ),
    CoreApi(ApiKey.DESCRIBE_QUORUM, m.DescribeQuorumRequest, m.DescribeQuorumResponse, VOTERS),
    CoreApi(
        ApiKey.UPDATE_FEATURES,
        m.UpdateFeaturesRequest,
        m.UpdateFeaturesResponse,
        VOTERS,
        hold_ms=_own_timeout,
    ),
    CoreApi(
        ApiKey.API_VERSIONS,
        m.ApiVersionsRequest,
        m.ApiVersionsResponse,
        VOTERS,
        served=False,  # the listener answers it itself
        sent=True,  # the leader's probe of a would-be voter's kraft.version range (D4)
    ),
    CoreApi(
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        m.AlterVotersRequest,
        m.AlterVotersResponse,
        REASSIGNMENT,
        hold_ms=_own_timeout,
    ),
    CoreApi(
        ApiKey.LIST_PARTITION_REASSIGNMENTS,
        m.ListVoterReassignmentRequest,
        m.ListVoterReassignmentResponse,
        REASSIGNMENT,
    ),
    CoreApi(
        ApiKey.CONTROLLER_REGISTRATION,
        m.ControllerRegistrationRequest,
        m.ControllerRegistrationResponse,
        REASSIGNMENT,
        source=lambda body: body.controller_id,
    ),
)

_BY_KEY: Final[dict[int, CoreApi]] = {int(api.key): api for api in CORE_APIS if api.served}
_BY_REQUEST: Final = {api.request: api for api in CORE_APIS}
_BY_RESPONSE: Final = {api.response: api for api in CORE_APIS}
assert len(_BY_REQUEST) == len(_BY_RESPONSE) == len(CORE_APIS), "one row per message class"


def by_key(api_key: int) -> CoreApi | None:
    """The row of an inbound request's API, or None when the core does not serve it."""
    return _BY_KEY.get(api_key)


def by_request(body: m.AnyRequest) -> CoreApi:
    return _BY_REQUEST[type(body)]


def by_response(body: m.AnyResponse) -> CoreApi | None:
    return _BY_RESPONSE.get(type(body))
