"""voters.py: the static voter set behind a replica-key interface."""

from __future__ import annotations

import uuid

from pykraft.raft.types import Endpoint, ReplicaKey
from pykraft.raft.voters import VoterInfo, VoterSet


def test_from_ids() -> None:
    ep = (Endpoint("CONTROLLER", "h", 9093),)
    vs = VoterSet.from_ids([3, 1, 2, 2], endpoints={1: ep})
    assert vs.ids == frozenset({1, 2, 3}) and len(vs) == 3 and vs.majority_size == 2
    assert vs.keys == (ReplicaKey(1), ReplicaKey(2), ReplicaKey(3))
    assert vs.endpoints(1) == ep and vs.endpoints(2) == () and vs.endpoints(9) == ()
    assert vs.others(2) == (1, 3)
    assert vs.is_voter(ReplicaKey(1)) and not vs.is_voter(ReplicaKey(4))


def test_directory_ids_distinguish_replicas() -> None:
    d1, d2 = uuid.uuid4(), uuid.uuid4()
    vs = VoterSet({1: VoterInfo(ReplicaKey(1, d1))})
    assert vs.is_voter(ReplicaKey(1, d1))
    assert vs.is_voter(ReplicaKey(1))  # directory id unknown to the asker (kraft.version 0)
    assert not vs.is_voter(ReplicaKey(1, d2))  # a reformatted disk is another replica
