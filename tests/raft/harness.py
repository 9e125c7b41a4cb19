"""A deterministic in-process cluster of RaftCores for scenario scripts (etcd datadriven style).

Time is a manual clock; the network is a FIFO queue with zero latency that delivers messages
whenever a command lets the cluster run, subject to per-link rules (cut = silently dropped,
hold = queued until released). A request to a crashed node fails at once (connection refused).

Commands (one per block in ``testdata/*.txt``; each is a function of ``COMMANDS`` below, with
its own docstring). ``PYKRAFT_TRACE=1`` prints every message delivered to stderr
(``pytest -s``): time, source -> destination, the message.

    init voters=1,2,3 [observers=4] [election=1000] [fetch=2000] [prevote=true]
         [cluster=ID] [seed=N] [fast=N]   create the cluster (node ``fast`` has a quarter
                                           of the election timeout: it wins the first election)
    tick MS                                let MS milliseconds pass (timers fire, messages flow)
    deliver [rounds=N | until=append]      deliver queued messages without moving time: until
                                           the network is quiet / N rounds (a round delivers
                                           what is queued; what that sends waits for the
                                           next) / until a leader appends a voter record
    cut A B | isolate A | heal             drop traffic between A and B / around A / nowhere
    hold A B | release A B                 queue A->B messages / deliver them now (in order)
    crash N | restart N | wipe N           process dies (unflushed log lost) / comes back /
                                           its disk is replaced
    append N v1 v2 ...                     the application appends on N
    snapshot N OFFSET                      N snapshots everything below OFFSET (empty payload)
    shutdown N                             graceful shutdown (a leader resigns)
    noflush N | flush N                    N stops auto-flushing its log / flushes it now
    oldpeer N                              N predates KIP-996: it answers pre-votes with
                                           UNSUPPORTED_VERSION
    cluster-id N ID                        requests from N carry ClusterId ID
    status | log N                         print per-node state / N's batches
    vote N FROM EPOCH [pre]                inject a Vote request from FROM to N, print answer

Membership (KIP-853 / KIP-642). ``init ... kraft=1`` formats every node with a bootstrap
checkpoint holding kraft.version 1 and, for the nodes in ``bootstrap`` (default: ``voters``),
the initial voter set (``--initial-controllers``; ``bootstrap=1`` is ``--standalone``); the
others are formatted with ``--no-initial-controllers`` and find the leader through the
bootstrap servers (the initial voters). ``kraft=0`` keeps static voters but gives every node
listeners, so voters send UpdateRaftVoter. Node N's directory id is printed ``N`` and, after
each ``wipe``, ``N'``, ``N''``... (a reformatted disk is a new replica). ``autojoin=true``
turns on controller.quorum.auto.join.enable.

    add-voter L N | remove-voter L N [old] the operator asks leader L (``old``: N's previous
                                           directory id); results print when they complete
    target L 4,5,6                         KIP-642: L reassigns the voters to 4, 5, 6
    (these three and upgrade take deliver's rounds=N / until=append)
    upgrade L V                            UpdateFeatures kraft.version=V on L
    appendn N COUNT                        N appends COUNT records in one batch
    voters N | describe N | progress N     N's voter set / DescribeQuorum / reassignment

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

from pykraft.raft.config import NotLeaderError, RaftConfig
from pykraft.raft.control import voter_entries
from pykraft.raft.core import RaftCore
from pykraft.raft.messages import (
    AnyRequest,
    AnyResponse,
    FetchRequest,
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
from pykraft.sim.memory import MemoryLog, MemoryQuorumStateStore, MemorySnapshotStore

from . import voter_watch
from .voter_watch import key_name, names, voter_changes

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
        self.notes: list[str] = []
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
            if ready.must_flush and node.autoflush:
                node.log.flush()
                core.on_flushed(self.now)
                self.release_after_flush(i)
                continue
            return

    def take(self, i: int, wanted: Callable[[Outbound], bool]) -> list[Outbound]:
        """Step node ``i``'s Ready outside ``drain``: return the messages ``wanted`` picks,
        queue the others, flush (whatever ``autoflush`` says), then drain."""
        node = self.nodes[i]
        core = node.core
        assert core is not None
        ready = core.ready(self.now)
        self.observe(i)
        taken: list[Outbound] = []
        for m in ready.messages:
            if wanted(m):
                taken.append(m)
            else:
                self.queue.append((i, m))
        node.deadline_ms = ready.next_deadline_ms
        node.after_flush.extend(ready.messages_after_flush)
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


# -- the command table: one function per command (etcd's interaction handlers) --------------
#
# A handler gets the cluster, the command's words after its name and those of them that are
# integers; it returns the lines the command itself prints (transitions and notifications
# the cluster printed meanwhile come first).

Handler = Callable[[Cluster, list[str], list[int]], list[str]]
COMMANDS: dict[str, Handler] = {}


def command(*names: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        for name in names:
            COMMANDS[name] = fn
        return fn

    return register


@command("tick")
def _tick(c: Cluster, rest: list[str], nums: list[int]) -> list[str]:
    """tick MS: let MS milliseconds pass (timers fire, messages flow)."""
    c.run_until(c.now + nums[0])
    return []


@command("deliver")
def _deliver_cmd(c: Cluster, rest: list[str], nums: list[int]) -> list[str]:
    """deliver [rounds=N | until=append]: deliver queued messages without moving time."""
    _deliver(c, rest)
    return []


@command("cut")
def _cut(c: Cluster, rest: list[str], nums: list[int]) -> list[str]:
    """cut A B: drop all traffic between A and B, both ways."""
    c.cut |= {(nums[0], nums[1]), (nums[1], nums[0])}
    return []


@command("isolate")
def _isolate(c: Cluster, rest: list[str], nums: list[int]) -> list[str]:
    """isolate A: drop all traffic to and from A."""
    c.cut |= {(nums[0], j) for j in c.nodes} | {(j, nums[0]) for j in c.nodes}
    return []


@command("heal")
def _heal(c: Cluster, rest: list[str], nums: list[int]) -> list[str]:
    """heal: drop nothing any more (held messages stay held)."""
    c.cut.clear()
    return []


@command("hold")
def _hold(c: Cluster, rest: list[str], nums: list[int]) -> list[str]:
    """hold A B: queue A->B messages until ``release A B``."""
    c.hold.add((nums[0], nums[1]))
    return []


@command("release")
def _release(c: Cluster, rest: list[str], nums: list[int]) -> list[str]:
    """release A B: deliver the held A->B messages now, in order, and stop holding."""
    c.hold.discard((nums[0], nums[1]))
    mine = [(s, m) for s, m in c.held if (s, m.dst) == (nums[0], nums[1])]
    c.held = [(s, m) for s, m in c.held if (s, m.dst) != (nums[0], nums[1])]
    for s, m in mine:
        c.deliver_one(s, m)
    c.deliver()
    return []


@command("crash")
def _crash(c: Cluster, rest: list[str], nums: list[int]) -> list[str]:
    """crash N: the process dies; what its log had not flushed is lost."""
    c.crash(nums[0])
    return []


@command("restart")
def _restart(c: Cluster, rest: list[str], nums: list[int]) -> list[str]:
    """restart N: the process comes back on its disk."""
    c.start(nums[0])
    return []


@command("wipe")
def _wipe(c: Cluster, rest: list[str], nums: list[int]) -> list[str]:
    """wipe N: N's disk is replaced; with kraft=1 it is reformatted with
    --no-initial-controllers (a new directory id: a new replica)."""
    n = c.nodes[nums[0]]
    n.log.wipe()
    n.qstore.wipe()
    n.snaps.wipe()
    if c.kraft == 1:
        n.disk += 1
        c.format(n.id, with_voters=False)
    return []


def _append_on(c: Cluster, node: int, values: list[bytes]) -> list[str]:
    core = c.nodes[node].core
    assert core is not None
    try:
        last = core.append(values, c.now)
        out = [f"appended up to offset {last}"]
    except NotLeaderError as e:
        out = [f"NotLeaderError: {e}"]
    c.drain(node)
    c.deliver()
    return out


@command("append")
def _append(c: Cluster, rest: list[str], nums: list[int]) -> list[str]:
    """append N v1 v2 ...: the application appends the values on N (one batch)."""
    return _append_on(c, nums[0], [w.encode() for w in rest[1:]])


@command("appendn")
def _appendn(c: Cluster, rest: list[str], nums: list[int]) -> list[str]:
    """appendn N COUNT: N appends COUNT records r0, r1, ... in one batch."""
    return _append_on(c, nums[0], [f"r{k}".encode() for k in range(nums[1])])


@command("snapshot")
def _snapshot(c: Cluster, rest: list[str], nums: list[int]) -> list[str]:
    """snapshot N OFFSET: N snapshots everything below OFFSET (an empty payload)."""
    core = c.nodes[nums[0]].core
    assert core is not None
    writer = core.create_snapshot(nums[1], c.now)
    writer.freeze(c.now)
    sid = writer.snapshot_id
    c.drain(nums[0])
    return [f"snapshot end={sid.offset} epoch={sid.epoch}"]


@command("shutdown")
def _shutdown(c: Cluster, rest: list[str], nums: list[int]) -> list[str]:
    """shutdown N: a graceful shutdown (a leader resigns first)."""
    core = c.nodes[nums[0]].core
    assert core is not None
    core.shutdown(c.now)
    c.drain(nums[0])
    c.deliver()
    return []


@command("noflush")
def _noflush(c: Cluster, rest: list[str], nums: list[int]) -> list[str]:
    """noflush N: N stops flushing its log by itself."""
    c.nodes[nums[0]].autoflush = False
    return []


@command("flush")
def _flush(c: Cluster, rest: list[str], nums: list[int]) -> list[str]:
    """flush N: N flushes its log now and flushes by itself again."""
    n = c.nodes[nums[0]]
    n.autoflush = True
    n.log.flush()
    assert n.core is not None
    n.core.on_flushed(c.now)
    c.release_after_flush(nums[0])
    c.drain(nums[0])
    c.deliver()
    return []


@command("oldpeer")
def _oldpeer(c: Cluster, rest: list[str], nums: list[int]) -> list[str]:
    """oldpeer N: N predates KIP-996 (answers pre-votes with UNSUPPORTED_VERSION)."""
    c.nodes[nums[0]].old_peer = True
    return []


@command("cluster-id")
def _cluster_id(c: Cluster, rest: list[str], nums: list[int]) -> list[str]:
    """cluster-id N ID: requests from and to N carry ClusterId ID."""
    c.nodes[nums[0]].cluster_id = rest[1]
    return []


@command("status")
def _status(c: Cluster, rest: list[str], nums: list[int]) -> list[str]:
    """status: every node's role, epoch, leader, vote, high watermark and log bounds."""
    return c.status()


