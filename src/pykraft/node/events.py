"""The node's structured log lines about the quorum: its start, role transitions with a
reason read off the pair of roles, a ``Ready``'s events (snapshot loaded, leader change,
operations done) and voter set changes (KIP-853). Operators and the end-to-end tests
read them."""

from __future__ import annotations

import logging
import uuid

from pykraft.raft.api import RaftApi
from pykraft.raft.interfaces import Ready
from pykraft.raft.roles import Role
from pykraft.raft.types import Endpoint
from pykraft.raft.voters import VoterSet

__all__ = ["VoterSetLog", "log_ready", "log_started", "log_transition", "transition_reason"]

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


def log_started(
    node_id: int,
    directory_id: uuid.UUID | None,
    cluster_id: str,
    listener: Endpoint,
    port: int,
    core: RaftApi,
) -> None:
    log.info(
        "node started node.id=%d directory.id=%s cluster.id=%s listener=%s:%d role=%s "
        "epoch=%d log_end_offset=%d",
        node_id,
        directory_id,
        cluster_id,
        listener.host,
        port,
        core.role,
        core.epoch,
        core.log.end_offset,
    )


def log_ready(ready: Ready) -> None:
    """A ``Ready``'s events: a snapshot loaded, a leader change, operations done."""
    if ready.snapshot_loaded is not None:
        log.info("snapshot loaded snapshot_id=%s", ready.snapshot_loaded)
    if ready.leader_change is not None:
        change = ready.leader_change
        log.info("leader change leader=%d epoch=%d", change.leader_id, change.epoch)
    for done in ready.completed:
        log.info("operation done op=%s error=%s", done.operation, done.error.name)


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

    __slots__ = ("_last", "_static_ignored")

    def __init__(self) -> None:
        self._last: VoterSet | None = None
        self._static_ignored = False  # logged once, when kraft.version >= 1

    def update(self, node_id: int, core: RaftApi, static_voters: bool = False) -> None:
        """After each ``Ready``: the voter set's line if it changed; with ``static_voters``
        (``controller.quorum.voters`` set), once, that the setting is ignored from
        kraft.version 1."""
        self._voters_changed(node_id, core)
        if static_voters and core.kraft_version >= 1 and not self._static_ignored:
            self._static_ignored = True
            log.warning(
                "controller.quorum.voters is ignored: kraft.version is %d, the voter set comes "
                "from the metadata log; it is safe to remove the setting "
                "(ignored-static-voters=1)",
                core.kraft_version,
            )

    def _voters_changed(self, node_id: int, core: RaftApi) -> None:
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
