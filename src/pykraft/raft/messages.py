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
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from pykraft.raft.types import Endpoint, OffsetAndEpoch, ReplicaKey

# ---------------------------------------------------------------------------------------
# Vote (API 52); PreVote (KIP-996) is a Vote with pre_vote=True.


@dataclass(frozen=True, slots=True)
class VoteRequest:
    cluster_id: str | None
    candidate_epoch: int  # the candidate's epoch; for a pre-vote, the sender's current epoch
    candidate_key: ReplicaKey
    voter_key: ReplicaKey  # the receiver the request is addressed to (INVALID_VOTER_KEY check)
    last_offset_epoch: int
    last_offset: int  # the sender's log end offset
    pre_vote: bool = False


@dataclass(frozen=True, slots=True)
class VoteResponse:
    error: ErrorCode
    epoch: int
    leader_id: int
    vote_granted: bool
    leader_endpoints: tuple[Endpoint, ...] = ()
    pre_vote: bool = False  # echoes the request (not on the wire: the driver remembers it)


# ---------------------------------------------------------------------------------------
# BeginQuorumEpoch (53) / EndQuorumEpoch (54)


@dataclass(frozen=True, slots=True)
class BeginQuorumEpochRequest:
    cluster_id: str | None
    leader_epoch: int
    leader_id: int
    voter_key: ReplicaKey
    leader_endpoints: tuple[Endpoint, ...] = ()


@dataclass(frozen=True, slots=True)
class BeginQuorumEpochResponse:
    error: ErrorCode
    epoch: int
    leader_id: int
    leader_endpoints: tuple[Endpoint, ...] = ()


@dataclass(frozen=True, slots=True)
class EndQuorumEpochRequest:
    cluster_id: str | None
    leader_epoch: int
    leader_id: int
    preferred_successors: tuple[ReplicaKey, ...]
    leader_endpoints: tuple[Endpoint, ...] = ()


@dataclass(frozen=True, slots=True)
class EndQuorumEpochResponse:
    error: ErrorCode
    epoch: int
    leader_id: int
    leader_endpoints: tuple[Endpoint, ...] = ()


# ---------------------------------------------------------------------------------------
# Fetch (1) and FetchSnapshot (59)


@dataclass(frozen=True, slots=True)
class FetchRequest:
    cluster_id: str | None
    replica_key: ReplicaKey
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    max_wait_ms: int
    max_bytes: int = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
class FetchSnapshotRequest:
    cluster_id: str | None
    replica_key: ReplicaKey
    current_leader_epoch: int
    snapshot_id: OffsetAndEpoch
    position: int
    max_bytes: int = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class FetchSnapshotResponse:
    error: ErrorCode
    epoch: int
    leader_id: int
    snapshot_id: OffsetAndEpoch
    size: int = 0
    position: int = 0
    chunk: bytes = b""
    leader_endpoints: tuple[Endpoint, ...] = ()


RaftRequest = (
    VoteRequest
    | BeginQuorumEpochRequest
    | EndQuorumEpochRequest
    | FetchRequest
    | FetchSnapshotRequest
)
RaftResponse = (
    VoteResponse
    | BeginQuorumEpochResponse
    | EndQuorumEpochResponse
    | FetchResponse
    | FetchSnapshotResponse
)


@dataclass(frozen=True, slots=True)
class Inbound:
    """A request or response delivered to this node from node ``src``."""

    src: int
    request_id: int
    body: RaftRequest | RaftResponse


@dataclass(frozen=True, slots=True)
class Outbound:
    """A request or response this node asks the driver to send to node ``dst``."""

    dst: int
    request_id: int
    body: RaftRequest | RaftResponse
    # Where to send it when the destination is not a known voter (bootstrap servers,
    # observers): the driver may use it instead of its own address book.
    endpoint: Endpoint | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class RequestFailed:
    """The request ``request_id`` sent to ``dst`` will never get a response."""

    dst: int
    request_id: int
