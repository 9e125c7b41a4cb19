"""The image's ACL part (``metadata/parts/acls.py``): its index answers what a walk over every
ACL answers, through any sequence of additions and removals and a revert to the committed
offset, and the authorizer decides from it exactly as it did from the walk."""

from __future__ import annotations

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.controller.acls import Op, Perm, StandardAuthorizer
from pykraft.metadata import records as r
from pykraft.metadata.image import Image
from pykraft.metadata.parts.acls import LITERAL, PREFIXED, WILDCARD, StandardAcl

TOPIC, GROUP = 2, 3
NAMES = ["a", "ab", "abc", "abd", "b", "ba", WILDCARD]
PRINCIPALS = ["User:alice", "User:bob", "User:*"]
HOSTS = ["*", "10.0.0.1", "10.0.0.0/8"]
OPS = [Op.ALL, Op.READ, Op.WRITE, Op.DESCRIBE, Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS]

acls = st.builds(
    StandardAcl,
    st.sampled_from([TOPIC, GROUP]),
    st.sampled_from(NAMES),
    st.sampled_from([LITERAL, PREFIXED]),
    st.sampled_from(PRINCIPALS),
    st.sampled_from(HOSTS),
    st.sampled_from(OPS),
    st.sampled_from([Perm.ALLOW, Perm.DENY]),
)
# ("add", acl, id seed) or ("remove", index among the ids added so far)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("add"), acls, st.integers(0, 40)),
        st.tuples(st.just("remove"), st.none(), st.integers(0, 40)),
    ),
    max_size=40,
)


def covers(acl: StandardAcl, resource_type: int, name: str) -> bool:
    """The walk's rule, as the authorizer had it before the index."""
    if acl.resource_type != resource_type:
        return False
    if acl.pattern_type == LITERAL:
        return acl.resource_name in (name, WILDCARD)
    return name.startswith(acl.resource_name)


def play(image: Image, ops: list[tuple[str, StandardAcl | None, int]], first: int) -> int:
    """Replay ``ops`` as records from offset ``first``; the next offset."""
    offset = first
    for kind, acl, n in ops:
        ids = sorted(image.acls.by_id)
        if kind == "add" and acl is not None:
            image.replay(acl.record(uuid.UUID(int=n + 1)), 0, offset)
        elif ids:
            image.replay(r.RemoveAccessControlEntryRecord(id=ids[n % len(ids)]), 0, offset)
        offset += 1
    return offset


def assert_index_is_the_walk(image: Image) -> None:
    image.acls.check()
    for resource_type in (TOPIC, GROUP):
        for name in [*NAMES, "abcd", "c"]:
            walked = {(i, a) for i, a in image.acls.by_id.items() if covers(a, resource_type, name)}
            assert set(image.acls.matching(resource_type, name)) == walked, (resource_type, name)


@settings(max_examples=300, deadline=None)
@given(committed=steps, uncommitted=steps)
def test_the_index_answers_as_a_walk_and_reverts_with_the_image(
    committed: list[tuple[str, StandardAcl | None, int]],
    uncommitted: list[tuple[str, StandardAcl | None, int]],
) -> None:
    image = Image()
    image.record_uncommitted(True)
    last = play(image, committed, 0) - 1
    image.committed(last)
    assert_index_is_the_walk(image)
    before = dict(image.acls.by_id)
    play(image, uncommitted, last + 1)
    assert_index_is_the_walk(image)
    image.revert(last)
    assert image.acls.by_id == before
    assert_index_is_the_walk(image)
    fresh = Image()
    play(fresh, committed, 0)
    assert list(fresh.acls.records()) == list(image.acls.records())


def walk_authorize(
    image: Image, principal: str, host: str, operation: int, resource_type: int, name: str
) -> bool:
    """The authorizer's decision as a walk over every ACL (the oracle), without super users
    and with allow.everyone.if.no.acl.found."""
    implied = {
        Op.DESCRIBE: {Op.DESCRIBE, Op.READ, Op.WRITE, Op.DELETE, Op.ALTER},
        Op.DESCRIBE_CONFIGS: {Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS},
    }.get(operation, {operation})
    any_acl = allowed = False
    for acl in image.acls.by_id.values():
        if not covers(acl, resource_type, name):
            continue
        any_acl = True
        if acl.principal not in (principal, "User:*"):
            continue
        if acl.host not in (host, "*") and not (acl.host == "10.0.0.0/8" and host == "10.0.0.1"):
            continue
        if acl.permission_type == Perm.DENY:
            if acl.operation in (operation, Op.ALL):
                return False
        elif acl.operation == Op.ALL or acl.operation in implied:
            allowed = True
    return allowed or not any_acl


@settings(max_examples=200, deadline=None)
@given(
    ops=steps,
    principal=st.sampled_from(PRINCIPALS[:2]),
    host=st.sampled_from(["10.0.0.1", "192.168.0.1"]),
    operation=st.sampled_from(OPS[1:]),
    resource_type=st.sampled_from([TOPIC, GROUP]),
    name=st.sampled_from([*NAMES, "abcd", "c"]),
)
def test_the_authorizer_decides_from_the_index_as_from_the_walk(
    ops: list[tuple[str, StandardAcl | None, int]],
    principal: str,
    host: str,
    operation: int,
    resource_type: int,
    name: str,
) -> None:
    image = Image()
    play(image, ops, 0)
    authorizer = StandardAuthorizer((), allow_everyone_if_no_acl_found=True)
    decided = authorizer.authorize(image, principal, host, operation, resource_type, name)
    assert decided == walk_authorize(image, principal, host, operation, resource_type, name)


def test_one_binding_written_twice_keeps_its_id_index_until_both_are_removed() -> None:
    """A log may hold one binding under two ids (another writer): removing one keeps the
    binding findable through the other."""
    image = Image()
    acl = StandardAcl(TOPIC, "t", LITERAL, "User:a", "*", Op.READ, Perm.ALLOW)
    first, second = uuid.UUID(int=1), uuid.UUID(int=2)
    image.replay(acl.record(first), 0, 0)
    image.replay(acl.record(second), 0, 1)
    image.replay(r.RemoveAccessControlEntryRecord(id=first), 0, 2)
    image.acls.check()
    assert image.acls.ids[acl] == second
    image.replay(r.RemoveAccessControlEntryRecord(id=second), 0, 3)
    image.acls.check()
    assert acl not in image.acls.ids and not image.acls.literal
