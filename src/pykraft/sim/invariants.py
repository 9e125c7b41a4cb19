"""Safety invariants, checked after every event on the node(s) the event touched.

Checked incrementally (each check looks only at what changed since the node's last
observation, so the cost per event is a few attribute reads):

* ``one-leader-per-epoch``: at most one node is ever leader of a given epoch (across all
  incarnations of all nodes); ``never-two-leaders-in-same-epoch``: no two nodes ever name
  different leaders for one epoch (followers' views included).
* ``states-match-roles``: a node is prospective or candidate only as a voter of its latest
  voter set or of the latest one below its high watermark (a voter whose removal is not
  committed may still campaign, D5): observers never stand for election.
* ``epoch-monotonic``: a node's epoch never decreases, also across restarts (it is in the
  durable quorum-state); only a disk wipe (a new replica) starts over.
* ``hwm-monotonic``: a node's high watermark never decreases within one incarnation. The
  high watermark is not persisted (as in Kafka), so a restarted node starts over; but
  ``hwm-above-log-start`` holds always: once a node reports a high watermark above 0 it is at
  least its log start offset, i.e. never below what its durable snapshot proves committed.
  ``hwm-below-leo``: a high watermark never exceeds the node's log end offset.
* ``leader-hwm-current-epoch`` (B4): when a leader's high watermark advances, the batch just
  below it was written in the leader's epoch.
* ``hwm-majority``: every batch newly below a leader's high watermark is held *durably* by a
  majority of the voters (same epoch at that offset, below the voter's flushed offset, or
  covered by the voter's snapshot), the voter set being the leader's latest one (the one its
  high watermark is computed with, kraft.version 1 included). A wiped voter is a new replica
  (its old key is not its key any more) and holds nothing new; but acknowledgements the lost
  voter sent before its disk was lost may still arrive and count, so the old key is credited
  with what it held durably at that moment (its ghost), which is exactly Raft's model of a
  voter that failed for good.
* ``committed-unchanged`` / ``committed-dense`` / ``hwm-beyond-committed``: batches below a
  leader's high watermark are recorded in the global ``CommittedHistory``; every node's
  application checks every batch it applies against it (``app.StateMachine.apply``), and
  ``snapshot-committed`` checks snapshots against it.
* ``leader-completeness``: a node that becomes leader holds the last committed batch (in its
  log or under its snapshot), hence, by log matching, the whole committed prefix.
* ``log-start-snapshot``: a node's log start offset, when above 0, is covered by a snapshot it
  holds.
* ``fetch-hwm-monotonic`` (checked by the simulator as it delivers each Fetch answer): an
  answer of the receiver's epoch never states a high watermark below the receiver's own.
* ``no-auto-join-after-removal`` (checked by ``SimNode.drive`` as a node sends each
  AddRaftVoter): a replica asks
  to add its own key only if that key was never in a committed voter set (KAFKA-19850: a
  removed controller must not re-admit itself, whatever snapshots and restarts did to its
  log).

Profile ``majority-loss`` adds ``recovery-has-seed`` (a survivor can seed the quorum),
``recovery-seed-holds-committed`` and ``recovery-epoch-above-survivors``, checked at each
recovery from a lost majority, which
declares its recovery point (``recovered``): see ``pykraft.sim.majority_loss``.

The invariants of voter changes (``one-uncommitted-voters-record``,
``voter-sets-differ-by-one``, ``voter-change-after-epoch-commit``,
``removed-leader-not-counted``, ``committed-never-lost``) live in
``pykraft.sim.voter_invariants`` and run from here, after the checks above.

Besides these, after every event the driver runs the core's own ``check_invariants``
(reported as an ``exception`` violation when it fails), and every ``audit_every_events``
``audit`` does the full, non-incremental comparison of every node's log with the history; it also
runs at the end of a run.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from kio.schema.errors import ErrorCode

from pykraft.raft.messages import FetchResponse
from pykraft.raft.roles import Leader
from pykraft.raft.voters import VoterSet
from pykraft.records import (
    BATCH_FIELDS,
    BATCH_LENGTH_OVERHEAD,
    CONTROL_FLAG,
    decode_records,
    read_header,
    scan_batches,
)
from pykraft.sim.client_appends import append_history, check_appends
from pykraft.sim.history import CommittedHistory, InvariantViolation
from pykraft.sim.node import LEADER, Ghost, SimNode
from pykraft.sim.voter_invariants import VoterInvariants

if TYPE_CHECKING:
    from pykraft.raft.core import RaftCore
    from pykraft.raft.types import ReplicaKey

_READ_BYTES = 1024 * 1024
_CANVASSING = ("prospective", "candidate")


class Observer(Protocol):
    """What the checker tells the simulator about (for stats and the trace)."""

    def role_changed(self, node: SimNode, old_role: str, now_ms: int) -> None: ...

    def hwm_changed(self, node: SimNode, old: int, now_ms: int) -> None: ...

    def committed(self, node: SimNode, base_offset: int, next_offset: int, now_ms: int) -> None:
        """A batch was newly recorded as committed by leader ``node``."""
        ...


class InvariantChecker:
    """Invariant: ``leaders_by_epoch[e]`` is the only node id ever seen leading epoch ``e``."""

    __slots__ = (
        "_checks",
        "_observer",
        "client_appends",
        "history",
        "known_leaders",
        "leaders_by_epoch",
        "nodes",
        "promises",
        "voters",
    )

    def __init__(
        self,
        nodes: Sequence[SimNode],
        history: CommittedHistory,
        observer: Observer,
        initial_voters: VoterSet,
    ) -> None:
        self.nodes = nodes
        self.history = history
        self._observer = observer
        self.leaders_by_epoch: dict[int, int] = {}
        self.known_leaders: dict[int, int] = {}  # epoch -> the leader any node names for it
        self._checks = 0
        self.voters = VoterInvariants(nodes, history, initial_voters)
        # RaftCore.schedule_append's answers: offset -> (epoch, the last record's value). A
        # promise is kept if that offset commits in that epoch (else the records were
        # dropped with the leadership, legally); checked and forgotten when it commits.
        self.promises: dict[int, tuple[int, bytes]] = {}
        # Every client append as the leader took it: (time, epoch, last offset); checked at
        # the end of a run as a history (``client_appends.py``).
        self.client_appends: list[tuple[int, int, int]] = []

    def recovered(self, point: int, epoch: int, voters_offset: int, lost: set[int]) -> int:
        """A recovery from a lost majority (``pykraft.sim.majority_loss``) declared its
        recovery point ``point`` and made the seed the only voter at ``epoch`` with the
        VotersRecord at ``voters_offset``. What only the lost nodes knew is forgotten: the
        committed batches after ``point`` (returns how many offsets), the leaders of epochs
        from ``epoch`` on (``recovery-epoch-above-survivors`` if a survivor led one) and the
        appends promised after ``point``, and the client appends whose records reach past it
        (``appends-linearizable``: their fate went with the majority, and the epochs from
        ``epoch`` on may be used again at the same offsets)."""
        for led, leader in sorted(self.leaders_by_epoch.items()):
            if led < epoch:
                continue
            if leader not in lost:
                raise InvariantViolation(
                    "recovery-epoch-above-survivors",
                    f"the recovery made epoch {epoch} the seed's, but surviving node {leader} "
                    f"led epoch {led}",
                    leader,
                )
            del self.leaders_by_epoch[led]
        for known in [e for e in self.known_leaders if e >= epoch]:
            del self.known_leaders[known]
        for offset in [o for o in self.promises if o >= point]:
            del self.promises[offset]
        self.client_appends = [a for a in self.client_appends if a[2] < point]
        self.voters.recovered(point, self.history.end_offset, voters_offset)
        return self.history.rewind(point)

    def invalidate(self) -> None:
        """Nodes may have changed outside their own events (see ``VoterInvariants``)."""
        self.voters.invalidate()

    @property
    def checks(self) -> int:
        return self._checks + self.voters.checks

    def observe(self, node: SimNode, now_ms: int) -> None:
        """Compare the node's state with its last observation; raise on a violation."""
        core = node.core
        if core is None:
            return
        role = core.role
        epoch = core.epoch
        hwm = core.high_watermark
        self._checks += 3
        if role == LEADER:
            state = core.state
            if isinstance(state, Leader):  # (a test's lying core may claim the role only)
                node.obs_leader_state = state
        # A leader whose own removal just committed (D5) advanced its high watermark and
        # resigned in one step: that advance is still a leader's.
        led = role == LEADER or (node.obs_role == LEADER and epoch == node.obs_epoch)
        if epoch != node.obs_epoch or role != node.obs_role:
            self._role_changed(node, core, now_ms)
        elif core.leader_id != node.obs_leader:
            node.obs_leader = core.leader_id
            self._known_leader(node, epoch, core.leader_id)
            self._observer.role_changed(node, role, now_ms)
        if hwm != node.obs_hwm:
            self._hwm_changed(node, hwm, led, epoch, now_ms)
        log = node.log
        if hwm > log.end_offset:
            # Also after the fact: a truncation below the high watermark.
            raise InvariantViolation(
                "hwm-below-leo",
                f"node {node.id}'s high watermark {hwm} is above its log end offset "
                f"{log.end_offset} (committed data truncated?)",
                node.id,
            )
        start = log.start_offset
        if start != node.obs_start_offset:
            self._checks += 1
            latest = node.snapshots.latest()
            if start > 0 and (latest is None or latest.offset < start):
                raise InvariantViolation(
                    "log-start-snapshot",
                    f"node {node.id}'s log starts at {start} but its latest snapshot is {latest}",
                    node.id,
                )
            node.obs_start_offset = start
        self.voters.observe(node)

    def _role_changed(self, node: SimNode, core: RaftCore, now_ms: int) -> None:
        """``node``'s role or epoch changed since its last observation."""
        role, epoch = core.role, core.epoch
        if epoch < node.max_epoch:
            raise InvariantViolation(
                "epoch-monotonic",
                f"node {node.id} is at epoch {epoch} after reaching {node.max_epoch}",
                node.id,
            )
        node.max_epoch = epoch
        old_role = node.obs_role
        node.obs_role = role
        node.obs_epoch = epoch
        node.obs_leader = core.leader_id
        if role == LEADER:
            self._new_leader(node, epoch)
        elif role in _CANVASSING and not _may_stand(core, node.key):
            raise InvariantViolation(
                "states-match-roles",
                f"node {node.id} is {role} in epoch {epoch} but neither a voter of its latest "
                "voter set nor of the latest one below its high watermark: an observer never "
                "stands for election",
                node.id,
            )
        self._known_leader(node, epoch, core.leader_id)
        self._observer.role_changed(node, old_role, now_ms)

    def _known_leader(self, node: SimNode, epoch: int, leader_id: int) -> None:
        """``never-two-leaders-in-same-epoch``: no two nodes name different leaders for one
        epoch (whoever they learnt it from)."""
        if leader_id < 0:
            return
        self._checks += 1
        known = self.known_leaders.setdefault(epoch, leader_id)
        if known != leader_id:
            raise InvariantViolation(
                "never-two-leaders-in-same-epoch",
                f"node {node.id} takes node {leader_id} for the leader of epoch {epoch}, "
                f"which another node took to be node {known}",
                node.id,
            )

    def started(self, node: SimNode, now_ms: int) -> None:
        """``node`` just started (``SimNode.start`` took its role and epoch as observed): the
        checks of a change that the restart itself made, ``epoch-monotonic`` across the
        restart, and a core that starts as leader (a voter set of one) is a new leader."""
        core = node.core
        assert core is not None
        if core.epoch < node.max_epoch:
            raise InvariantViolation(
                "epoch-monotonic",
                f"node {node.id} restarted at epoch {core.epoch} after reaching {node.max_epoch}",
                node.id,
            )
        node.max_epoch = core.epoch
        self._known_leader(node, core.epoch, core.leader_id)
        if core.role == LEADER:
            self._new_leader(node, core.epoch)
            self._observer.role_changed(node, "down", now_ms)

    # -- helpers ---------------------------------------------------------------------------

    def _new_leader(self, node: SimNode, epoch: int) -> None:
        self._checks += 2
        previous = self.leaders_by_epoch.setdefault(epoch, node.id)
        if previous != node.id:
            raise InvariantViolation(
                "one-leader-per-epoch",
                f"node {node.id} became leader of epoch {epoch}, already led by node {previous}",
                node.id,
            )
        history = self.history
        if history.end_offset == 0:
            return
        last = history.by_end[history.end_offset]
        log = node.log
        if log.start_offset > last.base_offset:
            return  # under the leader's snapshot
        if log.epoch_at(last.base_offset) != last.epoch:
            raise InvariantViolation(
                "leader-completeness",
                f"node {node.id} became leader of epoch {epoch} without the last committed "
                f"batch [{last.base_offset}, {last.next_offset}) of epoch {last.epoch} (its "
                f"log is [{log.start_offset}, {log.end_offset}), epoch there "
                f"{log.epoch_at(last.base_offset)})",
                node.id,
            )

    def _hwm_changed(self, node: SimNode, hwm: int, led: bool, epoch: int, now_ms: int) -> None:
        self._checks += 3
        old = node.obs_hwm
        log = node.log
        if hwm < old:
            raise InvariantViolation(
                "hwm-monotonic",
                f"node {node.id}'s high watermark went from {old} back to {hwm}",
                node.id,
            )
        if hwm > log.end_offset:
            raise InvariantViolation(
                "hwm-below-leo",
                f"node {node.id}'s high watermark {hwm} is above its log end offset "
                f"{log.end_offset}",
                node.id,
            )
        if 0 < hwm < log.start_offset:
            raise InvariantViolation(
                "hwm-above-log-start",
                f"node {node.id}'s high watermark {hwm} is below its log start offset "
                f"{log.start_offset}",
                node.id,
            )
        node.obs_hwm = hwm
        self._observer.hwm_changed(node, old, now_ms)
        if led:
            self.voters.hwm_advanced(node, hwm)
            if log.epoch_at(hwm - 1) not in (epoch, None):
                raise InvariantViolation(
                    "leader-hwm-current-epoch",
                    f"leader {node.id} of epoch {epoch} advanced its high watermark to {hwm} "
                    f"over a batch of epoch {log.epoch_at(hwm - 1)}",
                    node.id,
                )
            self._record_committed(node, old, hwm, now_ms)

    def _record_committed(self, node: SimNode, old: int, hwm: int, now_ms: int) -> None:
        """Record the leader's batches in [old, hwm) as committed; check each is held by a
        majority of voters."""
        log = node.log
        history = self.history
        unpack_from = BATCH_FIELDS.unpack_from
        offset = max(old, log.start_offset)
        if offset > history.end_offset:
            raise InvariantViolation(
                "committed-dense",
                f"leader {node.id}'s log starts at {log.start_offset} (snapshot) but the "
                f"committed log ends at {history.end_offset}",
                node.id,
            )
        # Bound: each read yields at least one batch (>= 1 offset) or stops the loop.
        for _ in range(hwm - offset + 1):
            if offset >= hwm:
                return
            data = log.read(offset, _READ_BYTES)
            if not data:
                raise InvariantViolation(
                    "hwm-below-leo",
                    f"leader {node.id} cannot read offset {offset} below its high watermark {hwm}",
                    node.id,
                )
            pos = 0
            size = len(data)
            while pos < size:
                base, length, epoch, _magic, crc, attrs, delta = unpack_from(data, pos)
                pos += BATCH_LENGTH_OVERHEAD + length
                if base >= hwm:
                    return
                nxt = base + delta + 1
                data_records = 0 if attrs & CONTROL_FLAG else delta + 1
                if history.record(base, nxt, epoch, crc, data_records, now_ms, node.id):
                    self._check_majority(node, base, nxt, epoch)
                    if self.promises and data_records:
                        self._check_promises(node, data[pos - BATCH_LENGTH_OVERHEAD - length : pos])
                    if not data_records:
                        self.voters.committed_control_batch(node, base, nxt)
                    self._observer.committed(node, base, nxt, now_ms)
                offset = nxt
        raise AssertionError("unreachable: the loop bound covers every offset")

    def _check_promises(self, node: SimNode, batch: bytes) -> None:
        """A record scheduled at an offset (``schedule_append``'s answer) is the record that
        commits there in its epoch: the scheduled records kept their place in the log."""
        header = read_header(batch)
        promises = self.promises
        for record in decode_records(batch):
            promise = promises.pop(record.offset, None)
            if promise is None or promise[0] != header.partition_leader_epoch:
                continue
            if record.value != promise[1]:
                raise InvariantViolation(
                    "scheduled-offset",
                    f"offset {record.offset} was promised to {promise[1]!r} in epoch "
                    f"{promise[0]} but commits {record.value!r}",
                    node.id,
                )

    def _check_majority(self, leader: SimNode, base: int, nxt: int, epoch: int) -> None:
        """Held by a majority of the leader's voter set (the latest one, committed or not,
        which is the one its high watermark is computed with). When the leader appended a
        VotersRecord in this very event, the advance may have been computed just before,
        with the set in force until then: a majority of that one also counts."""
        self._checks += 1
        core = leader.core
        assert core is not None
        voters = core.voters
        holders = self._holders(voters, base, epoch)
        if len(holders) >= voters.majority_size:
            return
        entries = core.voter_history.entries
        if entries and entries[-1][0] > leader.obs_voters_offset:
            previous = entries[-2][1] if len(entries) > 1 else self.voters.committed_path[0][1]
            if len(self._holders(previous, base, epoch)) >= previous.majority_size:
                return
        raise InvariantViolation(
            "hwm-majority",
            f"leader {leader.id} committed [{base}, {nxt}) of epoch {epoch} but only "
            f"voters {holders} of {sorted(voters.ids)} hold it durably (a lost voter's "
            f"copy is negative)",
            leader.id,
        )

    def _holders(self, voters: VoterSet, base: int, epoch: int) -> list[int]:
        """Voters of ``voters`` holding the batch at ``base`` of ``epoch`` durably (a lost
        voter's copy, as it was when its disk was lost, as a negative id)."""
        nodes = self.nodes
        holders = []
        for key in voters.keys:
            if not 0 < key.id <= len(nodes):
                continue
            node = nodes[key.id - 1]
            if node.key == key:
                log = node.log
                if log.start_offset > base or (
                    base < log.flushed_offset and log.epoch_at(base) == epoch
                ):
                    holders.append(key.id)
            else:
                ghost = node.ghosts.get(key)
                if ghost is not None and _ghost_holds(ghost, base, epoch):
                    holders.append(-key.id)
        return holders

    # -- full audit ------------------------------------------------------------------------

    def audit(self, final: bool = False) -> int:
        """Every batch below each live node's high watermark equals the committed one; at
        the run's end (``final``) the client appends' history is linearizable too
        (``client_appends.py``). Returns the number of batches compared."""
        compared = 0
        history = self.history
        for node in self.nodes:
            core = node.core
            if core is None:
                continue
            hwm = core.high_watermark
            for base, nxt, epoch, raw in node.log.batches():
                if nxt > hwm:
                    break
                scan_batches(raw, verify_crc=True)  # framing, header, contents vs its CRC
                crc = BATCH_FIELDS.unpack_from(raw)[4]
                history.check(base, nxt, epoch, crc, node.id, "audit")
                compared += 1
        if final:
            compared += check_appends(append_history(self.client_appends, history))
        self._checks += compared
        return compared


