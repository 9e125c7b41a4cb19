"""The checker can fail: deliberately broken states are reported as violations."""

from __future__ import annotations

from typing import Any

from pykraft.raft.core import RaftCore
from pykraft.records import build_batch
from pykraft.sim import SimConfig, Simulation, run
from pykraft.sim.node import LEADER, SimNode


class LyingCore:
    """Wraps a core and claims to be the leader of ``epoch``."""

    def __init__(self, core: RaftCore, epoch: int) -> None:
        self._core = core
        self._epoch = epoch

    @property
    def role(self) -> str:
        return LEADER

    @property
    def epoch(self) -> int:
        return self._epoch

    def __getattr__(self, name: str) -> Any:
        return getattr(self._core, name)


def leader_and_follower(sim: Simulation) -> tuple[SimNode, SimNode] | None:
    leaders = [n for n in sim.nodes if n.core is not None and n.obs_role == LEADER]
    followers = [
        n for n in sim.nodes if n.core is not None and n.obs_role == "follower" and n.is_voter
    ]
    if len(leaders) != 1 or not followers or sim.history.end_offset < 50:
        return None
    return leaders[0], followers[0]


def test_fake_second_leader_is_detected() -> None:
    done: list[int] = []

    def hook(sim: Simulation, index: int) -> None:
        pair = leader_and_follower(sim)
        if done or pair is None:
            return
        leader, follower = pair
        assert follower.core is not None
        follower.core = LyingCore(follower.core, leader.obs_epoch)  # type: ignore[assignment]
        done.append(index)

    result = run(SimConfig.make(5, "none", events=3000, hook=hook))
    assert done
    assert result.violation is not None
    assert result.violation.invariant == "one-leader-per-epoch"
    # Seen at the next event on that node.
    assert done[0] < result.violation.event_index <= done[0] + 50
    assert result.violation.last_events


def test_corrupted_committed_batch_is_detected() -> None:
    """Rewrite a follower's last committed batch with other records (same offsets and
    epoch): the periodic audit finds it (no snapshot deletes it first in this run)."""
    done: list[int] = []

    def hook(sim: Simulation, index: int) -> None:
        pair = leader_and_follower(sim)
        if done or pair is None:
            return
        _leader, follower = pair
        log = follower.log
        assert follower.core is not None
        hwm = follower.core.high_watermark
        batches = [b for b in log.batches() if b[1] <= hwm]
        if not batches or batches[-1][1] != log.end_offset:
            return  # wait for a moment when the last batch is committed
        base, nxt, epoch, _raw = batches[-1]
        log.truncate_to(base)
        log.append(build_batch(base, epoch, [b"forged"] * (nxt - base), 0))
        log.flush()
        done.append(index)

    config = SimConfig.make(
        6, "none", events=3000, hook=hook, snapshot_interval_records=10**6, core_self_check=False
    )
    result = run(config)
    assert done
    assert result.violation is not None
    assert result.violation.invariant == "committed-unchanged", result.summary()
    assert "audit on node" in result.violation.message
    assert result.violation.event_index <= done[0] + config.audit_every_events


def test_truncation_below_high_watermark_is_detected() -> None:
    done: list[int] = []

    def hook(sim: Simulation, index: int) -> None:
        pair = leader_and_follower(sim)
        if done or pair is None:
            return
        _leader, follower = pair
        batches = follower.log.batches()
        if len(batches) < 3:
            return
        follower.log.truncate_to(batches[-3][0])
        done.append(index)

    result = run(SimConfig.make(8, "none", events=3000, hook=hook, core_self_check=False))
    assert done
    assert result.violation is not None
    assert result.violation.invariant == "hwm-below-leo", result.summary()


def test_no_progress_after_heal_is_a_liveness_violation() -> None:
    """Keep every link blocked during the heal phase: nothing can commit."""

    def hook(sim: Simulation, index: int) -> None:
        if sim.healing:
            for row in sim.network.blocked:
                row[:] = [1] * len(row)

    result = run(SimConfig.make(9, "none", events=1000, hook=hook))
    assert result.violation is not None
    assert result.violation.invariant == "liveness"
    assert "within 41000 ms" in result.violation.message


def test_the_cores_own_asserts_run_after_every_event() -> None:
    """The same truncation trips the core's check_invariants when it is on."""
    done: list[int] = []

    def hook(sim: Simulation, index: int) -> None:
        pair = leader_and_follower(sim)
        if done or pair is None or len(pair[1].log.batches()) < 3:
            return
        pair[1].log.truncate_to(pair[1].log.batches()[-3][0])
        done.append(index)

    result = run(SimConfig.make(8, "none", events=3000, hook=hook))
    assert result.violation is not None and result.violation.invariant == "exception"
    assert "core.py" in result.violation.message
