"""Planted bug (tests/plants/README.md): fencing a broker (its session expired) writes the
fencing record but moves none of its leaderships nor takes it out of any ISR."""

from __future__ import annotations

from pykraft.controller import brokers, heartbeats

_fence = brokers.fence_records


def _fence_only(image, broker, unclean):  # type: ignore[no-untyped-def]
    return [(record, version) for record, version in _fence(image, broker, unclean)][-1:]


brokers.fence_records = _fence_only
heartbeats.fence_records = _fence_only
