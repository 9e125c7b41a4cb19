"""Planted bug (tests/plants/README.md): an auto-joining controller forgets it was a voter,
so once removed it adds itself back (KAFKA-19850, which Kafka 4.4 still has)."""

from __future__ import annotations

from pykraft.raft import joining

_send = joining.send_follower_requests


def _forgetful(core, role, now_ms):  # type: ignore[no-untyped-def]
    remembered = core.was_voter
    core.was_voter = False
    try:
        _send(core, role, now_ms)
    finally:
        core.was_voter = remembered


joining.send_follower_requests = _forgetful
