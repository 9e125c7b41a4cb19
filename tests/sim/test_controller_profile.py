"""The metadata controller in the simulator (issue 15 part 4): simulated brokers drive the
real controller over the real core under faults, and the controller invariants hold; each
invariant catches the state it forbids."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import pytest

from pykraft.metadata.image import BrokerState, Image, PartitionState, TopicState
from pykraft.sim import SimConfig, Simulation, run
from pykraft.sim.controller import ControllerChecker, SimController
from pykraft.sim.history import InvariantViolation


@pytest.mark.parametrize("seed", [11, 12])
def test_controller_profile_runs_clean_and_does_work(seed: int) -> None:
    result = run(SimConfig.make(seed, "controller", events=12_000, observers=1))
    assert result.violation is None, result.summary()
    ops = result.operations
    assert ops["registered"] >= 3 and ops["admin_create_topics"] > 10, ops
    assert ops["controller_writes"] > 50 and ops["controller_checks"] > 500, ops
    assert result.recovery_ms is not None


def test_healed_cluster_ends_balanced_by_the_periodic_election_alone() -> None:
    """Issue 46 item 1: after the heal the brokers' restarts left partitions led by another
    replica than their first; the periodic preferred election (nobody asks for one while
    healing) brings every one back, and the run checks it (``healed-cluster-balanced``)."""
    sim = Simulation(SimConfig.make(2, "controller", events=4_000))
    result = sim.run()
    assert result.violation is None, result.summary()
    assert sim.recovery.moves_settled_ms is not None  # imbalanced when the moves settled
    leader = sim.leader()
    assert leader is not None and leader.controller is not None
    image = leader.controller.image
    assert not image.topics_image.imbalanced
    assert all(p.leader == p.replicas[0] for p in image.all_partitions() if p.leader >= 0)


def test_balance_check_catches_a_controller_that_never_balances() -> None:
    """The same run with ``auto.leader.rebalance.enable=false`` planted on every controller
    fails ``healed-cluster-balanced``: the check can fail."""
    sim = Simulation(SimConfig.make(2, "controller", events=4_000))
    for node in sim.nodes:
        old = node.controller
        assert old is not None
        config = dataclasses.replace(old.config, auto_leader_rebalance_enable=False)
        node.controller = SimController(node.id, config, old.seed, old.checker)
        node.controller.slice_records = old.slice_records
    result = sim.run()
    assert result.violation is not None
    assert result.violation.invariant == "healed-cluster-balanced", result.summary()


def test_controller_profile_is_deterministic() -> None:
    a = run(SimConfig.make(5, "controller", events=4_000))
    b = run(SimConfig.make(5, "controller", events=4_000))
    assert a.fingerprint == b.fingerprint and a.operations == b.operations


def test_every_node_replays_the_same_image() -> None:
    """After the run, every node's controller, at the same committed offset, holds the same
    image; and the brokers' state made it into the log."""
    sim = Simulation(SimConfig.make(3, "controller", events=8_000))
    result = sim.run()
    assert result.violation is None, result.summary()
    images = {n.id: n.controller.image for n in sim.nodes if n.controller is not None}
    registered = [set(image.brokers) for image in images.values()]
    assert all(r >= {100, 101, 102} for r in registered), registered


def _image(leader: int = 1, fenced: bool = False) -> Image:
    image = Image()
    image.features["metadata.version"] = 25
    for b in (1, 2):
        image.brokers[b] = BrokerState(
            b, uuid.uuid4(), 10 + b, (), {}, None, fenced and b == leader, False, ()
        )
    tid = uuid.UUID(int=7 << 100)
    topic = TopicState("t", tid)
    topic.partitions[0] = PartitionState(
        tid, 0, (1, 2), (1, 2), leader=leader, leader_epoch=3, partition_epoch=5
    )
    image.topics[tid] = topic
    image.topics_by_name["t"] = tid
    image.topics_image.partition_count = 1  # as a replay of the partition would count it
    # and index it (3: a step may add it)
    image.topics_image.broker_topics = {1: {tid}, 2: {tid}, 3: {tid}}
    return image


def test_checker_catches_each_forbidden_state() -> None:
    checker = ControllerChecker()
    checker.check(1, _image(), 10, committed=True)
    with pytest.raises(InvariantViolation) as caught:
        checker.check(2, _image(fenced=True), 11, committed=True)
    assert caught.value.invariant == "fenced-leads-nothing"
    lower = _image()
    lower.topics[next(iter(lower.topics))].partitions[0].leader_epoch = 2
    with pytest.raises(InvariantViolation) as caught:
        checker.check(1, lower, 12, committed=True)
    assert caught.value.invariant == "partition-epochs-monotonic"
    gap = _image()
    topic = next(iter(gap.topics.values()))
    topic.partitions[2] = topic.partitions.pop(0)
    with pytest.raises(InvariantViolation) as caught:
        checker.check(3, gap, 13, committed=True)
    assert caught.value.invariant == "topic-all-or-nothing"
    other = _image()
    other.brokers[2].rack = "elsewhere"
    with pytest.raises(InvariantViolation) as caught:
        checker.check(4, other, 10, committed=True)  # offset 10 was node 1's image
    assert caught.value.invariant == "images-equal"
    same_epoch = _image()
    same_epoch.brokers[2].epoch = same_epoch.brokers[1].epoch
    with pytest.raises(InvariantViolation) as caught:
        checker.check(5, same_epoch, 14, committed=True)
    assert caught.value.invariant == "broker-epochs"
    broken = _image()
    broken.topics[next(iter(broken.topics))].partitions[0].isr = (2,)
    with pytest.raises(InvariantViolation) as caught:
        checker.check(6, broken, 15, committed=False)
    assert caught.value.invariant == "image-structure"


