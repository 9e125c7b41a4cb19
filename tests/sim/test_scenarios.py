"""Scenarios driven through the simulator's hooks (SPEC C6, B9, D1)."""

from __future__ import annotations

from pykraft.sim import SimConfig, Simulation
from pykraft.sim.node import LEADER, SimNode


def first_leader(sim: Simulation) -> SimNode | None:
    leaders = [n for n in sim.nodes if n.core is not None and n.obs_role == LEADER]
    return leaders[0] if len(leaders) == 1 else None


def isolate_a_follower(pre_vote: bool, seed: int) -> Simulation:
    """Cut one follower off both ways for 20 s of simulated time, then reconnect it."""
    state: dict[str, object] = {}

    def hook(sim: Simulation, index: int) -> None:
        leader = first_leader(sim)
        if "links" not in state and leader is not None and sim.now_ms > 5_000:
            follower = next(n for n in sim.nodes if n.is_voter and n is not leader)
            links = sim.network.partition_links([follower.id])
            sim.network.block(links)
            state.update(links=links, at_ms=sim.now_ms, epoch=leader.obs_epoch)
        at_ms = state.get("at_ms")
        if isinstance(at_ms, int) and "healed" not in state and sim.now_ms > at_ms + 20_000:
            sim.network.unblock(state["links"])  # type: ignore[arg-type]
            state["healed"] = sim.now_ms

    sim = Simulation(SimConfig.make(seed, "none", events=12_000, pre_vote=pre_vote, hook=hook))
    result = sim.run()
    assert "healed" in state
    assert result.violation is None, result.summary()
    return sim


def test_c6_reconnected_voter_does_not_disturb_the_leader_with_pre_vote() -> None:
    for seed in range(3):
        sim = isolate_a_follower(pre_vote=True, seed=seed)
        assert sim.result.elections == 1, sim.result.summary()
        assert sim.result.max_epoch == 1


def test_without_pre_vote_the_reconnected_voter_bumps_the_epoch() -> None:
    """The contrast KIP-996 is about: the isolated voter campaigned, raised its epoch, and on
    reconnecting forced the quorum to that epoch.

    Found a liveness bug (bug 4): the reconnected voter, whose log is behind, is refused
    every vote but campaigns again after each election backoff (<= 1 s); each of its new
    epochs moved the other voters to Unattached with a *fresh* election timeout (>= 1 s), so
    they never campaigned: no leader, forever. Kafka's QuorumState.transitionToUnattached
    keeps the remaining election time when an Unattached, Prospective or Candidate replica
    learns a higher epoch."""
    bumped = [isolate_a_follower(pre_vote=False, seed=s).result.max_epoch > 1 for s in range(3)]
    assert all(bumped)


def test_losing_the_leaders_disk_for_good_elects_another_leader() -> None:
    """The leader's disk is replaced: it returns as a new replica (an observer) and the two
    remaining voters elect a leader among themselves (this looped forever once: a Prospective
    followed the lost leader again on every pre-vote answer naming it)."""
    for seed in range(5):
        wiped: list[int] = []

        def hook(sim: Simulation, index: int, wiped: list[int] = wiped) -> None:
            leader = first_leader(sim)
            if wiped or index < 500 or leader is None:
                return
            sim.crash_node(leader)
            leader.wipe()
            sim.restart_node(leader)
            wiped.append(leader.id)

        sim = Simulation(SimConfig.make(seed, "none", events=3000, observers=1, hook=hook))
        result = sim.run()
        assert wiped and result.violation is None, result.summary()
        assert result.elections >= 2
        new_leader = first_leader(sim)
        assert new_leader is not None and new_leader.id != wiped[0]
        assert not next(n for n in sim.nodes if n.id == wiped[0]).is_voter
