"""Planted bug (tests/plants/README.md): when neither the ISR nor the ELR holds a replica that
can lead, the controller elects any live replica anyway and calls it a clean election
(unclean.leader.election.enable ignored, the partition not marked RECOVERING)."""

from __future__ import annotations

from pykraft.controller import partition_change

_choose = partition_change.choose_leader


def _any_live(acceptable, replicas, isr, current, election="default", **kwargs):  # type: ignore[no-untyped-def]
    leader, unclean = _choose(acceptable, replicas, isr, current, election, **kwargs)
    if leader < 0:
        for replica in replicas:
            if acceptable(replica):
                return replica, False
    return leader, unclean


partition_change.choose_leader = _any_live
