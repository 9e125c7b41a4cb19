"""Profile ``majority-loss`` (issue 48): a majority of the voters lost for good (stopped, disks
wiped) and the quorum brought back from a survivor with ``metadata-recovery``'s own code
(``pykraft.sim.majority_loss``), the usual invariants holding across each recovery from its
declared recovery point."""

from __future__ import annotations

from pykraft.sim import SimConfig, get_profile, run
from pykraft.sim.history import CommittedHistory

SEEDS = range(0, 12)


def test_majorities_lost_and_recovered_with_every_invariant_holding() -> None:
    results = [
        run(
            SimConfig(
                seed=s, voters=3, observers=2, events=8_000, profile=get_profile("majority-loss")
            )
        )
        for s in SEEDS
    ]
    failed = [(r.seed, r.violation.invariant, r.violation.message) for r in results if r.violation]
    assert not failed, failed
    for r in results:
        # Every loss was recovered, and the quorum grew back to three voters.
        assert r.faults.get("recovered", 0) == r.faults.get("lose_majority", 0), r.faults
        assert len(r.final_voters.split(",")) == 3, (r.seed, r.final_voters)
    assert sum(r.faults.get("lose_majority", 0) for r in results) >= len(SEEDS)
    # Some recoveries lost committed batches the seed never had (what losing a majority
    # means): the recovery point is then below the committed end, and the runs still pass.
    assert sum(r.faults.get("recovered_lost_offsets", 0) for r in results) > 0


def test_a_rewound_history_takes_new_batches_from_the_recovery_point() -> None:
    history = CommittedHistory()
    for base in range(5):
        history.record(base, base + 1, 1, 100 + base, 1, base, node=1)
    assert history.matching_prefix(0, [(0, 1, 1, 100), (1, 2, 1, 101), (2, 3, 2, 7)]) == 2
    assert history.rewind(2) == 3
    assert (history.end_offset, history.records) == (2, 2)
    assert history.record(2, 4, 3, 55, 1, 10, node=2)  # another batch at the point
    assert history.state_at(4) is not None and history.state_at(5) is None
