"""Planted bug (tests/plants/README.md): a voter grants its vote without comparing logs, so a
candidate whose log is behind the committed one can win (Raft's election restriction, B2)."""

from __future__ import annotations

from pykraft.raft import roles


def _ignore_logs(grant):  # type: ignore[no-untyped-def]
    def can_grant_vote(self, candidate, log_ok, pre_vote):  # type: ignore[no-untyped-def]
        return grant(self, candidate, True, pre_vote)

    return can_grant_vote


for _role in (roles.Unattached, roles.Prospective, roles.Candidate, roles.Follower, roles.Resigned):
    if "can_grant_vote" in vars(_role):
        _role.can_grant_vote = _ignore_logs(_role.can_grant_vote)
