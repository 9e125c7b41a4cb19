"""Planted bug (tests/plants/README.md): an election is won with half of the voters rather
than a majority (``majority_size`` off by one), so two candidates of one epoch can both win
with four or more voters."""

from __future__ import annotations

from pykraft.raft import quorum


def _half(voter_count):  # type: ignore[no-untyped-def]
    return max(1, voter_count // 2)


quorum.majority_size = _half
