"""The simulated network: latency, per-message faults and per-link faults.

Every directed link ``src -> dst`` (node ids ``1..n``) delivers in FIFO order, like a TCP
connection, unless a message is picked for reordering, in which case it keeps its own random
latency and may overtake earlier messages. A link can be *blocked* (partitions: a counter, so
that overlapping partitions heal independently) or *lossy* (its own drop rate on top of the
profile's). ``route`` answers when the copies of one message arrive: no time (dropped), one,
or two (duplicated).

All randomness comes from the ``random.Random`` handed in (a sub-stream of the run's seed).
"""

from __future__ import annotations

import random

from pykraft.sim.profiles import FaultProfile

# Why ``route`` returned no delivery (for the trace and the stats).
DROP_NONE = ""
DROP_BLOCKED = "blocked"
DROP_RANDOM = "drop"
DROP_LINK = "link_loss"


class Network:
    """Invariant: ``blocked[s][d] >= 0``; ``last_delivery_ms[s][d]`` is the delivery time of
    the last in-order message on ``s -> d`` (FIFO is kept by never scheduling before it)."""

    __slots__ = (
        "_drop_rate",
        "_dup_rate",
        "_last_delivery_ms",
        "_latency_min_ms",
        "_latency_span",
        "_reorder_rate",
        "_rng",
        "blocked",
        "drop_reason",
        "link_drop",
        "node_ids",
    )

    def __init__(self, node_ids: range, profile: FaultProfile, rng: random.Random) -> None:
        assert node_ids.start == 1, node_ids
        size = node_ids.stop
        self.node_ids = node_ids
        self._rng = rng
        self.blocked = [[0] * size for _ in range(size)]
        self.link_drop = [[0.0] * size for _ in range(size)]
        self._last_delivery_ms = [[0] * size for _ in range(size)]
        self._drop_rate = profile.drop_rate
        self._dup_rate = profile.duplicate_rate
        self._reorder_rate = profile.reorder_rate
        self._latency_min_ms = profile.latency_min_ms
        self._latency_span = profile.latency_max_ms - profile.latency_min_ms + 1
        self.drop_reason = DROP_NONE

    def latency_ms(self) -> int:
        return self._latency_min_ms + int(self._rng.random() * self._latency_span)

    def route(self, src: int, dst: int, now_ms: int) -> tuple[int, ...]:
        """Delivery times of the copies of one message sent now (empty: lost; then
        ``drop_reason`` says why)."""
        if self.blocked[src][dst]:
            self.drop_reason = DROP_BLOCKED
            return ()
        rng = self._rng
        if self._drop_rate and rng.random() < self._drop_rate:
            self.drop_reason = DROP_RANDOM
            return ()
        link_drop = self.link_drop[src][dst]
        if link_drop and rng.random() < link_drop:
            self.drop_reason = DROP_LINK
            return ()
        at_ms = now_ms + self._latency_min_ms + int(rng.random() * self._latency_span)
        if not (self._reorder_rate and rng.random() < self._reorder_rate):
            last = self._last_delivery_ms[src]
            if at_ms < last[dst]:
                at_ms = last[dst]
            last[dst] = at_ms
        if self._dup_rate and rng.random() < self._dup_rate:
            return (at_ms, now_ms + self.latency_ms())
        return (at_ms,)

    # -- faults --------------------------------------------------------------------------

    def block(self, links: list[tuple[int, int]]) -> None:
        for src, dst in links:
            self.blocked[src][dst] += 1

    def unblock(self, links: list[tuple[int, int]]) -> None:
        for src, dst in links:
            assert self.blocked[src][dst] > 0, (src, dst)
            self.blocked[src][dst] -= 1

    def heal_all(self) -> None:
        """The heal phase: no blocked or lossy links and no per-message faults from now on;
        latency stays."""
        for row in self.blocked:
            row[:] = [0] * len(row)
        for lrow in self.link_drop:
            lrow[:] = [0.0] * len(lrow)
        self._drop_rate = self._dup_rate = self._reorder_rate = 0.0

    def partition_links(self, side: list[int]) -> list[tuple[int, int]]:
        """Both directions of every link between ``side`` and the other nodes."""
        inside = set(side)
        others = [n for n in self.node_ids if n not in inside]
        links = [(a, b) for a in side for b in others]
        return links + [(b, a) for a, b in links]
