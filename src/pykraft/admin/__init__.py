"""An asyncio admin client for a KRaft quorum (Kafka's ``Admin`` quorum calls)::

    async with AdminClient("127.0.0.1:9093") as admin:
        info = await admin.describe_quorum()
        print(info.leader_id, [v.replica_id for v in info.voters])

See :mod:`pykraft.admin.client`.
"""

from pykraft.admin.client import AdminClient
from pykraft.admin.types import (
    AdminError,
    ClusterInfo,
    FeatureInfo,
    QuorumInfo,
    RaftVoterEndpoint,
    ReplicaState,
    VoterReassignment,
)

__all__ = [
    "AdminClient",
    "AdminError",
    "ClusterInfo",
    "FeatureInfo",
    "QuorumInfo",
    "RaftVoterEndpoint",
    "ReplicaState",
    "VoterReassignment",
]