@command("log")
def _log(c: Cluster, rest: list[str], nums: list[int]) -> list[str]:
    """log N: N's batches, [base,next) with their epoch and values."""
    return c.log_lines(nums[0])


@command("vote")
def _vote(c: Cluster, rest: list[str], nums: list[int]) -> list[str]:
    """vote N FROM EPOCH [pre]: inject a (pre-)Vote request from FROM to N; print the answer."""
    return _inject_vote(c, nums[0], nums[1], nums[2], "pre" in rest)


@command("add-voter")
def _add_voter(c: Cluster, rest: list[str], nums: list[int]) -> list[str]:
    """add-voter L N [rounds=K | until=append]: the operator asks leader L to add N (KIP-853);
    the result prints when the change completes."""
    return _admin(c, "add-voter", rest)


@command("remove-voter")
def _remove_voter(c: Cluster, rest: list[str], nums: list[int]) -> list[str]:
    """remove-voter L N [old]: leader L is asked to remove N (``old``: N's previous directory
    id)."""
    return _admin(c, "remove-voter", rest)


@command("target")
def _target(c: Cluster, rest: list[str], nums: list[int]) -> list[str]:
    """target L 4,5,6: KIP-642, leader L reassigns the voters to 4, 5, 6."""
    return _admin(c, "target", rest)


