"""The requests a replica has in flight (Kafka's ``RequestManager``).

Every request the core sends is tracked by id until it is answered, fails, times out or is
forgotten. One request of a kind per destination: ``(dst, kind)`` is busy while one is in
flight, and after a failure it backs off for ``retry_backoff_ms`` (or the delay the caller
asks for). A role transition forgets everything (``clear``): answers to requests sent in an
older role, epoch or generation are then stale and dropped (B12).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class RequestKind(StrEnum):
    """What a request is for: one of each per destination at a time (``RequestManager``).
    The values are the names traces and logs print."""

    VOTE = "vote"  # Vote, pre-vote or not (elections)
    BEGIN = "begin"  # BeginQuorumEpoch (a new leader's)
    END = "end"  # EndQuorumEpoch (a resigning leader's)
    FETCH = "fetch"
    SNAPSHOT = "snapshot"  # FetchSnapshot
    API_VERSIONS = "api_versions"  # a leader probing a new voter's kraft.version range (D10)
    JOIN = "join"  # AddRaftVoter sent by an auto-joining observer (D9)
    UPDATE_VOTER = "update_voter"  # UpdateRaftVoter (D6)


@dataclass(slots=True)
class SentRequest:
    """A request in flight. Invariant: present in ``RequestManager.inflight`` until answered,
    failed, timed out, or forgotten by a transition."""

    dst: int
    kind: RequestKind
    deadline_ms: int
    pre_vote: bool = False


class RequestManager:
    """Request ids, the requests in flight and per-(destination, kind) backoff."""

    __slots__ = ("_backoff", "_busy", "_next_request_id", "inflight")

    def __init__(self) -> None:
        self.inflight: dict[int, SentRequest] = {}
        self._busy: dict[tuple[int, RequestKind], int] = {}  # (dst, kind) -> request id in flight
        self._backoff: dict[tuple[int, RequestKind], int] = {}  # (dst, kind) -> earliest retry
        self._next_request_id = 1

    def track(self, dst: int, kind: RequestKind, deadline_ms: int, pre_vote: bool) -> int:
        """A new request id for a request to ``dst``, in flight until ``deadline_ms``."""
        rid = self._next_request_id
        self._next_request_id += 1
        self.inflight[rid] = SentRequest(dst, kind, deadline_ms, pre_vote)
        self._busy[(dst, kind)] = rid
        return rid

    def pop(self, rid: int) -> SentRequest | None:
        """Stop tracking ``rid`` (answered or failed); None when it is not in flight."""
        req = self.inflight.pop(rid, None)
        if req is not None and self._busy.get((req.dst, req.kind)) == rid:
            del self._busy[(req.dst, req.kind)]
        return req

    def expired(self, now_ms: int) -> list[int]:
        return [rid for rid, r in self.inflight.items() if r.deadline_ms <= now_ms]

    def can_send(self, dst: int, kind: RequestKind, now_ms: int) -> bool:
        return (dst, kind) not in self._busy and self._backoff.get((dst, kind), 0) <= now_ms

    def backoff(self, dst: int, kind: RequestKind, until_ms: int) -> None:
        self._backoff[(dst, kind)] = until_ms

    def next_deadline_ms(self, deadline_ms: int, now_ms: int) -> int:
        """The earlier of ``deadline_ms`` and every timeout and future backoff end."""
        # Called after every input (``Ready.next_deadline_ms``): plain comparisons, no min().
        for r in self.inflight.values():
            if r.deadline_ms < deadline_ms:
                deadline_ms = r.deadline_ms
        for at in self._backoff.values():
            if now_ms < at < deadline_ms:
                deadline_ms = at
        return deadline_ms

    def clear(self) -> None:
        """Forget every request and backoff (a role transition)."""
        self.inflight.clear()
        self._busy.clear()
        self._backoff.clear()
