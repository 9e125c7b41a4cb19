"""progress.py: a leader's view of its replicas, tested alone (no core, no log, no messages)."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from pykraft.raft.progress import FOREVER, LeaderProgress
from pykraft.raft.quorum import majority_size
from pykraft.raft.types import ReplicaKey
from pykraft.raft.voters import VoterInfo, VoterSet

CHECK_MS = 1_500
WINDOW_MS = 2_000


def key(replica_id: int, directory: int | None = None) -> ReplicaKey:
    return ReplicaKey(replica_id, None if directory is None else uuid.UUID(int=directory))


def voters(*ids: int) -> VoterSet:
    return VoterSet({i: VoterInfo(key(i)) for i in ids})


def started(*ids: int, local: int = 1, deadline_ms: int = CHECK_MS) -> LeaderProgress:
    return LeaderProgress.start(voters(*ids), local, deadline_ms)


def fetch(
    progress: LeaderProgress,
    replica: ReplicaKey,
    *,
    at: int,
    offset: int,
    leader_end: int,
    among: VoterSet,
    leader_is_voter: bool = True,
) -> None:
    p = progress.note_fetch(replica, among, leader_is_voter, at, CHECK_MS)
    LeaderProgress.note_position(p, offset, leader_end, at)


def test_start_knows_the_other_voters_and_no_one_else() -> None:
    progress = started(1, 2, 3)
    assert sorted(progress.voters) == [2, 3]
    assert not progress.observers and progress.check_quorum_deadline_ms == CHECK_MS


def test_a_fetch_from_an_unknown_replica_makes_it_an_observer() -> None:
    progress = started(1, 2, 3)
    fetch(progress, key(9), at=10, offset=4, leader_end=4, among=voters(1, 2, 3))
    assert progress.find(key(9)) is progress.observers[key(9)]
    assert progress.end_offset(key(9)) == 4 and progress.caught_up(key(9), 10, WINDOW_MS)


def test_an_old_incarnation_of_a_voter_is_not_that_voter() -> None:
    """KIP-853: a reformatted disk is another replica with the same id."""
    ids = VoterSet({1: VoterInfo(key(1, 1)), 2: VoterInfo(key(2, 2)), 3: VoterInfo(key(3, 3))})
    progress = LeaderProgress.start(ids, 1, CHECK_MS)
    fetch(progress, key(2, 99), at=10, offset=7, leader_end=7, among=ids)
    assert progress.voters[2].last_fetch_ms == -1  # the voter itself was not heard from
    assert progress.end_offset(key(2, 99)) == 7 and progress.end_offset(key(2, 2)) == -1
    progress.note_fetch(key(2, 99), ids, True, 20, CHECK_MS)
    assert not progress.fetched_since_check  # it does not count toward check quorum


@given(
    st.lists(st.integers(0, 100), min_size=2, max_size=6),
    st.one_of(st.none(), st.integers(0, 100)),
)
def test_high_watermark_candidate_is_reached_by_a_majority(
    follower_offsets: list[int], own_flushed: int | None
) -> None:
    """B7 + B13: the leader's flushed offset is one of the counts unless it is not a voter
    (D5); then a majority of the others alone must reach it."""
    n = len(follower_offsets) + 1
    ids = tuple(range(1, n + 1))
    progress = started(*ids)
    for replica, offset in zip(ids[1:], follower_offsets, strict=True):
        fetch(progress, key(replica), at=1, offset=offset, leader_end=100, among=voters(*ids))
    candidate = progress.high_watermark_candidate(n, own_flushed)
    counted = follower_offsets + ([] if own_flushed is None else [own_flushed])
    if candidate >= 0:
        assert sum(o >= candidate for o in counted) >= majority_size(n)
        assert sum(o > candidate for o in counted) < majority_size(n)
    else:
        assert len(counted) < majority_size(n)


def test_a_leader_outside_its_voter_set_does_not_count_itself() -> None:
    """D5: voters {2, 3} (the leader 1 removing itself): one follower at 10 is no majority."""
    progress = started(1, 2, 3)
    progress.sync(voters(2, 3), 1, False, 0, CHECK_MS)
    fetch(
        progress, key(2), at=5, offset=10, leader_end=10, among=voters(2, 3), leader_is_voter=False
    )
    assert progress.high_watermark_candidate(2, None) == -1
    fetch(
        progress, key(3), at=6, offset=8, leader_end=10, among=voters(2, 3), leader_is_voter=False
    )
    assert progress.high_watermark_candidate(2, None) == 8
    # And toward check quorum: the window restarted only when both fetched.
    assert progress.check_quorum_deadline_ms == 6 + CHECK_MS


def test_check_quorum_window_restarts_when_a_majority_fetched() -> None:
    """B9: 5 voters, the leader counts itself: two followers make a majority of three."""
    ids = voters(1, 2, 3, 4, 5)
    progress = started(1, 2, 3, 4, 5)
    progress.note_fetch(key(2), ids, True, 100, CHECK_MS)
    progress.note_fetch(key(2), ids, True, 200, CHECK_MS)  # the same voter twice: still one
    assert progress.check_quorum_deadline_ms == CHECK_MS
    progress.note_fetch(key(9), ids, True, 250, CHECK_MS)  # an observer never counts
    assert progress.check_quorum_deadline_ms == CHECK_MS
    progress.note_fetch(key(4), ids, True, 300, CHECK_MS)
    assert progress.check_quorum_deadline_ms == 300 + CHECK_MS
    assert not progress.fetched_since_check
    assert not progress.check_quorum_lost(300 + CHECK_MS - 1)
    assert progress.check_quorum_lost(300 + CHECK_MS)


def test_caught_up_as_of_the_previous_fetch() -> None:
    """Kafka's refinement: reaching where the log ended at the previous fetch means the
    replica was caught up at the previous fetch's time."""
    progress = started(1, 2, 3)
    ids = voters(1, 2, 3)
    fetch(progress, key(2), at=100, offset=0, leader_end=50, among=ids)
    assert progress.voters[2].last_caught_up_ms == -1
    fetch(progress, key(2), at=300, offset=50, leader_end=80, among=ids)
    assert progress.voters[2].last_caught_up_ms == 100
    assert progress.caught_up(key(2), 100 + WINDOW_MS, WINDOW_MS)
    assert not progress.caught_up(key(2), 101 + WINDOW_MS, WINDOW_MS)
    fetch(progress, key(2), at=400, offset=80, leader_end=80, among=ids)
    assert progress.voters[2].last_caught_up_ms == 400


