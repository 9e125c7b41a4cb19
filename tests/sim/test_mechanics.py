"""The simulator's own parts: network, nemesis bounds, phases, stats."""

from __future__ import annotations

import random

from pykraft.sim import PROFILES, SimConfig, Simulation, get_profile
from pykraft.sim.config import LIVENESS_BOUND_MS, liveness_bound_ms
from pykraft.sim.network import DROP_BLOCKED, Network
from pykraft.sim.operations import current_voters
from pykraft.sim.sweep import parse_seeds


def test_network_fifo_unless_reordered() -> None:
    net = Network(range(1, 4), get_profile("none"), random.Random(1))
    times = [net.route(1, 2, now)[0] for now in range(0, 100, 1)]
    assert times == sorted(times)
    lossy = Network(range(1, 4), get_profile("lossy"), random.Random(1))
    copies = [lossy.route(1, 2, now) for now in range(2000)]
    assert any(len(c) == 0 for c in copies) and any(len(c) == 2 for c in copies)


def test_network_partitions_block_both_ways_and_heal() -> None:
    net = Network(range(1, 5), get_profile("none"), random.Random(1))
    links = net.partition_links([1, 2])
    assert sorted(links) == sorted([(1, 3), (1, 4), (2, 3), (2, 4), (3, 1), (4, 1), (3, 2), (4, 2)])
    net.block(links)
    net.block(links)  # overlapping partitions
    assert net.route(1, 3, 0) == () and net.drop_reason == DROP_BLOCKED
    assert net.route(1, 2, 0) != ()
    net.unblock(links)
    assert net.route(3, 1, 0) == ()
    net.unblock(links)
    assert net.route(3, 1, 0) != ()


def test_disk_profile_never_wipes_more_than_a_minority_of_voters() -> None:
    for seed in range(3):
        sim = Simulation(SimConfig.make(seed, "disk", voters=5, observers=1, events=6000))
        result = sim.run()
        assert result.faults.get("wipe", 0) > 0
        wiped_voters = [n.id for n in sim.nodes if n.is_voter_slot and n.replaced]
        assert len(wiped_voters) <= 2, wiped_voters
        assert result.violation is None, result.summary()


def test_crashes_profile_keeps_a_majority_up() -> None:
    seen_down: list[int] = []

    def hook(sim: Simulation, index: int) -> None:
        down = sum(1 for n in sim.nodes if n.is_voter_slot and not n.up)
        seen_down.append(down)

    result = Simulation(SimConfig.make(1, "crashes", voters=3, events=5000, hook=hook)).run()
    assert result.faults.get("crash", 0) > 0
    assert max(seen_down) == 1


def test_every_node_restarts_and_applies_after_the_heal() -> None:
    sim = Simulation(SimConfig.make(2, "crashes", observers=2, events=4000))
    result = sim.run()
    assert result.violation is None, result.summary()
    assert result.recovery_ms is not None and result.recovery_ms <= LIVENESS_BOUND_MS
    assert all(n.up for n in sim.nodes)
    ends = {n.app.applied_end for n in sim.nodes}
    assert min(ends) > 0
    assert result.elections >= 1 and result.committed_records > 0
    assert result.invariants_checked > result.events


def test_snapshots_are_taken_and_installed() -> None:
    result = Simulation(
        SimConfig.make(3, "crashes", observers=1, events=8000, snapshot_interval_records=20)
    ).run()
    assert result.violation is None, result.summary()
    assert result.snapshots > 10


def test_liveness_bound_follows_the_timeouts() -> None:
    assert LIVENESS_BOUND_MS == 41_000
    assert SimConfig(seed=1).liveness_bound_ms == LIVENESS_BOUND_MS
    assert (
        liveness_bound_ms(
            election_timeout_ms=100,
            fetch_timeout_ms=200,
            election_backoff_max_ms=100,
            request_timeout_ms=200,
        )
        == 200 + 300 + 200 + 10 * 300 + 400
    )


def test_parse_seeds_and_profiles() -> None:
    assert parse_seeds("3..7") == range(3, 7)
    assert parse_seeds("5") == range(5, 6)
    assert set(PROFILES) == {
        "none",
        "lossy",
        "partitions",
        "crashes",
        "disk",
        "reconfig",
        "membership",
        "majority-loss",
        "upgrade",
        "controller",
        "chaos",
    }
    for profile in PROFILES.values():
        assert profile.describe().startswith(profile.name)


