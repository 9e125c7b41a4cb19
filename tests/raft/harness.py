"""A deterministic in-process cluster of RaftCores for scenario scripts (etcd datadriven style);
the commands the scripts speak are in ``commands.py``.

Time is a manual clock; the network is a FIFO queue with zero latency that delivers messages
whenever a command lets the cluster run, subject to per-link rules (cut = silently dropped,
hold = queued until released). A request to a crashed node fails at once (connection refused).

Transitions print as they happen (``2: follower(e1 l1) -> prospective(e1)``), as do leader
change notifications handed to the application, and the voter records a leader appends and
commits (``1: voters append 1 2 3 4 @offset=7``, ``1: voters commit 1 2 3 4 @offset=7``; the
KIP-642 target record likewise, ``1: target append 4 5 6 @offset=3``, ``none`` when cleared),
each single change on its own line. After every command the cluster's safety invariants are
checked (one leader per epoch, monotonic high watermarks, committed prefixes identical,
consecutive voter sets in every log differing by one voter at most), and at each voter record
a leader appends: the previous change committed, its own epoch committed, a majority of the
old and new set up (E4: always during a reassignment, otherwise while no node is down), and
during a reassignment the change E2 prescribes (``check_e2_step``).
"""

from __future__ import annotations

import os
import random
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from itertools import pairwise

from kio.schema.errors import ErrorCode

from pykraft.raft.config import RaftConfig
from pykraft.raft.control import voter_entries
from pykraft.raft.core import RaftCore
from pykraft.raft.interfaces import Ready, SnapshotWriter
from pykraft.raft.messages import (
    AnyRequest,
    AnyResponse,
    FetchRequest,
    FetchSnapshotRequest,
    Inbound,
    Outbound,
    RequestFailed,
    VoteRequest,
    VoteResponse,
    is_request,
)
from pykraft.raft.roles import Follower, Prospective, Role, Unattached
from pykraft.raft.types import NO_LEADER, Endpoint, OffsetAndEpoch, ReplicaKey
from pykraft.raft.voters import VoterInfo, VoterSet
from pykraft.records import (
    decode_records,
    iter_batches,
    kraft_version_batch,
    snapshot_footer_batch,
    snapshot_header_batch,
    voters_batch,
)
from pykraft.sim.memory import (
    MemoryLog,
    MemoryQuorumStateStore,
    MemorySnapshotStore,
    make_durable_at_once,
)

from . import voter_watch
from .voter_watch import names, voter_changes

TRACE = os.environ.get("PYKRAFT_TRACE") == "1"
_REQUESTS = (VoteRequest, FetchRequest)


def describe(role: Role) -> str:
    """``follower(e1 l3)``: role, epoch, leader (l) or standard vote cast (v) if any."""
    if isinstance(role, Follower):
        return f"follower(e{role.epoch} l{role.leader_id})"
    if isinstance(role, Unattached | Prospective) and role.voted_key is not None:
        return f"{role.name}(e{role.epoch} v{role.voted_key.id})"
    return f"{role.name}(e{role.epoch})"


@dataclass
class Node:
    id: int
    log: MemoryLog = field(default_factory=MemoryLog)
    qstore: MemoryQuorumStateStore = field(default_factory=MemoryQuorumStateStore)
    snaps: MemorySnapshotStore = field(default_factory=MemorySnapshotStore)
    core: RaftCore | None = None
    deadline_ms: int = 0
    autoflush: bool = True
    # False: a fetched snapshot's durable step waits for the ``durable`` command.
    autodurable: bool = True
    pending_durable: SnapshotWriter | None = None
    fetches_sent: int = 0  # Fetch and FetchSnapshot requests handed out by its Readys
    old_peer: bool = False
    cluster_id: str | None = None
    max_hwm: int = 0
    disk: int = 0  # incremented by wipe: the directory id changes
    after_flush: list[Outbound] = field(default_factory=list)  # Ready.messages_after_flush
    # What this node announced as leader (see ``Cluster.observe``): the epoch it leads, the
    # last voter / target record offsets printed, records printed as appended but not yet as
    # committed (offset -> members).
    leading_epoch: int = -1
    voters_seen: int = -2
    target_seen: int = -2
    voters_pending: dict[int, str] = field(default_factory=dict)
    target_pending: dict[int, str] = field(default_factory=dict)


def directory_id(node_id: int, disk: int) -> uuid.UUID:
    return uuid.UUID(int=node_id * 1000 + disk + 1)


def endpoint_of(node_id: int) -> Endpoint:
    return Endpoint("CONTROLLER", f"n{node_id}", 9000 + node_id)


