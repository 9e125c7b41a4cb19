"""Planted bug (tests/plants/README.md): an unattached voter that already voted in this epoch
grants its vote to another candidate too -- two votes in one epoch (B2)."""

from __future__ import annotations

from pykraft.raft import roles


def _forgetful(self, candidate, log_ok, pre_vote):  # type: ignore[no-untyped-def]
    return log_ok


roles.Unattached.can_grant_vote = _forgetful
