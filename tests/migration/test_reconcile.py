"""KRaft -> ZooKeeper reconciliation without I/O (Kafka's KRaftMigrationZkWriter snapshot
rules, SPEC G4): what ZooKeeper must say for an image, and the fewest writes that make it
say so; the dual write of a delta against the model of ZooKeeper."""

from __future__ import annotations

import json
import random
import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.metadata import records as r
from pykraft.metadata.delta import MetadataDelta
from pykraft.metadata.image import Image
from pykraft.migration import zk_data as z
from pykraft.migration import zk_writes as w
from tests.controller.harness import Harness

T1 = uuid.UUID(int=11)
T2 = uuid.UUID(int=22)


def image() -> Image:
    img = Image()
    records = [
        r.TopicRecord(name="a", topic_id=T1),
        r.PartitionRecord(
            partition_id=0,
            topic_id=T1,
            replicas=(1, 2),
            isr=(1, 2),
            leader=1,
            leader_epoch=3,
            partition_epoch=5,
        ),
        r.ConfigRecord(resource_type=z.TOPIC, resource_name="a", name="retention.ms", value="1"),
        r.ConfigRecord(
            resource_type=z.BROKER, resource_name="", name="log.cleaner.threads", value="2"
        ),
    ]
    for offset, rec in enumerate(records):
        img.replay(rec, 0, offset)
    return img


def node(value: object, version: int = 0, children: tuple[str, ...] = ()) -> z.Znode:
    data = json.dumps(value).encode() if value is not None else None
    return z.Znode(data, version, children)


def test_empty_zookeeper_gets_every_znode_parents_first() -> None:
    ops, changed = w.reconcile(w.desired(image(), 7), z.ZkSnapshot({}))
    paths = [(op.kind, op.path) for op in ops]
    assert (
        paths.index(("create", "/brokers/topics/a"))
        < paths.index(("create", "/brokers/topics/a/partitions"))
        < paths.index(("create", "/brokers/topics/a/partitions/0"))
        < paths.index(("create", "/brokers/topics/a/partitions/0/state"))
    )
    state = json.loads(next(op.data for op in ops if op.path.endswith("/state")))
    assert state == {
        "version": 1,
        "leader": 1,
        "leader_epoch": 3,
        "controller_epoch": 7,
        "isr": [1, 2],
    }
    assert ("create", "/config/topics/a") in paths and (
        "create",
        "/config/brokers/<default>",
    ) in paths
    assert sorted(changed) == ["brokers/<default>", "topics/a"]


def test_a_deleted_topics_config_goes_before_its_znodes() -> None:
    """Kafka's deleteTopic order: a reader that no longer sees the topic no longer sees its
    config (the migration test saw /config/topics/dual outlive /brokers/topics/dual)."""
    want = w.desired(image(), 7)
    ops, _ = w.reconcile(want, z.ZkSnapshot({}))
    have = {op.path: z.Znode(op.data or None, 0) for op in ops}
    have["/brokers/topics"] = z.Znode(None, 0, ("a", "gone"))
    have["/brokers/topics/gone"] = node({"version": 3, "partitions": {"0": [1]}})
    have["/brokers/topics/gone/partitions"] = z.Znode(None, 0, ())
    have["/config/topics/gone"] = node({"version": 1, "config": {}})
    deletes = [op.path for op in w.reconcile(want, z.ZkSnapshot(have))[0] if op.kind == "delete"]
    assert deletes == [
        "/config/topics/gone",
        "/brokers/topics/gone/partitions",
        "/brokers/topics/gone",
    ]


