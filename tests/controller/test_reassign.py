"""KIP-455 reassignment on the controller, as Kafka's ReplicationControlManager does it:
records, completion, leader movement, cancel, listing, errors (traces from Kafka's own tests
in docs/kafka/REASSIGNMENT.md)."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from pykraft.protocol import ApiKey

from .harness import Harness


@pytest.fixture
def h() -> Harness:
    h = Harness()
    for b in range(10):
        h.live_broker(b)
    return h


def topic(h: Harness, name: str, replicas: list[int]) -> None:
    created = h.create_topic(
        name, -1, -1, assignments=[{"partition_index": 0, "broker_ids": replicas}]
    )
    assert created["error_code"] == 0, created


def part(h: Harness, name: str):  # type: ignore[no-untyped-def]
    return h.image.topics[h.image.topics_by_name[name]].partitions[0]


def reassign(
    h: Harness, name: str, replicas: list[int] | None, version: int = 0
) -> tuple[int, str | None]:
    response = h.call(
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        version,
        timeout=30_000,
        topics=[{"name": name, "partitions": [{"partition_index": 0, "replicas": replicas}]}],
    )
    result = response["responses"][0]["partitions"][0]
    return int(result["error_code"]), result["error_message"]


def listed(h: Harness) -> dict[str, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]:
    response = h.call(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, timeout=1000, topics=None)
    return {
        t["name"]: (
            t["partitions"][0]["replicas"],
            t["partitions"][0]["adding_replicas"],
            t["partitions"][0]["removing_replicas"],
        )
        for t in response["topics"]
    }


def in_sync(h: Harness, name: str, *members: int) -> dict[str, object]:
    p = part(h, name)
    response = h.call(
        ApiKey.ALTER_PARTITION,
        3,
        broker_id=p.leader,
        broker_epoch=h.image.brokers[p.leader].epoch,
        topics=[
            {
                "topic_id": p.topic_id,
                "partitions": [
                    {
                        "partition_index": 0,
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
    return dict(response["topics"][0]["partitions"][0])


def test_start_writes_the_union_adding_and_removing(h: Harness) -> None:
    topic(h, "t", [3, 2, 1, 0])
    p = part(h, "t")
    epochs = (p.leader_epoch, p.partition_epoch)
    assert reassign(h, "t", [7, 3, 1, 9]) == (0, None)
    assert (p.replicas, p.adding, p.removing) == ((7, 3, 1, 9, 0, 2), (7, 9), (0, 2))
    assert p.isr == (3, 2, 1, 0) and p.leader == 3
    # Nothing removed yet: only the partition epoch moves.
    assert (p.leader_epoch, p.partition_epoch) == (epochs[0], epochs[1] + 1)
    assert listed(h) == {"t": ((7, 3, 1, 9, 0, 2), (7, 9), (0, 2))}
    # The leader reports 7 and 9 in sync: the move completes, 0 and 2 leave, epoch bumped.
    answer = in_sync(h, "t", 3, 2, 1, 0, 7, 9)
    assert answer["error_code"] == 0
    assert (p.replicas, p.isr, p.adding, p.removing) == ((7, 3, 1, 9), (3, 1, 7, 9), (), ())
    assert p.leader == 3 and p.leader_epoch == epochs[0] + 1
    assert listed(h) == {}
    assert h.images_equal()


def test_reorder_and_in_sync_removal_complete_at_once(h: Harness) -> None:
    topic(h, "r", [0, 1, 2, 3])
    assert reassign(h, "r", [1, 2, 3, 0]) == (0, None)
    p = part(h, "r")
    assert (p.replicas, p.adding, p.removing) == ((1, 2, 3, 0), (), ())
    assert p.leader == 0  # KIP-455 keeps a leader still in sync (no preferred election)
    before = p.leader_epoch
    assert reassign(h, "r", [1, 2]) == (0, None)
    assert (p.replicas, p.isr, p.adding, p.removing) == ((1, 2), (1, 2), (), ())
    assert p.leader == 1 and p.leader_epoch == before + 1


def test_completion_that_removes_the_leader_answers_new_leader_elected(h: Harness) -> None:
    topic(h, "l", [0, 1, 2])
    assert reassign(h, "l", [4, 5, 6]) == (0, None)
    answer = in_sync(h, "l", 0, 1, 2, 4, 5, 6)
    assert answer["error_code"] == ErrorCode.new_leader_elected
    p = part(h, "l")
    assert (p.replicas, p.isr, p.leader) == ((4, 5, 6), (4, 5, 6), 4)


def test_retarget_computes_against_the_union(h: Harness) -> None:
    topic(h, "q", [0, 1])
    assert reassign(h, "q", [2, 3]) == (0, None)
    p = part(h, "q")
    assert (p.replicas, p.adding, p.removing) == ((2, 3, 0, 1), (2, 3), (0, 1))
    assert reassign(h, "q", [4, 5]) == (0, None)
    assert (p.replicas, p.adding, p.removing) == ((4, 5, 0, 1, 2, 3), (4, 5), (0, 1, 2, 3))
    # Resubmitting the same target writes nothing.
    before = h.offset
    assert reassign(h, "q", [4, 5]) == (0, None)
    assert h.offset == before


def test_cancel_reverts_and_errors(h: Harness) -> None:
    topic(h, "c", [4, 3, 2])
    assert reassign(h, "c", [1, 2, 3, 4, 0]) == (0, None)
    p = part(h, "c")
    assert (p.adding, p.removing) == ((0, 1), ())
    assert reassign(h, "c", None) == (0, None)
    assert (p.replicas, p.adding, p.removing) == (
        (2, 3, 4),
        (),
        (),
    )  # the union's order less adding
    assert reassign(h, "c", None) == (ErrorCode.no_reassignment_in_progress, None)
    code, message = reassign(h, "c", [1, 1])
    assert code == ErrorCode.invalid_replica_assignment and "more than once" in (message or "")
    code, message = reassign(h, "c", [1, 42])
    assert code == ErrorCode.invalid_replica_assignment and "no such broker" in (message or "")
    assert reassign(h, "c", [])[0] == ErrorCode.invalid_replica_assignment
    assert reassign(h, "missing", [1])[0] == ErrorCode.unknown_topic_or_partition
    assert reassign(h, "c", [5, 6], version=1)[0] == 0  # AllowReplicationFactorChange defaults true
    response = h.call(
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        1,
        timeout=1000,
        allow_replication_factor_change=False,
        topics=[{"name": "c", "partitions": [{"partition_index": 0, "replicas": [7]}]}],
    )
    assert (
        response["responses"][0]["partitions"][0]["error_code"]
        == ErrorCode.invalid_replication_factor
    )


def test_cancel_needing_an_unclean_election_is_refused(h: Harness) -> None:
    """[0] -> [1, 2]: 1 joins the ISR, then 0 is fenced: only an adding replica is in sync,
    so reverting to [0] would need an unclean election, which the topic does not allow."""
    topic(h, "u", [0])
    assert reassign(h, "u", [1, 2]) == (0, None)
    assert in_sync(h, "u", 0, 1)["error_code"] == 0  # 2 still missing: not complete
    p = part(h, "u")
    assert (p.adding, p.removing, p.isr) == ((1, 2), (0,), (0, 1))
    h.heartbeat(0, want_fence=True)
    assert p.isr == (1,) and p.leader == 1
    code, message = reassign(h, "u", None)
    assert code == ErrorCode.invalid_replica_assignment
    assert "unclean leader election" in (message or "")
    assert (p.adding, p.removing) == ((1, 2), (0,))  # nothing written


def test_cluster_metadata_is_refused_when_mixed_with_topics(h: Harness) -> None:
    topic(h, "m", [0])
    response = h.call(
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        0,
        timeout=1000,
        topics=[
            {"name": "__cluster_metadata", "partitions": [{"partition_index": 0, "replicas": [1]}]},
            {"name": "m", "partitions": [{"partition_index": 0, "replicas": [1]}]},
        ],
    )
    codes = [r["partitions"][0]["error_code"] for r in response["responses"]]
    assert codes == [ErrorCode.invalid_request, 0]


def test_listing_every_reassignment_reads_the_moving_index(h: Harness) -> None:
    """ListPartitionReassignments without topics answers from the image's index of moving
    partitions (no walk over every partition): the same answer as naming every partition of
    every topic, and only the moving ones."""
    for name in ("a", "b", "c"):
        assert h.create_topic(name, partitions=4, rf=2)["error_code"] == 0
    moves = {("a", 1): [7, 8], ("a", 3): [8, 9], ("c", 0): [6, 9]}
    for (name, pid), replicas in moves.items():
        response = h.call(
            ApiKey.ALTER_PARTITION_REASSIGNMENTS,
            0,
            timeout=30_000,
            topics=[{"name": name, "partitions": [{"partition_index": pid, "replicas": replicas}]}],
        )
        assert response["responses"][0]["partitions"][0]["error_code"] == 0, response

    def listing(topics: object) -> list[tuple[str, int, tuple[int, ...]]]:
        response = h.call(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, timeout=1000, topics=topics)
        return [
            (t["name"], p["partition_index"], tuple(p["adding_replicas"]))
            for t in response["topics"]
            for p in t["partitions"]
        ]

    every = [{"name": n, "partition_indexes": [0, 1, 2, 3, 4]} for n in ("c", "b", "a", "nope")]
    assert listing(None) == listing(every)
    assert [(n, pid) for n, pid, _ in listing(None)] == sorted(moves)
    assert all(adding for _, _, adding in listing(None))
