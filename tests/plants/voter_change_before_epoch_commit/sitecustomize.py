"""Planted bug (tests/plants/README.md): a new leader changes the voter set before a record of
its own epoch is committed (the 2015 single-server membership bug)."""

from __future__ import annotations

from pykraft.raft import membership


def _early(core, leader):  # type: ignore[no-untyped-def]
    return not core.uncommitted_voter_change


membership.ready_to_change = _early