def test_in_sync_zookeeper_needs_nothing_and_stale_parts_are_fixed() -> None:
    want = w.desired(image(), 7)
    ops, _ = w.reconcile(want, z.ZkSnapshot({}))
    have = {op.path: z.Znode(op.data or None, 0) for op in ops}
    have["/brokers/topics"] = z.Znode(None, 0, ("a", "gone"))
    have["/brokers/topics/a/partitions"] = z.Znode(None, 0, ("0", "1"))
    have["/brokers/topics/a/partitions/1"] = z.Znode(None, 0)
    have["/brokers/topics/a/partitions/1/state"] = node({"leader": 1})
    have["/brokers/topics/gone"] = node({"version": 3, "partitions": {"0": [1]}})
    have["/brokers/topics/gone/partitions"] = z.Znode(None, 0, ())
    have["/config/topics"] = z.Znode(None, 0, ("a",))
    have["/config/brokers"] = z.Znode(None, 0, ("<default>", "3"))
    have["/config/brokers/3"] = node({"version": 1, "config": {"x": "y"}})
    again, changed = w.reconcile(want, z.ZkSnapshot(have))
    assert [(op.kind, op.path) for op in again] == [
        ("delete", "/brokers/topics/a/partitions/1/state"),
        ("delete", "/brokers/topics/a/partitions/1"),
        ("delete", "/brokers/topics/gone/partitions"),
        ("delete", "/brokers/topics/gone"),
        ("set", "/config/brokers/3"),
    ]
    assert changed == ["brokers/3"]
    state_path = "/brokers/topics/a/partitions/0/state"
    have[state_path] = node(
        {"version": 1, "leader": 2, "leader_epoch": 3, "controller_epoch": 1, "isr": [2]}
    )
    moved, _ = w.reconcile(want, z.ZkSnapshot(have))
    assert ("set", state_path) in [(op.kind, op.path) for op in moved]


def test_migration_znode_round_trip_and_refusal() -> None:
    assert w.parse_migration(w.migration_json(3000, 4, 99, 4)) == (3000, 4, 99, 4)
    bad = json.dumps({"version": 1}).encode()
    try:
        w.parse_migration(bad)
    except z.ZkDataError as e:
        assert "unknown version" in str(e)
    else:
        raise AssertionError("version 1 accepted")


def test_pending_deletions_are_skipped_and_topics_without_ids_refused() -> None:
    snapshot = z.ZkSnapshot(
        {
            "/brokers/topics": z.Znode(None, 0, ("old", "doomed", "ok")),
            "/brokers/topics/old": node({"version": 1, "partitions": {"0": [1]}}),
            "/brokers/topics/doomed": node(
                {"version": 3, "partitions": {"0": [1]}, "topic_id": "AAAAAAAAAAAAAAAAAAAAAQ"}
            ),
            "/brokers/topics/ok": node(
                {"version": 3, "partitions": {"0": [4, 5]}, "topic_id": "AAAAAAAAAAAAAAAAAAAAAg"}
            ),
            "/admin/delete_topics": z.Znode(None, 0, ("doomed",)),
        }
    )
    load = z.read_all_metadata(snapshot)
    assert load.skipped_deletions == ["doomed"]
    assert any("no topic id" in reason for reason in load.refused)
    (partition,) = [rec for rec, _ in load.records() if isinstance(rec, r.PartitionRecord)]
    # No state znode: every replica in sync, the first leads, epochs 0 (Kafka's rule).
    assert (partition.isr, partition.leader, partition.leader_epoch) == ((4, 5), 4, 0)
    assert load.broker_ids == {4, 5}


def test_the_producer_id_block_covers_every_id_the_log_handed_out() -> None:
    """AllocateProducerIds served in dual write moves the log's next producer id; ZooKeeper's
    block must cover it, or a rollback hands the same ids out again (Kafka writes it)."""
    img = image()
    img.replay(r.ProducerIdsRecord(broker_id=1, broker_epoch=5, next_producer_id=3000), 0, 10)
    want = w.desired(img, 7)
    # ZooKeeper's block ends at 1999: a ZooKeeper controller would start at 2000 < 3000.
    stale = z.ZkSnapshot(
        {
            z.PRODUCER_ID_BLOCK: node(
                {"version": 1, "broker": 0, "block_start": "1000", "block_end": "1999"}
            )
        }
    )
    ops, _ = w.reconcile(want, stale)
    (op,) = [op for op in ops if op.path == z.PRODUCER_ID_BLOCK]
    assert op.kind == "set"
    written = json.loads(op.data)
    assert written == {"version": 1, "broker": -1, "block_start": "3000", "block_end": "3999"}
    # Read back as the migration reads a ZooKeeper cluster: the next block starts past 3000.
    load = z.read_all_metadata(z.ZkSnapshot({z.PRODUCER_ID_BLOCK: node(written)}))
    (record,) = [
        rec for batch in load.batches for rec, _ in batch if isinstance(rec, r.ProducerIdsRecord)
    ]
    assert record.next_producer_id == 4000
    # Covered (the block reaches past what the log handed out): nothing to write.
    covered = z.ZkSnapshot({z.PRODUCER_ID_BLOCK: node(written)})
    assert not [op for op in w.reconcile(want, covered)[0] if op.path == z.PRODUCER_ID_BLOCK]
    # None in ZooKeeper yet: created.
    created = [
        op for op in w.reconcile(want, z.ZkSnapshot({}))[0] if op.path == z.PRODUCER_ID_BLOCK
    ]
    assert [op.kind for op in created] == ["create"]


