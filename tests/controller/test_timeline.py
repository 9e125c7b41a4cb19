"""The image's undo log (``metadata/timeline.py``): reverting to the committed offset gives
exactly the image a replay of the committed records alone gives, and a read at the committed
offset sees nothing uncommitted, then the image is as it was."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.metadata.image import Image
from pykraft.metadata.timeline import Timeline
from pykraft.sim.controller import image_digest
from tests.controller.harness import Harness


def test_primitives_revert_and_read_at_committed() -> None:
    tl = Timeline()
    d: dict[str, int] = {"a": 1}
    s: set[int] = {1}
    lst: list[int] = [1]

    class Box:
        value = 0

    box = Box()
    tl.record_uncommitted(True)
    tl.offset = 5
    tl.put(d, "a", 2)
    tl.put(d, "b", 3)
    tl.add(s, 2)
    tl.offset = 6
    tl.delete(d, "a")
    tl.discard(s, 1)
    tl.append(lst, 2)
    tl.assign(box, "value", 7)
    tl.commit(5)  # offset 5 committed: its changes stay whatever happens
    assert len(tl) == 4
    with tl.at_committed():
        assert d == {"a": 2, "b": 3} and s == {1, 2} and lst == [1] and box.value == 0
    assert d == {"b": 3} and s == {2} and lst == [1, 2] and box.value == 7
    assert tl.revert(5) == 4
    assert d == {"a": 2, "b": 3} and s == {1, 2} and lst == [1] and box.value == 0
    assert len(tl) == 0


def test_not_recording_keeps_nothing() -> None:
    tl = Timeline()
    d: dict[str, int] = {}
    tl.put(d, "a", 1)
    assert len(tl) == 0 and tl.revert(-1) == 0 and d == {"a": 1}


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), committed_rounds=st.integers(0, 15), more=st.integers(1, 15))
def test_revert_equals_replay_of_the_committed_records(
    seed: int, committed_rounds: int, more: int
) -> None:
    rng = random.Random(seed)
    h = Harness(seed=seed)
    for broker in (1, 2, 3):
        h.live_broker(broker)
    h.image.record_uncommitted(True)
    h.random_requests(rng, committed_rounds)
    committed = h.offset - 1
    h.image.committed(committed)
    expected = _replayed(h.written, committed)
    with h.image.timeline.at_committed():
        assert image_digest(h.image) == image_digest(expected)
        h.image.check()
    h.random_requests(rng, more)
    after = image_digest(h.image)
    with h.image.timeline.at_committed():
        assert image_digest(h.image) == image_digest(expected)
    assert image_digest(h.image) == after  # the read changed nothing
    h.image.revert(committed)
    h.image.check()
    assert image_digest(h.image) == image_digest(expected)
    assert h.image.last_offset == expected.last_offset
    assert h.image.features_epoch == expected.features_epoch
    assert len(h.image.timeline) == 0


def _replayed(written: list[tuple[Any, int, int]], upto: int) -> Image:
    image = Image()
    for record, version, offset in written:
        if offset <= upto:
            image.replay(record, version, offset)
    return image