def test_is_up_is_a_fetch_within_the_window() -> None:
    progress = started(1, 2, 3)
    assert not progress.is_up(key(2), 0, WINDOW_MS)  # never heard from
    progress.note_fetch(key(2), voters(1, 2, 3), True, 1_000, CHECK_MS)
    assert progress.is_up(key(2), 1_000 + WINDOW_MS, WINDOW_MS)
    assert not progress.is_up(key(2), 1_001 + WINDOW_MS, WINDOW_MS)


def test_sync_keeps_progress_across_promotion_and_demotion() -> None:
    progress = started(1, 2, 3)
    fetch(progress, key(4), at=10, offset=6, leader_end=6, among=voters(1, 2, 3))
    fetch(progress, key(3), at=11, offset=5, leader_end=6, among=voters(1, 2, 3))
    progress.sync(voters(1, 2, 4), 1, False, 20, CHECK_MS)  # 4 promoted, 3 demoted
    assert sorted(progress.voters) == [2, 4] and progress.voters[4].end_offset == 6
    assert progress.observers[key(3)].end_offset == 5
    assert progress.successors() == (key(4), key(2))  # most caught up first


def test_sync_stops_check_quorum_for_a_lone_voter_and_restarts_it_after() -> None:
    progress = started(1, 2)
    progress.note_fetch(key(2), voters(1, 2), True, 0, CHECK_MS)
    progress.sync(voters(1), 1, True, 50, CHECK_MS)
    assert progress.check_quorum_deadline_ms == FOREVER and not progress.fetched_since_check
    progress.sync(voters(1, 2), 1, False, 70, CHECK_MS)
    assert progress.check_quorum_deadline_ms == 70 + CHECK_MS
