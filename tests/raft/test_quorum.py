"""quorum.py: majority arithmetic."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pykraft.raft.quorum import (
    VoteResult,
    majority_offset,
    majority_size,
    vote_result,
)


def test_majority_size() -> None:
    assert [majority_size(n) for n in range(1, 8)] == [1, 2, 2, 3, 3, 4, 4]


def test_majority_offset() -> None:
    assert majority_offset([5], 1) == 5
    assert majority_offset([5, 3, 9], 3) == 5
    assert majority_offset([5, 3], 3) == 3  # the third voter has not reported
    assert majority_offset([5], 3) == -1
    assert majority_offset([1, 2, 3, 4, 5], 5) == 3
    assert majority_offset([10, 10, 0, 0], 4) == 0  # 4 voters need 3


@given(st.lists(st.integers(0, 100), min_size=1, max_size=9), st.integers(0, 4))
def test_majority_offset_is_reached_by_a_majority(offsets: list[int], missing: int) -> None:
    n = len(offsets) + missing
    hwm = majority_offset(offsets, n)
    if hwm >= 0:
        assert sum(o >= hwm for o in offsets) >= majority_size(n)
        assert sum(o > hwm for o in offsets) < majority_size(n)  # the largest such offset


def test_vote_result() -> None:
    assert vote_result({1}, set(), 1) is VoteResult.WON
    assert vote_result({1}, set(), 3) is VoteResult.PENDING
    assert vote_result({1, 2}, set(), 3) is VoteResult.WON
    assert vote_result({1}, {2}, 3) is VoteResult.PENDING
    assert vote_result({1}, {2, 3}, 3) is VoteResult.LOST
    assert vote_result({1, 2}, {3, 4}, 5) is VoteResult.PENDING
    assert vote_result({1}, {2, 3}, 4) is VoteResult.LOST  # 4 voters need 3 grants
