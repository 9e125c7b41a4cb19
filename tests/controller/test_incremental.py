"""KIP-435 incremental reassignment in the controller: the seed's example step by step,
limits as dynamic cluster configs, leader movements between steps, cancel and re-target,
failover from the log, and the managed throttles removed in every ending (SPEC F3, F4, F5)."""

from __future__ import annotations

import random

import pytest
from kio.schema.errors import ErrorCode

from pykraft.controller.config import ControllerConfig
from pykraft.controller.quorum_controller import QuorumController
from pykraft.controller.throttles import THROTTLE_KEYS, THROTTLE_POLICY
from pykraft.metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE
from pykraft.metadata.records import PartitionChangeRecord
from pykraft.metadata.tagged import final_target_of
from pykraft.protocol import ApiKey

from .harness import CLUSTER_ID, Harness
from .test_reassign import in_sync, listed, part, reassign, topic


@pytest.fixture
def h() -> Harness:
    h = Harness()
    for b in range(10):
        h.live_broker(b)
    return h


def set_cluster(h: Harness, **configs: str | None) -> None:
    response = h.call(
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        1,
        validate_only=False,
        resources=[
            {
                "resource_type": BROKER_RESOURCE,
                "resource_name": "",
                "configs": [
                    {
                        "name": name.replace("_", "."),
                        "config_operation": 0 if value is not None else 1,
                        "value": value,
                    }
                    for name, value in configs.items()
                ],
            }
        ],
    )
    assert all(r["error_code"] == 0 for r in response["responses"]), response


def settle(h: Harness, name: str) -> list[tuple[int, ...]]:
    """Run the move to its end: tick, report every replica in sync, repeat; the replica
    lists each step completed with."""
    seen: list[tuple[int, ...]] = []
    for _ in range(40):
        h.tick()
        p = part(h, name)
        if p.adding:
            in_sync(h, name, *(b for b in p.replicas if b in p.isr or b in p.adding))
            seen.append(p.replicas)
        elif p.final_target is None:
            return seen
    raise AssertionError(f"no end: {seen}")


def test_the_seeds_example(h: Harness) -> None:
    topic(h, "s", [0, 1, 2, 3, 4])
    set_cluster(h, reassignment_parallel_replica_count="2")
    assert reassign(h, "s", [5, 6, 7, 8, 9]) == (0, None)
    p = part(h, "s")
    # Only the plan is written: the scheduler starts the steps.
    assert p.final_target == (5, 6, 7, 8, 9) and p.replicas == (0, 1, 2, 3, 4)
    assert listed(h) == {"s": ((0, 1, 2, 3, 4), (5, 6, 7, 8, 9), (0, 1, 2, 3, 4))}
    leaders: list[int] = []
    seen: list[tuple[int, ...]] = []
    for _ in range(40):
        h.tick()
        if p.adding:
            in_sync(h, "s", *p.replicas)
            seen.append(p.replicas)
            leaders.append(p.leader)
        elif p.final_target is None:
            break
    assert seen == [(5, 0, 1, 2, 3, 4), (5, 6, 2, 3, 4), (5, 6, 7, 8, 4), (5, 6, 7, 8, 9)]
    # The new preferred leader was elected once in sync, before the second step.
    assert leaders[0] == 0 and leaders[1:] == [5, 5, 5]
    assert (p.replicas, p.leader, p.final_target) == ((5, 6, 7, 8, 9), 5, None)
    assert listed(h) == {}
    assert h.images_equal()
    # Every record of the move decodes the tag the way the image replayed it.
    tags = [final_target_of(r) for r, _, _ in h.written if isinstance(r, PartitionChangeRecord)]
    assert (5, 6, 7, 8, 9) in tags and () in tags


def test_default_limits_are_kafkas_single_step(h: Harness) -> None:
    topic(h, "d", [0, 1, 2])
    assert reassign(h, "d", [3, 4, 5]) == (0, None)
    p = part(h, "d")
    assert (p.replicas, p.adding, p.removing, p.final_target) == (
        (3, 4, 5, 0, 1, 2),
        (3, 4, 5),
        (0, 1, 2),
        None,
    )
    assert all(not r.unknown_tagged_fields for r, _, _ in h.written[-1:])


