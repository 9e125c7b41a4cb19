"""Safety invariants of voter changes (KIP-853, KIP-642), checked after every event by
``InvariantChecker`` alongside its own.

"Committed" is always relative to the global ``CommittedHistory`` (what some leader's high
watermark covered), never to a node's own high watermark, which lags (it is not persisted).
The *committed path* is the sequence of voter sets on the committed log: the initial one
(the bootstrap checkpoint, or the static ``controller.quorum.voters`` at kraft.version 0),
then each VotersRecord as it commits.

* ``one-uncommitted-voters-record``: no log (leader, follower or observer) holds more than
  one VotersRecord at or above the committed log end offset. A leader appends a voter
  change only when its own high watermark (a lower bound of the committed end) has passed
  every earlier VotersRecord, so two uncommitted ones can never be in any log.
* ``voter-sets-differ-by-one``: consecutive voter sets on the committed path differ by at
  most one voter (one id added or removed; an endpoint update changes none; a new
  directory id for the same id would count as two: remove first, then add, D12).
* ``voter-change-after-epoch-commit``: the first VotersRecord a leader appends in its epoch
  comes after a committed record of its own epoch (its LeaderChange record committed; the
  2015 single-server membership bug). Exempt: the copy of the bootstrap voter set the first
  leader writes with its LeaderChange (D3), which changes nothing.
* ``removed-leader-not-counted``: a leader outside its voter set (removing itself, D5)
  advances its high watermark only to an offset that a majority of the *other* voters
  reached, according to the leader's own progress table (what its high watermark is
  computed from): it never counts itself.
* ``committed-never-lost``: the last committed batch is held durably (flushed, or under a
  snapshot) by enough voters of the latest committed voter set that no majority of the
  voters that can still vote (their replica key not lost with a wiped disk) lacks it: no
  election could ever produce a leader without committed data, whatever the voter changes.
  (Single-server changes keep this: a batch committed under a set one voter larger or
  smaller is still held by all but a minority of the committed set.)
"""

from __future__ import annotations

from collections.abc import Sequence

from pykraft.raft.voters import VoterSet
from pykraft.sim.history import CommittedHistory, InvariantViolation
from pykraft.sim.node import LEADER, SimNode


def voter_distance(a: VoterSet, b: VoterSet) -> int:
    """How many single-voter changes lead from ``a`` to ``b``: ids added or removed, and
    two for an id whose directory id changed (a removal then an addition)."""
    distance = 0
    for vid in a.ids | b.ids:
        x, y = a.voters.get(vid), b.voters.get(vid)
        if x is None or y is None:
            distance += 1
        elif None not in (x.key.directory_id, y.key.directory_id) and x.key != y.key:
            distance += 2
    return distance


