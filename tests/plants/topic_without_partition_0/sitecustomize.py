"""Planted bug (tests/plants/README.md): CreateTopics and CreatePartitions leave out the
PartitionRecord of the lowest partition they create."""

from __future__ import annotations

from pykraft.controller import topics

_records = topics.partition_records


def _short(image, topic_id, assignment, version):  # type: ignore[no-untyped-def]
    return _records(image, topic_id, assignment, version)[1:]


topics.partition_records = _short
