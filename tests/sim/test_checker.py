"""The checker can fail: deliberately broken states are reported as violations."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any
from unittest.mock import patch

import pytest

from pykraft.raft import replication
from pykraft.raft.control import voter_entries
from pykraft.raft.core import RaftCore
from pykraft.raft.quorum import majority_offset
from pykraft.raft.roles import Leader
from pykraft.raft.voters import VoterInfo, VoterSet
from pykraft.records import build_batch, voters_batch
from pykraft.sim import FaultProfile, SimConfig, SimResult, Simulation, run
from pykraft.sim.memory import MemoryLog
from pykraft.sim.node import LEADER, SimNode
from pykraft.sim.spec_trace import SpecChecker


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


Hook = Callable[[Simulation, int], None]


def break_once(breaker: Callable[[Simulation], bool]) -> tuple[Hook, list[int]]:
    """A simulator hook that calls ``breaker`` at every event until it reports that it broke
    something (True); ``done`` then holds that event's index and the hook does nothing more.
    A breaker that raises broke something too: the checker caught it inside the hook (when
    the breaker steps the node it broke, ``sim.after``)."""
    done: list[int] = []

    def hook(sim: Simulation, index: int) -> None:
        if done:
            return
        try:
            broke = breaker(sim)
        except BaseException:
            done.append(index)
            raise
        if broke:
            done.append(index)

    return hook, done


def leader_and_follower(sim: Simulation) -> tuple[SimNode, SimNode] | None:
    leaders = [n for n in sim.nodes if n.core is not None and n.obs_role == LEADER]
    followers = [
        n for n in sim.nodes if n.core is not None and n.obs_role == "follower" and n.is_voter
    ]
    if len(leaders) != 1 or not followers or sim.history.end_offset < 50:
        return None
    return leaders[0], followers[0]


def test_fake_second_leader_is_detected() -> None:
    def lie(sim: Simulation) -> bool:
        pair = leader_and_follower(sim)
        if pair is None:
            return False
        leader, follower = pair
        assert follower.core is not None
        follower.core = LyingCore(follower.core, leader.obs_epoch)  # type: ignore[assignment]
        return True

    hook, done = break_once(lie)
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

    def forge(sim: Simulation) -> bool:
        pair = leader_and_follower(sim)
        if pair is None:
            return False
        _leader, follower = pair
        log = follower.log
        assert follower.core is not None
        hwm = follower.core.high_watermark
        batches = [b for b in log.batches() if b[1] <= hwm]
        if not batches or batches[-1][1] != log.end_offset:
            return False  # wait for a moment when the last batch is committed
        base, nxt, epoch, _raw = batches[-1]
        log.truncate_to(base)
        log.append(build_batch(base, epoch, [b"forged"] * (nxt - base), 0))
        log.flush()
        return True

    hook, done = break_once(forge)
    config = SimConfig.make(
        6, "none", events=3000, hook=hook, snapshot_interval_records=10**6, core_self_check=False
    )
    result = run(config)
    assert done
    assert result.violation is not None
    assert result.violation.invariant == "committed-unchanged", result.summary()
    assert "audit on node" in result.violation.message
    assert result.violation.event_index <= done[0] + config.audit_every_events


def truncate_a_follower(sim: Simulation) -> bool:
    """A follower loses its last two batches, committed ones included."""
    pair = leader_and_follower(sim)
    if pair is None or len(pair[1].log.batches()) < 3:
        return False
    pair[1].log.truncate_to(pair[1].log.batches()[-3][0])
    return True


def test_truncation_below_high_watermark_is_detected() -> None:
    hook, done = break_once(truncate_a_follower)
    result = run(SimConfig.make(8, "none", events=3000, hook=hook, core_self_check=False))
    assert done
    assert result.violation is not None
    assert result.violation.invariant == "hwm-below-leo", result.summary()


def test_no_progress_after_heal_is_a_liveness_violation() -> None:
    """Keep every link blocked during the heal phase: nothing can commit."""

    def hook(sim: Simulation, index: int) -> None:
        if sim.recovery.healing:
            for row in sim.network.blocked:
                row[:] = [1] * len(row)

    result = run(SimConfig.make(9, "none", events=1000, hook=hook))
    assert result.violation is not None
    assert result.violation.invariant == "liveness"
    assert "within 41000 ms" in result.violation.message


def test_the_cores_own_asserts_run_after_every_event() -> None:
    """The same truncation trips the core's check_invariants when it is on."""
    hook, done = break_once(truncate_a_follower)
    result = run(SimConfig.make(8, "none", events=3000, hook=hook))
    assert done
    assert result.violation is not None and result.violation.invariant == "exception"
    assert "invariants.py:" in result.violation.message  # raft/invariants.check_core


# -- voter changes (pykraft.sim.voter_invariants): each invariant can fail ---------------

KV1 = FaultProfile(name="kv1", kraft_version=1)  # kraft.version 1, no faults


