"""Majority arithmetic for the voter set, kept apart from the roles (like etcd's
``quorum/majority.go``) so that it can be tested on its own.

Everything here is a pure function of small collections; nothing knows about roles or time.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Iterable


def majority_size(voter_count: int) -> int:
    """The smallest number of voters that forms a majority: ``n // 2 + 1``.

    Invariant: any two sets of this size drawn from the same ``voter_count`` voters intersect.
    """
    assert voter_count > 0, voter_count
    return voter_count // 2 + 1


def majority_offset(offsets: Iterable[int], voter_count: int) -> int:
    """The largest offset reached by a majority of ``voter_count`` voters.

    ``offsets`` holds one end offset per voter that reported one; voters missing from it count
    as offset -1 (nothing known). Returns -1 when no majority has reported. This is the
    candidate high watermark; the caller applies the epoch and monotonicity rules (B4, B7).
    """
    need = majority_size(voter_count)
    ranked = sorted(offsets, reverse=True)
    assert len(ranked) <= voter_count, (ranked, voter_count)
    return ranked[need - 1] if len(ranked) >= need else -1


class VoteResult(enum.Enum):
    PENDING = "pending"
    WON = "won"
    LOST = "lost"


def vote_result(
    granted: Collection[int], rejected: Collection[int], voter_count: int
) -> VoteResult:
    """The outcome of an election (or pre-vote) among ``voter_count`` voters.

    Won once a majority granted; lost once so many rejected that a majority can no longer
    grant; pending otherwise. ``granted`` and ``rejected`` must be disjoint.
    """
    need = majority_size(voter_count)
    if len(granted) >= need:
        return VoteResult.WON
    if voter_count - len(rejected) < need:
        return VoteResult.LOST
    return VoteResult.PENDING