def test_partition_and_leader_limits_batch_the_moves(h: Harness) -> None:
    for name in ("a", "b", "c"):
        topic(h, name, [0, 1, 2])
    set_cluster(
        h,
        reassignment_parallel_replica_count="1",
        reassignment_parallel_partition_count="2",
        reassignment_parallel_leader_movements="1",
    )
    for name in ("a", "b", "c"):
        assert reassign(h, name, [3, 4, 5]) == (0, None)
    for _ in range(200):
        h.tick()
        moving = [n for n in ("a", "b", "c") if part(h, n).adding or part(h, n).removing]
        assert len(moving) <= 2
        for n in moving:
            p = part(h, n)
            assert len(p.adding) <= 1 and len(p.removing) <= 1
            in_sync(h, n, *(b for b in p.replicas))
        if all(part(h, n).final_target is None for n in ("a", "b", "c")):
            break
    assert [part(h, n).replicas for n in ("a", "b", "c")] == [(3, 4, 5)] * 3
    assert listed(h) == {}


def test_limits_changed_apply_from_the_next_step(h: Harness) -> None:
    topic(h, "x", [0, 1, 2, 3])
    set_cluster(h, reassignment_parallel_replica_count="1")
    assert reassign(h, "x", [4, 5, 6, 7]) == (0, None)
    h.tick()
    p = part(h, "x")
    assert p.adding == (4,)
    set_cluster(h, reassignment_parallel_replica_count=None)  # back to unbounded
    in_sync(h, "x", *p.replicas)
    h.tick()  # the preferred election
    h.tick()
    assert p.replicas[:4] == (4, 5, 6, 7) and p.adding == (5, 6, 7)


def test_cancel_keeps_completed_steps_and_retarget_replaces(h: Harness) -> None:
    topic(h, "c", [0, 1, 2])
    set_cluster(h, reassignment_parallel_replica_count="1")
    assert reassign(h, "c", [3, 4, 5]) == (0, None)
    h.tick()
    p = part(h, "c")
    in_sync(h, "c", *p.replicas)  # step 1 done: (3, 0, 1, 2)
    h.tick()  # leader 3
    h.tick()  # step 2 drops 0 alone (the size stays 3): in sync, so done at once
    assert (p.replicas, p.adding) == ((3, 1, 2), ())
    h.tick()  # step 3 in flight: +4 -1
    assert (p.replicas, p.adding, p.removing) == ((3, 4, 2, 1), (4,), (1,))
    # A new target replaces the plan: the step in flight reverts, the new plan starts.
    assert reassign(h, "c", [6, 7, 8]) == (0, None)
    assert (p.replicas, p.adding, p.final_target) == ((3, 2, 1), (), (6, 7, 8))
    h.tick()
    assert p.adding == (6,)
    # Cancel: the step in flight reverts, the completed steps (3 in, 0 out) stay.
    assert reassign(h, "c", None) == (0, None)
    assert (p.replicas, p.adding, p.removing, p.final_target) == ((3, 2, 1), (), (), None)
    assert listed(h) == {}
    h.tick()
    assert (p.adding, p.final_target) == ((), None)
    assert reassign(h, "c", None)[0] == ErrorCode.no_reassignment_in_progress


def test_the_plan_survives_a_controller_failover(h: Harness) -> None:
    topic(h, "f", [0, 1, 2, 3, 4])
    set_cluster(h, reassignment_parallel_replica_count="2")
    assert reassign(h, "f", [5, 6, 7, 8, 9]) == (0, None)
    h.tick()
    in_sync(h, "f", *part(h, "f").replicas)
    # Another controller replays the log (or a snapshot of it) and takes over.
    for source in ("log", "snapshot"):
        other = QuorumController(
            ControllerConfig(), node_id=2, cluster_id=CLUSTER_ID, rng=random.Random(2)
        )
        if source == "log":
            for record, version, offset in h.written:
                other.replay(record, version, offset)
        else:
            for i, (record, version) in enumerate(h.image.records(2, 3)):
                other.replay(record, version, i)
        p = other.image.partition(part(h, "f").topic_id, 0)
        assert p is not None and p.final_target == (5, 6, 7, 8, 9)
        other.activate(h.now, None)
        from pykraft.controller.quorum_controller import Context

        records = other.tick(Context(now_ms=h.now, next_offset=h.offset))
        # Its first work is the preferred election of 5, as the old one would have done.
        assert [r.leader for r, _ in records if isinstance(r, PartitionChangeRecord)] == [5]


def throttle_configs(h: Harness) -> dict[tuple[int, str], dict[str, str]]:
    return {
        key: {k: v for k, v in configs.items() if k in THROTTLE_KEYS}
        for key, configs in h.image.configs.items()
        if any(k in THROTTLE_KEYS for k in configs)
    }


