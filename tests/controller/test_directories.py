"""JBOD on the controller (KIP-858, Kafka's ``ReplicationControlManagerTest``
``testHandleAssignReplicasToDirs``, ``testHandleDirectoriesOffline``): brokers with two log
directories, replicas assigned by AssignReplicasToDirs, a failed directory reported in
heartbeats moving leadership and ISR membership off it only."""

from __future__ import annotations

import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from pykraft.controller.partitions import UNASSIGNED_DIR
from pykraft.metadata import records as r
from pykraft.metadata.image import PartitionState
from pykraft.protocol import ApiKey
from tests.controller.harness import Harness


def dirs_of(broker_id: int) -> list[uuid.UUID]:
    return [uuid.UUID(int=(broker_id << 64) + 500 + i) for i in range(2)]


def jbod(**bootstrap: int) -> Harness:
    """Brokers 1-3 with two directories each; topic ``t``: two partitions on (1, 2, 3) and
    (2, 3, 1)."""
    h = Harness(bootstrap=bootstrap or None)
    for b in (1, 2, 3):
        h.live_broker(b, dirs=2)
    created = h.create_topic(
        "t",
        -1,
        -1,
        assignments=[
            {"partition_index": 0, "broker_ids": [1, 2, 3]},
            {"partition_index": 1, "broker_ids": [2, 3, 1]},
        ],
    )
    assert created["error_code"] == 0, created
    return h


def part(h: Harness, index: int) -> PartitionState:
    return h.image.topics[h.image.topics_by_name["t"]].partitions[index]


def assign(
    h: Harness,
    broker_id: int,
    directory: uuid.UUID,
    *parts: tuple[uuid.UUID, int],
    epoch: int | None = None,
) -> dict[str, Any]:
    return h.call(
        ApiKey.ASSIGN_REPLICAS_TO_DIRS,
        0,
        broker_id=broker_id,
        broker_epoch=h.image.brokers[broker_id].epoch if epoch is None else epoch,
        directories=[
            {
                "id_": directory,
                "topics": [
                    {"topic_id": topic_id, "partitions": [{"partition_index": index}]}
                    for topic_id, index in parts
                ],
            }
        ],
    )


def test_replicas_on_multi_directory_brokers_are_unassigned_until_the_broker_says() -> None:
    h = jbod()
    p = part(h, 0)
    assert p.directories == (UNASSIGNED_DIR,) * 3
    first, _second = dirs_of(1)
    answer = assign(h, 1, first, (p.topic_id, 0))
    assert answer["error_code"] == 0
    (directory,) = answer["directories"]
    assert directory["topics"][0]["partitions"][0]["error_code"] == 0
    assert part(h, 0).directories == (first, UNASSIGNED_DIR, UNASSIGNED_DIR)
    epoch = part(h, 0).partition_epoch
    assign(h, 1, first, (p.topic_id, 0))  # the same again: no record
    assert part(h, 0).partition_epoch == epoch
    assert h.images_equal()


def test_assign_replicas_to_dirs_errors() -> None:
    h = jbod()
    p = part(h, 0)
    first = dirs_of(1)[0]
    unknown = assign(h, 1, first, (uuid.UUID(int=99), 0))
    code = unknown["directories"][0]["topics"][0]["partitions"][0]["error_code"]
    assert code == ErrorCode.unknown_topic_id
    missing = assign(h, 1, first, (p.topic_id, 7))
    code = missing["directories"][0]["topics"][0]["partitions"][0]["error_code"]
    assert code == ErrorCode.unknown_topic_or_partition
    assert assign(h, 1, first, (p.topic_id, 0), epoch=12345)["error_code"] == (
        ErrorCode.stale_broker_epoch
    )
    old = Harness(bootstrap={"metadata.version": 15})
    old.live_broker(1, dirs=2)
    refused = old.call(
        ApiKey.ASSIGN_REPLICAS_TO_DIRS,
        0,
        broker_id=1,
        broker_epoch=old.image.brokers[1].epoch,
        directories=[],
    )
    assert refused["error_code"] == ErrorCode.unsupported_version


def test_a_replica_assigned_to_a_directory_not_online_leaves_the_isr() -> None:
    h = jbod()
    p = part(h, 0)
    assert p.leader == 1
    gone = uuid.UUID(int=(1 << 64) + 999)  # not one of broker 1's registered directories
    assign(h, 1, gone, (p.topic_id, 0))
    p = part(h, 0)
    assert p.directories[0] == gone and 1 not in p.isr and p.leader == 2
    assert h.images_equal()


def test_a_failed_directory_moves_only_its_partitions_and_the_broker_stays_unfenced() -> None:
    h = jbod()
    first, second = dirs_of(1)
    assign(h, 1, first, (part(h, 0).topic_id, 0))
    assign(h, 1, second, (part(h, 1).topic_id, 1))
    assert part(h, 0).leader == 1
    beat = h.call(
        ApiKey.BROKER_HEARTBEAT,
        1,
        broker_id=1,
        broker_epoch=h.image.brokers[1].epoch,
        current_metadata_offset=h.offset - 1,
        want_fence=False,
        want_shut_down=False,
        offline_log_dirs=[first],
    )
    assert beat["error_code"] == 0 and beat["is_fenced"] is False
    p0, p1 = part(h, 0), part(h, 1)
    assert p0.leader == 2 and 1 not in p0.isr  # its replica was on the failed directory
    assert 1 in p1.isr  # on the healthy one
    broker = h.image.brokers[1]
    assert broker.log_dirs == (second,) and not broker.fenced
    assert any(
        isinstance(rec, r.BrokerRegistrationChangeRecord) and version == 2
        for rec, version, _ in h.written
    )
    # Reported again: nothing more to do.
    before = len(h.written)
    h.call(
        ApiKey.BROKER_HEARTBEAT,
        1,
        broker_id=1,
        broker_epoch=broker.epoch,
        current_metadata_offset=h.offset - 1,
        want_fence=False,
        want_shut_down=False,
        offline_log_dirs=[first],
    )
    assert len(h.written) == before
    # A replica on an offline directory is never elected.
    h.heartbeat(2, want_fence=True)
    h.heartbeat(3, want_fence=True)
    assert part(h, 0).leader != 1
    assert h.images_equal()
