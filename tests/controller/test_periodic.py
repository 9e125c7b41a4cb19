"""The active controller's periodic duties (controller/periodic.py): Kafka's electPreferred
(``auto.leader.rebalance.enable``, ``leader.imbalance.check.interval.seconds``) and
electUnclean (``unclean.leader.election.interval.ms``), and the task scheduler."""

from __future__ import annotations

from typing import Any

from pykraft.controller.periodic import PeriodicTasks, balance_partition_leaders
from pykraft.controller.result import RecordList
from pykraft.metadata import records as r
from pykraft.metadata.image import NO_LEADER, TOPIC_RESOURCE
from pykraft.protocol import ApiKey

from .harness import Harness

INTERVAL = 60_000


def _set_isr(h: Harness, topic: str, partition: int, *members: int) -> None:
    """The partition's leader asks (AlterPartition) for ISR ``members``."""
    tid = h.image.topics_by_name[topic]
    p = h.image.topics[tid].partitions[partition]
    response = h.call(
        ApiKey.ALTER_PARTITION,
        3,
        broker_id=p.leader,
        broker_epoch=h.image.brokers[p.leader].epoch,
        topics=[
            {
                "topic_id": tid,
                "partitions": [
                    {
                        "partition_index": partition,
                        "leader_epoch": p.leader_epoch,
                        "partition_epoch": p.partition_epoch,
                        "leader_recovery_state": 0,
                        "new_isr_with_epochs": [
                            {"broker_id": b, "broker_epoch": h.image.brokers[b].epoch}
                            for b in members
                        ],
                    }
                ],
            }
        ],
    )
    assert response["topics"][0]["partitions"][0]["error_code"] == 0, response


def _restarted_broker_1(**config: Any) -> Harness:
    """Brokers 1 and 2, topic t (4 partitions, RF 2); broker 1's session expires, it comes
    back and rejoins every ISR: the partitions it was the first replica of stay led by 2."""
    h = Harness(
        broker_session_timeout_ms=9_000, leader_imbalance_check_interval_ms=INTERVAL, **config
    )
    h.live_broker(1)
    h.live_broker(2)
    assert h.create_topic("t", partitions=4, rf=2)["error_code"] == 0
    h.now += 5_000
    h.heartbeat(2)
    assert h.tick(4_001) and h.image.brokers[1].fenced
    h.heartbeat(1)
    h.heartbeat(2)
    for p in list(h.image.all_partitions()):
        _set_isr(h, "t", p.partition_id, *p.replicas)
    assert h.image.topics_image.imbalanced, "broker 1 should be some partition's first replica"
    return h


def _beat_and_tick(h: Harness, until_ms: int) -> list[tuple[Any, int]]:
    """Both brokers keep their sessions up to ``until_ms``, then one tick there."""
    written = []
    while h.now < until_ms:
        h.now = min(until_ms, h.now + 5_000)
        h.heartbeat(1)
        h.heartbeat(2)
        written += h.tick()
    return written


def test_preferred_leaders_return_after_the_imbalance_check_interval() -> None:
    h = _restarted_broker_1()
    imbalanced = set(h.image.topics_image.imbalanced)
    assert h.image.topics_image.imbalanced_count == len(imbalanced)
    # Not before the interval (one interval after activation, at 1,000 ms)...
    early = _beat_and_tick(h, 1_000 + INTERVAL - 1)
    assert not [rec for rec, _ in early if isinstance(rec, r.PartitionChangeRecord)]
    # ...then one preferred election per imbalanced partition, in one batch.
    written = _beat_and_tick(h, 1_000 + INTERVAL)
    changes = [rec for rec, _ in written if isinstance(rec, r.PartitionChangeRecord)]
    assert {(c.topic_id, c.partition_id) for c in changes} == imbalanced
    assert all(c.leader == 1 for c in changes)
    assert not h.image.topics_image.imbalanced and h.image.topics_image.imbalanced_count == 0
    for p in h.image.all_partitions():
        assert p.leader == p.replicas[0], p
    assert h.images_equal()
    # Nothing left to balance: the next interval writes no election.
    later = _beat_and_tick(h, 1_000 + 2 * INTERVAL)
    assert not [rec for rec, _ in later if isinstance(rec, r.PartitionChangeRecord)]


def test_auto_leader_rebalance_disabled_leaves_leadership_where_it_is() -> None:
    h = _restarted_broker_1(auto_leader_rebalance_enable=False)
    imbalanced = set(h.image.topics_image.imbalanced)
    written = _beat_and_tick(h, 1_000 + 3 * INTERVAL)
    assert not [rec for rec, _ in written if isinstance(rec, r.PartitionChangeRecord)]
    assert h.image.topics_image.imbalanced == imbalanced
    assert h.controller.periodic.names == ("electUnclean",)