def test_a_deleted_topic_loses_its_delete_topics_entry() -> None:
    have = z.ZkSnapshot(
        {
            z.DELETE_TOPICS: node(None, children=("gone", "a")),
            f"{z.DELETE_TOPICS}/gone": node(None),
            f"{z.DELETE_TOPICS}/a": node(None),
        }
    )
    ops, _ = w.reconcile(w.desired(image(), 7), have)
    deletes = [op.path for op in ops if op.kind == "delete"]
    assert f"{z.DELETE_TOPICS}/gone" in deletes
    assert f"{z.DELETE_TOPICS}/a" not in deletes  # "a" is still in the log


class FakeZk:
    """ZooKeeper's znodes as a dict (path -> data), the ops of ``reconcile`` applied to it."""

    def __init__(self) -> None:
        # Kafka's top-level paths (KafkaZkClient.createTopLevelPaths) exist before any write.
        top = ("/brokers", "/brokers/topics", "/config", "/config/topics", "/config/brokers")
        self.nodes: dict[str, bytes | None] = dict.fromkeys(top)

    def apply(self, ops: list[w.ZkOp]) -> None:
        for op in ops:
            if op.kind == "delete":
                assert op.path in self.nodes, op
                assert not any(p.startswith(op.path + "/") for p in self.nodes), op
                del self.nodes[op.path]
            else:
                parent = op.path.rsplit("/", 1)[0]
                assert parent in self.nodes or parent.count("/") <= 1, op  # parents first
                assert (op.path in self.nodes) == (op.kind == "set"), op
                self.nodes[op.path] = op.data or None

    def snapshot(self) -> z.ZkSnapshot:
        children: dict[str, list[str]] = {}
        for path in self.nodes:
            parent, name = path.rsplit("/", 1)
            children.setdefault(parent, []).append(name)
        paths = set(self.nodes) | set(children)
        return z.ZkSnapshot(
            {p: z.Znode(self.nodes.get(p), 0, tuple(sorted(children.get(p, ())))) for p in paths}
        )


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 100_000))
def test_a_dual_write_of_the_changes_leaves_zookeeper_as_a_full_reconciliation(seed: int) -> None:
    """The delta path (the ``MetadataDelta`` of the committed changes, reconciled against ``ZkModel``)
    and the full path (everything reconciled against ZooKeeper as read) write ZooKeeper into
    the same state, change after change."""
    dual_write_matches_full_reconciliation(seed)


def dual_write_matches_full_reconciliation(seed: int) -> None:
    """The comparison above for one seed (also run with a planted bug:
    ``tests/migration/test_planted_dual_write.py``)."""
    rng = random.Random(seed)
    h = Harness(seed=seed)
    for broker in (1, 2, 3):
        h.live_broker(broker)
    h.random_requests(rng, 5)
    full, delta = FakeZk(), FakeZk()
    first = w.desired(h.image, 7)
    before = delta.snapshot()
    ops = w.reconcile(first, before)[0]
    for zk in (full, delta):
        zk.apply(ops)
    model = w.ZkModel(first, before, ops)
    h.image.track_changes(True)
    for _ in range(8):
        h.random_requests(rng, rng.randrange(1, 5))
        scope = h.image.take_changes(h.offset - 1)
        want = w.desired(h.image, 7, scope)
        ops = w.reconcile(want, model.snapshot(scope))[0]
        delta.apply(ops)
        model.apply(want, scope, ops)
        full.apply(w.reconcile(w.desired(h.image, 7), full.snapshot())[0])
        assert delta.nodes == full.nodes
    assert h.image.take_changes(h.offset) == MetadataDelta()  # nothing left to take
