"""What a driver may call on the core: :class:`RaftApi`, the names ``docs/CONTRACTS.md``
documents, as a ``Protocol`` that ``RaftCore`` satisfies structurally.

The node (``pykraft.node``) holds its core as a ``RaftApi``, so mypy refuses a driver that
reaches for the core's plumbing -- the ``CoreContext`` calls its modules share (``send``,
``append_own``, ``set_high_watermark``, ...). This is the split Kafka makes between
``RaftClient`` and ``KafkaRaftClient``, and etcd between ``RawNode`` and ``raft``, without a
forwarding object on the hot path. The simulator and the tests construct ``RaftCore`` itself:
they check its invariants from the inside.

=========================  ============================================================
group                      members
=========================  ============================================================
drive (the Ready loop)     ``step``, ``poll``, ``append``, ``schedule_append``,
                           ``drain_scheduled``, ``scheduled_count``, ``on_flushed``,
                           ``ready``, ``create_snapshot``, ``delete_before_snapshot``,
                           ``shutdown``
admin (KIP-853, KIP-642)   ``add_voter``, ``remove_voter``, ``update_kraft_version``,
                           ``set_target_voters``, ``describe_quorum``,
                           ``reassignment_progress``
observe (metrics, tools)   ``role``, ``leader_epoch_start_offset``, ``state``,
                           ``is_observer``, ``epoch``, ``leader_id``,
                           ``voted_key``, ``high_watermark``, ``voters``, ``kraft_version``,
                           ``voter_history``, ``voter_change``, ``uncommitted_voter_change``,
                           ``target_voters``
configure / read storage   ``config``, ``local_key``, ``endpoints``, ``log``, ``snapshots``,
                           ``snapshot_retention``, ``on_transition``, ``on_log``
=========================  ============================================================
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pykraft.raft.config import RaftConfig
    from pykraft.raft.control import LogHistory
    from pykraft.raft.interfaces import Ready, ReplicatedLog, SnapshotStore, SnapshotWriter
    from pykraft.raft.membership import PendingChange
    from pykraft.raft.messages import DescribeQuorumResponse, Inbound, RequestFailed
    from pykraft.raft.reassignment import ReassignmentProgress
    from pykraft.raft.roles import Role
    from pykraft.raft.snapshots import RaftSnapshotWriter
    from pykraft.raft.types import Endpoint, OffsetAndEpoch, ReplicaKey
    from pykraft.raft.voters import VoterInfo, VoterSet

__all__ = ["CoreView", "RaftApi"]


class CoreView(Protocol):
    """What the driver and the core's own modules (``context.CoreContext``) both read: the
    replica's identity, configuration and storage, and the state of the quorum."""

    config: RaftConfig
    local_key: ReplicaKey
    endpoints: tuple[Endpoint, ...]
    log: ReplicatedLog
    snapshots: SnapshotStore
    high_watermark: int

    @property
    def state(self) -> Role: ...

    @property
    def is_observer(self) -> bool: ...

    @property
    def epoch(self) -> int: ...

    @property
    def leader_id(self) -> int: ...

    @property
    def voters(self) -> VoterSet: ...

    @property
    def uncommitted_voter_change(self) -> bool: ...


class RaftApi(CoreView, Protocol):
    """The core as a driver sees it (see the module docstring's table)."""

    snapshot_retention: Callable[[OffsetAndEpoch, ReplicatedLog], OffsetAndEpoch | None]
    on_transition: Callable[[Role, Role], None] | None
    on_log: Callable[[str, int, bytes], None] | None

    # -- drive -----------------------------------------------------------------------------

    def step(self, message: Inbound | RequestFailed, now_ms: int) -> None: ...

    def poll(self, now_ms: int) -> None: ...

    def append(self, values: Sequence[bytes], now_ms: int) -> int: ...

    def schedule_append(self, values: Sequence[bytes]) -> int: ...

    def drain_scheduled(self, now_ms: int) -> int | None: ...

    @property
    def scheduled_count(self) -> int: ...

    def on_flushed(self, now_ms: int) -> None: ...

    def on_snapshot_durable(self, writer: SnapshotWriter, valid: bool, now_ms: int) -> None: ...

    def ready(self, now_ms: int) -> Ready: ...

    def create_snapshot(self, end_offset: int, now_ms: int) -> RaftSnapshotWriter: ...

    def shutdown(self, now_ms: int) -> None: ...

    # -- admin -----------------------------------------------------------------------------

    def add_voter(
        self,
        key: ReplicaKey,
        endpoints: tuple[Endpoint, ...],
        now_ms: int,
        timeout_ms: int | None = None,
    ) -> int: ...

    def remove_voter(self, key: ReplicaKey, now_ms: int) -> int: ...

    def update_kraft_version(
        self, version: int, now_ms: int, validate_only: bool = False
    ) -> int: ...

    def set_target_voters(self, voters: Sequence[VoterInfo], now_ms: int) -> int: ...

    def delete_before_snapshot(self, sid: OffsetAndEpoch) -> bool: ...

    def describe_quorum(self, now_ms: int) -> DescribeQuorumResponse: ...

    def reassignment_progress(self) -> ReassignmentProgress | None: ...

    # -- observe ---------------------------------------------------------------------------

    @property
    def role(self) -> str: ...

    @property
    def leader_epoch_start_offset(self) -> int | None:
        """While this replica leads: the offset its epoch started at (its LeaderChange
        record; the controller activates once the high watermark passes it). Else None."""
        ...

    @property
    def voted_key(self) -> ReplicaKey | None: ...

    @property
    def caught_up_ms(self) -> int:
        """As a non-leader: when a Fetch answer last left nothing committed unread; -1 since
        the last role change until then (the health endpoint's "caught up")."""
        ...

    @property
    def kraft_version(self) -> int: ...

    @property
    def voter_history(self) -> LogHistory[VoterSet]: ...

    @property
    def voter_change(self) -> PendingChange | None: ...

    @property
    def target_voters(self) -> VoterSet | None: ...


if TYPE_CHECKING:  # RaftCore is a RaftApi (mypy checks it here)
    from pykraft.raft.core import RaftCore

    _CORE_IS_AN_API: type[RaftApi] = RaftCore