def test_reassignments_step_in_the_simulator() -> None:
    """The admin sets KIP-435 limits and moves partitions; committed steps are seen (and
    held to the limits by the checker all along)."""
    result = run(SimConfig.make(11, "controller", events=15_000, observers=1))
    assert result.violation is None, result.summary()
    ops = result.operations
    assert ops["admin_incremental_alter_configs"] >= 1, ops
    assert ops["admin_alter_partition_reassignments"] > 5, ops
    assert ops["reassignment_steps_seen"] > 0, ops


def test_checker_holds_steps_to_the_limits() -> None:
    from pykraft.metadata.image import BROKER_RESOURCE

    def stepping(adding: tuple[int, ...], removing: tuple[int, ...], limit: str) -> Image:
        image = _image()
        image.brokers[3] = BrokerState(3, uuid.uuid4(), 13, (), {}, None, False, False, ())
        image.configs[(BROKER_RESOURCE, "")] = {"reassignment.parallel.replica.count": limit}
        p = next(iter(image.topics.values())).partitions[0]
        p.replicas = (1, 2, 3)
        p.adding, p.removing = adding, removing
        p.final_target = (1, 3)
        image.stepping.add((p.topic_id, 0))
        image.moving.add((p.topic_id, 0))
        return image

    checker = ControllerChecker()
    checker.check(1, stepping((3,), (2,), "1"), 20, committed=True)
    with pytest.raises(InvariantViolation) as caught:
        checker.check(2, stepping((3,), (1, 2), "1"), 21, committed=True)
    assert caught.value.invariant == "reassignment-limits"
    empty = stepping((3,), (2,), "1")
    next(iter(empty.topics.values())).partitions[0].final_target = (3, 3)
    with pytest.raises(InvariantViolation) as caught:
        checker.check(3, empty, 22, committed=True)
    assert caught.value.invariant == "reassignment-limits"


def test_checker_catches_broken_elr_states() -> None:
    """``elr-structure``: an ELR member also in the ISR, and a leader with an empty ISR."""
    checker = ControllerChecker()
    overlapping = _image()
    overlapping.topics[next(iter(overlapping.topics))].partitions[0].elr = (2,)
    with pytest.raises(InvariantViolation) as caught:
        checker.check(1, overlapping, 20, committed=True)
    assert caught.value.invariant == "elr-structure"
    empty = _image()
    p = empty.topics[next(iter(empty.topics))].partitions[0]
    p.isr, p.elr = (), (1, 2)
    with pytest.raises(InvariantViolation) as caught:
        checker.check(2, empty, 21, committed=False)
    # image-structure sees the leader outside the ISR first; both forbid the state
    assert caught.value.invariant in ("image-structure", "elr-structure")


def test_clean_elections_take_their_leader_from_the_isr_or_the_elr() -> None:
    """``leader-from-isr-or-elr``, record by record through a batch: electing a replica that
    was in neither is caught unless the record marks the partition RECOVERING (unclean), or
    the batch answers the leader's AlterPartition that took it into the ISR."""
    from pykraft.metadata import records as r
    from pykraft.sim.controller import check_elections

    image = _image()
    p = image.topics[next(iter(image.topics))].partitions[0]
    p.replicas, p.isr, p.elr, p.leader = (1, 2, 3), (1,), (2,), 1

    def change(leader: int, isr: tuple[int, ...] | None, recovery: int = -1) -> Any:
        return r.PartitionChangeRecord(
            partition_id=0,
            topic_id=p.topic_id,
            isr=isr,
            leader=leader,
            leader_recovery_state=recovery,
        )

    check_elections(1, image, [(change(2, (2,)), 2)])  # from the ELR
    with pytest.raises(InvariantViolation) as caught:
        check_elections(1, image, [(change(3, (3,)), 2)])
    assert caught.value.invariant == "leader-from-isr-or-elr"
    check_elections(1, image, [(change(3, (3,), recovery=1), 2)])  # unclean, marked
    check_elections(1, image, [(change(3, (1, 3)), 2)], leader_vouched=True)
    # Record by record: the first record empties the ISR and the ELR, so 2 no longer may.
    with pytest.raises(InvariantViolation):
        check_elections(
            1,
            image,
            [
                (
                    r.PartitionChangeRecord(
                        partition_id=0, topic_id=p.topic_id, isr=(1,), eligible_leader_replicas=()
                    ),
                    2,
                ),
                (change(2, (2,)), 2),
            ],
        )
