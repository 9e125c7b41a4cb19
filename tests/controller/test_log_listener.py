"""The one hosting state machine (``controller/log_listener.py``) on a real ``RaftCore`` with
an in-memory log: the active controller reverts to the committed offset when it loses
leadership (in memory, without replaying the log), reads see only committed state, a
replica whose replay failed refuses to lead, and one operation writes at most Kafka's
MAX_RECORDS_PER_USER_OP records."""

from __future__ import annotations

import random
import uuid
from typing import Any

import pytest

from pykraft.controller.config import ControllerConfig
from pykraft.controller.errors import MAX_RECORDS_PER_USER_OP, TOO_LARGE, ApiError
from pykraft.controller.log_listener import ActivationRefused, LeaderChange, MetaLogListener
from pykraft.controller.quorum_controller import QuorumController
from pykraft.metadata import records as r
from pykraft.metadata.image import BROKER_RESOURCE
from pykraft.metadata.serde import encode_record
from pykraft.protocol import ApiKey, ErrorCode
from pykraft.protocol.apis import request_schema
from pykraft.protocol.build import make
from pykraft.raft.core import RaftCore
from pykraft.raft.messages import BeginQuorumEpochRequest, Inbound
from pykraft.raft.types import OffsetAndEpoch, ReplicaKey
from pykraft.sim.controller import image_digest
from tests.controller.harness import BROKER_FEATURES, CLUSTER_ID
from tests.raft.test_core import fetch, leader_with_hwm_at_one

NOW = 2_000
CONFIG = "log.retention.ms"  # a cluster-wide dynamic broker config
DEFAULT = ""  # the cluster default broker resource


def new_listener(**kw: Any) -> MetaLogListener:
    def new_controller() -> QuorumController:
        return QuorumController(
            ControllerConfig(), node_id=1, cluster_id=CLUSTER_ID, rng=random.Random(7)
        )

    return MetaLogListener(new_controller, **kw)


def commit_all(core: RaftCore, listener: MetaLogListener, request_id: int = 10) -> None:
    """Follower 2 fetches everything: the high watermark reaches the log end."""
    core.log.flush()
    core.on_flushed(NOW)
    end = core.log.end_offset
    fetch(core, src=2, request_id=request_id, offset=end, epoch=core.epoch, now_ms=NOW)
    assert core.high_watermark == end
    listener.sync(core, NOW)


def active() -> tuple[RaftCore, MetaLogListener]:
    core = leader_with_hwm_at_one()
    listener = new_listener()
    assert listener.sync(core, NOW) is LeaderChange.ACTIVATED
    commit_all(core, listener)  # the bootstrap records
    return core, listener


def call(
    core: RaftCore, listener: MetaLogListener, api_key: int, version: int, **fields: Any
) -> dict[str, Any]:
    request = make(request_schema(api_key, version), fields)
    handled = listener.handle(core, api_key, version, request, listener.context(core, NOW))
    return handled.response


def alter_config(core: RaftCore, listener: MetaLogListener, topic: str, value: str) -> None:
    call(
        core,
        listener,
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        1,
        validate_only=False,
        resources=[
            {
                "resource_type": BROKER_RESOURCE,
                "resource_name": topic,
                "configs": [{"name": CONFIG, "config_operation": 0, "value": value}],
            }
        ],
    )


def describe(core: RaftCore, listener: MetaLogListener, topic: str) -> str | None:
    response = call(
        core,
        listener,
        ApiKey.DESCRIBE_CONFIGS,
        4,
        resources=[
            {
                "resource_type": BROKER_RESOURCE,
                "resource_name": topic,
                "configuration_keys": [CONFIG],
            }
        ],
        include_synonyms=False,
        include_documentation=False,
    )
    (result,) = response["results"]
    assert result["error_code"] == 0, result
    values = [c["value"] for c in result["configs"] if c["name"] == CONFIG]
    return values[0] if values else None