def committed_leader(sim: Simulation) -> SimNode | None:
    """The one live leader, once it committed its epoch and no voter change is pending."""
    leaders = [n for n in sim.nodes if n.core is not None and n.obs_role == LEADER]
    if len(leaders) != 1 or sim.history.end_offset < 50:
        return None
    core = leaders[0].core
    assert core is not None
    state = core.state
    assert isinstance(state, Leader)
    if core.high_watermark <= state.epoch_start_offset or core.uncommitted_voter_change:
        return None
    return None if core.voter_change is not None else leaders[0]


def forge_voters(core: RaftCore, voters: VoterSet, now_ms: int) -> None:
    """A buggy leader: append a VotersRecord bypassing every rule of membership.py."""
    offset = core.log.end_offset
    core.append_own(voters_batch(offset, core.epoch, now_ms, voter_entries(voters)), now_ms)


def run_forged(
    hook: Callable[[Simulation, int], None], seed: int = 3, *, trace_rules: bool = False
) -> SimResult:
    """The run with the forged bug; the trace checker (``pykraft.spec``) off unless
    ``trace_rules``: these tests are of the state invariants, which it would often beat."""
    config = replace(
        SimConfig(seed=seed, profile=KV1, events=3000, observers=1, hook=hook),
        core_self_check=False,
    )
    if trace_rules:
        return run(config)
    with patch.object(SpecChecker, "attach", lambda *_: None):
        return run(config)


def caught_by_trace_rules(forge: Callable[[Simulation], bool]) -> str | None:
    """The violation the same forged bug raises with the trace checker on."""
    hook, done = break_once(forge)
    result = run_forged(hook, trace_rules=True)
    assert done
    return None if result.violation is None else result.violation.invariant


def test_two_uncommitted_voters_records_are_detected() -> None:
    def forge(sim: Simulation) -> bool:
        leader = committed_leader(sim)
        if leader is None or leader.core is None:
            return False
        core = leader.core
        observer = next(n for n in sim.nodes if n.id not in core.voters.ids)
        bigger = core.voters.with_voter(VoterInfo(observer.key, (), 0, 1))
        forge_voters(core, bigger, sim.now_ms)
        forge_voters(core, bigger.without(observer.id), sim.now_ms)
        sim.after(leader)
        return True

    hook, done = break_once(forge)
    result = run_forged(hook)
    assert done and result.violation is not None
    assert result.violation.invariant == "one-uncommitted-voters-record", result.summary()
    assert caught_by_trace_rules(forge) == "spec:voter-change-after-commit"


def test_committed_voter_sets_differing_by_two_are_detected() -> None:
    def forge(sim: Simulation) -> bool:
        leader = committed_leader(sim)
        if leader is None or leader.core is None:
            return False
        core = leader.core
        alone = VoterSet({leader.id: core.voters.voters[leader.id]})  # two voters removed
        forge_voters(core, alone, sim.now_ms)
        sim.after(leader)
        return True

    hook, done = break_once(forge)
    result = run_forged(hook)
    assert done and result.violation is not None
    assert result.violation.invariant == "voter-sets-differ-by-one", result.summary()
    assert caught_by_trace_rules(forge) == "spec:voters-differ-by-one"


def test_voter_change_before_the_epoch_commits_is_detected() -> None:
    """A leader just elected (nothing of its epoch committed) appends a voter change."""

    def forge(sim: Simulation) -> bool:
        if sim.now_ms < 5_000:
            return False
        for node in sim.nodes:
            core = node.core
            state = None if core is None else core.state
            if core is None or not isinstance(state, Leader):
                continue
            if core.high_watermark > state.epoch_start_offset:
                continue
            observer = next(n for n in sim.nodes if n.id not in core.voters.ids)
            forge_voters(
                core, core.voters.with_voter(VoterInfo(observer.key, (), 0, 1)), sim.now_ms
            )
            sim.after(node)
            return True
        # Force an election: the leader resigns.
        leader = committed_leader(sim)
        if leader is not None and leader.core is not None:
            leader.core.shutdown(sim.now_ms)
            sim.after(leader)
        return False

    hook, done = break_once(forge)
    result = run_forged(hook)
    assert done and result.violation is not None
    assert result.violation.invariant == "voter-change-after-epoch-commit", result.summary()
    assert caught_by_trace_rules(forge) == "spec:voter-change-after-commit"


def test_removed_leader_counting_itself_is_detected(monkeypatch: pytest.MonkeyPatch) -> None:
    """The core's high watermark computation made to count a leader outside its voter set
    (the bug D5 forbids), and the leader removes itself."""

    def counts_itself(core: RaftCore, leader: Leader, now_ms: int) -> None:
        offsets = [p.end_offset for p in leader.progress.voters.values() if p.end_offset >= 0]
        offsets.append(core.log.flushed_offset)
        count = len(core.voters) + (1 if core.is_observer else 0)
        candidate = majority_offset(offsets, count)
        if candidate > leader.epoch_start_offset and core.set_high_watermark(candidate):
            replication.complete_purgatory(core, now_ms)

    monkeypatch.setattr(replication, "update_high_watermark", counts_itself)

    def remove_itself(sim: Simulation) -> bool:
        leader = committed_leader(sim)
        if leader is None or leader.core is None:
            return False
        leader.core.remove_voter(leader.key, sim.now_ms)
        sim.after(leader)
        return True

    hook, done = break_once(remove_itself)
    result = run_forged(hook)
    assert done and result.violation is not None
    assert result.violation.invariant == "removed-leader-not-counted", result.summary()
    assert caught_by_trace_rules(remove_itself) == "spec:hwm-majority"


