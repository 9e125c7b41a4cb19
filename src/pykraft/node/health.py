"""Health as an orchestrator or an operator asks it, on the metrics port (issue 47): three
answers, each JSON with its reasons, HTTP 200 when it holds and 503 when not.

* ``/health/live``: the process answers and its event loop runs: a step posted to the loop
  comes back within ``LIVE_BOUND_S``. A node wedged on its loop is not live.
* ``/health/ready``: this node is a working member of a working quorum (:func:`readiness`):
  it knows a leader in its epoch; it heard from it within ``controller.quorum.fetch.timeout.ms``
  (the leader: a majority of the voters fetched within it); its high watermark is not stuck
  with records above it for longer than the fetch timeout; a follower is caught up (a Fetch
  answer within the fetch timeout left nothing committed unread); and the application is
  ready (the metadata controller: its image loaded and replayed to the high watermark, the
  active one activated). A port that answers says none of this: a quorum can be wedged for
  hours behind an open port.
* ``/health/safe-to-restart``: stopping this node now keeps a caught-up majority of voters
  (:func:`restart_safety`, the rule Strimzi's KRaft roller applies): from the leader's
  DescribeQuorum, a voter is caught up when its last caught-up time is within the fetch
  timeout of the leader's; the caught-up voters other than this node must still be a
  majority. An observer is always safe; without a leader nothing is.

The facts are read on the node's event loop (:class:`HealthFacts`, taken by the driver); the
rules here are pure functions of them, tested without a node.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from pykraft.controller.log_listener import MetaLogListener
    from pykraft.raft.api import RaftApi

__all__ = [
    "LIVE_BOUND_S",
    "HealthFacts",
    "HwmWatch",
    "Verdict",
    "VoterCatchUp",
    "controller_reasons",
    "readiness",
    "restart_safety",
]

LIVE_BOUND_S: Final = 1.0
# The metadata image may trail the high watermark by this much and be ready (a sync's slice).
READY_BEHIND_RECORDS: Final = 10_000


@dataclass(frozen=True, slots=True)
class Verdict:
    """One endpoint's answer."""

    ok: bool
    reasons: tuple[str, ...] = ()
    facts: dict[str, object] = field(default_factory=dict)

    @property
    def status(self) -> int:
        return 200 if self.ok else 503

    def body(self) -> bytes:
        return json.dumps(
            {"status": "UP" if self.ok else "DOWN", "reasons": list(self.reasons), **self.facts}
        ).encode()


@dataclass(frozen=True, slots=True)
class HealthFacts:
    """What readiness is judged on, read off the core on the loop."""

    node_id: int
    role: str  # raft-metrics current-state
    leader_id: int
    epoch: int
    high_watermark: int
    log_end_offset: int
    fetch_timeout_ms: int
    # Since the leader last answered a Fetch (a follower), or since a majority of the voters
    # last fetched (the leader); None: never in this epoch.
    heard_ms_ago: int | None
    caught_up_ms_ago: int | None  # a non-leader: since a Fetch answer left nothing unread
    hwm_stuck_ms: int  # how long the high watermark has not moved with records above it
    application: tuple[str, ...] = ()  # why the application is not ready

    def as_dict(self) -> dict[str, object]:
        return {
            "node_id": self.node_id,
            "state": self.role,
            "leader_id": self.leader_id,
            "epoch": self.epoch,
            "high_watermark": self.high_watermark,
            "log_end_offset": self.log_end_offset,
        }


def readiness(f: HealthFacts) -> Verdict:
    """``/health/ready`` (module docstring)."""
    reasons: list[str] = []
    timeout = f.fetch_timeout_ms
    if f.leader_id < 0 or f.role not in ("leader", "follower", "observer"):
        reasons.append(f"no known leader: {f.role} in epoch {f.epoch}")
    elif f.heard_ms_ago is None or f.heard_ms_ago > timeout:
        who = "a majority of the voters" if f.role == "leader" else f"leader {f.leader_id}"
        when = "never" if f.heard_ms_ago is None else f"{f.heard_ms_ago} ms ago"
        reasons.append(f"last heard from {who} {when} (fetch timeout {timeout} ms)")
    if f.hwm_stuck_ms > timeout:
        reasons.append(
            f"high watermark stuck at {f.high_watermark} for {f.hwm_stuck_ms} ms with records "
            f"up to {f.log_end_offset} above it"
        )
    if f.role in ("follower", "observer") and (
        f.caught_up_ms_ago is None or f.caught_up_ms_ago > timeout
    ):
        when = "never" if f.caught_up_ms_ago is None else f"{f.caught_up_ms_ago} ms ago"
        reasons.append(f"not caught up with the leader: last caught up {when}")
    reasons.extend(f.application)
    return Verdict(not reasons, tuple(reasons), f.as_dict())


class HwmWatch:
    """How long the high watermark has stood still while records above it waited (updated
    at each look, on the loop)."""

    def __init__(self) -> None:
        self._hwm = -1
        self._since_ms = 0

    def stuck_ms(self, high_watermark: int, log_end_offset: int, now_ms: int) -> int:
        if high_watermark != self._hwm or log_end_offset <= high_watermark:
            self._hwm, self._since_ms = high_watermark, now_ms
            return 0
        return now_ms - self._since_ms


@dataclass(frozen=True, slots=True)
class VoterCatchUp:
    """One voter as the leader's DescribeQuorum lists it."""

    voter_id: int
    last_caught_up_ms: int  # the leader's clock; -1: never


def restart_safety(
    node_id: int,
    leader_id: int,
    voters: Sequence[VoterCatchUp],
    fetch_timeout_ms: int,
) -> Verdict:
    """``/health/safe-to-restart`` (module docstring)."""
    facts: dict[str, object] = {"node_id": node_id, "leader_id": leader_id}
    if node_id not in {v.voter_id for v in voters} and leader_id >= 0:
        return Verdict(True, ("an observer: its restart does not touch the quorum",), facts)
    leader = next((v for v in voters if v.voter_id == leader_id), None)
    if leader_id < 0 or leader is None:
        return Verdict(False, ("no leader: the quorum is not working",), facts)
    caught_up = sorted(
        v.voter_id
        for v in voters
        if v.last_caught_up_ms >= 0
        and leader.last_caught_up_ms - v.last_caught_up_ms < fetch_timeout_ms
    )
    majority = len(voters) // 2 + 1
    remaining = [v for v in caught_up if v != node_id]
    facts.update(voters=sorted(v.voter_id for v in voters), caught_up=caught_up)
    if len(remaining) >= majority:
        why = f"voters {remaining} stay caught up, a majority of {len(voters)}"
        return Verdict(True, (why,), facts)
    why = (
        f"restarting {node_id} leaves {len(remaining)} caught-up voters {remaining}; "
        f"{majority} of {len(voters)} are needed"
    )
    return Verdict(False, (why,), facts)


def controller_reasons(listener: MetaLogListener | None, core: RaftApi) -> list[str]:
    """Why the metadata controller is not ready: not started, its image still loading or
    behind the high watermark, or a leader whose controller is not active yet."""
    if listener is None:
        return ["the metadata controller has not started"]
    if listener.cold or listener.loading:
        return ["the metadata image is still loading"]
    reasons = []
    behind = core.high_watermark - listener.position
    if behind > READY_BEHIND_RECORDS:
        reasons.append(f"the metadata image is {behind} records behind the high watermark")
    if core.role == "leader" and not listener.active:
        reasons.append("the leader's controller is not active yet")
    return reasons
