"""The scenario scripts' commands: one function per command with its own docstring, as
etcd's interaction handlers; ``run`` runs one line of a script against a ``harness.Cluster``.

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
"""

from __future__ import annotations

from collections.abc import Callable

from pykraft.raft.config import NotLeaderError
from pykraft.raft.messages import (
    Inbound,
    VoteRequest,
    VoteResponse,
)
from pykraft.raft.types import ReplicaKey
from pykraft.raft.voters import VoterInfo

from .harness import Cluster, endpoint_of
from .voter_watch import key_name

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


@command("nodurable")
def _nodurable(c: Cluster, rest: list[str], nums: list[int]) -> list[str]:
    """nodurable N: N holds a fetched snapshot's durable step until ``durable N``."""
    c.nodes[nums[0]].autodurable = False
    return []


@command("durable")
def _durable(c: Cluster, rest: list[str], nums: list[int]) -> list[str]:
    """durable N [refuse]: N's held durable step completes now (``refuse``: make_durable
    refused the bytes); N performs the next ones at once again."""
    n = c.nodes[nums[0]]
    n.autodurable = True
    writer, n.pending_durable = n.pending_durable, None
    assert writer is not None, "no fetched snapshot waits to be made durable"
    c.finish_durable(nums[0], writer, refuse="refuse" in rest)
    c.drain(nums[0])
    c.deliver()
    return []


@command("fetches")
def _fetches(c: Cluster, rest: list[str], nums: list[int]) -> list[str]:
    """fetches N: how many Fetch and FetchSnapshot requests N has sent."""
    return [f"{nums[0]}: {c.nodes[nums[0]].fetches_sent} fetches sent"]


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
