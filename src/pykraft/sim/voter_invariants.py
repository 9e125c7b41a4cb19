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
from pykraft.sim.memory import MemoryLog
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

    __slots__ = (
        "_declared",
        "_forgotten",
        "_lacking",
        "_lost_base",
        "_lost_end",
        "_lost_epoch",
        "_lost_stale",
        "_lost_voters",
        "_members",
        "checks",
        "committed_path",
        "history",
        "nodes",
    )

    def __init__(
        self, nodes: Sequence[SimNode], history: CommittedHistory, initial: VoterSet
    ) -> None:
        self.nodes = nodes
        self.history = history
        self.committed_path: list[tuple[int, VoterSet]] = [(-1, initial)]
        self.checks = 0
        # committed-never-lost, kept incrementally (see ``_committed_never_lost``): the
        # voters lacking the last committed batch [_lost_base, _lost_end) of _lost_epoch,
        # and the log of each voter of ``_lost_voters`` whose key is not lost, with its
        # truncation count when last found holding the batch.
        self._lacking: set[int] = set()
        self._members: dict[int, tuple[MemoryLog, int]] = {}
        self._lost_base = self._lost_end = self._lost_epoch = -1
        self._lost_voters: VoterSet | None = None
        self._lost_stale = True
        # The offset of the VotersRecord a recovery from a lost majority wrote (force-
        # standalone: the seed alone), until it commits: a declared jump of the voter set.
        self._declared = -1
        self._forgotten: list[tuple[int, int]] = []  # committed ranges a recovery forgot

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
                if offset == self._declared:
                    self._declared = -1  # the recovery's voter set: declared, not a change
                elif distance > 1:
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
            for p in leader.progress.voters.values()
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
        # Offsets increase along ``entries``: more than one at or above ``end`` exactly when
        # the one before the last is.
        if (
            len(entries) > 1
            and entries[-2][0] >= end
            and entries[-1][0] != self._declared
            and not self._forgotten_at(entries[-2][0])
        ):
            uncommitted = [(o, _show(v)) for o, v in entries if o >= end]
            raise InvariantViolation(
                "one-uncommitted-voters-record",
                f"node {node.id}'s log holds {len(uncommitted)} VotersRecords at or above the "
                f"committed end offset {end}: {uncommitted}",
                node.id,
            )
        last = entries[-1][0] if entries else -2
        if last > node.obs_voters_offset and core.role == LEADER:
            self._leader_appended(node, entries)
        node.obs_voters_offset = last
        self._committed_never_lost(node)

    def recovered(self, point: int, lost_end: int, voters_offset: int) -> None:
        """A recovery from a lost majority (``pykraft.sim.majority_loss``): the committed
        history was rewound from ``lost_end`` to ``point``, and the seed's log holds the
        VotersRecord naming it alone at ``voters_offset``, which the seed commits as leader.
        A survivor may still hold VotersRecords that were committed in [point, lost_end)
        until the recovered leader truncates them: they are not uncommitted changes."""
        while self.committed_path[-1][0] >= point:
            self.committed_path.pop()
        self._declared = voters_offset
        if lost_end > point:
            self._forgotten.append((point, lost_end))
        self._lost_stale = True

    def _forgotten_at(self, offset: int) -> bool:
        return any(point <= offset < end for point, end in self._forgotten)

    def invalidate(self) -> None:
        """Something other than an event on one node may have changed any node (a nemesis
        strike, a heal, a test's hook): the next check looks at every voter again."""
        self._lost_stale = True

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

    def _committed_never_lost(self, node: SimNode) -> None:
        """Incremental: ``_lacking`` is the set of voters (of the latest committed set, their
        key not lost) without the last committed batch. Only an event on a node changes its
        log or key (anything else calls ``invalidate``), so it is recounted for ``node``
        alone unless the committed end, the committed voter set or the invalidation says
        every voter may have changed. A voter found holding the batch is read again only
        when its log was truncated or reset since (``MemoryLog.truncations``) or its
        flushed offset is no longer above the batch."""
        end = self.history.end_offset
        if end == 0:
            return
        voters = self.committed_path[-1][1]
        if self._lost_stale or end != self._lost_end or voters is not self._lost_voters:
            self._recount_lacking(end, voters)
        else:
            member = self._members.get(node.id)
            log = node.log
            if member is None:
                pass  # not a voter that can vote: changes nothing
            elif member[0] is not log:
                self._recount_lacking(end, voters)  # a log object replaced in place (tests)
            elif node.id in self._lacking:
                if _holds(log, self._lost_base, self._lost_epoch):
                    self._lacking.discard(node.id)
                    self._members[node.id] = (log, log.truncations)
            elif log.truncations != member[1] or not (
                self._lost_base < log.flushed_offset or log.start_offset > self._lost_base
            ):
                # It held the batch: only a truncation or reset since can have replaced it
                # (the epoch there, ``epoch_at``, is read again only then).
                self._members[node.id] = (log, log.truncations)
                if not _holds(log, self._lost_base, self._lost_epoch):
                    self._lacking.add(node.id)
        self.checks += 1
        lacking = self._lacking
        if len(lacking) >= voters.majority_size:
            base = self._lost_base
            ordered = [k.id for k in voters.keys if k.id in lacking]
            raise InvariantViolation(
                "committed-never-lost",
                f"voters {ordered} of the committed voter set {_show(voters)} can vote but "
                f"do not hold the last committed batch [{base}, {end}) of epoch "
                f"{self._lost_epoch}: they are a majority and could elect a leader without it",
            )

    def _recount_lacking(self, end: int, voters: VoterSet) -> None:
        last = self.history.by_end[end]
        base, epoch = last.base_offset, last.epoch
        nodes = self.nodes
        members: dict[int, tuple[MemoryLog, int]] = {}
        lacking: set[int] = set()
        for key in voters.keys:
            if not 0 < key.id <= len(nodes):
                continue
            voter = nodes[key.id - 1]
            if voter.key != key:
                continue  # lost with a wiped disk: can never vote again
            members[key.id] = (voter.log, voter.log.truncations)
            if not _holds(voter.log, base, epoch):
                lacking.add(key.id)
        self._members = members
        self._lacking = lacking
        self._lost_base = base
        self._lost_epoch = epoch
        self._lost_end = end
        self._lost_voters = voters
        self._lost_stale = False


def _holds(log: MemoryLog, base: int, epoch: int) -> bool:
    """Does ``log`` hold the batch at ``base`` of ``epoch`` durably (flushed, or under its
    snapshot)?"""
    return log.start_offset > base or (base < log.flushed_offset and log.epoch_at(base) == epoch)


def _show(voters: VoterSet) -> str:
    return "{" + ", ".join(str(k) for k in voters.keys) + "}"