@pytest.mark.parametrize("ending", ["complete", "cancel", "policy-deleted", "failover"])
def test_throttles_follow_each_batch_and_are_always_removed(h: Harness, ending: str) -> None:
    topic(h, "t", [0, 1, 2])
    set_cluster(h, reassignment_parallel_replica_count="1", **{THROTTLE_POLICY: "1000"})
    assert reassign(h, "t", [3, 4, 5]) == (0, None)
    h.tick()  # step 1 starts
    h.tick()  # its throttles
    p = part(h, "t")
    assert p.adding == (3,)
    assert throttle_configs(h) == {
        (TOPIC_RESOURCE, "t"): {
            "leader.replication.throttled.replicas": "0:0,0:1,0:2",
            "follower.replication.throttled.replicas": "0:3",
        },
        **{
            (BROKER_RESOURCE, str(b)): {
                "leader.replication.throttled.rate": "1000",
                "follower.replication.throttled.rate": "1000",
            }
            for b in (0, 1, 2, 3)
        },
    }
    if ending == "complete":
        settle(h, "t")
        h.tick()
        assert p.replicas == (3, 4, 5)
    elif ending == "cancel":
        assert reassign(h, "t", None) == (0, None)
        h.tick()
    elif ending == "policy-deleted":
        set_cluster(h, **{THROTTLE_POLICY: None})
    else:
        # The batch completes while no controller is active; the new one cleans up.
        in_sync(h, "t", *p.replicas)
        assert reassign(h, "t", None) == (0, None)
        h.controller.deactivate()
        h.write(h.controller.activate(h.now, None))
        h.tick()
    assert throttle_configs(h) == {}


def test_a_kafka_written_replica_change_ends_the_plan(h: Harness) -> None:
    """A controller that does not know tag 435 (Kafka's, in a mixed quorum) writes replica
    changes without it: the plan ends there, the partition stays where it is."""
    topic(h, "k", [0, 1, 2])
    set_cluster(h, reassignment_parallel_replica_count="1")
    assert reassign(h, "k", [3, 4, 5]) == (0, None)
    p = part(h, "k")
    h.write([(PartitionChangeRecord(topic_id=p.topic_id, partition_id=0, replicas=(0, 1, 2)), 2)])
    assert p.final_target is None and h.image.stepping == set()


def test_limits_are_validated_cluster_wide_configs(h: Harness) -> None:
    def alter(name: str, value: str) -> tuple[int, str]:
        response = h.call(
            ApiKey.INCREMENTAL_ALTER_CONFIGS,
            1,
            validate_only=False,
            resources=[
                {
                    "resource_type": BROKER_RESOURCE,
                    "resource_name": name,
                    "configs": [
                        {
                            "name": "reassignment.parallel.replica.count",
                            "config_operation": 0,
                            "value": value,
                        }
                    ],
                }
            ],
        )
        result = response["responses"][0]
        return int(result["error_code"]), result["error_message"]

    code, message = alter("", "0")
    assert code == ErrorCode.invalid_config and "between 1 and" in message
    code, message = alter("", "two")
    assert code == ErrorCode.invalid_config and "integer" in message
    code, message = alter("3", "2")
    assert code == ErrorCode.invalid_config and "cluster-wide" in message
    assert alter("", "2") == (0, None)


def test_list_v1_shows_the_batch_and_final_targets(h: Harness) -> None:
    topic(h, "v", [0, 1, 2, 3, 4])
    set_cluster(h, reassignment_parallel_replica_count="2")
    assert reassign(h, "v", [5, 6, 7, 8, 9]) == (0, None)
    h.tick()
    h.tick()
    p = part(h, "v")
    in_sync(h, "v", *p.replicas)
    h.tick()  # preferred election
    h.tick()  # step 2 in flight
    response = h.call(ApiKey.LIST_PARTITION_REASSIGNMENTS, 1, timeout=1000, topics=None)
    (ongoing,) = response["topics"]
    (partition,) = ongoing["partitions"]
    assert partition["final_replicas"] == (5, 6, 7, 8, 9)
    assert partition["replicas"] == (5, 6, 2, 3, 4, 0, 1)
    assert response["current_batch"] == [
        {
            "name": "v",
            "partitions": [
                {
                    "partition_id": 0,
                    "current_brokers": (5, 2, 3, 4, 0, 1),  # the union order, less adding
                    "target_brokers": (5, 6, 2, 3, 4),
                }
            ],
        }
    ]


