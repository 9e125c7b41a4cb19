"""The typed messages the consensus core consumes and produces.

The core never sees bytes on the wire: the network driver (``pykraft.net``) decodes Kafka
frames with kio and converts them to these values, and converts the core's output back.
The simulator passes these values between nodes directly, which keeps it fast.

Each value mirrors the fields of the Kafka message of the same name (see
``shared/reference/kafka-message-schemas``) restricted to the single metadata partition
``__cluster_metadata-0``; topic and partition checks (UNKNOWN_TOPIC_OR_PARTITION) happen at
the edge. Error fields hold ``kio.schema.errors.ErrorCode`` values.

Envelopes: a request travels as ``Outbound(dst, request_id, body)`` and arrives at the peer as
``Inbound(src, request_id, body)``; the peer answers with an ``Outbound`` to ``src`` carrying
the same ``request_id``. ``RequestFailed`` tells the core that a request it sent will never be
answered (connection refused, timed out at the transport).

Values, not objects to change: nothing writes a field once a message is built. They are
plain slotted dataclasses rather than frozen ones because a frozen dataclass's initializer
sets each field through ``object.__setattr__``, 2.5x the cost of a plain one (0.90 vs 0.36
us for six fields), and the simulator builds several per event: bench_sim's events/s rose
6-8 % with the compiled core (``pykraft.native``) when they stopped being frozen.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from kio.schema.errors import ErrorCode
from typing_extensions import TypeIs

from pykraft.raft.types import Endpoint, OffsetAndEpoch, ReplicaKey

# ---------------------------------------------------------------------------------------
# Vote (API 52); PreVote (KIP-996) is a Vote with pre_vote=True.


@dataclass(slots=True)
class VoteRequest:
    cluster_id: str | None
    candidate_epoch: int  # the candidate's epoch; for a pre-vote, the sender's current epoch
    candidate_key: ReplicaKey
    voter_key: ReplicaKey  # the receiver the request is addressed to (INVALID_VOTER_KEY check)
    last_offset_epoch: int
    last_offset: int  # the sender's log end offset
    pre_vote: bool = False


@dataclass(slots=True)
class VoteResponse:
    error: ErrorCode
    epoch: int
    leader_id: int
    vote_granted: bool
    leader_endpoints: tuple[Endpoint, ...] = ()
    pre_vote: bool = False  # echoes the request (not on the wire: the driver remembers it)


# ---------------------------------------------------------------------------------------
# BeginQuorumEpoch (53) / EndQuorumEpoch (54)


@dataclass(slots=True)
class BeginQuorumEpochRequest:
    cluster_id: str | None
    leader_epoch: int
    leader_id: int
    voter_key: ReplicaKey
    leader_endpoints: tuple[Endpoint, ...] = ()


@dataclass(slots=True)
class BeginQuorumEpochResponse:
    error: ErrorCode
    epoch: int
    leader_id: int
    leader_endpoints: tuple[Endpoint, ...] = ()


@dataclass(slots=True)
class EndQuorumEpochRequest:
    cluster_id: str | None
    leader_epoch: int
    leader_id: int
    preferred_successors: tuple[ReplicaKey, ...]
    leader_endpoints: tuple[Endpoint, ...] = ()


@dataclass(slots=True)
class EndQuorumEpochResponse:
    error: ErrorCode
    epoch: int
    leader_id: int
    leader_endpoints: tuple[Endpoint, ...] = ()


# ---------------------------------------------------------------------------------------
# Fetch (1) and FetchSnapshot (59)


HIGH_WATERMARK_UNSUPPORTED: Final = 2**63 - 1  # FetchRequest v18's default: "not supported"


@dataclass(slots=True)
class FetchRequest:
    cluster_id: str | None
    replica_key: ReplicaKey
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    max_wait_ms: int
    max_bytes: int = 8 * 1024 * 1024
    # KIP-1166 (Fetch v18): the high watermark the fetching replica knows; -1 unknown, and
    # HIGH_WATERMARK_UNSUPPORTED from a peer that sends an older version (Kafka's default).
    high_watermark: int = HIGH_WATERMARK_UNSUPPORTED


@dataclass(slots=True)
class FetchResponse:
    error: ErrorCode
    epoch: int
    leader_id: int
    high_watermark: int
    log_start_offset: int
    records: bytes = b""  # whole v2 batches, moved as raw bytes
    diverging_epoch: OffsetAndEpoch | None = None  # (end offset, epoch) to truncate to
    snapshot_id: OffsetAndEpoch | None = None  # fetch offset below the log start
    leader_endpoints: tuple[Endpoint, ...] = ()


@dataclass(slots=True)
class FetchSnapshotRequest:
    cluster_id: str | None
    replica_key: ReplicaKey
    current_leader_epoch: int
    snapshot_id: OffsetAndEpoch
    position: int
    max_bytes: int = 8 * 1024 * 1024


@dataclass(slots=True)
class FetchSnapshotResponse:
    error: ErrorCode
    epoch: int
    leader_id: int
    snapshot_id: OffsetAndEpoch
    size: int = 0
    position: int = 0
    chunk: bytes = b""
    leader_endpoints: tuple[Endpoint, ...] = ()


# ---------------------------------------------------------------------------------------
# KIP-853 membership: AddRaftVoter (80), RemoveRaftVoter (81), UpdateRaftVoter (82).
# Errors carry a message (Kafka's ErrorMessage) where the schema has one.


@dataclass(slots=True)
class AddRaftVoterRequest:
    cluster_id: str | None
    timeout_ms: int
    voter_key: ReplicaKey  # (VoterId, VoterDirectoryId)
    listeners: tuple[Endpoint, ...]


@dataclass(slots=True)
class AddRaftVoterResponse:
    error: ErrorCode
    error_message: str | None = None


@dataclass(slots=True)
class RemoveRaftVoterRequest:
    cluster_id: str | None
    voter_key: ReplicaKey


@dataclass(slots=True)
class RemoveRaftVoterResponse:
    error: ErrorCode
    error_message: str | None = None


@dataclass(slots=True)
class UpdateRaftVoterRequest:
    cluster_id: str | None
    current_leader_epoch: int
    voter_key: ReplicaKey
    listeners: tuple[Endpoint, ...]
    min_kraft_version: int  # KRaftVersionFeature.MinSupportedVersion
    max_kraft_version: int


@dataclass(slots=True)
class UpdateRaftVoterResponse:
    error: ErrorCode
    leader_id: int = -1  # CurrentLeader (tagged)
    leader_epoch: int = -1
    leader_endpoints: tuple[Endpoint, ...] = ()


# ---------------------------------------------------------------------------------------
# ApiVersions (18), as the leader uses it: a probe of a new voter's supported kraft.version
# range before adding it (D4). The driver sends a real ApiVersions request to ``endpoint`` and
# converts the answer's SupportedFeatures["kraft.version"]; a core receiving this request
# answers with its own range.


@dataclass(slots=True)
class ApiVersionsRequest:
    pass


@dataclass(slots=True)
class ApiVersionsResponse:
    error: ErrorCode
    kraft_versions: tuple[int, int] | None  # (min, max) supported; None: feature absent


# ---------------------------------------------------------------------------------------
# DescribeQuorum (55) v2 for __cluster_metadata-0 (D11)


@dataclass(slots=True)
class DescribeQuorumRequest:
    pass


@dataclass(slots=True)
class ReplicaState:
    replica_key: ReplicaKey
    log_end_offset: int  # -1 when unknown
    last_fetch_timestamp: int = -1
    last_caught_up_timestamp: int = -1


@dataclass(slots=True)
class QuorumNode:
    node_id: int
    listeners: tuple[Endpoint, ...]


@dataclass(slots=True)
class DescribeQuorumResponse:
    error: ErrorCode
    error_message: str | None
    leader_id: int
    leader_epoch: int
    high_watermark: int = -1
    voters: tuple[ReplicaState, ...] = ()
    observers: tuple[ReplicaState, ...] = ()
    nodes: tuple[QuorumNode, ...] = ()  # the voters' endpoints


# ---------------------------------------------------------------------------------------
# UpdateFeatures (57), for the one feature the core owns: kraft.version (D10).


@dataclass(slots=True)
class UpdateFeaturesRequest:
    timeout_ms: int
    kraft_version: int  # the requested finalized level
    allow_downgrade: bool = False  # always refused for kraft.version (INVALID_UPDATE_VERSION)
    validate_only: bool = False


@dataclass(slots=True)
class UpdateFeaturesResponse:
    error: ErrorCode
    error_message: str | None = None


# ---------------------------------------------------------------------------------------
# KIP-642 over the wire: KIP-455's AlterPartitionReassignments (45) and
# ListPartitionReassignments (46) for __cluster_metadata-0 (the edge checks topic and
# partition); ControllerRegistration (70), how a controller tells the leader its endpoints
# and supported kraft.version range (KIP-919), so that observers can become target voters.


@dataclass(slots=True)
class AlterVotersRequest:
    target_ids: tuple[int, ...] | None  # None: cancel (back to the voters it started from)
    timeout_ms: int


@dataclass(slots=True)
class AlterVotersResponse:
    error: ErrorCode
    error_message: str | None = None


@dataclass(slots=True)
class ListVoterReassignmentRequest:
    timeout_ms: int = 30_000  # the wire's TimeoutMs; a listing answers at once


@dataclass(slots=True)
class ListVoterReassignmentResponse:
    """KIP-455's view of the quorum's reassignment: ``replicas`` = current voters and the
    target's, ``adding`` = target - current, ``removing`` = current - target; all empty when
    none is in progress."""

    error: ErrorCode
    error_message: str | None = None
    replicas: tuple[int, ...] = ()
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()


@dataclass(slots=True)
class ControllerRegistrationRequest:
    controller_id: int
    incarnation_id: str
    listeners: tuple[Endpoint, ...]
    min_kraft_version: int
    max_kraft_version: int


@dataclass(slots=True)
class ControllerRegistrationResponse:
    error: ErrorCode
    error_message: str | None = None


RaftRequest = (
    VoteRequest
    | BeginQuorumEpochRequest
    | EndQuorumEpochRequest
    | FetchRequest
    | FetchSnapshotRequest
)
# KIP-853 / D10 / D11 additions (kept apart so that RaftRequest stays what it was).
MembershipRequest = (
    AddRaftVoterRequest
    | RemoveRaftVoterRequest
    | UpdateRaftVoterRequest
    | ApiVersionsRequest
    | DescribeQuorumRequest
    | UpdateFeaturesRequest
    | AlterVotersRequest
    | ListVoterReassignmentRequest
    | ControllerRegistrationRequest
)
RaftResponse = (
    VoteResponse
    | BeginQuorumEpochResponse
    | EndQuorumEpochResponse
    | FetchResponse
    | FetchSnapshotResponse
)
MembershipResponse = (
    AddRaftVoterResponse
    | RemoveRaftVoterResponse
    | UpdateRaftVoterResponse
    | ApiVersionsResponse
    | DescribeQuorumResponse
    | UpdateFeaturesResponse
    | AlterVotersResponse
    | ListVoterReassignmentResponse
    | ControllerRegistrationResponse
)
AnyRequest = RaftRequest | MembershipRequest
AnyResponse = RaftResponse | MembershipResponse
# Every request type, for drivers that must tell requests from responses.
REQUEST_TYPES: tuple[type, ...] = (
    VoteRequest,
    BeginQuorumEpochRequest,
    EndQuorumEpochRequest,
    FetchRequest,
    FetchSnapshotRequest,
    AddRaftVoterRequest,
    RemoveRaftVoterRequest,
    UpdateRaftVoterRequest,
    ApiVersionsRequest,
    DescribeQuorumRequest,
    UpdateFeaturesRequest,
    AlterVotersRequest,
    ListVoterReassignmentRequest,
    ControllerRegistrationRequest,
)


def is_request(body: AnyRequest | AnyResponse) -> TypeIs[AnyRequest]:
    return isinstance(body, REQUEST_TYPES)


@dataclass(slots=True)
class Inbound:
    """A request or response delivered to this node from node ``src``."""

    src: int
    request_id: int
    body: AnyRequest | AnyResponse


@dataclass(slots=True)
class Outbound:
    """A request or response this node asks the driver to send to node ``dst``."""

    dst: int
    request_id: int
    body: AnyRequest | AnyResponse
    # Where to send it when the destination is not a known voter (bootstrap servers,
    # observers): the driver may use it instead of its own address book.
    endpoint: Endpoint | None = field(default=None, compare=False)


@dataclass(slots=True)
class RequestFailed:
    """The request ``request_id`` sent to ``dst`` will never get a response."""

    dst: int
    request_id: int
