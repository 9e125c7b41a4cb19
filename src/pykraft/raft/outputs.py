"""What ``RaftCore.ready`` hands out (``Outbox``): which messages must wait for the flush
(B13), when to poll next, when the application hears of a new leader, and the shared
read-only ``Ready`` of an idle core.

Messages that tell a peer our log end offset as something it may count -- a Fetch's fetch
offset toward the leader's high watermark, a Vote request's last offset -- wait for the flush
(``Ready.messages_after_flush``). Everything else may leave before it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from pykraft.raft.interfaces import LeaderAndEpoch, Ready, SnapshotWriter
from pykraft.raft.messages import FetchRequest, Outbound, VoteRequest
from pykraft.raft.roles import Leader
from pykraft.raft.types import OffsetAndEpoch

if TYPE_CHECKING:
    from pykraft.raft.context import CoreContext
    from pykraft.raft.requests import RequestManager

FLUSH_GATED: Final = (FetchRequest, VoteRequest)


def split_at_flush(out: list[Outbound]) -> tuple[list[Outbound], list[Outbound]]:
    """(may leave now, must wait for the flush). Order per destination is kept: whatever
    follows a held message to the same destination is held too (a follower's auto-join
    AddRaftVoter must not overtake its Fetch on the in-order connection to the leader, or
    the answer to the Fetch would queue behind an answer that waits for that Fetch)."""
    if len(out) == 1:  # the common case (a follower's one Fetch): no set, no copies
        return ([], out) if isinstance(out[0].body, FLUSH_GATED) else (out, [])
    now: list[Outbound] = []
    later: list[Outbound] = []
    held: set[int] = set()
    for m in out:
        if m.dst in held or isinstance(m.body, FLUSH_GATED):
            held.add(m.dst)
            later.append(m)
        else:
            now.append(m)
    return now, later


def next_deadline_ms(core: CoreContext, requests: RequestManager, now_ms: int) -> int:
    """``Ready.next_deadline_ms``: the earliest of the role's timer, the requests' timeouts
    and backoffs, the parked fetches, the fetch retry and the voter change's timeout."""
    # Computed afresh on every call: what it reads changes in many modules (role timers,
    # the purgatory, the voter change), too many to invalidate a cache reliably.
    deadline = requests.next_deadline_ms(core.quorum.role.wakeup_ms(), now_ms)
    fetch = core.fetch
    if fetch.parked:
        for parked in fetch.parked.values():
            if parked.deadline_ms < deadline:
                deadline = parked.deadline_ms
    # A fetch backed off and not yet sent: due at its retry time, and at once when that time
    # has passed without the poll that sends it (a driver's timer fires a millisecond early,
    # its poll finds the retry not yet due, and the next Ready is computed a moment later).
    # Without this the Ready of an observer, whose role has no timer, said "never" and it
    # fetched nothing again (issue 13's observer stall, seen on real processes).
    retry = fetch.retry_at_ms
    if retry and fetch.request_id is None and retry < deadline:
        deadline = retry
    change = core.changes.pending
    if change is not None and change.deadline_ms < deadline:
        deadline = change.deadline_ms
    return deadline if deadline > now_ms else now_ms


class IdleReady(Ready):
    """A ``Ready`` with nothing to do but poll by ``next_deadline_ms`` (half of all calls in
    the simulator). ``RaftCore.ready`` hands the same one out again while the deadline holds,
    so it is read-only: setting a field raises, and its lists are empty tuples (a driver that
    appended to a shared list would resend those messages on every later idle Ready)."""

    __slots__ = ("sealed",)

    def __init__(self, next_deadline_ms: int) -> None:
        # Through Ready's own initializer (mypyc's compiled classes refuse object.__setattr__
        # from outside), then sealed.
        self.sealed = False
        Ready.__init__(self, False, (), (), None, None, None, None, next_deadline_ms, ())
        self.sealed = True

    def __setattr__(self, name: str, value: object) -> None:
        if name != "sealed" and self.sealed:
            raise AttributeError(f"IdleReady is shared and read-only: cannot set {name}")
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"IdleReady is shared and read-only: cannot delete {name}")


class Outbox:
    """The outputs gathered since the last ``ready``: messages, whether the log must be
    flushed, whether the high watermark moved, a snapshot installed; and what was last
    handed out (the leader the application was told of, the shared idle ``Ready``)."""

    __slots__ = (
        "hwm_dirty",
        "idle",
        "messages",
        "must_flush",
        "notified",
        "snapshot_loaded",
        "snapshot_to_make_durable",
    )

    def __init__(self) -> None:
        self.messages: list[Outbound] = []
        self.must_flush = False
        self.hwm_dirty = False
        self.snapshot_loaded: OffsetAndEpoch | None = None
        self.snapshot_to_make_durable: SnapshotWriter | None = None
        self.notified: LeaderAndEpoch | None = None
        self.idle = IdleReady(-1)  # the last idle Ready handed out (-1: none yet)

    def ready(self, core: CoreContext, requests: RequestManager, now_ms: int) -> Ready:
        """Drain everything gathered into one ``Ready`` (``RaftCore.ready``)."""
        # Also when a driver skipped an earlier flush (tests do): what depends on the flush
        # never leaves while the log holds unflushed data.
        log = core.log
        must_flush = self.must_flush or log.flushed_offset < log.end_offset
        out = self.messages
        leader_change = self._leader_change(core)
        deadline = next_deadline_ms(core, requests, now_ms)
        changes = core.changes
        if not (
            must_flush
            or out
            or self.hwm_dirty
            or changes.completed
            or leader_change is not None
            or self.snapshot_loaded is not None
            or self.snapshot_to_make_durable is not None
        ):
            idle = self.idle
            if idle.next_deadline_ms != deadline:
                self.idle = idle = IdleReady(deadline)
            return idle
        after_flush = list[Outbound]()
        if must_flush and out:
            out, after_flush = split_at_flush(out)
        ready = Ready(
            must_flush=must_flush,
            messages=out,
            messages_after_flush=after_flush,
            snapshot_loaded=self.snapshot_loaded,
            snapshot_to_make_durable=self.snapshot_to_make_durable,
            high_watermark=core.high_watermark if self.hwm_dirty else None,
            leader_change=leader_change,
            next_deadline_ms=deadline,
            completed=changes.completed,
        )
        changes.completed = []
        self.messages = []
        self.must_flush = self.hwm_dirty = False
        self.snapshot_loaded = None
        self.snapshot_to_make_durable = None
        return ready

    def _leader_change(self, core: CoreContext) -> LeaderAndEpoch | None:
        """Kafka's rule: a remote (or unknown) leader is reported at once; the local leader
        only once its epoch start offset is committed, so the application has seen every
        committed record before it starts writing."""
        qs = core.quorum
        role = qs.role
        notified = self.notified
        # Compared field by field first: most calls find nothing new.
        if (
            notified is not None
            and notified.leader_id == qs.leader_id
            and notified.epoch == role.epoch
        ):
            return None
        if isinstance(role, Leader) and core.high_watermark <= role.epoch_start_offset:
            return None
        current = LeaderAndEpoch(qs.leader_id, role.epoch)
        self.notified = current
        return current
