"""A snapshot generated in slices (``controller/snapshot_generator.py``) holds exactly the image
at its offset, whatever the controller does between the slices: new records on the active
controller (some committed, some reverted after a lost leadership), committed records on a
standby; and once it is done the timeline forgets what it kept for it."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.controller.snapshot_generator import SnapshotGenerator
from pykraft.metadata.serde import encode_record
from pykraft.metadata.timeline import Timeline
from tests.controller.harness import Harness


def _encoded(records: list[tuple[object, int]]) -> list[bytes]:
    return [encode_record(record, version) for record, version in records]


def _harness(seed: int) -> Harness:
    h = Harness(seed=seed, bootstrap={"metadata.version": 27})
    for broker in (1, 2, 3):
        h.live_broker(broker)
    return h


def _pinned_on_the_active(
    rng: random.Random, h: Harness, requests: int
) -> tuple[SnapshotGenerator, list[bytes]]:
    """An active controller after ``requests`` random requests, all committed; a generator
    pinned there and the records it must give."""
    h.random_requests(rng, requests)
    image = h.image
    image.record_uncommitted(True)
    end = h.offset
    image.committed(end - 1)
    return SnapshotGenerator(image, end), _encoded(image.records(2, 3))


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), slice_=st.integers(1, 12))
def test_slices_on_the_active_controller_read_the_image_at_the_pin(seed: int, slice_: int) -> None:
    rng = random.Random(seed)
    h = _harness(seed)
    generator, expected = _pinned_on_the_active(rng, h, 8)
    image = h.image
    got: list[bytes] = []
    committed = generator.end - 1
    while not generator.done:
        got.extend(generator.next_values(slice_))
        h.random_requests(rng, 1)  # applied before it commits, as the active controller does
        if rng.random() < 0.5:
            committed = h.offset - 1
            image.committed(committed)
        elif rng.random() < 0.2:
            h.revert(committed)  # leadership lost: back to the committed offset
    assert got == expected
    assert generator.count == len(expected)
    image.committed(h.offset - 1)
    assert len(image.timeline) == 0  # nothing kept once the generator let go


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), slice_=st.integers(1, 12))
def test_slices_on_a_standby_read_the_image_at_the_pin(seed: int, slice_: int) -> None:
    rng = random.Random(seed)
    h = _harness(seed)
    h.random_requests(rng, 8)
    standby = h.standby  # replays committed records only: it records nothing by itself
    assert not standby.timeline.recording
    expected = _encoded(standby.records(2, 3))
    generator = SnapshotGenerator(standby, h.offset)
    assert standby.timeline.recording  # while pinned
    got: list[bytes] = []
    while not generator.done:
        got.extend(generator.next_values(slice_))
        h.random_requests(rng, 1)
        standby.committed(h.offset - 1)
        assert standby.timeline.recording or generator.done
    assert got == expected
    assert not standby.timeline.recording and len(standby.timeline) == 0
    assert _encoded(standby.records(2, 3)) == _encoded(h.image.records(2, 3))


def test_a_generator_closed_half_way_lets_go() -> None:
    rng = random.Random(3)
    h = _harness(3)
    h.random_requests(rng, 5)
    standby = h.standby
    generator = SnapshotGenerator(standby, h.offset)
    assert generator.next_values(2)
    h.random_requests(rng, 2)
    assert len(standby.timeline) > 0
    generator.close()
    generator.close()
    standby.committed(h.offset - 1)
    assert not standby.timeline.recording and len(standby.timeline) == 0


def test_a_slice_reads_through_the_pins_view_not_by_undoing_later_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each slice costs what it reads, however much changed since the pin: a slice that
    undid and redid every later change (``Timeline.at``) grew with a write load until a
    snapshot of a million partitions took 300 s (bench/ANALYSIS.md section 18)."""
    rng = random.Random(5)
    h = _harness(5)
    generator, expected = _pinned_on_the_active(rng, h, 6)
    got = generator.next_values(1)
    h.random_requests(rng, 6)  # changes after the pin, uncommitted
    assert len(h.image.timeline) > 0

    def refuse(_timeline: Timeline, offset: int) -> object:
        raise AssertionError(f"a slice read the image through Timeline.at({offset})")

    monkeypatch.setattr(Timeline, "at", refuse)
    while not generator.done:
        got.extend(generator.next_values(2))
    assert got == expected


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_kept_encodings_follow_every_change_and_revert(seed: int) -> None:
    """A partition keeps its encoding (``PartitionState.value``) from its record or from the
    last snapshot; every change forgets it through the timeline, so a revert brings back the
    encoding of the state it restores. Snapshots after changes, reverts and standbys that
    never had the encodings all write the image's records."""
    rng = random.Random(seed)
    h = _harness(seed)
    h.random_requests(rng, 6)
    image = h.image
    image.record_uncommitted(True)
    committed = h.offset - 1
    image.committed(committed)
    for _ in range(4):
        generator = SnapshotGenerator(image, committed + 1)
        got = generator.all_values()
        with image.timeline.at_committed():
            assert got == _encoded(image.records(2, 3))
        assert all(p.value is not None for p in image.all_partitions())  # kept by the snapshot
        h.random_requests(rng, 2)
        image.check()  # every kept encoding is its partition's as it is now
        if rng.random() < 0.5:
            h.revert(committed)
            image.check()
        committed = h.offset - 1
        image.committed(committed)
    standby = SnapshotGenerator(h.standby, h.offset).all_values()
    assert standby == SnapshotGenerator(image, h.offset).all_values()
