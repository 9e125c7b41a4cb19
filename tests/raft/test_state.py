"""QuorumState: the KIP-996 transition table, persistence before switching, startup rules."""

from __future__ import annotations

import itertools
import random

import pytest

from pykraft.raft.config import IllegalStateError, RaftConfig
from pykraft.raft.progress import LeaderProgress
from pykraft.raft.roles import (
    Candidate,
    Follower,
    Leader,
    Prospective,
    Resigned,
    Role,
    Unattached,
)
from pykraft.raft.state import TRANSITIONS, QuorumState, is_allowed
from pykraft.raft.types import ElectionState, ReplicaKey
from pykraft.raft.voters import VoterSet
from pykraft.records import build_batch
from pykraft.sim.memory import MemoryLog, MemoryQuorumStateStore

K1, K2 = ReplicaKey(1), ReplicaKey(2)


def role(name: str, epoch: int, voted: ReplicaKey | None = None) -> Role:
    return {
        "unattached": lambda: Unattached(epoch, voted, 0),
        "prospective": lambda: Prospective(epoch, voted, -1, (), 0, 0),
        "candidate": lambda: Candidate(epoch, 0, 1),
        "leader": lambda: Leader(epoch, 0, frozenset(), 0, LeaderProgress(0)),
        "follower": lambda: Follower(epoch, 2, (), voted, 0),
        "resigned": lambda: Resigned(epoch, 0, ()),
    }[name]()


NAMES = ["unattached", "prospective", "candidate", "leader", "follower", "resigned"]
LEGAL = {  # (from, to) -> epoch deltas allowed; "v" = same epoch adding a vote
    ("resigned", "unattached"): {1, 2},
    ("resigned", "follower"): {1, 2},
    ("unattached", "unattached"): {1, 2, "v"},
    ("unattached", "prospective"): {0},
    ("unattached", "follower"): {0, 1, 2},
    ("prospective", "unattached"): {0, 1, 2},
    ("prospective", "prospective"): {"v"},
    ("prospective", "candidate"): {1},
    ("prospective", "follower"): {0, 1, 2},
    ("candidate", "unattached"): {1, 2},
    ("candidate", "prospective"): {0},
    ("candidate", "leader"): {0},
    ("candidate", "follower"): {0, 1, 2},
    ("leader", "unattached"): {1, 2},
    ("leader", "resigned"): {0},
    ("follower", "unattached"): {1, 2},
    ("follower", "prospective"): {0},
    ("follower", "follower"): {1, 2},
}


@pytest.mark.parametrize(("old", "new"), list(itertools.product(NAMES, NAMES)))
def test_every_transition_against_the_table(old: str, new: str) -> None:
    allowed = LEGAL.get((old, new), set())
    for delta in (-1, 0, 1, 2):
        got = is_allowed(role(old, 5), role(new, 5 + delta))
        assert got == (delta in allowed), (old, new, delta)
    if old == new and old in ("unattached", "prospective"):
        assert is_allowed(role(old, 5), role(new, 5, K2)) == ("v" in allowed)
    assert set(TRANSITIONS.get(old, {})) == {t for (f, t) in LEGAL if f == old}


def make(stored: ElectionState | None = None, log_epoch: int = 0, voters=(1, 2, 3), local=1):
    store = MemoryQuorumStateStore()
    if stored is not None:
        store.write(stored)
    log = MemoryLog()
    if log_epoch:
        log.append(build_batch(0, log_epoch, [b"x"], 0))
    qs = QuorumState(
        config=RaftConfig(),
        local_key=ReplicaKey(local),
        voters=VoterSet.from_ids(voters),
        store=store,
        log=log,
        rng=random.Random(0),
        now_ms=0,
    )
    return qs, store


@pytest.mark.parametrize(
    ("stored", "local", "role", "epoch", "leader_id", "voted_key"),
    [
        pytest.param(None, 1, "unattached", 0, -1, None, id="nothing stored"),
        pytest.param(ElectionState(3, 1, K1), 1, "resigned", 3, None, None, id="led this epoch"),
        pytest.param(
            ElectionState(3, voted_key=K1), 1, "candidate", 3, -1, K1, id="voted for itself"
        ),
        pytest.param(ElectionState(3, 2, K1), 1, "follower", 3, 2, K1, id="knew the leader"),
        pytest.param(
            ElectionState(3, voted_key=K2), 1, "unattached", 3, -1, K2, id="voted for another"
        ),
        pytest.param(
            ElectionState(3, voted_key=ReplicaKey(4)),
            4,
            "unattached",
            3,
            -1,
            ReplicaKey(4),
            id="observer",
        ),
    ],
)
def test_startup_role_from_the_stored_election_state(
    stored: ElectionState | None,
    local: int,
    role: str,
    epoch: int,
    leader_id: int | None,
    voted_key: ReplicaKey | None,
) -> None:
    """``leader_id``/``voted_key`` None: not what the case is about."""
    qs, _ = make(stored, local=local)
    assert (qs.role.name, qs.epoch) == (role, epoch)
    if leader_id is not None:
        assert qs.leader_id == leader_id
    if voted_key is not None or role == "unattached":
        assert qs.voted_key == voted_key
    assert qs.is_observer == (local not in (1, 2, 3))


def test_startup_takes_the_log_epoch_when_the_stored_one_is_older() -> None:
    qs, store = make(ElectionState(2), log_epoch=4)
    assert (qs.role.name, qs.epoch, store.read()) == ("unattached", 4, ElectionState(4))


def test_persists_before_switching() -> None:
    qs, store = make()
    seen: list[tuple[str, ElectionState | None]] = []
    qs.on_transition = lambda old, new: seen.append((new.name, store.read()))
    qs.to_unattached(3, 0)
    qs.add_vote(K2, 0)
    assert seen[-1] == ("unattached", ElectionState(3, voted_key=K2))
    with pytest.raises(IllegalStateError):  # one vote per epoch
        qs.add_vote(ReplicaKey(3), 0)


def test_illegal_and_observer_transitions_refused() -> None:
    qs, _ = make()
    with pytest.raises(IllegalStateError):
        qs.to_candidate(0)  # only Prospective becomes Candidate
    with pytest.raises(IllegalStateError):
        qs.to_leader(0, 0, 10)
    obs, _ = make(local=4)
    with pytest.raises(IllegalStateError):
        obs.to_prospective(0)
    obs.to_follower(0, 1, (), 0)
    assert obs.role.name == "follower"


def test_uncommitted_removal_may_still_campaign() -> None:
    """Bug 9: out of the latest voter set but still in the committed one, a replica may
    campaign and lead; out of the committed one too, it may not."""
    qs, _ = make(voters=(2,))  # latest set {2}: 1's removal
    assert qs.is_observer and not qs.may_campaign
    with pytest.raises(IllegalStateError):
        qs.to_prospective(0)
    qs.committed_voter = True  # the removal is above the high watermark
    assert qs.is_observer and qs.may_campaign
    qs.to_prospective(0)
    qs.to_candidate(0)
    qs.to_leader(0, 0, 10)
    qs.committed_voter = False  # the removal committed: resigning is still allowed
    qs.to_resigned(0, ())
    qs.to_unattached(qs.epoch + 1, 0)
    with pytest.raises(IllegalStateError):
        qs.to_prospective(0)


def test_generation_counts_transitions() -> None:
    qs, _ = make()
    g = qs.generation
    qs.to_prospective(0)
    qs.to_candidate(0)
    assert qs.generation == g + 2 and qs.epoch == 1 and qs.voted_key == K1
