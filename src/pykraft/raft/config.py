"""Configuration and errors of the consensus core."""

from __future__ import annotations

from dataclasses import dataclass


def check_quorum_period_ms(fetch_timeout_ms: int) -> int:
    """B9: a leader resigns when no majority of voters fetched within 1.5 x the fetch timeout
    (Kafka's check-quorum timer). The one place this period is stated."""
    return fetch_timeout_ms * 3 // 2


@dataclass(frozen=True, slots=True)
class RaftConfig:
    """Kafka's quorum configs (SPEC I1 names and defaults), in milliseconds and bytes."""

    election_timeout_ms: int = 1000  # controller.quorum.election.timeout.ms
    fetch_timeout_ms: int = 2000  # controller.quorum.fetch.timeout.ms
    election_backoff_max_ms: int = 1000  # controller.quorum.election.backoff.max.ms
    request_timeout_ms: int = 2000  # controller.quorum.request.timeout.ms
    retry_backoff_ms: int = 20  # controller.quorum.retry.backoff.ms
    fetch_max_wait_ms: int = 500  # long-poll bound a follower asks for
    fetch_max_bytes: int = 8 * 1024 * 1024
    fetch_snapshot_max_bytes: int = 8 * 1024 * 1024
    pre_vote: bool = True  # False only in the simulator, to measure KIP-996's effect
    cluster_id: str | None = None
    kraft_versions: tuple[int, int] = (0, 1)  # (min, max) kraft.version this replica supports
    auto_join: bool = False  # controller.quorum.auto.join.enable (D9)
    voter_change_timeout_ms: int = 30_000  # RemoveRaftVoter / UpdateFeatures / KIP-642 steps
    # Wall-clock milliseconds minus the ``now_ms`` clock. Timers run on ``now_ms`` (a
    # monotonic clock in the driver), but record batches carry Kafka's CreateTime, wall-clock
    # epoch milliseconds: ``now_ms + clock_offset_ms``. The simulator keeps 0.
    clock_offset_ms: int = 0

    @property
    def check_quorum_ms(self) -> int:
        return check_quorum_period_ms(self.fetch_timeout_ms)

    def accepts_cluster(self, cluster_id: str | None) -> bool:
        """B12: a request's non-null ClusterId must equal ours (when we know ours)."""
        return cluster_id is None or self.cluster_id is None or cluster_id == self.cluster_id

    def timestamp_ms(self, now_ms: int) -> int:
        """A record batch's timestamp (CreateTime) at ``now_ms``."""
        return now_ms + self.clock_offset_ms

    def __post_init__(self) -> None:
        assert self.election_timeout_ms > 0 and self.fetch_timeout_ms > 0
        assert self.request_timeout_ms > self.fetch_max_wait_ms >= 0
        assert self.retry_backoff_ms >= 0 and self.election_backoff_max_ms >= 0


class RaftError(Exception):
    """Base of the core's typed errors."""


class NotLeaderError(RaftError):
    """``append`` / leader-only call on a replica that is not the leader (caller's misuse or a
    lost race: retry against ``leader_id``)."""

    def __init__(self, leader_id: int, epoch: int) -> None:
        super().__init__(f"not the leader (leader {leader_id}, epoch {epoch})")
        self.leader_id = leader_id
        self.epoch = epoch


class IllegalStateError(RaftError):
    """A transition outside the KIP-996 table, or another broken local invariant (our bug)."""


class InvalidSnapshotError(RaftError):
    """``create_snapshot`` at an offset that is not committed or below the log start."""
