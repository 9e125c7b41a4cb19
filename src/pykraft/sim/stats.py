"""What a run reports: ``RunStats`` turns what the invariant checker observes (role changes,
high watermark moves, newly committed batches) into ``SimResult`` figures and trace lines.

Availability is measured as *leaderless time*: the simulated time during which no live node
is in the leader role (a leader cut off in a minority partition still counts as a leader
until it resigns by check quorum, as a client talking to it would see). Each maximal
leaderless interval is one unavailability window. Recovery after the heal is measured to the
moment every node applied a record appended after the heal (the probe).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pykraft.sim.config import SimResult
from pykraft.sim.history import CommittedHistory
from pykraft.sim.node import LEADER, SimNode

TraceFn = Callable[..., None]


class RunStats:
    """Invariant: ``leaderless_since_ms`` is None exactly when some live node is leader (as
    last observed)."""

    __slots__ = (
        "_history",
        "_leaders_seen",
        "_nodes",
        "_trace",
        "leaderless_since_ms",
        "post_heal_appends",
        "probe_next_offset",
        "result",
    )

    def __init__(
        self,
        result: SimResult,
        history: CommittedHistory,
        nodes: Sequence[SimNode],
        trace: TraceFn | None,
    ) -> None:
        self.result = result
        self._history = history
        self._nodes = nodes
        self._trace = trace  # None: no trace is written, skip building the lines
        self._leaders_seen: set[tuple[int, int]] = set()
        self.leaderless_since_ms: int | None = 0
        # Appends accepted after the heal: last offset -> epoch. The first of them to commit
        # is the liveness probe.
        self.post_heal_appends: dict[int, int] = {}
        self.probe_next_offset: int | None = None

    # -- the checker's Observer protocol ---------------------------------------------------

    def role_changed(self, node: SimNode, old_role: str, now_ms: int) -> None:
        role = node.obs_role
        result = self.result
        if role == LEADER:
            key = (node.obs_epoch, node.id)
            if key not in self._leaders_seen:
                self._leaders_seen.add(key)
                result.elections += 1
        if role == LEADER or old_role == LEADER:
            self.update_leaderless(now_ms)
        if node.obs_epoch > result.max_epoch:
            result.max_epoch = node.obs_epoch
        if self._trace is not None:
            self._trace(
                node.id,
                "role",
                role=role,
                old_role=old_role,
                epoch=node.obs_epoch,
                leader_id=node.obs_leader,
            )

    def hwm_changed(self, node: SimNode, old: int, now_ms: int) -> None:
        if self._trace is not None:
            self._trace(node.id, "hwm", old=old, new=node.obs_hwm)

    def committed(self, node: SimNode, base_offset: int, next_offset: int, now_ms: int) -> None:
        entry = self._history.by_base[base_offset]
        if self._trace is not None:
            self._trace(
                node.id,
                "commit",
                base_offset=base_offset,
                next_offset=next_offset,
                epoch=entry.epoch,
            )
        if (
            self.probe_next_offset is None
            and self.post_heal_appends.get(next_offset - 1) == entry.epoch
        ):
            self.probe_next_offset = next_offset

    # -- availability ------------------------------------------------------------------------

    def update_leaderless(self, now_ms: int) -> None:
        has_leader = any(n.core is not None and n.obs_role == LEADER for n in self._nodes)
        since = self.leaderless_since_ms
        if has_leader and since is not None:
            self._close_window(now_ms - since)
            self.leaderless_since_ms = None
            if self.result.time_to_first_leader_ms is None:
                self.result.time_to_first_leader_ms = now_ms
        elif not has_leader and since is None:
            self.leaderless_since_ms = now_ms

    def _close_window(self, window_ms: int) -> None:
        result = self.result
        result.leaderless_ms += window_ms
        result.unavailability_windows += 1
        result.max_unavailability_ms = max(result.max_unavailability_ms, window_ms)

    def finish(self, now_ms: int, invariants_checked: int) -> None:
        """Fill in the end-of-run figures."""
        result = self.result
        result.sim_time_ms = now_ms
        if self.leaderless_since_ms is not None:
            self._close_window(now_ms - self.leaderless_since_ms)
            self.leaderless_since_ms = now_ms
        history = self._history
        nodes = self._nodes
        result.committed_offset = history.end_offset
        result.committed_records = history.records
        result.invariants_checked = invariants_checked
        result.snapshots = sum(n.snapshots_created for n in nodes)
        result.snapshots_installed = sum(n.snapshots_installed for n in nodes)
        result.max_epoch = max([result.max_epoch, *(n.max_epoch for n in nodes)])
