"""The simulator's events: their kinds (small ints, compared on the hot path), the tuple each
is queued as, and how the last ones are shown when a run fails."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pykraft.sim.trace import describe_message

__all__ = [
    "EVENT_NAMES",
    "EV_APPEND",
    "EV_BROKER",
    "EV_HEAL",
    "EV_NEMESIS",
    "EV_POLL",
    "EV_REFUSED",
    "EV_REQUEST",
    "EV_RESPONSE",
    "Event",
    "format_recent",
]

# Event kinds (small ints: compared on the hot path).
EV_REQUEST = 0  # payload: (destination incarnation, Inbound with the transport id)
EV_RESPONSE = 1  # payload: (transport id, responder id, response body)
EV_POLL = 2  # payload: incarnation
EV_REFUSED = 3  # payload: transport id (destination was down: connection refused)
EV_APPEND = 4
EV_NEMESIS = 5
EV_HEAL = 6  # payload: fault id
EV_BROKER = 7  # payload: a simulated broker's event (pykraft.sim.brokers)
EVENT_NAMES = ("request", "response", "poll", "refused", "append", "nemesis", "heal", "broker")

# (time_ms, sequence, kind, node id, payload). The payload's type depends on the kind (see
# EV_*); it is ``Any`` so that the hot loop unpacks it without casts.
Event = tuple[int, int, int, int, Any]


def format_recent(recent: Iterable[Event]) -> list[str]:
    """The last events of a run as one line each (a violation's report)."""
    lines = []
    for at_ms, index, kind, node_id, payload in recent:
        detail = ""
        if kind == EV_REQUEST:
            _inc, inbound = payload
            detail = f"from {inbound.src}: {describe_message(inbound.body)}"
        elif kind == EV_RESPONSE:
            _tid, responder, body = payload
            detail = f"from {responder}: {describe_message(body)}"
        elif kind == EV_HEAL:
            detail = f"fault {payload}"
        where = f"node {node_id}" if node_id else "cluster"
        lines.append(f"t={at_ms} #{index} {EVENT_NAMES[kind]} {where} {detail}".rstrip())
    return lines
