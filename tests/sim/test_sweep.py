"""The CI sweep: 308 seeds spread over every fault profile, on two processes.

Each seed runs 8,000 fault-phase events then heals; about a minute on the 2-core CI machine.
The long run is ``pykraft sim sweep --seeds 0..100000``.
"""

from __future__ import annotations

from pykraft.sim import PROFILES, sweep

CI_SEEDS = range(0, 7 * 44)  # 44 seeds per profile
CI_EVENTS = 8000


def test_ci_sweep_of_308_seeds_over_all_profiles() -> None:
    report = sweep(CI_SEEDS, list(PROFILES), events=CI_EVENTS, observers=1, spread=True, jobs=2)
    print(report.format())
    assert report.runs == len(CI_SEEDS)
    assert set(report.by_profile) == set(PROFILES)
    assert all(s.runs == len(CI_SEEDS) // len(PROFILES) for s in report.by_profile.values())
    assert report.ok, report.format()
    # The faults really happened.
    faults = {k for s in report.by_profile.values() for k in s.faults}
    assert {"link_loss", "partition", "one_way", "crash", "shutdown", "wipe", "reassign"} <= faults
