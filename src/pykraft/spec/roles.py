"""The specification's rules for role transitions, votes and epochs.

Theory of operation. Each role change of a replica is a ``Step`` (node, replica key, the
roles and election states before and after). ``RoleRules.check`` applies the rules below to
each, in order, keeping what they need across steps (the leader each epoch names, the vote
each replica casts per epoch, each replica's highest epoch). They are our reading of the
KIP-853 and KIP-996 specifications' transition functions (``Vanlightly/kafka-tlaplus``,
``kraft/kip_996``; no text of theirs is copied):

* ``prospective-keeps-epoch``: becoming Prospective never changes the epoch (a pre-vote is
  asked in the current epoch; KIP-996's point is that canvassing disturbs nobody);
* ``candidate-after-prospective``: only a Prospective becomes Candidate, at the next epoch,
  voting for itself;
* ``leader-after-candidate``: only a Candidate becomes Leader, in its epoch;
* ``resigned-after-leader``: only a Leader resigns, in its epoch;
* ``follower-of-another``: a replica follows another replica, never in a lower epoch, and
  never changes the leader it follows within one epoch;
* ``epoch-never-decreases``: no transition lowers a replica's epoch (nor does a restart);
* ``one-vote-per-epoch``: a replica (by replica key) votes for at most one candidate per
  epoch, across restarts;
* ``one-leader-named-per-epoch``: every replica that names a leader for an epoch (as leader
  or follower) names the same one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

__all__ = ["NO_LEADER", "RoleRules", "SpecViolation", "Step"]

NO_LEADER: Final = -1


class SpecViolation(Exception):
    """A step the specification cannot take: ``rule`` names the rule it breaks."""

    def __init__(self, rule: str, message: str, node: int | None = None) -> None:
        super().__init__(f"spec:{rule}: {message}")
        self.rule = rule
        self.message = message
        self.node = node


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
class RoleRules:
    """What the rules keep across steps."""

    leaders: dict[int, int] = field(default_factory=dict)  # epoch -> the leader named
    votes: dict[tuple[str, int], str] = field(default_factory=dict)  # (replica, epoch) -> vote
    epochs: dict[str, int] = field(default_factory=dict)  # replica -> its highest epoch
    steps: int = 0

    def started(self, replica: str, epoch: int, node: int) -> None:
        """A replica (re)started at ``epoch``."""
        self._epoch(replica, epoch, node, "start")

    def check(self, s: Step) -> None:
        """Raise ``SpecViolation`` when ``s`` is not a step the specification can take."""
        self.steps += 1
        what = f"{s.old_role}@{s.old_epoch} -> {s.role}@{s.epoch}"
        if s.role == "prospective" and s.epoch != s.old_epoch:
            fail("prospective-keeps-epoch", s.node, s.replica, what)
        if s.role == "candidate" and (
            s.old_role != "prospective" or s.epoch != s.old_epoch + 1 or s.voted != s.replica
        ):
            fail("candidate-after-prospective", s.node, s.replica, f"{what}, voted {s.voted}")
        if s.role == "leader" and (s.old_role != "candidate" or s.epoch != s.old_epoch):
            fail("leader-after-candidate", s.node, s.replica, what)
        if s.role == "resigned" and (s.old_role != "leader" or s.epoch != s.old_epoch):
            fail("resigned-after-leader", s.node, s.replica, what)
        if s.role == "follower":
            self._follower(s, what)
        self._epoch(s.replica, s.old_epoch, s.node, what)
        self._epoch(s.replica, s.epoch, s.node, what)
        if s.voted is not None:
            cast = self.votes.setdefault((s.replica, s.epoch), s.voted)
            if cast != s.voted:
                fail(
                    "one-vote-per-epoch", s.node, s.replica, f"{what}: voted {s.voted}, not {cast}"
                )
        named = s.node if s.role == "leader" else s.leader_id
        if named != NO_LEADER and s.role in ("leader", "follower"):
            known = self.leaders.setdefault(s.epoch, named)
            if known != named:
                fail(
                    "one-leader-named-per-epoch",
                    s.node,
                    s.replica,
                    f"{what}: names {named}, not {known}",
                )

    def _follower(self, s: Step, what: str) -> None:
        if s.leader_id in (NO_LEADER, s.node) or s.epoch < s.old_epoch:
            fail("follower-of-another", s.node, s.replica, f"{what} following {s.leader_id}")
        if s.old_role == "follower" and s.epoch == s.old_epoch:
            fail(
                "follower-of-another",
                s.node,
                s.replica,
                f"{what}: another leader in the same epoch",
            )

    def _epoch(self, replica: str, epoch: int, node: int, what: str) -> None:
        highest = self.epochs.get(replica, 0)
        if epoch < highest:
            fail(
                "epoch-never-decreases", node, replica, f"({what}) at epoch {epoch} after {highest}"
            )
        self.epochs[replica] = epoch

    def forget_epochs_from(self, epoch: int) -> None:
        """A recovery from a lost majority made the epochs from ``epoch`` on new: leaders only
        lost replicas named for them are forgotten."""
        for known in [e for e in self.leaders if e >= epoch]:
            del self.leaders[known]


def fail(rule: str, node: int, replica: str, what: str) -> None:
    raise SpecViolation(rule, f"node {node} ({replica}): {what}", node)
