"""Small value types shared by the consensus core, storage and the simulator.

Kafka's nouns throughout: epoch (not term), high watermark (not commit index), log end
offset, replica key, voter set, observer.
"""

from __future__ import annotations

from dataclasses import dataclass

# A replica's identity and its listeners are what KRaft's control records carry (VotersRecord,
# LeaderChangeMessage): defined with them in ``records/``, the core's nouns all the same.
from pykraft.records.identity import Endpoint, ReplicaKey

__all__ = [
    "NO_EPOCH",
    "NO_LEADER",
    "ElectionState",
    "Endpoint",
    "OffsetAndEpoch",
    "ReplicaKey",
    "SnapshotId",
]

# Kafka's "no value" sentinels, used on the wire and in the quorum-state file.
NO_LEADER = -1
NO_EPOCH = -1


@dataclass(frozen=True, slots=True, order=True)
class OffsetAndEpoch:
    """An (offset, epoch) pair, e.g. a snapshot id or a DivergingEpoch answer.

    For a snapshot id, ``offset`` is the snapshot's end offset (exclusive).
    Ordering compares offset first, as Kafka's OffsetAndEpoch does.
    """

    offset: int
    epoch: int


SnapshotId = OffsetAndEpoch


@dataclass(frozen=True, slots=True)
class ElectionState:
    """What the ``quorum-state`` file holds (Kafka's QuorumStateData, data_version 1).

    Invariant: ``leader_id != NO_LEADER`` and ``voted_key is not None`` never both hold
    for a leader other than ourselves... except Kafka allows a follower to remember the
    vote it cast in the epoch, so both may be set (KIP-996: followers keep the voted key).
    """

    epoch: int
    leader_id: int = NO_LEADER
    voted_key: ReplicaKey | None = None

    @property
    def has_leader(self) -> bool:
        return self.leader_id != NO_LEADER