def test_reconfig_changes_the_voter_set() -> None:
    changed = 0
    for seed in range(4):
        sim = Simulation(SimConfig.make(seed, "reconfig", observers=2, events=8000))
        result = sim.run()
        assert result.violation is None, result.summary()
        assert result.faults.get("reassign", 0) > 0
        changed += result.voter_changes
        # At most a minority of the final voters are replica keys lost with a wiped disk.
        voters = current_voters(sim)
        lost = [k for k in voters.keys if sim.nodes[k.id - 1].key != k]
        assert len(lost) <= (len(voters) - 1) // 2, (voters, lost)
    assert changed > 0


def test_membership_operations_happen_and_the_final_reassignment_completes() -> None:
    """Every operation is started, the core carries most out (and refuses some), and each
    run ends with a completed reassignment (else a reassignment-liveness violation)."""
    outcomes: dict[str, int] = {}
    faults: dict[str, int] = {}
    traced: set[str] = set()
    for seed in range(3):
        for profile in ("membership", "upgrade"):
            sim = Simulation(SimConfig.make(seed, profile, observers=1, events=8000))
            result = sim.run()
            assert result.violation is None, result.summary()
            assert sim.final_reassignment is not None
            assert sim.final_reassignment.target is not None
            leader = sim.leader()
            assert leader is not None and leader.core is not None
            assert set(leader.core.voters.keys) == {
                n.key for n in sim.final_reassignment.target.values()
            }
            for k, v in result.operations.items():
                outcomes[k] = outcomes.get(k, 0) + v
            for k, v in result.faults.items():
                faults[k] = faults.get(k, 0) + v
            traced |= {k.split(":")[0] for k in result.operations}
    for op in ("add_voter", "remove_voter", "update_voter", "auto_join", "reassign", "upgrade"):
        assert faults.get(op, 0) > 0, (op, faults)
    for ok in ("add_voter:none", "remove_voter:none", "update_kraft_version:none"):
        assert outcomes.get(ok, 0) > 0, (ok, outcomes)
    # Before the upgrade, voter changes are refused (D4).
    assert outcomes.get("add_voter:unsupported_version", 0) + outcomes.get(
        "remove_voter:unsupported_version", 0
    ), outcomes
    assert "set_target_voters" in traced


def test_upgrade_profile_starts_at_kraft_version_0_and_upgrades() -> None:
    seen: list[int] = []

    def hook(sim: Simulation, index: int) -> None:
        leader = sim.leader()
        if leader is not None and leader.core is not None:
            version = leader.core.kraft_version
            if not seen or seen[-1] != version:
                seen.append(version)

    result = Simulation(SimConfig.make(1, "upgrade", observers=1, events=6000, hook=hook)).run()
    assert result.violation is None, result.summary()
    assert seen[0] == 0 and seen[-1] == 1, seen


def test_scheduled_appends_and_sliced_controller_syncs_run_clean() -> None:
    """With ``schedule_appends`` half the appends are RaftCore.schedule_append's (each kept
    promise checked when it commits) and with ``sync_slice_records`` the controllers' listener
    replays in slices, installed snapshots loading on the side: clean runs, work done."""
    from pykraft.controller.log_listener import MetaLogListener
    from pykraft.sim import run

    side_loads = 0
    begin = MetaLogListener._begin_side_load

    def counting(self: MetaLogListener, core: object) -> None:
        nonlocal side_loads
        begin(self, core)  # type: ignore[arg-type]
        side_loads += self.loading

    MetaLogListener._begin_side_load = counting  # type: ignore[method-assign]
    try:
        for seed in (1, 2):
            result = run(
                SimConfig.make(
                    seed,
                    "controller",
                    events=10_000,  # (side loads begin well before: 44 by seed 1's 8,000th)
                    schedule_appends=True,
                    sync_slice_records=64,
                )
            )
            assert result.violation is None, result.summary()
            assert result.committed_records > 0
        plain = run(SimConfig.make(3, "chaos", events=20_000, schedule_appends=True))
        assert plain.violation is None, plain.summary()
    finally:
        MetaLogListener._begin_side_load = begin  # type: ignore[method-assign]
    assert side_loads > 0
