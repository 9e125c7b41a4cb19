"""KIP-435 step function and batch planning (controller/steps.py) against the seed's rules
(SPEC F3, F5)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.controller.steps import Action, Limits, moves_leader, next_step, plan_batch


def walk(current, final, r, in_sync_all=True, min_insync=1):
    steps = []
    cr = tuple(current)
    for _ in range(100):
        if cr == tuple(final):
            return steps
        cr = next_step(
            cr, final, in_sync=cr if in_sync_all else (), max_replicas=r, min_insync=min_insync
        )
        steps.append(cr)
    raise AssertionError(f"no convergence: {steps}")


def test_the_seeds_example_step_by_step():
    assert walk((0, 1, 2, 3, 4), (5, 6, 7, 8, 9), 2) == [
        (5, 0, 1, 2, 3, 4),
        (5, 6, 2, 3, 4),
        (5, 6, 7, 8, 4),
        (5, 6, 7, 8, 9),
    ]


def test_default_limits_are_plain_kip455_one_step():
    assert walk((0, 1, 2), (3, 4, 5), Limits().replicas) == [(3, 4, 5)]
    assert next_step((0, 1, 2), (2, 1, 0)) == (2, 1, 0)


def test_one_replica_at_a_time():
    assert walk((1, 2, 3), (4, 5, 6), 1) == [
        (4, 1, 2, 3),
        (4, 2, 3),
        (4, 5, 3),
        (4, 5, 6),
    ]


def test_min_insync_exceeds_the_replica_limit_when_needed():
    # Two in-sync replicas kept would be fewer than min.insync.replicas = 3: the step adds
    # enough new replicas at once (the seed's exception).
    step = next_step((0, 1, 2, 3), (0, 5, 6, 7), in_sync=(0,), max_replicas=1, min_insync=3)
    added = [b for b in step if b not in (0, 1, 2, 3)]
    assert len(added) == 2, step


def test_replication_factor_changes_step_by_step():
    assert walk((0, 1), (0, 1, 2, 3, 4), 1)[-1] == (0, 1, 2, 3, 4)
    assert all(len(s) >= 2 for s in walk((0, 1, 2, 3, 4), (0, 1), 1))


replica_sets = st.lists(st.integers(0, 12), min_size=1, max_size=6, unique=True)


@settings(max_examples=300, deadline=None)
@given(replica_sets, replica_sets, st.integers(1, 6), st.integers(1, 3))
def test_steps_respect_the_limits_and_reach_the_target(current, final, r, min_insync):
    steps = walk(current, final, r, min_insync=min_insync)
    cr = tuple(current)
    for step in steps:
        dropped = [b for b in cr if b not in step]
        added = [b for b in step if b not in cr]
        assert len(set(step)) == len(step)
        assert len(dropped) <= r
        # R bounds the additions, except to bring the in-sync replicas kept (all of them
        # here) up to min.insync.replicas.
        kept = len(cr) - len(dropped)
        assert len(added) <= max(r, min_insync - kept)
        # Never below the final size, nor below the in-sync floor, by dropping.
        assert len(step) >= min(len(final), len(cr))
        cr = step
    assert not steps or steps[-1] == tuple(final)
    # At most: the leader step, then ceil(max(drops, adds) / r) steps, plus the last one.
    bound = 2 + max(len(set(current) - set(final)), len(set(final) - set(current))) // r + 1
    assert len(steps) <= bound


def test_moves_leader():
    assert moves_leader((0, 1, 2), (3, 0, 1, 2), 0)
    assert moves_leader((0, 1, 2), (1, 2, 3), 0)
    assert not moves_leader((0, 1, 2), (0, 1, 3), 0)


def act(i, mover, elect=False):
    return Action(("t", i), (i,), mover, elect)


def test_batches_fill_with_leader_movements_first():
    candidates = [act(0, False), act(1, True), act(2, False), act(3, True), act(4, True)]
    chosen = plan_batch(candidates, 0, Limits(partitions=3, leader_movements=2))
    assert [a.key[1] for a in chosen] == [1, 3, 0]
    # Slots already taken by steps in flight count against the partition limit.
    assert [a.key[1] for a in plan_batch(candidates, 2, Limits(partitions=3))] == [1]
    # Elections take no slot but count as leader movements.
    chosen = plan_batch([act(5, True, elect=True), act(6, True)], 1, Limits(partitions=1))
    assert [a.key[1] for a in chosen] == [5]


@given(
    st.lists(st.tuples(st.booleans(), st.booleans()), max_size=20),
    st.integers(0, 5),
    st.integers(1, 6),
    st.integers(1, 6),
)
def test_a_batch_never_exceeds_its_limits(flags, in_flight, p, lm):
    candidates = [act(i, mover or elect, elect) for i, (mover, elect) in enumerate(flags)]
    chosen = plan_batch(candidates, in_flight, Limits(partitions=p, leader_movements=lm))
    assert sum(1 for a in chosen if not a.elect) <= max(0, p - in_flight)
    assert sum(1 for a in chosen if a.leader_movement) <= lm


def test_min_insync_exception_applies_when_the_new_leader_is_added_first() -> None:
    # Only 0 is in sync: adding 5 alone would leave 2 in-sync-able replicas, below 3.
    assert next_step((0, 1, 2, 3), (5, 6, 7, 8), in_sync=(0,), max_replicas=1, min_insync=3) == (
        5,
        6,
        0,
        1,
        2,
        3,
    )
    # Enough in sync: the new preferred leader alone, as the seed's example.
    assert next_step(
        (0, 1, 2, 3), (5, 6, 7, 8), in_sync=(0, 1, 2), max_replicas=1, min_insync=3
    ) == (5, 0, 1, 2, 3)