class VoterInvariants:
    """Invariant: ``committed_path`` holds (offset, voter set) for every committed
    VotersRecord in offset order, after the initial set at offset -1."""

    __slots__ = ("checks", "committed_path", "history", "nodes")

    def __init__(
        self, nodes: Sequence[SimNode], history: CommittedHistory, initial: VoterSet
    ) -> None:
        self.nodes = nodes
        self.history = history
        self.committed_path: list[tuple[int, VoterSet]] = [(-1, initial)]
        self.checks = 0

    @property
    def committed_voters(self) -> VoterSet:
        return self.committed_path[-1][1]

    # -- called by InvariantChecker ------------------------------------------------------

    def committed_control_batch(self, leader: SimNode, base: int, nxt: int) -> None:
        """A control batch [base, nxt) of ``leader``'s log was newly committed."""
        core = leader.core
        assert core is not None
        path = self.committed_path
        for offset, voters in core.voter_history.entries:
            if base <= offset < nxt and offset > path[-1][0]:
                self.checks += 1
                previous_offset, previous = path[-1]
                distance = voter_distance(previous, voters)
                if distance > 1:
                    raise InvariantViolation(
                        "voter-sets-differ-by-one",
                        f"the VotersRecord at {offset} committed by leader {leader.id} "
                        f"({_show(voters)}) differs by {distance} voters from the committed "
                        f"voter set before it (at {previous_offset}: {_show(previous)})",
                        leader.id,
                    )
                path.append((offset, voters))

    def hwm_advanced(self, node: SimNode, hwm: int) -> None:
        """``node`` led when its high watermark moved to ``hwm``."""
        core = node.core
        leader = node.obs_leader_state
        assert core is not None
        voters = core.voters
        if leader is None or voters.is_voter(node.key) or not len(voters):
            return
        last = core.voter_history.last_entry()
        if last is not None and last[0] > node.obs_voters_offset:
            # The leader wrote its own removal in this event: the advance may have been
            # computed before, while it still was a voter.
            return
        self.checks += 1
        reached = sorted(
            p.key.id
            for p in leader.voters.values()
            if p.end_offset >= hwm and voters.is_voter(p.key)
        )
        if len(reached) < voters.majority_size:
            raise InvariantViolation(
                "removed-leader-not-counted",
                f"leader {node.id}, outside its voter set {_show(voters)}, advanced its high "
                f"watermark to {hwm} but by its progress only voters {reached} reached it "
                f"(a majority is {voters.majority_size}): it counted itself",
                node.id,
            )

    def observe(self, node: SimNode) -> None:
        """After every event on ``node`` (its high watermark already recorded)."""
        core = node.core
        assert core is not None
        entries = core.voter_history.entries
        end = self.history.end_offset
        self.checks += 2
        uncommitted = 0
        for offset, _voters in reversed(entries):
            if offset < end:
                break
            uncommitted += 1
        if uncommitted > 1:
            raise InvariantViolation(
                "one-uncommitted-voters-record",
                f"node {node.id}'s log holds {uncommitted} VotersRecords at or above the "
                f"committed end offset {end}: "
                f"{[(o, _show(v)) for o, v in entries if o >= end]}",
                node.id,
            )
        last = entries[-1][0] if entries else -2
        if last > node.obs_voters_offset and core.role == LEADER:
            self._leader_appended(node, entries)
        node.obs_voters_offset = last
        self._committed_never_lost()

    # -- helpers -------------------------------------------------------------------------

    def _leader_appended(self, node: SimNode, entries: list[tuple[int, VoterSet]]) -> None:
        """The leader appended VotersRecords (offsets above ``obs_voters_offset``)."""
        core = node.core
        leader = node.obs_leader_state
        assert core is not None
        if leader is None:
            return
        start = leader.epoch_start_offset
        committed = self.history.by_base.get(start)
        own_epoch_committed = committed is not None and committed.epoch == leader.epoch
        for i, (offset, voters) in enumerate(entries):
            if offset <= node.obs_voters_offset or offset < start:
                continue
            self.checks += 1
            if i > 0 and entries[i - 1][0] == -1 and entries[i - 1][1] == voters:
                continue  # D3: the bootstrap set copied into the log, no change
            if not own_epoch_committed:
                raise InvariantViolation(
                    "voter-change-after-epoch-commit",
                    f"leader {node.id} of epoch {leader.epoch} appended a VotersRecord at "
                    f"{offset} ({_show(voters)}) before any record of its epoch committed "
                    f"(its epoch starts at {start}; committed log end "
                    f"{self.history.end_offset})",
                    node.id,
                )

    def _committed_never_lost(self) -> None:
        history = self.history
        end = history.end_offset
        if end == 0:
            return
        last = history.by_end[end]
        base, epoch = last.base_offset, last.epoch
        voters = self.committed_voters
        nodes = self.nodes
        lacking = []
        for key in voters.keys:
            if not 0 < key.id <= len(nodes):
                continue
            node = nodes[key.id - 1]
            if node.key != key:
                continue  # lost with a wiped disk: can never vote again
            log = node.log
            if log.start_offset > base or (
                base < log.flushed_offset and log.epoch_at(base) == epoch
            ):
                continue
            lacking.append(key.id)
        self.checks += 1
        if len(lacking) >= voters.majority_size:
            raise InvariantViolation(
                "committed-never-lost",
                f"voters {lacking} of the committed voter set {_show(voters)} can vote but "
                f"do not hold the last committed batch [{base}, {end}) of epoch {epoch}: "
                f"they are a majority and could elect a leader without it",
            )


def _show(voters: VoterSet) -> str:
    return "{" + ", ".join(str(k) for k in voters.keys) + "}"
