"""A replica's identity and its listeners: what KRaft's control records (VotersRecord,
LeaderChangeMessage's voters) carry, and the nouns the consensus core (``raft/types.py``
re-exports them), storage and the tools share. Values only.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

__all__ = ["Endpoint", "ReplicaKey"]


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
