"""ACLs in a ZooKeeper migration (issue 27 part 5), pure: Kafka's AclAuthorizer znodes become
AccessControlEntryRecords, and the image's ACLs are dual-written back as those znodes with
their change notifications; a delta write (the ACL scope against the model of ZooKeeper)
leaves ZooKeeper as a full reconciliation does."""

from __future__ import annotations

import json
import random
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.metadata import records as r
from pykraft.metadata.image import Image
from pykraft.migration import zk_acls as a
from pykraft.migration import zk_data as z
from pykraft.migration import zk_writes as w

from .test_reconcile import FakeZk

LITERAL = b'{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"},{"principal":"User:bob","permissionType":"Deny","operation":"IdempotentWrite","host":"10.0.0.1"}]}'
PREFIXED = b'{"version":1,"acls":[{"principal":"User:*","permissionType":"Deny","operation":"Write","host":"*"}]}'


def zk_with_acls() -> z.ZkSnapshot:
    return z.ZkSnapshot(
        {
            "/kafka-acl": z.Znode(None, 0, ("Topic", "TransactionalId")),
            "/kafka-acl/Topic": z.Znode(None, 0, ("orders",)),
            "/kafka-acl/Topic/orders": z.Znode(LITERAL, 0),
            "/kafka-acl/TransactionalId": z.Znode(None, 0, ()),
            "/kafka-acl-extended": z.Znode(None, 0, ("prefixed",)),
            "/kafka-acl-extended/prefixed": z.Znode(None, 0, ("Group",)),
            "/kafka-acl-extended/prefixed/Group": z.Znode(None, 0, ("team-",)),
            "/kafka-acl-extended/prefixed/Group/team-": z.Znode(PREFIXED, 0),
        }
    )


def test_zookeepers_acls_become_records_with_stable_ids() -> None:
    load = z.read_all_metadata(zk_with_acls())
    records = [rec for rec, _ in load.records() if isinstance(rec, r.AccessControlEntryRecord)]
    got = {
        (
            rec.resource_type,
            rec.resource_name,
            rec.pattern_type,
            rec.principal,
            rec.host,
            rec.operation,
            rec.permission_type,
        )
        for rec in records
    }
    assert got == {
        (2, "orders", 3, "User:alice", "*", 3, 3),  # TOPIC LITERAL READ ALLOW
        (2, "orders", 3, "User:bob", "10.0.0.1", 12, 2),  # IDEMPOTENT_WRITE DENY
        (3, "team-", 4, "User:*", "*", 4, 2),  # GROUP PREFIXED WRITE DENY
    }
    assert not load.refused
    assert len({rec.id for rec in records}) == 3
    again = [rec for rec, _ in z.read_all_metadata(zk_with_acls()).records()]
    assert [rec.id for rec in records] == [
        rec.id for rec in again if isinstance(rec, r.AccessControlEntryRecord)
    ]
    # One batch per resource, after the producer id block (Kafka's readAllMetadata order).
    acl_batches = [b for b in load.batches if isinstance(b[0][0], r.AccessControlEntryRecord)]
    assert [len(b) for b in acl_batches] == [1, 2]  # by path: extended, then literal


def test_a_znode_that_is_not_kafkas_acl_json_is_named() -> None:
    nodes = dict(zk_with_acls().nodes)
    nodes["/kafka-acl/Topic/orders"] = z.Znode(b'{"version":1,"acls":[{"operation":"Fly"}]}', 0)
    with pytest.raises(z.ZkDataError, match="/kafka-acl/Topic/orders"):
        z.read_all_metadata(z.ZkSnapshot(nodes))


def _image_with(records: list[object]) -> Image:
    img = Image()
    for offset, rec in enumerate(records):
        img.replay(rec, 0, offset)
    return img


def test_the_image_is_written_back_as_the_same_znodes_and_announced() -> None:
    load = z.read_all_metadata(zk_with_acls())
    acl_records = [rec for rec, _ in load.records() if isinstance(rec, r.AccessControlEntryRecord)]
    img = _image_with(acl_records)
    want = w.desired(img, 5)
    assert want.acls == a.read_acls(zk_with_acls())
    # Already as ZooKeeper holds them: nothing to write.
    ops, _ = w.reconcile(want, zk_with_acls())
    assert [op for op in ops if "acl" in op.path] == []
    # Into an empty ZooKeeper: parents first, then each resource, each announced once.
    empty = FakeZk()
    ops, _ = w.reconcile(want, empty.snapshot())
    empty.apply(ops)
    assert empty.nodes["/kafka-acl/Topic/orders"] is not None
    assert a.read_acls(empty.snapshot()) == want.acls
    notes = a.acl_notifications((op.kind, op.path) for op in ops)
    assert notes == [
        (
            "/kafka-acl-extended-changes/acl_changes_",
            b'{"version":1,"resourceType":"GROUP","name":"team-","patternType":"PREFIXED"}',
        ),
        ("/kafka-acl-changes/acl_changes_", b"TOPIC:orders"),
    ]
    # A removed ACL empties its resource: the znode is deleted, and announced.
    remove = r.RemoveAccessControlEntryRecord(
        id=next(rec.id for rec in acl_records if rec.resource_name == "team-")
    )
    img.replay(remove, 0, len(acl_records))
    ops, _ = w.reconcile(w.desired(img, 5), empty.snapshot())
    assert [(op.kind, op.path) for op in ops] == [
        ("delete", "/kafka-acl-extended/prefixed/Group/team-")
    ]
    assert json.loads(a.acl_notifications([("delete", ops[0].path)])[0][1])["name"] == "team-"


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 100_000))
def test_a_dual_write_of_acl_changes_leaves_zookeeper_as_a_full_reconciliation(
    seed: int,
) -> None:
    rng = random.Random(seed)
    img = Image()
    img.track_changes(True)
    offset = 0
    live: list[uuid.UUID] = []
    full, delta = FakeZk(), FakeZk()
    first = w.desired(img, 7)
    before = delta.snapshot()
    ops = w.reconcile(first, before)[0]
    model = w.ZkModel(first, before, ops)
    for _ in range(10):
        for _ in range(rng.randrange(1, 4)):
            if live and rng.random() < 0.35:
                acl_id = live.pop(rng.randrange(len(live)))
                img.replay(r.RemoveAccessControlEntryRecord(id=acl_id), 0, offset)
            else:
                acl_id = uuid.UUID(int=rng.getrandbits(64) + 1)
                rec = r.AccessControlEntryRecord(
                    id=acl_id,
                    resource_type=rng.choice((2, 3, 4, 5)),
                    resource_name=rng.choice(("a", "b", "kafka-cluster", "pre-")),
                    pattern_type=rng.choice((3, 4)),
                    principal=rng.choice(("User:alice", "User:*")),
                    host="*",
                    operation=rng.choice((3, 4, 8, 12)),
                    permission_type=rng.choice((2, 3)),
                )
                img.replay(rec, 0, offset)
                live.append(acl_id)
            offset += 1
        scope = img.take_changes(offset)
        assert scope.acls
        want = w.desired(img, 7, scope)
        ops = w.reconcile(want, model.snapshot(scope))[0]
        delta.apply(ops)
        model.apply(want, scope, ops)
        full.apply(w.reconcile(w.desired(img, 7), full.snapshot())[0])
        assert a.read_acls(delta.snapshot()) == a.read_acls(full.snapshot())
        assert a.read_acls(full.snapshot()) == w.desired(img, 7).acls
