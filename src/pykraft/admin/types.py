"""What the admin client returns and raises: Kafka's ``Admin`` result types for the quorum
calls (``QuorumInfo``, ``ReplicaState``, ``FeatureInfo``, ...) and :class:`AdminError`."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from pykraft.raft.types import Endpoint

__all__ = [
    "AdminError",
    "ClusterInfo",
    "FeatureInfo",
    "QuorumInfo",
    "RaftVoterEndpoint",
    "ReplicaState",
    "VoterReassignment",
]


class AdminError(Exception):
    """A Kafka error answered to an admin call (``code``), or no answer in time."""

    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        text = code.name.upper() if message is None else f"{code.name.upper()}: {message}"
        super().__init__(text)
        self.code = code
        self.message = message


# One listener of a controller (Kafka's ``RaftVoterEndpoint``): the raft layer's endpoint.
RaftVoterEndpoint = Endpoint


@dataclass(frozen=True, slots=True)
class ReplicaState:
    """A voter or observer as the leader sees it (Kafka's ``QuorumInfo.ReplicaState``).
    Timestamps are wall-clock ms, -1 when unknown; ``directory_id`` is None when unknown."""

    replica_id: int
    directory_id: uuid.UUID | None
    log_end_offset: int
    last_fetch_timestamp: int = -1
    last_caught_up_timestamp: int = -1


@dataclass(frozen=True, slots=True)
class QuorumInfo:
    """DescribeQuorum's answer (Kafka's ``QuorumInfo``). ``voters[0]`` is not necessarily the
    leader: find it by ``leader_id``. ``nodes`` maps voter ids to their endpoints."""

    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[ReplicaState, ...]
    observers: tuple[ReplicaState, ...]
    nodes: dict[int, tuple[RaftVoterEndpoint, ...]]

    @property
    def leader(self) -> ReplicaState | None:
        return next((v for v in self.voters if v.replica_id == self.leader_id), None)


@dataclass(frozen=True, slots=True)
class FeatureInfo:
    """A feature as a node's ApiVersions describes it."""

    name: str
    min_version: int
    max_version: int
    finalized: int | None  # None when not finalized
    epoch: int  # FinalizedFeaturesEpoch (-1: unknown)


@dataclass(frozen=True, slots=True)
class VoterReassignment:
    """KIP-455's listing of the metadata partition during a KIP-642 reassignment."""

    replicas: tuple[int, ...]  # current voters and the target's
    adding: tuple[int, ...]  # target - current
    removing: tuple[int, ...]  # current - target


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    """DescribeCluster's answer: cluster id, the active controller (-1 if unknown), and the
    listed nodes' addresses."""

    cluster_id: str
    controller_id: int
    nodes: dict[int, tuple[str, int]]
