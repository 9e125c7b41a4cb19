"""What the core's function modules may see of the core: :class:`CoreContext`, a
``Protocol`` that ``RaftCore`` satisfies structurally (mypy checks it wherever the core
passes itself to a module).

The modules (``replication``, ``elections``, ``membership``, ``reassignment``,
``kraft_version``, ``dispatch``, ``describe``, ``admin``, ``invariants``) are typed against
this context, not against ``RaftCore``: they see the replica's identity and configuration,
the state objects that own each concern, and the few operations that cross concerns (send,
answer, append, move the high watermark). The driver's API -- ``step``, ``poll``,
``append``, ``on_flushed``, ``ready`` and the admin calls (docs/CONTRACTS.md) -- is not
here: no module calls it.

=====================  ==========================================================
member                 owner and meaning
=====================  ==========================================================
``config``             ``RaftConfig``: timeouts, versions, bounds (read-only)
``local_key``          this replica's id and directory id
``endpoints``          this replica's listeners (what it advertises as a voter)
``bootstrap_servers``  where an observer looks for the leader (D8)
``rng``                the random source (election jitter)
``log``/``snapshots``  the replicated log and snapshot store (I/O-free interfaces)
``quorum``             ``QuorumState``: role, epoch, vote; owns every transition
``control``            ``ControlState``: kraft.version, voter sets and their history
``changes``            ``VoterChanges``: the voter change in progress (D1-D5)
``fetch``              ``FetchState``: the fetch in flight, retry, snapshot download
``high_watermark``     committed offset; never decreases (B4, B7)
``was_voter``          this replica key was in a committed voter set (durable; no auto-join)
=====================  ==========================================================
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from pykraft.raft.api import CoreView

if TYPE_CHECKING:
    from pykraft.raft.control import ControlState
    from pykraft.raft.interfaces import RandomSource, SnapshotWriter
    from pykraft.raft.membership import VoterChanges
    from pykraft.raft.messages import AnyRequest, AnyResponse
    from pykraft.raft.replication import FetchState
    from pykraft.raft.requests import RequestKind
    from pykraft.raft.state import QuorumState
    from pykraft.raft.types import Endpoint, OffsetAndEpoch

__all__ = ["CoreContext"]


class CoreContext(CoreView, Protocol):
    """The core as its modules see it (see the module docstring's table): ``CoreView``'s
    identity, storage and quorum state, plus the state objects and the shared operations."""

    bootstrap_servers: tuple[Endpoint, ...]
    rng: RandomSource
    control: ControlState
    changes: VoterChanges
    fetch: FetchState
    was_voter: bool

    @property
    def quorum(self) -> QuorumState: ...

    def leader_endpoints(self) -> tuple[Endpoint, ...]: ...

    # -- messages: every request is tracked (B12); answers go out in order ----------------

    def send(
        self,
        dst: int,
        body: AnyRequest,
        kind: RequestKind,
        now_ms: int,
        endpoint: Endpoint | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> int: ...

    def respond(self, dst: int, request_id: int, body: AnyResponse) -> None: ...

    def can_send(self, dst: int, kind: RequestKind, now_ms: int) -> bool: ...

    def backoff(
        self, dst: int, kind: RequestKind, now_ms: int, delay_ms: int | None = None
    ) -> None: ...

    # -- the log: each change re-reads the control records it may have touched ------------

    def append_own(self, batches: bytes, now_ms: int) -> int: ...

    def drain_scheduled(self, now_ms: int) -> int | None: ...

    def appended_fetched(self, batches: bytes, now_ms: int) -> None: ...

    def truncated(self, end_offset: int, now_ms: int) -> None: ...

    def snapshot_fetched(self, writer: SnapshotWriter) -> None: ...

    def log_reset(self, sid: OffsetAndEpoch) -> None: ...

    def snapshot_installed(self, sid: OffsetAndEpoch, now_ms: int) -> None: ...

    def set_high_watermark(self, offset: int) -> bool: ...
