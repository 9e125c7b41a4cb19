"""Seeds on which the simulator found bugs in the consensus core, kept as regressions.

Each case names the invariant that broke, the bug, and the run that showed it. A case passes
when the run completes with no violation. A seed replays the same run only with the same
profile definition, so a case whose profile changed since pins the old definition.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from pykraft.sim import FaultProfile, SimConfig, get_profile, run

# "reconfig" as it was when bug 6 was found (partitions were added to it afterwards).
RECONFIG_AT_BUG_6 = FaultProfile(
    name="reconfig",
    latency_max_ms=10,
    nemesis_interval_ms=2_500,
    reassign_weight=3.0,
    crash_weight=1.0,
    wipe_weight=0.5,
    kraft_version=1,
)


@dataclass(frozen=True)
class Case:
    seed: int
    profile: str
    events: int
    observers: int
    found: str  # the violation the bug caused
    pre_vote: bool = True
    pinned_profile: FaultProfile | None = None
    voters: int = 3

    def __str__(self) -> str:
        return f"seed{self.seed}-{self.profile}" + ("" if self.pre_vote else "-no-pre-vote")


CASES = [
    # Bug 1: a follower took the leader's high watermark from a Fetch answer carrying
    # SnapshotId (or DivergingEpoch) without truncating first, and applied its own divergent
    # batches of an older epoch as committed. Kafka updates the follower's high watermark
    # only on a plain records answer.
    Case(5, "partitions", 5000, 1, "committed-unchanged"),
    Case(1, "partitions", 20000, 1, "committed-unchanged"),
    Case(4, "partitions", 5000, 1, "committed-unchanged"),
    Case(9, "lossy", 5000, 1, "committed-unchanged"),
    # Bug 2: a leader whose log starts at a snapshot answered a Fetch whose last fetched
    # epoch is older than the snapshot's with DivergingEpoch(log start, snapshot epoch)
    # instead of SnapshotId (Kafka: epoch < snapshot epoch -> SnapshotId); the follower then
    # truncated inside a batch (AssertionError in truncate_to).
    Case(11, "lossy", 5000, 1, "exception"),
    Case(2, "partitions", 5000, 1, "exception"),
    # Bug 3: liveness. The leader of epoch 5 was lost for good (its disk wiped); each
    # follower timed out to Prospective, got a pre-vote answer naming that leader in the same
    # epoch and went straight back to following it, forever. Kafka's Prospective keeps the
    # leader it knew and only follows a leader it learns anew.
    Case(13, "chaos", 5000, 1, "liveness"),
    # Bug 5: on DivergingEpoch(end offset 1290, epoch 8) a follower whose log has no epoch 8
    # (epoch 7 up to 1296, then 9) truncated to min(1290, 1296) = 1290, inside one of its
    # epoch-7 batches (AssertionError in truncate_to). Kafka's truncateToEndOffset: when the
    # local end offset for the leader's epoch is of another epoch, truncate to that local end
    # offset (a local epoch boundary) and let the next Fetch find the real divergence.
    Case(2053, "lossy", 8000, 1, "exception"),
    # Bug 4 (liveness, pre-vote off): a voter whose log is behind is refused every vote but
    # campaigns again after each election backoff (<= election_backoff_max_ms); each new
    # epoch moved the other voters to Unattached with a fresh election timeout (>= 1 s), so
    # they never campaigned and no leader was ever elected. Kafka keeps the remaining
    # election time when an Unattached/Prospective/Candidate replica learns a higher epoch
    # (QuorumState.transitionToUnattached). Also tests/sim/test_scenarios.py.
    Case(44, "partitions", 8000, 1, "liveness", pre_vote=False),
    Case(127, "lossy", 8000, 1, "liveness", pre_vote=False),
    # Bug 6 (the core's own check_invariants, kraft.version 1): "a leader has at most one
    # VotersRecord above its HWM" fails for a leader just elected after a restart: its HWM
    # is not persisted (991 here) while the VotersRecords at 1009 and 1012 were committed
    # long ago (the committed log ended at 1209). The rule holds once the leader's HWM has
    # passed its epoch start offset (before that, everything below the epoch start is of
    # earlier leaders, and appending a voter change is refused anyway).
    Case(157, "reconfig", 8000, 2, "exception", pinned_profile=RECONFIG_AT_BUG_6),
    Case(929, "reconfig", 8000, 1, "exception"),  # the same, with partitions in the profile
    # Bug 7 (time stood still: 5 million events at one instant): an observer in Unattached
    # whose election timer had expired -- armed while it was a voter, here a leader that
    # removed itself, resigned and moved to Unattached with its deadline "now" -- never
    # campaigns, so the timer never moved, and the core asked to be polled at that past
    # deadline forever. An observer's expired timer is now re-armed (elections.fire_timers).
    Case(1, "membership", 8000, 1, "liveness"),
    # Bug 8 (D6): a voter that restarted with new listeners and was elected before any other
    # leader recorded them never had them written (a leader sends itself no
    # UpdateRaftVoter). The leader now writes its own entry once it may change the voter set
    # (membership._update_own_entry).
    Case(34, "membership", 8000, 1, "reassignment-liveness"),
    Case(25, "upgrade", 8000, 1, "reassignment-liveness"),
    # Bug 9 (liveness, KIP-853): leader 1 of {1, 3} appended its own removal {3} and lost
    # leadership before it committed. Node 1's log (longer, the removal in it) made it an
    # observer, which never campaigned; node 3 (without the removal, voter set {1, 3}) needed
    # node 1's vote, which node 1 refused because node 3's log was behind. No leader, ever.
    # Fixed with the Raft dissertation's rule: a replica still in the latest *committed*
    # voter set may campaign while its removal is uncommitted (QuorumState.may_campaign);
    # majorities are of the latest set, its own vote not counted; elected, it leads as D5's
    # removed leader and resigns once the removal commits (membership.advance).
    Case(50, "upgrade", 8000, 1, "liveness"),
    Case(154, "membership", 5000, 1, "liveness"),  # from the 2,000-seed sweep
    Case(285, "membership", 8000, 1, "liveness"),  # in the CI sweep (test_sweep.py)
    # Bug 10 (B7, found by a Kafka follower in a mixed quorum, tests/interop): a leader
    # just elected stated, in its Fetch answers, the high watermark it had learned as a
    # follower -- below what another follower already held (the previous leader's last
    # advance reached only some). pykraft's followers ignored it; Kafka's stop on
    # "Non-monotonic update of high watermark". A leader now states -1 (unknown) until its
    # own high watermark passes its epoch start, and so does every error answer, as Kafka.
    Case(2, "crashes", 8000, 1, "fetch-hwm-monotonic"),
    Case(7, "crashes", 8000, 1, "fetch-hwm-monotonic"),
    # Bug 11 (liveness, D8; five voters): node 5's disk was wiped and it restarted as an
    # observer (new directory id) configured with the first voter set, while the leader, 6,
    # had joined later. Its fetch to 6 timed out during a partition, so it went round its
    # bootstrap voters, which answered NOT_LEADER_OR_FOLLOWER naming 6; having "the same
    # leader" already, it never asked 6 again (LEO 0 forever). A bootstrap answer that names
    # the leader it follows now sends its next Fetch to that leader, and a follower whose
    # leader joined the voters after it began following states the leader's endpoint from
    # the voter set.
    Case(6122, "upgrade", 20000, 2, "liveness", voters=5),
    Case(7940, "upgrade", 20000, 2, "liveness", voters=5),
    # Bug 12 (D6, reassignment-liveness; the 1,000-runs-per-profile proof): voter 3 restarted
    # with a new listener and sent UpdateRaftVoter while a removal of it was in flight; the
    # leader answered VOTER_NOT_FOUND, final, and voter 3, added back with its old endpoint,
    # never asked again in that epoch: the voter set kept an endpoint no one listened on.
    # Kafka's follower asks again each fetch timeout while its entry differs from itself.
    Case(10775, "membership", 8000, 1, "reassignment-liveness"),
]


@pytest.mark.parametrize(
    "case",
    CASES,
    ids=str,
)
def test_regression(case: Case) -> None:
    config = SimConfig(
        seed=case.seed,
        voters=case.voters,
        profile=case.pinned_profile or get_profile(case.profile),
        events=case.events,
        observers=case.observers,
        pre_vote=case.pre_vote,
    )
    result = run(config)
    assert result.violation is None, result.summary()