def test_a_single_step_move_elects_the_new_preferred_leader(h: Harness) -> None:
    """The move that stalled with real brokers: RF 2, (1, 2) -> (3, 1) with one replica per
    step fits in one step; once it completes the new preferred leader 3 must be elected
    (it was not: the plan ended with leader 1 still leading)."""
    topic(h, "p", [1, 2])
    set_cluster(
        h, reassignment_parallel_replica_count="1", reassignment_parallel_partition_count="1"
    )
    assert reassign(h, "p", [3, 1]) == (0, None)
    p = part(h, "p")
    h.tick()
    assert (p.replicas, p.adding, p.removing, p.leader) == ((3, 1, 2), (3,), (2,), 1)
    settle(h, "p")
    assert (p.replicas, p.leader, p.final_target) == ((3, 1), 3, None)
    assert listed(h) == {}
    assert h.images_equal()


def test_leader_movements_are_counted_while_in_flight(h: Harness) -> None:
    """reassignment.parallel.leader.movements bounds the leader-moving steps in flight, not
    those started per planning round (a new round starts after every partition change)."""
    for name in ("a", "b", "c"):
        topic(h, name, [0, 1, 2])
    set_cluster(
        h,
        reassignment_parallel_replica_count="1",
        reassignment_parallel_partition_count="3",
        reassignment_parallel_leader_movements="1",
    )
    for name in ("a", "b", "c"):
        assert reassign(h, name, [3, 1, 2]) == (0, None)  # drops leader 0: moves it
    for _ in range(5):
        h.tick()
        moving = [n for n in ("a", "b", "c") if part(h, n).adding]
        assert len(moving) == 1, moving
    for _ in range(60):
        h.tick()
        moving = [n for n in ("a", "b", "c") if part(h, n).adding]
        assert len(moving) <= 1
        for n in moving:
            in_sync(h, n, *part(h, n).replicas)
        if all(part(h, n).final_target is None for n in ("a", "b", "c")):
            break
    assert [(part(h, n).replicas, part(h, n).leader) for n in ("a", "b", "c")] == [
        ((3, 1, 2), 3)
    ] * 3


def test_a_step_waits_while_a_target_broker_is_offline(h: Harness) -> None:
    topic(h, "w", [0, 1, 2])
    set_cluster(h, reassignment_parallel_replica_count="1")
    assert reassign(h, "w", [9, 1, 2]) == (0, None)
    # Broker 9's session runs out; every other broker keeps heartbeating.
    h.now += 9_500
    for b in range(9):
        h.heartbeat(b)
    h.tick()
    assert h.image.brokers[9].fenced
    p = part(h, "w")
    for _ in range(3):
        h.tick()
        assert (p.adding, p.replicas) == ((), (0, 1, 2)), "a step started towards a fenced broker"
    assert h.heartbeat(9)["is_fenced"] is False  # back
    h.tick()
    assert p.adding == (9,)


def test_a_step_waits_while_the_partition_is_offline(h: Harness) -> None:
    topic(h, "o", [0])
    set_cluster(h, reassignment_parallel_replica_count="1")
    assert reassign(h, "o", [5]) == (0, None)
    h.now += 9_500
    for b in range(1, 10):
        h.heartbeat(b)
    h.tick()
    p = part(h, "o")
    assert h.image.brokers[0].fenced and p.leader == -1
    for _ in range(3):
        h.tick()
        assert p.adding == (), "a step started on an offline partition"
    assert h.heartbeat(0)["is_fenced"] is False
    h.tick()
    assert p.leader == 0 or p.adding == (5,)


def test_max_concurrent_replica_movements_bounds_replicas_added(h: Harness) -> None:
    for name in ("m", "n", "q"):
        topic(h, name, [0, 1, 2])
    set_cluster(h, reassignment_max_concurrent_replica_movements="2")
    for name in ("m", "n", "q"):
        assert reassign(h, name, [0, 3, 4]) == (0, None)  # two replicas each, one step each
    for _ in range(40):
        h.tick()
        adding = sum(len(part(h, n).adding) for n in ("m", "n", "q"))
        assert adding <= 2
        for n in ("m", "n", "q"):
            if part(h, n).adding:
                in_sync(h, n, *part(h, n).replicas)
        if all(part(h, n).final_target is None for n in ("m", "n", "q")):
            break
    assert [part(h, n).replicas for n in ("m", "n", "q")] == [(0, 3, 4)] * 3