def _may_stand(core: RaftCore, key: ReplicaKey) -> bool:
    """A voter of the latest voter set, or of the latest committed one (below the high
    watermark: a voter whose removal is not committed yet may still campaign, SPEC D5)."""
    if core.voters.is_voter(key):
        return True
    # Recomputed from the voter history (the static voters before any VotersRecord), not
    # read from the flags the core keeps for it (``QuorumState.may_campaign``).
    return core.control.committed_voters(core.high_watermark).is_voter(key)


def _ghost_holds(ghost: Ghost, base: int, epoch: int) -> bool:
    """Did the lost voter hold the batch at ``base`` of ``epoch`` when its disk was lost?"""
    start, end, bases, epochs = ghost
    if base < start:
        return True  # under its snapshot
    if base >= end:
        return False
    i = bisect_right(bases, base) - 1
    return i >= 0 and epochs[i] == epoch


def check_stated_hwm(node_id: int, core: RaftCore, response: FetchResponse) -> None:
    """``fetch-hwm-monotonic`` (B7): a successful Fetch answer of the receiver's own epoch
    never states a high watermark (-1 = unknown aside) below the one the receiver holds.
    Kafka's followers treat that as fatal ("Non-monotonic update of high watermark")."""
    stated = response.high_watermark
    if (
        0 <= stated < core.high_watermark
        and response.epoch == core.epoch
        and response.error == ErrorCode.none
    ):
        raise InvariantViolation(
            "fetch-hwm-monotonic",
            f"leader {response.leader_id} stated high watermark {stated} in epoch "
            f"{response.epoch}, the receiver holds {core.high_watermark}",
            node_id,
        )