def test_a_preferred_replica_that_may_not_lead_is_left_alone() -> None:
    h = _restarted_broker_1()
    assert h.heartbeat(1, want_fence=True)["is_fenced"] is True  # fenced: out of every ISR
    h.now = 1_000 + INTERVAL
    h.heartbeat(2)
    written = h.tick()
    assert not [rec for rec, _ in written if isinstance(rec, r.PartitionChangeRecord)]
    assert all(p.leader == 2 for p in h.image.all_partitions())


def test_balancing_writes_at_most_its_limit_and_asks_to_run_again_at_once() -> None:
    h = _restarted_broker_1()
    count = len(h.image.topics_image.imbalanced)
    assert count >= 2
    records, again = balance_partition_leaders(h.image, limit=count - 1)
    assert len(records) == count - 1 and again
    h.write(records)
    records, again = balance_partition_leaders(h.image, limit=count - 1)
    assert len(records) == 1 and not again


def test_a_task_that_asks_runs_again_at_the_next_tick_the_others_a_period_later() -> None:
    runs: list[tuple[str, int]] = []
    answers = {"a": [True, False, False], "b": [False]}
    record: RecordList = [(r.NoOpRecord(), 0)]

    def task(name: str) -> Any:
        def run(now_ms: int) -> tuple[RecordList, bool]:
            runs.append((name, now_ms))
            return record, answers[name].pop(0)

        return run

    tasks = PeriodicTasks()
    tasks.register("a", 100, task("a"))
    tasks.register("b", 300, task("b"))
    tasks.activate(1_000)
    assert tasks.next_deadline_ms() == 1_100
    assert tasks.run_due(1_099) == []
    assert tasks.run_due(1_100) == record  # a, which asks to run again at once
    assert tasks.next_deadline_ms() == 1_100
    assert tasks.run_due(1_100) == record and tasks.next_deadline_ms() == 1_200
    assert tasks.run_due(1_300) == record  # a again (due), b waits: one batch per tick
    assert tasks.run_due(1_300) == record  # b
    assert runs == [("a", 1_100), ("a", 1_100), ("a", 1_300), ("b", 1_300)]


def _two_brokers_one_partition() -> Harness:
    """Brokers 1 and 2, topic t of one partition on (1, 2); sessions that never expire."""
    h = Harness(unclean_leader_election_interval_ms=INTERVAL, broker_session_timeout_ms=900_000)
    h.live_broker(1)
    h.live_broker(2)
    topic = h.create_topic(
        "t", partitions=-1, rf=-1, assignments=[{"partition_index": 0, "broker_ids": [1, 2]}]
    )
    assert topic["error_code"] == 0, topic
    return h


def test_a_leaderless_partition_is_elected_uncleanly_once_its_topic_allows_it() -> None:
    """Kafka's electUnclean: the topic is switched to unclean elections while its partition
    is offline; no broker event follows, the timer elects."""
    h = _two_brokers_one_partition()
    assert h.heartbeat(2, want_fence=True)["is_fenced"] is True  # out of the ISR
    assert h.heartbeat(1, want_fence=True)["is_fenced"] is True  # last ISR member: offline
    (p,) = h.image.all_partitions()
    assert p.leader == NO_LEADER and p.isr == (1,)
    assert h.heartbeat(2)["is_fenced"] is False  # back, but outside the ISR: no clean leader
    assert p.leader == NO_LEADER
    config = r.ConfigRecord(
        resource_type=TOPIC_RESOURCE,
        resource_name="t",
        name="unclean.leader.election.enable",
        value="true",
    )
    h.write([(config, 0)])
    assert p.leader == NO_LEADER  # a config change elects nothing (as in Kafka)
    h.now = 1_000 + INTERVAL - 1
    h.heartbeat(2)
    assert not [rec for rec, _ in h.tick() if isinstance(rec, r.PartitionChangeRecord)]
    h.now += 1
    (change,) = [rec for rec, _ in h.tick() if isinstance(rec, r.PartitionChangeRecord)]
    assert change.leader == 2 and p.leader == 2 and p.isr == (2,)
    assert p.leader_recovery_state == 1  # RECOVERING: elected outside the ISR
    assert h.images_equal()


def test_without_the_topic_allowing_it_the_timer_elects_nothing() -> None:
    h = _two_brokers_one_partition()
    h.heartbeat(2, want_fence=True)
    h.heartbeat(1, want_fence=True)
    h.heartbeat(2)
    h.now = 1_000 + 2 * INTERVAL
    h.heartbeat(2)
    assert not [rec for rec, _ in h.tick() if isinstance(rec, r.PartitionChangeRecord)]
    (p,) = h.image.all_partitions()
    assert p.leader == NO_LEADER
