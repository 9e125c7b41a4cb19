"""The requests a migrating controller sends ZooKeeper-mode brokers (``migration/propagator``):
FULL ones list everything, a dual write's INCREMENTAL ones only the topics that changed."""

from __future__ import annotations

from pykraft.migration import propagator as p
from tests.controller.harness import Harness


def cluster() -> Harness:
    h = Harness()
    for broker in (1, 2, 3):
        h.live_broker(broker)
    for name, assignment in (("a", [1, 2]), ("b", [2, 3]), ("c", [3, 1])):
        created = h.create_topic(
            name, -1, -1, assignments=[{"partition_index": 0, "broker_ids": assignment}]
        )
        assert created["error_code"] == 0, created
    return h


def kw() -> dict[str, int]:
    return {"controller_id": 3000, "zk_controller_epoch": 5, "kraft_epoch": 2}


def test_full_requests_list_every_topic_and_incremental_ones_only_the_changed() -> None:
    image = cluster().image
    full = p.full_update_metadata(image, broker_epoch=9, **kw())
    assert full.type == p.FULL and [t.topic_name for t in full.topic_states] == ["a", "b", "c"]
    delta = p.full_update_metadata(image, broker_epoch=9, topics_only={"b"}, **kw())
    assert delta.type == p.INCREMENTAL
    assert [t.topic_name for t in delta.topic_states] == ["b"]
    assert [b.id for b in delta.live_brokers] == [1, 2, 3]  # every broker, always
    lisr = p.full_leader_and_isr(image, 1, listener="PLAINTEXT", topics_only={"b", "c"}, **kw())
    assert lisr is not None and lisr.type == p.INCREMENTAL
    assert [t.topic_name for t in lisr.topic_states] == ["c"]  # broker 1 has no replica of b
    assert p.full_leader_and_isr(image, 1, listener="PLAINTEXT", topics_only={"b"}, **kw()) is None
    whole = p.full_leader_and_isr(image, 1, listener="PLAINTEXT", **kw())
    assert whole is not None and [t.topic_name for t in whole.topic_states] == ["a", "c"]


def test_a_replica_map_of_some_topics_and_the_stop_replicas_between_two() -> None:
    h = cluster()
    before = p.replica_map(h.image, {"a"})
    assert [v[0] for v in before.values()] == ["a"]
    after = p.replica_map(h.image, set())
    stops = p.stop_replicas(
        before, after, {1: 11, 2: 12}, controller_id=3000, zk_controller_epoch=5
    )
    assert sorted(stops) == [1, 2]  # the deleted topic's replicas, on both brokers
    (topic,) = stops[1].topic_states
    assert topic.topic_name == "a" and topic.partition_states[0].leader_epoch == -2