class Cluster:
    def __init__(self, args: dict[str, str]) -> None:
        self.voters = [int(x) for x in args["voters"].split(",")]
        self.observers = [int(x) for x in args.get("observers", "").split(",") if x]
        self.config = RaftConfig(
            election_timeout_ms=int(args.get("election", 1000)),
            fetch_timeout_ms=int(args.get("fetch", 2000)),
            pre_vote=args.get("prevote", "true") == "true",
            cluster_id=args.get("cluster"),
        )
        self.seed = int(args.get("seed", 0))
        self.fast = int(args.get("fast", 0))  # this node's election timeout is a quarter
        self.voter_set = VoterSet.from_ids(self.voters)
        self.kraft = int(args["kraft"]) if "kraft" in args else None
        self.bootstrap = [int(x) for x in args.get("bootstrap", args["voters"]).split(",")]
        self.auto_join = args.get("autojoin", "false") == "true"
        if self.kraft is not None:
            self.config = replace(self.config, auto_join=self.auto_join)
        self.ops: dict[tuple[int, int], str] = {}  # (node, op id) -> what was asked
        self.now = 0
        self.out: list[str] = []
        self.queue: list[tuple[int, Outbound]] = []
        self.held: list[tuple[int, Outbound]] = []
        self.cut: set[tuple[int, int]] = set()
        self.hold: set[tuple[int, int]] = set()
        self.leaders: dict[int, int] = {}  # epoch -> leader id ever seen
        self.committed: dict[int, bytes] = {}  # offset -> batch bytes seen committed
        self.nodes = {i: Node(i) for i in sorted(self.voters + self.observers)}
        self.restarts = 0
        for i in self.nodes:
            if self.kraft == 1:
                self.format(i, with_voters=i in self.bootstrap)
        for i in self.nodes:
            self.start(i)

    def key(self, i: int) -> ReplicaKey:
        if self.kraft is None:
            return ReplicaKey(i)
        return ReplicaKey(i, directory_id(i, self.nodes[i].disk))

    def format(self, i: int, *, with_voters: bool) -> None:
        """``storage format``: the bootstrap checkpoint 0-0 (D3)."""
        voters = VoterSet(
            {v: VoterInfo(self.key(v), (endpoint_of(v),), 0, 1) for v in self.bootstrap}
        )
        parts = [snapshot_header_batch(0, 0, 0, -1), kraft_version_batch(1, 0, 0, 1)]
        if with_voters:
            parts.append(voters_batch(2, 0, 0, voter_entries(voters)))
        parts.append(snapshot_footer_batch(len(parts), 0, 0))
        writer = self.nodes[i].snaps.create(OffsetAndEpoch(0, 0))
        writer.append(b"".join(parts))
        writer.freeze()

    # -- node lifecycle -----------------------------------------------------------------

    def start(self, i: int) -> None:
        node = self.nodes[i]
        self.restarts += 1
        config = self.config
        if i == self.fast:
            config = replace(config, election_timeout_ms=config.election_timeout_ms // 4)
        dynamic = self.kraft is not None
        core = RaftCore(
            config=config,
            local_key=self.key(i),
            voters=self.voter_set if self.kraft != 1 else None,
            endpoints=(endpoint_of(i),) if dynamic else (),
            bootstrap_servers=(
                tuple(endpoint_of(b) for b in self.bootstrap) if self.kraft == 1 else ()
            ),
            log=node.log,
            quorum_state=node.qstore,
            snapshots=node.snaps,
            rng=random.Random(self.seed * 1000 + i * 31 + self.restarts),
            now_ms=self.now,
            on_transition=lambda old, new: self.on_transition(i, old, new),
        )
        node.core = core
        node.max_hwm = core.high_watermark
        self.drain(i)

    def on_transition(self, i: int, old: Role, new: Role) -> None:
        # A commit that triggers the transition (a leader resigning after it) prints first.
        self.observe(i)
        self.out.append(f"{i}: {describe(old)} -> {describe(new)}")

    def crash(self, i: int) -> None:
        node = self.nodes[i]
        node.core = None
        node.leading_epoch = -1
        node.voters_pending.clear()
        node.target_pending.clear()
        node.after_flush.clear()
        node.log.crash()
        node.snaps.crash()
        node.qstore.crash()

    # -- running ------------------------------------------------------------------------

    def drain(self, i: int) -> None:
        node = self.nodes[i]
        core = node.core
        assert core is not None
        while True:
            ready = core.ready(self.now)
            self.observe(i)
            self.count_fetches(node, ready)
            for m in ready.messages:
                self.queue.append((i, m))
            # Held until this node flushes (a "noflush" node keeps them until "flush").
            node.after_flush.extend(ready.messages_after_flush)
            # Only known leaders are printed (an unknown leader is also reported to the app).
            if ready.leader_change is not None and ready.leader_change.leader_id != NO_LEADER:
                lc = ready.leader_change
                self.out.append(f"{i}: notify leader={lc.leader_id} epoch={lc.epoch}")
            for result in ready.completed:
                what = self.ops.pop((i, result.op_id), result.operation)
                message = f" ({result.message})" if result.message else ""
                self.out.append(f"{i}: {what} -> {result.error.name.upper()}{message}")
            if ready.snapshot_loaded is not None:
                sid = ready.snapshot_loaded
                self.out.append(f"{i}: snapshot loaded end={sid.offset} epoch={sid.epoch}")
            node.deadline_ms = ready.next_deadline_ms
            durable = self.make_fetched_durable(i, ready)
            if ready.must_flush and node.autoflush:
                node.log.flush()
                core.on_flushed(self.now)
                self.release_after_flush(i)
                continue
            if durable:
                continue
            return

    @staticmethod
    def count_fetches(node: Node, ready: Ready) -> None:
        for m in (*ready.messages, *ready.messages_after_flush):
            if isinstance(m.body, FetchRequest | FetchSnapshotRequest):
                node.fetches_sent += 1

    def make_fetched_durable(self, i: int, ready: Ready) -> bool:
        """Ready's durable step for a fetched snapshot (the drivers': ``make_durable``, then
        ``on_snapshot_durable``); True if there was one."""
        writer = ready.snapshot_to_make_durable
        node = self.nodes[i]
        if writer is None or node.core is None:
            return False
        if not node.autodurable:
            node.pending_durable = writer
            self.out.append(
                f"{i}: snapshot fetched end={writer.snapshot_id.offset}, not durable yet"
            )
            return False
        self.finish_durable(i, writer, refuse=False)
        return True

    def finish_durable(self, i: int, writer: SnapshotWriter, *, refuse: bool) -> None:
        """``make_durable`` (``refuse``: as if it refused the bytes), ``on_snapshot_durable``."""
        core = self.nodes[i].core
        assert core is not None
        valid = not refuse and make_durable_at_once(writer)
        core.on_snapshot_durable(writer, valid, self.now)

    def take(self, i: int, wanted: Callable[[Outbound], bool]) -> list[Outbound]:
        """Step node ``i``'s Ready outside ``drain``: return the messages ``wanted`` picks,
        queue the others, flush (whatever ``autoflush`` says), then drain."""
        node = self.nodes[i]
        core = node.core
        assert core is not None
        ready = core.ready(self.now)
        self.observe(i)
        self.count_fetches(node, ready)
        taken: list[Outbound] = []
        for m in ready.messages:
            if wanted(m):
                taken.append(m)
            else:
                self.queue.append((i, m))
        node.deadline_ms = ready.next_deadline_ms
        node.after_flush.extend(ready.messages_after_flush)
        self.make_fetched_durable(i, ready)
        if ready.must_flush:
            node.log.flush()
            core.on_flushed(self.now)
            self.release_after_flush(i)
        self.drain(i)
        return taken

    def release_after_flush(self, i: int) -> None:
        node = self.nodes[i]
        self.queue.extend((i, m) for m in node.after_flush)
        node.after_flush.clear()

    def deliver(self) -> None:
        for _ in range(200_000):
            if not self.queue:
                return
            src, m = self.queue.pop(0)
            self.deliver_one(src, m)
        raise AssertionError("livelock: the network never went quiet")

    def deliver_rounds(self, rounds: int) -> None:
        """Deliver what is queued now, ``rounds`` times: what a delivery sends waits for the
        next round (a round is one network hop for every message in flight)."""
        for _ in range(rounds):
            batch, self.queue = self.queue, []
            for src, m in batch:
                self.deliver_one(src, m)

    def deliver_until_append(self) -> None:
        """Deliver round by round until a leader appends a voter record (or all is quiet)."""
        for _ in range(10_000):
            if not self.queue or any(" voters append " in line for line in self.out):
                return
            self.deliver_rounds(1)
        raise AssertionError("livelock: the network never went quiet")

    def deliver_one(self, src: int, m: Outbound) -> None:
        if m.dst < 0:  # a bootstrap server, addressed by endpoint (D8)
            assert m.endpoint is not None
            m = replace(m, dst=m.endpoint.port - 9000)
        dst = self.nodes[m.dst]
        is_request = is_request_body(m.body)
        if (src, m.dst) in self.cut:
            return
        if (src, m.dst) in self.hold:
            self.held.append((src, m))
            return
        if dst.core is None:
            sender = self.nodes[src].core
            if is_request and sender is not None:
                sender.step(RequestFailed(m.dst, m.request_id), self.now)
                self.drain(src)
            return
        if dst.old_peer and isinstance(m.body, VoteRequest) and m.body.pre_vote:
            answer = VoteResponse(ErrorCode.unsupported_version, -1, NO_LEADER, False)
            self.queue.append((m.dst, Outbound(src, m.request_id, answer)))
            return
        body: AnyRequest | AnyResponse = m.body
        if dst.cluster_id is not None and hasattr(body, "cluster_id"):
            body = type(body)(**{**_fields(body), "cluster_id": dst.cluster_id})  # type: ignore[arg-type]
        if self.nodes[src].cluster_id is not None and hasattr(body, "cluster_id"):
            body = type(body)(**{**_fields(body), "cluster_id": self.nodes[src].cluster_id})  # type: ignore[arg-type]
        if TRACE:
            print(f"{self.now:>8} {src} -> {m.dst} {body}", file=sys.stderr)
        dst.core.step(Inbound(src, m.request_id, body), self.now)
        self.drain(m.dst)

    def run_until(self, target: int) -> None:
        spins = 0
        while True:
            self.deliver()
            live = [n for n in self.nodes.values() if n.core is not None]
            nxt = min((n.deadline_ms for n in live), default=target + 1)
            if nxt > target:
                break
            if nxt <= self.now:
                spins += 1
                assert spins < 10_000, "a node keeps asking to be polled at the same instant"
            else:
                spins = 0
            self.now = max(self.now, nxt)
            for n in live:
                if n.core is not None and n.deadline_ms <= self.now:
                    n.core.poll(self.now)
                    self.drain(n.id)
            self.check()
        self.now = target

    def observe(self, i: int) -> None:
        """Print and check the voter records node ``i`` appends as leader (``voter_watch``)."""
        voter_watch.observe(self, i)

    # -- invariants ---------------------------------------------------------------------

    def check(self) -> None:
        for n in self.nodes.values():
            core = n.core
            if core is None:
                continue
            core.check_invariants()
            if core.role == "leader":
                prev = self.leaders.setdefault(core.epoch, n.id)
                assert prev == n.id, f"two leaders in epoch {core.epoch}: {prev} and {n.id}"
            assert core.high_watermark >= n.max_hwm, f"hwm went backwards on {n.id}"
            # Single voter changes only (D4, D5, E2): consecutive voter sets in any log
            # differ by one voter at most.
            entries = core.voter_history.entries
            for (o1, v1), (o2, v2) in pairwise(entries):
                assert voter_changes(v1, v2) <= 1, (
                    f"voters on {n.id} go {names(v1)} @{o1} -> {names(v2)} @{o2}: more than "
                    "one voter changed"
                )
            n.max_hwm = max(n.max_hwm, core.high_watermark)
            # Committed batches never change (B7): compare with what was seen before.
            for base, nxt, _epoch, raw in n.log.batches():
                if nxt <= core.high_watermark:
                    seen = self.committed.setdefault(base, raw)
                    assert seen == raw, f"committed batch at {base} differs on node {n.id}"

    # -- output -------------------------------------------------------------------------

    def status(self) -> list[str]:
        lines = []
        for n in self.nodes.values():
            core = n.core
            if core is None:
                lines.append(f"{n.id}: down")
                continue
            voted = core.voted_key.id if core.voted_key is not None else "-"
            leader = core.leader_id if core.leader_id != NO_LEADER else "-"
            obs = " observer" if core.is_observer else ""
            lines.append(
                f"{n.id}: {core.role}{obs} epoch={core.epoch} leader={leader} voted={voted} "
                f"hwm={core.high_watermark} leo={n.log.end_offset} start={n.log.start_offset}"
            )
        return lines

    def log_lines(self, i: int) -> list[str]:
        lines = []
        for base, nxt, epoch, raw in self.nodes[i].log.batches():
            header = next(iter_batches(raw))[0]
            if header.is_control:
                what = "control"
            else:
                what = " ".join((r.value or b"").decode() for r in decode_records(raw))
            lines.append(f"[{base},{nxt}) e{epoch} {what}")
        return lines or ["(empty)"]


def is_request_body(body: object) -> bool:
    return is_request(body)  # type: ignore[arg-type]


def _fields(obj: object) -> dict[str, object]:
    return {name: getattr(obj, name) for name in obj.__dataclass_fields__}  # type: ignore[attr-defined]
