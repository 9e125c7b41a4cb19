"""The node's structured log lines about the quorum: role transitions, with a reason read
off the pair of roles, and voter set changes (KIP-853). Operators and the end-to-end tests
read them."""

from __future__ import annotations

import logging

from pykraft.raft.api import RaftApi
from pykraft.raft.roles import Role
from pykraft.raft.voters import VoterSet

__all__ = ["VoterSetLog", "log_transition", "transition_reason"]

log = logging.getLogger("pykraft.node")


def transition_reason(old: Role, new: Role) -> str:
    """A short reason for a role change, read off the (old, new) pair and their epochs."""
    pair = (old.name, new.name)
    if new.epoch > old.epoch and pair[1] in ("unattached", "follower"):
        return "higher epoch seen" if pair[0] != "resigned" else "resignation done"
    return {
        ("follower", "prospective"): "fetch timeout",
        ("unattached", "prospective"): "election timeout",
        ("prospective", "candidate"): "pre-vote won",
        ("prospective", "follower"): "pre-vote lost, leader known",
        ("prospective", "unattached"): "pre-vote lost",
        ("candidate", "prospective"): "election lost or timed out",
        ("candidate", "leader"): "election won",
        ("candidate", "follower"): "leader discovered",
        ("unattached", "follower"): "leader discovered",
        ("unattached", "unattached"): "voted",
        ("leader", "resigned"): "resigned (shutdown or check quorum)",
    }.get(pair, "state change")


def log_transition(node_id: int, old: Role, new: Role) -> None:
    log.info(
        'role transition node.id=%d from=%s to=%s from_epoch=%d epoch=%d leader=%d reason="%s"',
        node_id,
        old.name,
        new.name,
        old.epoch,
        new.epoch,
        getattr(new, "leader_id", node_id if new.name == "leader" else -1),
        transition_reason(old, new),
    )


class VoterSetLog:
    """One line whenever the voter set in force changes. Invariant: ``_last`` is the voter set
    last seen (None before the first)."""

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: VoterSet | None = None

    def update(self, node_id: int, core: RaftApi) -> None:
        voters = core.voters
        if voters is self._last:
            return
        keys = sorted(str(k) for k in voters.keys)
        if self._last is not None and keys == sorted(str(k) for k in self._last.keys):
            self._last = voters
            return
        self._last = voters
        log.info(
            "voter set node.id=%d voters=%s epoch=%d high_watermark=%d uncommitted=%s",
            node_id,
            ",".join(keys),
            core.epoch,
            core.high_watermark,
            str(bool(getattr(core, "uncommitted_voter_change", False))).lower(),
        )
