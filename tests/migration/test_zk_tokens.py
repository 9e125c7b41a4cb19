"""Delegation tokens in a ZooKeeper migration (issue 27 part 5), pure: the znodes Kafka 3.9's
DelegationTokenManagerZk writes become DelegationTokenRecords, and the image's tokens are
dual-written back in that format with their change notifications; a delta write leaves
ZooKeeper as a full reconciliation does."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.metadata import records as r
from pykraft.metadata.image import Image
from pykraft.migration import zk_data as z
from pykraft.migration import zk_tokens as t
from pykraft.migration import zk_writes as w

from .test_reconcile import FakeZk

# As DelegationTokenManagerZk.toJsonCompatibleMap writes them (Kafka 3.9.2): version 3, the
# principals Sanitizer-encoded; version 1 had no tokenRequester.
V3 = (
    b'{"version":3,"owner":"User%3Aalice","tokenRequester":"User%3Aadmin",'
    b'"renewers":["User%3Abob","User%3Acarol%20x"],"issueTimestamp":1000,'
    b'"maxTimestamp":9000,"expiryTimestamp":5000,"tokenId":"tok-a"}'
)
V1 = (
    b'{"version":1,"owner":"User%3Adave","renewers":[],"issueTimestamp":1,'
    b'"maxTimestamp":3,"expiryTimestamp":2,"tokenId":"tok-b"}'
)


def zk_with_tokens() -> z.ZkSnapshot:
    return z.ZkSnapshot(
        {
            "/delegation_token": z.Znode(None, 0, ("tokens",)),
            "/delegation_token/tokens": z.Znode(None, 0, ("tok-a", "tok-b")),
            "/delegation_token/tokens/tok-a": z.Znode(V3, 0),
            "/delegation_token/tokens/tok-b": z.Znode(V1, 0),
        }
    )


def test_zookeepers_tokens_become_records() -> None:
    load = z.read_all_metadata(zk_with_tokens())
    records = [rec for rec, _ in load.records() if isinstance(rec, r.DelegationTokenRecord)]
    assert [
        (
            rec.token_id,
            rec.owner,
            rec.requester,
            tuple(rec.renewers),
            rec.issue_timestamp,
            rec.max_timestamp,
            rec.expiration_timestamp,
        )
        for rec in records
    ] == [
        ("tok-a", "User:alice", "User:admin", ("User:bob", "User:carol x"), 1000, 9000, 5000),
        ("tok-b", "User:dave", "User:dave", (), 1, 3, 2),
    ]
    assert not load.refused


def test_the_image_is_written_back_in_kafkas_format_and_announced() -> None:
    records = [rec for rec, _ in z.read_all_metadata(zk_with_tokens()).records()]
    img = Image()
    for offset, rec in enumerate(records):
        img.replay(rec, 0, offset)
    want = w.desired(img, 5)
    assert want.tokens == t.read_tokens(zk_with_tokens())
    assert t.token_json(want.tokens["tok-a"], "tok-a") == V3  # byte for byte
    empty = FakeZk()
    ops, _ = w.reconcile(want, empty.snapshot())
    empty.apply(ops)
    assert t.read_tokens(empty.snapshot()) == want.tokens
    assert t.token_notifications(op.path for op in ops) == [
        ("/delegation_token/token_changes/token_change_", b"tok-a"),
        ("/delegation_token/token_changes/token_change_", b"tok-b"),
    ]
    img.replay(r.RemoveDelegationTokenRecord(token_id="tok-b"), 0, len(records))
    ops, _ = w.reconcile(w.desired(img, 5), empty.snapshot())
    assert [(op.kind, op.path) for op in ops] == [("delete", "/delegation_token/tokens/tok-b")]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 100_000))
def test_a_dual_write_of_token_changes_leaves_zookeeper_as_a_full_reconciliation(
    seed: int,
) -> None:
    rng = random.Random(seed)
    img = Image()
    img.track_changes(True)
    offset = 0
    full, delta = FakeZk(), FakeZk()
    first = w.desired(img, 7)
    before = delta.snapshot()
    model = w.ZkModel(first, before, w.reconcile(first, before)[0])
    for _ in range(10):
        for _ in range(rng.randrange(1, 4)):
            token_id = f"tok-{rng.randrange(5)}"
            if rng.random() < 0.3:
                img.replay(r.RemoveDelegationTokenRecord(token_id=token_id), 0, offset)
            else:
                issue = rng.randrange(1000)
                rec = r.DelegationTokenRecord(
                    owner=rng.choice(("User:alice", "User:b*b")),
                    requester="User:admin",
                    renewers=(),
                    issue_timestamp=issue,
                    max_timestamp=issue + 100,
                    expiration_timestamp=issue + rng.randrange(1, 100),
                    token_id=token_id,
                )
                img.replay(rec, 0, offset)
            offset += 1
        scope = img.take_changes(offset)
        assert scope.tokens
        want = w.desired(img, 7, scope)
        ops = w.reconcile(want, model.snapshot(scope))[0]
        delta.apply(ops)
        model.apply(want, scope, ops)
        full.apply(w.reconcile(w.desired(img, 7), full.snapshot())[0])
        assert t.read_tokens(delta.snapshot()) == t.read_tokens(full.snapshot())
        assert t.read_tokens(full.snapshot()) == w.desired(img, 7).tokens