@command("upgrade")
def _upgrade(c: Cluster, rest: list[str], nums: list[int]) -> list[str]:
    """upgrade L V: UpdateFeatures kraft.version=V on leader L."""
    return _admin(c, "upgrade", rest)


@command("voters")
def _voters(c: Cluster, rest: list[str], nums: list[int]) -> list[str]:
    """voters N: N's voter set, whether its last change is uncommitted, its KIP-642 target."""
    return [_voters_line(c, nums[0])]


@command("describe")
def _describe_cmd(c: Cluster, rest: list[str], nums: list[int]) -> list[str]:
    """describe N: N's DescribeQuorum answer."""
    return _describe(c, nums[0])


@command("progress")
def _progress_cmd(c: Cluster, rest: list[str], nums: list[int]) -> list[str]:
    """progress N: N's KIP-642 reassignment progress."""
    return _progress(c, nums[0])


def run(cluster: Cluster | None, line: str) -> tuple[Cluster | None, list[str]]:
    """Run one command; returns the (possibly new) cluster and the output lines."""
    words = line.split()
    cmd, rest = words[0], words[1:]
    if cmd == "init":
        cluster = Cluster(dict(w.split("=", 1) for w in rest))
        out = list(cluster.out)
        cluster.out.clear()
        return cluster, out + cluster.status()
    assert cluster is not None, "init first"
    c = cluster
    nums = [int(w) for w in rest if w.lstrip("-").isdigit()]
    handler = COMMANDS.get(cmd)
    if handler is None:
        raise ValueError(f"unknown command {cmd!r}")
    extra = handler(c, rest, nums)
    c.check()
    out = list(c.out) + extra
    c.out.clear()
    return c, out