def test_committed_data_lost_by_a_majority_is_detected() -> None:
    """Two followers lose their disks *in place* (same replica key, which the nemesis never
    does): a majority of the committed voter set could now elect a leader without the
    committed data."""

    def wipe_in_place(sim: Simulation) -> bool:
        leader = committed_leader(sim)
        if leader is None or leader.core is None:
            return False
        for node in sim.nodes:
            if node is not leader and node.id in leader.core.voters.ids:
                sim.crash_node(node)
                node.log = MemoryLog()
        return True

    hook, done = break_once(wipe_in_place)
    result = run_forged(hook)
    assert done and result.violation is not None
    assert result.violation.invariant == "committed-never-lost", result.summary()


def test_committed_data_truncated_in_place_is_detected_incrementally() -> None:
    """The incremental path of committed-never-lost (no invalidation: the checker rereads
    only the node observed): two followers truncate the last committed batch away in
    place, each observed on its own, and the second observation reports it."""

    def truncate_two(sim: Simulation) -> bool:
        leader = committed_leader(sim)
        if leader is None or leader.core is None:
            return False
        voters = sim.checker.voters
        if voters._lost_stale or voters._lost_end != sim.history.end_offset:
            return False  # wait for an event that left the incremental state current
        last = sim.history.by_end[sim.history.end_offset]
        followers = [
            n
            for n in sim.nodes
            if n is not leader
            and n.id in leader.core.voters.ids
            and n.log.start_offset <= last.base_offset
            and n.log.flushed_offset >= last.next_offset
        ]
        if len(followers) < 2:
            return False
        for node in followers[:2]:
            node.log.truncate_to(last.base_offset)
            voters.observe(node)
        return True

    hook, done = break_once(truncate_two)
    result = run_forged(hook)
    assert done and result.violation is not None
    assert result.violation.invariant == "committed-never-lost", result.summary()
    assert result.violation.event_index == done[0]  # by the observation in the hook


def test_a_stuck_reassignment_is_a_liveness_violation() -> None:
    """The final reassignment needs a voter that the network keeps cut off."""
    for seed in range(10):
        cut: list[int] = []

        def hook(sim: Simulation, index: int, cut: list[int] = cut) -> None:
            final = sim.final_reassignment
            leader = sim.leader()
            if cut or final is None or final.target is None or leader is None:
                return
            assert leader.core is not None
            keys = set(leader.core.voters.keys)
            missing = [n for n in final.target.values() if n.key not in keys]
            if not missing:
                cut.append(0)
                return
            sim.network.block(sim.network.partition_links([missing[0].id]))
            cut.append(missing[0].id)

        result = run(SimConfig.make(seed, "reconfig", events=2000, observers=1, hook=hook))
        if cut and cut[0]:
            assert result.violation is not None
            assert result.violation.invariant == "reassignment-liveness", result.summary()
            assert "did not complete within" in result.violation.message
            return
    raise AssertionError("no seed needed a new voter in its final reassignment")


def test_a_fetch_answer_stating_a_lower_high_watermark_is_detected() -> None:
    """``fetch-hwm-monotonic``: only a successful answer of the receiver's epoch counts,
    and -1 (unknown) is always allowed."""
    from types import SimpleNamespace

    from kio.schema.errors import ErrorCode

    from pykraft.raft.messages import FetchResponse
    from pykraft.sim.history import InvariantViolation
    from pykraft.sim.invariants import check_stated_hwm

    receiver: Any = SimpleNamespace(high_watermark=10, epoch=3)
    with pytest.raises(InvariantViolation, match="fetch-hwm-monotonic"):
        check_stated_hwm(1, receiver, FetchResponse(ErrorCode.none, 3, 2, 9, 0))
    for fine in (
        FetchResponse(ErrorCode.none, 3, 2, 10, 0),
        FetchResponse(ErrorCode.none, 3, 2, -1, 0),
        FetchResponse(ErrorCode.none, 4, 2, 9, 0),
        FetchResponse(ErrorCode.not_leader_or_follower, 3, -1, 9, 0),
    ):
        check_stated_hwm(1, receiver, fine)


def test_a_scheduled_record_committed_elsewhere_is_detected(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """schedule_append's answer is a promise: a core that answers one offset too far for a
    multi-record call is caught when the records commit."""
    honest = RaftCore.schedule_append

    def off_by_one(self: RaftCore, values: Any) -> int:
        return honest(self, values) + (1 if len(values) > 1 else 0)

    monkeypatch.setattr(RaftCore, "schedule_append", off_by_one)
    result = run(SimConfig.make(3, "none", events=3000, schedule_appends=True))
    assert result.violation is not None
    assert result.violation.invariant == "scheduled-offset", result.violation
