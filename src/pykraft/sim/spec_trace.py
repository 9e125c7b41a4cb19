"""Every role transition of every core, walked as the KRaft specifications' next-state
relation allows (issue 49 item 2): a step the specification cannot take is a bug, named.

Theory of operation. ``RaftCore.on_transition`` sees every change of role, including the
several one input may cause (a resigned leader's timer: Unattached at the next epoch, then
Prospective). ``SpecChecker.attach`` hooks each core the simulator starts; each transition
becomes a ``Step`` (node, replica key, the roles and election states before and after), which
the simulator also writes to its trace as a ``transition`` line (``pykraft sim run --trace``).
``SpecState.check`` applies the rules below to each step, in order, keeping what they need
across steps (the leader each epoch names, the vote each replica casts per epoch, each
replica's epoch). The same ``SpecState`` walks a trace file: ``pykraft sim check-trace FILE``
(``check_trace_lines``), so a trace written by another build, or of a real node, is checked by
the same rules.

The rules are our reading of the KIP-853 and KIP-996 specifications' transition functions
(``Vanlightly/kafka-tlaplus``, ``kraft/kip_996``; no text of theirs is copied):

* ``prospective-keeps-epoch``: becoming Prospective never changes the epoch (a pre-vote is
  asked in the current epoch; KIP-996's point is that canvassing disturbs nobody);
* ``candidate-after-prospective``: only a Prospective becomes Candidate, at the next epoch,
  voting for itself;
* ``leader-after-candidate``: only a Candidate becomes Leader, in its epoch;
* ``resigned-after-leader``: only a Leader resigns, in its epoch;
* ``follower-of-another``: a replica follows another replica, never in a lower epoch, and
  never changes the leader it follows within one epoch;
* ``epoch-never-decreases``: no transition lowers a replica's epoch (nor does a restart: the
  ``start`` lines of a trace);
* ``one-vote-per-epoch``: a replica (by replica key) votes for at most one candidate per
  epoch, across restarts;
* ``one-leader-named-per-epoch``: every replica that names a leader for an epoch (as leader
  or follower) names the same one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from pykraft.sim.history import InvariantViolation

if TYPE_CHECKING:
    from pykraft.raft.core import RaftCore
    from pykraft.raft.roles import Role
    from pykraft.raft.types import ReplicaKey

__all__ = ["SpecChecker", "SpecState", "Step", "check_trace_lines"]

NO_LEADER: Final = -1
Trace = Callable[..., None]


@dataclass(frozen=True, slots=True)
class Step:
    """One role transition of one replica (``replica``: its key as text, id:directory)."""

    node: int
    replica: str
    old_role: str
    role: str
    old_epoch: int
    epoch: int
    leader_id: int
    voted: str | None


@dataclass(slots=True)
class SpecState:
    """What the rules keep across steps."""

    leaders: dict[int, int] = field(default_factory=dict)  # epoch -> the leader named
    votes: dict[tuple[str, int], str] = field(default_factory=dict)  # (replica, epoch) -> vote
    epochs: dict[str, int] = field(default_factory=dict)  # replica -> its highest epoch
    steps: int = 0

    def started(self, replica: str, epoch: int, node: int) -> None:
        """A replica (re)started at ``epoch`` (a ``start`` line)."""
        self._epoch(replica, epoch, node, "start")

    def check(self, s: Step) -> None:
        """Raise ``InvariantViolation`` (``spec:<rule>``) when ``s`` is not a step the
        specification can take."""
        self.steps += 1
        what = f"{s.old_role}@{s.old_epoch} -> {s.role}@{s.epoch}"
        if s.role == "prospective" and s.epoch != s.old_epoch:
            _fail("prospective-keeps-epoch", s, what)
        if s.role == "candidate" and (
            s.old_role != "prospective" or s.epoch != s.old_epoch + 1 or s.voted != s.replica
        ):
            _fail("candidate-after-prospective", s, f"{what}, voted {s.voted}")
        if s.role == "leader" and (s.old_role != "candidate" or s.epoch != s.old_epoch):
            _fail("leader-after-candidate", s, what)
        if s.role == "resigned" and (s.old_role != "leader" or s.epoch != s.old_epoch):
            _fail("resigned-after-leader", s, what)
        if s.role == "follower":
            self._follower(s, what)
        self._epoch(s.replica, s.old_epoch, s.node, what)
        self._epoch(s.replica, s.epoch, s.node, what)
        if s.voted is not None:
            cast = self.votes.setdefault((s.replica, s.epoch), s.voted)
            if cast != s.voted:
                _fail("one-vote-per-epoch", s, f"{what}: voted {s.voted}, earlier {cast}")
        named = s.node if s.role == "leader" else s.leader_id
        if named != NO_LEADER and s.role in ("leader", "follower"):
            known = self.leaders.setdefault(s.epoch, named)
            if known != named:
                _fail("one-leader-named-per-epoch", s, f"{what}: names {named}, not {known}")

    def _follower(self, s: Step, what: str) -> None:
        if s.leader_id in (NO_LEADER, s.node) or s.epoch < s.old_epoch:
            _fail("follower-of-another", s, f"{what} following {s.leader_id}")
        if s.old_role == "follower" and s.epoch == s.old_epoch:
            _fail("follower-of-another", s, f"{what}: another leader in the same epoch")

    def _epoch(self, replica: str, epoch: int, node: int, what: str) -> None:
        highest = self.epochs.get(replica, 0)
        if epoch < highest:
            raise InvariantViolation(
                "spec:epoch-never-decreases",
                f"replica {replica} ({what}) is at epoch {epoch} after {highest}",
                node,
            )
        self.epochs[replica] = epoch

    def forget_epochs_from(self, epoch: int) -> None:
        """A recovery from a lost majority (``pykraft.sim.majority_loss``) made the epochs
        from ``epoch`` on new: leaders only lost replicas named for them are forgotten."""
        for known in [e for e in self.leaders if e >= epoch]:
            del self.leaders[known]


def _fail(rule: str, s: Step, what: str) -> None:
    raise InvariantViolation(f"spec:{rule}", f"node {s.node} ({s.replica}): {what}", s.node)


class SpecChecker:
    """Hooks each core's transitions to one ``SpecState``; writes them to the trace."""

    __slots__ = ("_trace", "state")

    def __init__(self, trace: Trace | None) -> None:
        self.state = SpecState()
        self._trace = trace

    def attach(self, node_id: int, key: ReplicaKey, core: RaftCore) -> None:
        replica = f"{key.id}:{key.directory_id}"
        self.state.started(replica, core.epoch, node_id)

        def on_transition(old: Role, new: Role) -> None:
            before, after = old.election(key), new.election(key)
            voted = after.voted_key
            step = Step(
                node_id,
                replica,
                old.name,
                new.name,
                before.epoch,
                after.epoch,
                after.leader_id,
                None if voted is None else f"{voted.id}:{voted.directory_id}",
            )
            if self._trace is not None:
                self._trace(node_id, "transition", **_as_details(step))
            self.state.check(step)

        core.on_transition = on_transition


