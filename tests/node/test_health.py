"""The health rules of ``node/health.py`` (issue 47 item 3), as pure functions: what makes a
node ready, what makes its restart safe (Strimzi's KRaft quorum rule), and the stuck high
watermark. The endpoints over real processes are in ``test_ops.py``."""

from __future__ import annotations

from pykraft.node.health import HealthFacts, HwmWatch, VoterCatchUp, readiness, restart_safety


def facts(**changes: object) -> HealthFacts:
    base: dict[str, object] = {
        "node_id": 2,
        "role": "follower",
        "leader_id": 1,
        "epoch": 4,
        "high_watermark": 100,
        "log_end_offset": 100,
        "fetch_timeout_ms": 2000,
        "heard_ms_ago": 20,
        "caught_up_ms_ago": 20,
        "hwm_stuck_ms": 0,
    }
    base.update(changes)
    return HealthFacts(**base)  # type: ignore[arg-type]


def test_a_caught_up_follower_is_ready() -> None:
    verdict = readiness(facts())
    assert verdict.ok and verdict.status == 200 and verdict.reasons == ()
    assert b'"status": "UP"' in verdict.body()


def test_each_reason_makes_a_node_not_ready() -> None:
    cases = {
        "no known leader: prospective in epoch 4": facts(role="prospective", leader_id=-1),
        "last heard from leader 1 3000 ms ago": facts(heard_ms_ago=3000),
        "last heard from leader 1 never": facts(heard_ms_ago=None),
        "last heard from a majority of the voters 2500 ms ago": facts(
            role="leader", leader_id=2, heard_ms_ago=2500
        ),
        "high watermark stuck at 100 for 5000 ms": facts(log_end_offset=120, hwm_stuck_ms=5000),
        "not caught up with the leader: last caught up 9000 ms ago": facts(caught_up_ms_ago=9000),
        "the metadata image is still loading": facts(
            application=("the metadata image is still loading",)
        ),
    }
    for reason, case in cases.items():
        verdict = readiness(case)
        assert not verdict.ok and verdict.status == 503, reason
        assert any(r.startswith(reason) for r in verdict.reasons), (reason, verdict.reasons)


def test_a_leader_needs_no_catching_up() -> None:
    assert readiness(facts(role="leader", leader_id=2, caught_up_ms_ago=None)).ok


def test_the_watch_counts_only_a_high_watermark_with_records_above_it() -> None:
    watch = HwmWatch()
    assert watch.stuck_ms(10, 10, 0) == 0
    assert watch.stuck_ms(10, 10, 5_000) == 0  # nothing waits: idle, not stuck
    # Records above it: stuck since the last look that saw nothing waiting.
    assert watch.stuck_ms(10, 12, 6_000) == 1_000
    assert watch.stuck_ms(10, 12, 9_000) == 4_000
    assert watch.stuck_ms(11, 12, 9_500) == 0  # it moved


def voters(*caught_up: int) -> list[VoterCatchUp]:
    return [VoterCatchUp(i + 1, ts) for i, ts in enumerate(caught_up)]


def test_restart_is_safe_while_a_caught_up_majority_remains() -> None:
    assert restart_safety(2, 1, voters(10_000, 9_900, 9_800), 2000).ok
    assert restart_safety(1, 1, voters(10_000, 9_900, 9_800), 2000).ok
    five = voters(10_000, 9_900, 9_800, 1_000, -1)  # 4 and 5 far behind
    assert not restart_safety(2, 1, five, 2000).ok  # leaves 1 and 3: not 3 of 5
    assert restart_safety(4, 1, five, 2000).ok  # 4 was not counted anyway


def test_restart_is_refused_when_it_would_lose_the_majority() -> None:
    three = voters(10_000, 9_900, 5_000)  # 3 lags by more than the fetch timeout
    verdict = restart_safety(2, 1, three, 2000)
    assert not verdict.ok
    assert verdict.reasons == ("restarting 2 leaves 1 caught-up voters [1]; 2 of 3 are needed",)
    assert verdict.facts["caught_up"] == [1, 2]
    assert not restart_safety(1, 1, three, 2000).ok
    assert restart_safety(3, 1, three, 2000).ok  # the laggard itself


def test_observers_are_always_safe_and_nothing_is_without_a_leader() -> None:
    assert restart_safety(7, 1, voters(10_000, 9_900, 9_800), 2000).ok
    no_leader = restart_safety(2, -1, voters(10_000, 9_900, 9_800), 2000)
    assert not no_leader.ok and no_leader.reasons == ("no leader: the quorum is not working",)