def _admin(c: Cluster, cmd: str, rest: list[str]) -> list[str]:
    leader = int(rest[0])
    core = c.nodes[leader].core
    assert core is not None
    try:
        if cmd == "add-voter":
            n = int(rest[1])
            op = core.add_voter(c.key(n), (endpoint_of(n),), c.now)
            what = f"add-voter {key_name(c.key(n))}"
        elif cmd == "remove-voter":
            n = int(rest[1])
            info = core.voters.voters.get(n)
            key = info.key if info is not None and "old" in rest else c.key(n)
            op = core.remove_voter(key, c.now)
            what = f"remove-voter {key_name(key)}"
        elif cmd == "target":
            ids = [int(x) for x in rest[1].split(",")]
            infos = [VoterInfo(c.key(n), (endpoint_of(n),), 0, 1) for n in ids]
            op = core.set_target_voters(infos, c.now)
            what = f"target {' '.join(key_name(i.key) for i in infos)}"
        else:
            op = core.update_kraft_version(int(rest[1]), c.now)
            what = f"upgrade kraft.version={rest[1]}"
    except NotLeaderError as e:
        return [f"NotLeaderError: {e}"]
    c.ops[(leader, op)] = what
    c.drain(leader)
    _deliver(c, rest)
    out = list(c.out)
    c.out.clear()
    return out


def _deliver(c: Cluster, words: list[str]) -> None:
    """Deliver queued messages: until the network is quiet; ``rounds=N``: N rounds only;
    ``until=append``: until a leader appends a voter record (one KIP-642 step at a time)."""
    for w in words:
        if w.startswith("rounds="):
            c.deliver_rounds(int(w.split("=", 1)[1]))
            return
        if w == "until=append":
            c.deliver_until_append()
            return
    c.deliver()


def _voters_line(c: Cluster, i: int) -> str:
    core = c.nodes[i].core
    if core is None:
        return f"{i}: down"
    voters = " ".join(key_name(k) for k in core.voters.keys) or "(unknown)"
    target = core.target_voters
    shown = " ".join(key_name(k) for k in target.keys) if target is not None else "-"
    return (
        f"{i}: kraft.version={core.kraft_version} voters={voters} "
        f"uncommitted={str(core.uncommitted_voter_change).lower()} target={shown}"
    )


def _describe(c: Cluster, i: int) -> list[str]:
    core = c.nodes[i].core
    assert core is not None
    d = core.describe_quorum(c.now)
    lines = [
        f"error={d.error.name.upper()} leader={d.leader_id} epoch={d.leader_epoch} hwm={d.high_watermark}"
    ]
    for title, states in (("voter", d.voters), ("observer", d.observers)):
        for r in states:
            lines.append(
                f"{title} {key_name(r.replica_key)} leo={r.log_end_offset} "
                f"fetch_age={c.now - r.last_fetch_timestamp if r.last_fetch_timestamp >= 0 else '-'} "
                f"caught_up_age={c.now - r.last_caught_up_timestamp if r.last_caught_up_timestamp >= 0 else '-'}"
            )
    return lines


def _progress(c: Cluster, i: int) -> list[str]:
    core = c.nodes[i].core
    assert core is not None
    p = core.reassignment_progress()
    if p is None:
        return ["no reassignment"]

    def names(keys: tuple[ReplicaKey, ...]) -> str:
        return " ".join(key_name(k) for k in keys) or "-"

    lags = " ".join(f"{key_name(lag.key)}:{lag.lag}" for lag in p.lag)
    return [
        f"current={names(p.current)} target={names(p.target)} add={names(p.to_add)} "
        f"remove={names(p.to_remove)} committed={str(p.committed).lower()} lag {lags}"
    ]


def _inject_vote(c: Cluster, dst: int, src: int, epoch: int, pre: bool) -> list[str]:
    core = c.nodes[dst].core
    assert core is not None
    log = c.nodes[src].log
    req = VoteRequest(
        c.nodes[src].cluster_id,
        epoch,
        ReplicaKey(src),
        ReplicaKey(dst),
        log.last_fetched_epoch(),
        log.end_offset,
        pre,
    )
    core.step(Inbound(src, 10**9, req), c.now)
    lines = list(c.out)
    c.out.clear()
    for m in c.take(dst, lambda m: m.request_id == 10**9 and isinstance(m.body, VoteResponse)):
        r = m.body
        assert isinstance(r, VoteResponse)
        lines.append(
            f"vote response: error={r.error.name} epoch={r.epoch} "
            f"leader={r.leader_id} granted={r.vote_granted} pre_vote={r.pre_vote}"
        )
    return lines