def create_topic(core: RaftCore, listener: MetaLogListener, name: str, partitions: int) -> Any:
    return call(
        core,
        listener,
        ApiKey.CREATE_TOPICS,
        7,
        topics=[
            {
                "name": name,
                "num_partitions": partitions,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
        ],
        timeout=30_000,
        validate_only=False,
    )


def lose_leadership(core: RaftCore) -> None:
    core.step(Inbound(2, 99, BeginQuorumEpochRequest(None, core.epoch + 1, 2, ReplicaKey(1))), NOW)
    assert core.role == "follower"


def register_broker(core: RaftCore, listener: MetaLogListener) -> None:
    response = call(
        core,
        listener,
        ApiKey.BROKER_REGISTRATION,
        4,
        broker_id=5,
        cluster_id=CLUSTER_ID,
        incarnation_id=uuid.UUID(int=(5 << 64) + 1000),
        listeners=[
            {"name": "PLAINTEXT", "host": "127.0.0.1", "port": 9005, "security_protocol": 0}
        ],
        features=BROKER_FEATURES,
        rack=None,
        log_dirs=[uuid.UUID(int=(5 << 64) + 500)],
    )
    assert response["error_code"] == 0, response


def test_failover_reverts_uncommitted_records_in_memory() -> None:
    core, listener = active()
    register_broker(core, listener)
    commit_all(core, listener, 11)
    committed = image_digest(listener.image)
    hwm = core.high_watermark
    alter_config(core, listener, DEFAULT, "1000")
    assert listener.position > core.high_watermark  # applied, not committed
    assert image_digest(listener.image) != committed
    lose_leadership(core)
    assert listener.sync(core, NOW) is LeaderChange.DEACTIVATED
    assert listener.reverted > 0
    assert listener.position == hwm == core.high_watermark
    assert image_digest(listener.image) == committed
    assert len(listener.image.timeline) == 0  # a standby keeps no undo log


def test_reads_see_only_committed_state() -> None:
    core, listener = active()
    alter_config(core, listener, DEFAULT, "1000")
    commit_all(core, listener, 11)
    assert describe(core, listener, DEFAULT) == "1000"
    alter_config(core, listener, DEFAULT, "2000")  # applied, not committed
    assert listener.image.configs[(BROKER_RESOURCE, DEFAULT)][CONFIG] == "2000"
    assert describe(core, listener, DEFAULT) == "1000"
    assert listener.image.configs[(BROKER_RESOURCE, DEFAULT)][CONFIG] == "2000"
    commit_all(core, listener, 12)
    assert describe(core, listener, DEFAULT) == "2000"


def test_a_replica_whose_replay_failed_refuses_to_lead() -> None:
    core = leader_with_hwm_at_one()
    reports: list[str] = []
    listener = new_listener(report=reports.append)
    # A committed record the image refuses: a partition of a topic that does not exist.
    bad = r.PartitionChangeRecord(partition_id=0, topic_id=uuid.UUID(int=(1 << 64) + 1))
    core.append([encode_record(bad, 0)], NOW)
    core.log.flush()
    core.on_flushed(NOW)
    fetch(core, src=2, request_id=10, offset=core.log.end_offset, epoch=1, now_ms=NOW)
    with pytest.raises(ActivationRefused, match="1 committed metadata record"):
        listener.sync(core, NOW)
    assert listener.metadata_errors == 1 and "cannot be replayed" in reports[0]
    assert not listener.active


def test_one_operation_writes_at_most_max_records_per_user_op() -> None:
    core, listener = active()
    register_broker(core, listener)
    commit_all(core, listener, 11)
    beat = call(
        core,
        listener,
        ApiKey.BROKER_HEARTBEAT,
        1,
        broker_id=5,
        broker_epoch=listener.image.brokers[5].epoch,
        current_metadata_offset=core.log.end_offset - 1,
        want_fence=False,
        want_shut_down=False,
    )
    commit_all(core, listener, 12)
    assert beat["is_fenced"] is False and not listener.image.brokers[5].fenced
    end = core.log.end_offset
    with pytest.raises(ApiError) as refused:
        create_topic(core, listener, "huge", 10_000_000)  # refused before anything is built
    assert refused.value.code == ErrorCode.policy_violation
    assert refused.value.message == TOO_LARGE
    with pytest.raises(ApiError):
        create_topic(core, listener, "edge", MAX_RECORDS_PER_USER_OP)  # + its TopicRecord
    assert core.log.end_offset == end  # nothing written
    response = create_topic(core, listener, "fits", MAX_RECORDS_PER_USER_OP - 1)
    assert response["topics"][0]["error_code"] == 0
    assert core.log.end_offset == end + MAX_RECORDS_PER_USER_OP


def test_a_loaded_snapshot_does_not_count_toward_the_next_one() -> None:
    """The snapshot policy counts the record bytes applied since the last snapshot; a
    snapshot's own records are in a snapshot already (Kafka resets the count on a load).
    Counted, every controller that loaded a large snapshot wrote another at once (seen at a
    million partitions: 8-12 s of CPU each, just after the load)."""
    from pykraft.controller.snapshot_generator import SnapshotGenerator

    core, listener = active()
    for n in range(5):
        alter_config(core, listener, f"{n}", "v" * 100)
    commit_all(core, listener, request_id=11)
    end = core.high_watermark
    values = SnapshotGenerator(listener.image, end).all_values()
    writer = core.create_snapshot(end, NOW)
    writer.append(values, NOW)
    writer.freeze(NOW)
    applied: list[int] = []
    loaded = new_listener(on_applied=applied.append)
    assert loaded.load_snapshot(core) is not None
    assert loaded.position == end and applied == []
    assert image_digest(loaded.image) == image_digest(listener.image)
    alter_config(core, listener, "7", "w")  # a record after the snapshot counts
    commit_all(core, listener, request_id=12)
    loaded.sync(core, NOW)
    assert len(applied) == 1 and applied[0] > 0


def _with_snapshot() -> tuple[RaftCore, MetaLogListener, int]:
    """An active controller with a few configs committed and a snapshot at its high
    watermark; that offset."""
    from pykraft.controller.snapshot_generator import SnapshotGenerator

    core, listener = active()
    for n in range(5):
        alter_config(core, listener, f"{n}", "v" * 100)
    commit_all(core, listener, request_id=11)
    end = core.high_watermark
    writer = core.create_snapshot(end, NOW)
    writer.append(SnapshotGenerator(listener.image, end).all_values(), NOW)
    writer.freeze(NOW)
    return core, listener, end


def test_a_snapshot_installed_from_the_leader_loads_in_slices_beside_the_old_image() -> None:
    """With a budget, a snapshot the replica installed is replayed into a fresh controller
    over several syncs while the old image stays in use (at its old position); it replaces
    the old one, whole, when the last slice is done."""
    core, listener, end = _with_snapshot()
    expected = image_digest(listener.image)
    lose_leadership(core)  # the standby below follows; it never activates

    standby = new_listener()
    old = standby.image
    standby.snapshot_loaded()
    slices = 0
    while True:
        standby.sync(core, NOW, max_records=3)
        slices += 1
        if not standby.more:
            break
        assert standby.loading and standby.image is old and standby.position == 0
        assert slices < 1_000
    assert slices >= 3 and not standby.loading
    assert standby.loaded is not None and standby.loaded.offset == end
    assert standby.position == end and image_digest(standby.image) == expected


def test_the_start_up_load_runs_in_slices_and_the_listener_is_cold_until_it_is_in() -> None:
    """``begin_load`` at start: the snapshot is replayed by the next budgeted syncs (the
    node's raft runs meanwhile); ``cold`` holds until the image is in, then the records
    after the snapshot replay as usual. Without a budget the same call loads in one go."""
    core, listener, end = _with_snapshot()
    alter_config(core, listener, "after", "w")  # committed after the snapshot
    commit_all(core, listener, request_id=12)
    expected = image_digest(listener.image)
    lose_leadership(core)

    restarted = new_listener()
    restarted.begin_load()
    assert restarted.cold
    slices = 0
    while True:
        restarted.sync(core, NOW, max_records=3)
        slices += 1
        if not restarted.more:
            break
        assert restarted.cold and restarted.position == 0 and not restarted.active
        assert slices < 1_000
    assert slices >= 3 and not restarted.cold and not restarted.loading
    assert restarted.loaded is not None and restarted.loaded.offset == end
    assert restarted.position == core.high_watermark
    assert image_digest(restarted.image) == expected

    at_once = new_listener()
    at_once.begin_load()
    at_once.sync(core, NOW)  # no budget: one go
    assert not at_once.cold and not at_once.more
    assert image_digest(at_once.image) == expected


def test_a_snapshot_is_read_a_window_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The load reads the snapshot ``SNAPSHOT_READ_BYTES`` at a time (at a million
    partitions reading all 123 MB at once held the loop over 100 ms): with a window smaller
    than one batch and batches straddling windows, the image is the same, and the file is
    never read whole."""
    from pykraft.controller import log_listener

    core, listener, end = _with_snapshot()
    expected = image_digest(listener.image)
    lose_leadership(core)
    latest = core.snapshots.latest()
    assert latest is not None and latest.offset == end
    size = core.snapshots.size(latest) or 0
    reads: list[int] = []
    store_type = type(core.snapshots)
    read = store_type.read

    def counted(store: Any, sid: OffsetAndEpoch, position: int, max_bytes: int) -> bytes:
        reads.append(max_bytes)
        return read(store, sid, position, max_bytes)

    monkeypatch.setattr(store_type, "read", counted)
    monkeypatch.setattr(log_listener, "SNAPSHOT_READ_BYTES", 64)
    loaded = new_listener()
    assert loaded.load_snapshot(core) is not None
    assert image_digest(loaded.image) == expected
    assert len(reads) > 2 and max(reads) < size, (reads, size)
