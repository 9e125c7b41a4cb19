"""Small value types shared by the consensus core, storage and the simulator.

Kafka's nouns throughout: epoch (not term), high watermark (not commit index), log end
offset, replica key, voter set, observer.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

# Kafka's "no value" sentinels, used on the wire and in the quorum-state file.
NO_LEADER = -1
NO_EPOCH = -1


@dataclass(frozen=True, slots=True, order=True)
class ReplicaKey:
    """A replica identity: its node id plus the directory id of its metadata log.

    A reformatted disk gets a new directory id and is therefore a *different* replica
    with the same id (KIP-853). ``directory_id`` is None where kraft.version 0 does not
    know it.
    """

    id: int
    directory_id: uuid.UUID | None = None

    def __str__(self) -> str:
        return f"{self.id}" if self.directory_id is None else f"{self.id}:{self.directory_id}"

    def names(self, replica: ReplicaKey) -> bool:
        """This key, as a request's addressee, means ``replica`` (D7: INVALID_VOTER_KEY
        otherwise): the same id, and the same directory id where both are known."""
        return self.id == replica.id and (
            self.directory_id is None
            or replica.directory_id is None
            or self.directory_id == replica.directory_id
        )


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
class Endpoint:
    """One listener of a replica: the name of the listener plus host and port. The one
    endpoint type: a ``listeners`` entry (``node.config.Listener``) and an admin client's
    ``RaftVoterEndpoint`` are this class. ``str()`` is Kafka's ``NAME://host:port``."""

    name: str
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"


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
