"""Seeds on which the simulator found bugs in the consensus core, kept as regressions.

Each case names the invariant that broke, the bug, and the run that showed it. A case passes
when the run completes with no violation.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from pykraft.sim import SimConfig, run


@dataclass(frozen=True)
class Case:
    seed: int
    profile: str
    events: int
    observers: int
    found: str  # the violation the bug caused

    def __str__(self) -> str:
        return f"seed{self.seed}-{self.profile}"


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
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_regression(case: Case) -> None:
    config = SimConfig.make(case.seed, case.profile, events=case.events, observers=case.observers)
    result = run(config)
    assert result.violation is None, result.summary()
