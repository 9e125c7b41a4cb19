"""The image's undo log (``metadata/timeline.py``): reverting to the committed offset gives
exactly the image a replay of the committed records alone gives, and a read at the committed
offset sees nothing uncommitted, then the image is as it was."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE, Image
from pykraft.metadata.timeline import Timeline
from pykraft.protocol import ApiKey
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
    tl.recording = True
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


def _busy(h: Harness, rng: random.Random, rounds: int) -> None:
    """Requests of every kind that writes: topics, partitions, configs, ISR, fencing."""
    for i in range(rounds):
        kind = rng.randrange(6)
        name = f"t{rng.randrange(6)}"
        if kind == 0:
            h.create_topic(name, partitions=rng.randrange(1, 4), rf=2)
        elif kind == 1:
            h.call(ApiKey.DELETE_TOPICS, 6, topics=[{"name": name}], timeout=1000)
        elif kind == 2:
            h.call(
                ApiKey.INCREMENTAL_ALTER_CONFIGS,
                1,
                validate_only=False,
                resources=[
                    {
                        "resource_type": rng.choice((TOPIC_RESOURCE, BROKER_RESOURCE)),
                        "resource_name": name if rng.random() < 0.5 else "",
                        "configs": [
                            {
                                "name": "retention.ms",
                                "config_operation": rng.choice((0, 1)),
                                "value": str(1000 + i),
                            }
                        ],
                    }
                ],
            )
        elif kind == 3:
            h.tick(rng.randrange(0, 12_000))  # sessions may expire: fencing
        elif kind == 4:
            broker = rng.randrange(1, 4)
            h.heartbeat(broker)
        else:
            h.call(
                ApiKey.ELECT_LEADERS,
                2,
                election_type=0,
                topic_partitions=None,
                timeout=1000,
            )


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
    _busy(h, rng, committed_rounds)
    committed = h.offset - 1
    h.image.committed(committed)
    expected = _replayed(h.written, committed)
    with h.image.timeline.at_committed():
        assert image_digest(h.image) == image_digest(expected)
        h.image.check()
    _busy(h, rng, more)
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
