"""What a leader knows of the replicas fetching from it, and the rules that count them (like
etcd's ``tracker/`` and Kafka's ``LeaderState``), kept apart from the core so that each rule
has one home and can be tested on its own (``tests/raft/test_progress.py``):

* the high-watermark candidate (B7, B13): the largest offset a majority of voters reached,
  the leader's own offset counted once flushed;
* check quorum (B9): a majority must fetch within each window, or the leader resigns;
* caught up (D4) and up (E2, E3): fetched at the log end, or at all, within a window;
* D5: a leader outside its voter set (removing itself) counts in none of them.

Pure: no log, no messages, no clock of its own; the caller passes offsets and times in.
The epoch rule (B4: only past the epoch's start offset) and monotonicity (B7) stay with the
caller, which owns the high watermark.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pykraft.raft.quorum import majority_offset
from pykraft.raft.types import ReplicaKey
from pykraft.raft.voters import VoterSet

FOREVER = 2**62


def _within(at_ms: int, now_ms: int, window_ms: int) -> bool:
    """``at_ms`` (-1: never) falls within the last ``window_ms`` before ``now_ms``."""
    return at_ms >= 0 and at_ms >= now_ms - window_ms


@dataclass(slots=True)
class ReplicaProgress:
    """What the leader knows of one fetching replica.

    Invariant: ``end_offset`` only moves through validated fetches (no divergence), so it is
    a prefix of the leader's log.
    """

    key: ReplicaKey
    end_offset: int = -1  # last validated fetch offset; -1 until the first fetch
    last_fetch_ms: int = -1
    last_caught_up_ms: int = -1
    # Kafka's refinement of "caught up": a fetch at or past the leader's LEO as of the
    # replica's previous fetch means it was caught up at that previous fetch's time.
    prev_fetch_leo: int = -1
    prev_fetch_ms: int = -1


@dataclass(slots=True)
class LeaderProgress:
    """The progress of every replica a leader hears from, and its check-quorum window.

    Invariant: ``voters`` holds the other voters of the current voter set, by id (``sync``
    after every change); everything else that fetches is in ``observers``, by key.
    """

    check_quorum_deadline_ms: int  # FOREVER when the leader is the only voter
    voters: dict[int, ReplicaProgress] = field(default_factory=dict)  # other voters only
    observers: dict[ReplicaKey, ReplicaProgress] = field(default_factory=dict)
    fetched_since_check: set[int] = field(default_factory=set)  # voters heard in this window

    @classmethod
    def start(
        cls, voters: VoterSet, local_id: int, check_quorum_deadline_ms: int
    ) -> LeaderProgress:
        """A new leader's view: every other voter known by key, none heard from yet."""
        progress = cls(check_quorum_deadline_ms)
        for vid in voters.others(local_id):
            progress.voters[vid] = ReplicaProgress(voters.voters[vid].key)
        return progress

    def find(self, key: ReplicaKey) -> ReplicaProgress | None:
        """The progress of the replica ``key`` exactly (a voter's old incarnation, with
        another directory id, is not it)."""
        progress = self.observers.get(key)
        if progress is None:
            voter = self.voters.get(key.id)
            if voter is not None and voter.key == key:
                progress = voter
        return progress

    # -- fetches ----------------------------------------------------------------------------

    def note_fetch(
        self,
        key: ReplicaKey,
        voters: VoterSet,
        leader_is_voter: bool,
        now_ms: int,
        check_quorum_ms: int,
    ) -> ReplicaProgress:
        """Record contact from ``key``; B9: once a majority of ``voters`` (the leader
        included only if it is one, D5) has fetched in the current window, the window
        restarts."""
        progress = self.voters.get(key.id)
        if progress is not None and voters.is_voter(key):
            heard = self.fetched_since_check
            heard.add(key.id)
            if len(heard) + leader_is_voter >= voters.majority_size:
                self.check_quorum_deadline_ms = now_ms + check_quorum_ms
                heard.clear()
        else:
            progress = self.observers.get(key)
            if progress is None:
                progress = self.observers[key] = ReplicaProgress(key)
        progress.last_fetch_ms = now_ms
        return progress

    @staticmethod
    def note_position(
        progress: ReplicaProgress, fetch_offset: int, leader_end_offset: int, now_ms: int
    ) -> None:
        """A validated fetch at ``fetch_offset``: the replica's log end moves there, and it is
        caught up now if it reached the leader's log end, or caught up as of its previous
        fetch if it reached where the log ended then."""
        progress.end_offset = fetch_offset
        if fetch_offset >= leader_end_offset:
            progress.last_caught_up_ms = now_ms
        elif progress.prev_fetch_leo >= 0 and fetch_offset >= progress.prev_fetch_leo:
            progress.last_caught_up_ms = max(progress.last_caught_up_ms, progress.prev_fetch_ms)
        progress.prev_fetch_leo, progress.prev_fetch_ms = leader_end_offset, now_ms

    # -- what the counts say ----------------------------------------------------------------

    def high_watermark_candidate(self, voter_count: int, own_flushed: int | None) -> int:
        """B7 + B13: the largest offset a majority of the ``voter_count`` voters reached;
        the leader's own flushed offset counts only when it is a voter (``own_flushed`` None
        otherwise, D5). -1 when no majority has reported."""
        offsets = [p.end_offset for p in self.voters.values() if p.end_offset >= 0]
        if own_flushed is not None:
            offsets.append(own_flushed)
        return majority_offset(offsets, voter_count)

    def check_quorum_lost(self, now_ms: int) -> bool:
        """B9: the window ended without a majority fetching."""
        return self.check_quorum_deadline_ms <= now_ms

    def caught_up(self, key: ReplicaKey, now_ms: int, window_ms: int) -> bool:
        """D4: ``key`` fetched at the leader's log end within the last ``window_ms``."""
        progress = self.find(key)
        return progress is not None and _within(progress.last_caught_up_ms, now_ms, window_ms)

    def is_up(self, key: ReplicaKey, now_ms: int, window_ms: int) -> bool:
        """E2, E3: ``key`` fetched at all within the last ``window_ms``."""
        progress = self.find(key)
        return progress is not None and _within(progress.last_fetch_ms, now_ms, window_ms)

    def end_offset(self, key: ReplicaKey) -> int:
        progress = self.find(key)
        return -1 if progress is None else progress.end_offset

    def successors(self) -> tuple[ReplicaKey, ...]:
        """Other voters, most caught up first (EndQuorumEpoch's preferred successors, B8)."""
        ranked = sorted(self.voters.values(), key=lambda p: (-p.end_offset, p.key.id))
        return tuple(p.key for p in ranked)

    # -- the voter set changed --------------------------------------------------------------

    def sync(
        self,
        voters: VoterSet,
        local_id: int,
        only_voter: bool,
        now_ms: int,
        check_quorum_ms: int,
    ) -> None:
        """Move replicas between ``voters`` and ``observers`` after the voter set changed,
        keeping what is known of their progress, and fix the check-quorum window: none while
        the leader is the only voter, a fresh one when it stops being."""
        old = self.voters
        new: dict[int, ReplicaProgress] = {}
        for vid, info in voters.voters.items():
            if vid == local_id:
                continue
            progress = old.get(vid)
            if progress is None or progress.key != info.key:
                progress = self.observers.pop(info.key, None) or ReplicaProgress(info.key)
            new[vid] = progress
        for vid, progress in old.items():
            if new.get(vid) is not progress:
                self.observers[progress.key] = progress  # demoted: still fetching, still shown
        self.voters = new
        self.fetched_since_check &= set(new)
        if only_voter:
            self.check_quorum_deadline_ms = FOREVER
        elif self.check_quorum_deadline_ms == FOREVER:
            self.check_quorum_deadline_ms = now_ms + check_quorum_ms