def _as_details(s: Step) -> dict[str, object]:
    return {
        "replica": s.replica,
        "from": s.old_role,
        "to": s.role,
        "from_epoch": s.old_epoch,
        "epoch": s.epoch,
        "leader_id": s.leader_id,
        "voted": s.voted,
    }


def check_trace_lines(lines: Iterable[str]) -> tuple[int, InvariantViolation | None]:
    """Walk a simulator trace (JSON lines): its ``start`` and ``transition`` lines through
    the rules. Returns the steps checked and the first violation (its message names the
    trace line), or None."""
    state = SpecState()
    for number, line in enumerate(lines, 1):
        event = json.loads(line)
        kind = event.get("kind")
        try:
            if kind == "start" and "directory_id" in event:
                replica = f"{event['node']}:{event['directory_id']}"
                state.started(replica, int(event["epoch"]), int(event["node"]))
            elif kind == "transition":
                state.check(_step(event))
            elif kind == "recovered":
                state.forget_epochs_from(int(event["epoch"]))
        except InvariantViolation as v:
            v.message = f"trace line {number}: {v.message}"
            return state.steps, v
    return state.steps, None


def _step(event: dict[str, object]) -> Step:
    def num(name: str) -> int:
        value = event[name]
        assert isinstance(value, int), (name, value)
        return value

    voted = event.get("voted")
    return Step(
        num("node"),
        str(event["replica"]),
        str(event["from"]),
        str(event["to"]),
        num("from_epoch"),
        num("epoch"),
        num("leader_id"),
        None if voted is None else str(voted),
    )
