"""node/collector.py: after a full collection at least as long as the threshold, what survived
it is frozen, so the next full collection does not walk it again; cyclic garbage is collected
before anything is frozen, never kept."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from pykraft.node.collector import freeze_after_long_collections, stop_freezing


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


@pytest.fixture
def collector() -> Iterator[None]:
    gc.collect()
    try:
        yield
    finally:
        stop_freezing()
        gc.unfreeze()


def test_a_long_full_collection_freezes_what_survived_it(collector: None) -> None:
    live = [[Node() for _ in range(10)] for _ in range(3_000)]  # long-lived, like an image
    garbage = Node()
    garbage.other = Node()
    garbage.other.other = garbage  # a cycle only the collector frees
    gone = weakref.ref(garbage)
    del garbage
    hook = freeze_after_long_collections(threshold_ms=0.0)  # every full collection is "long"
    gc.collect()
    assert hook.freezes == 1
    assert gone() is None  # collected, not frozen
    walked = {id(o) for o in gc.get_objects(generation=2)}
    assert not any(id(node) in walked for row in live for node in row)  # frozen: not walked
    gc.collect(generation=1)
    assert hook.freezes == 1  # only full collections count


def test_a_short_full_collection_freezes_nothing(collector: None) -> None:
    hook = freeze_after_long_collections(threshold_ms=1e9)
    gc.collect()
    assert hook.freezes == 0
