"""The records of a metadata snapshot, generated in slices (Kafka's ``SnapshotGenerator``).

Theory of operation. A snapshot is the image as records at one committed offset. Writing a
large image (a million partitions: a million PartitionRecords) in one go would hold the
event loop for seconds, during which the controller answers no heartbeat, no fetch and no
vote. Kafka generates its snapshots from an immutable image on another thread; pykraft's one
mutable image (``metadata/image.py``) gets the same from its timeline instead:

* when the image is exactly the committed state at ``end`` (every applied record
  committed), the generator *pins* ``end - 1`` in the image's timeline: from then on the
  first change to each key or attribute remembers the value it had at the pin (on a
  standby too);
* each :meth:`SnapshotGenerator.next_values` resumes the image's encoded-record iterator
  (``Image.iter_values``) for a bounded number of records, reading through the pin's view
  (``Timeline.view(end - 1)``): every slice sees the image exactly as it was at the pin
  whatever the controller did between slices (new records, a revert after a lost
  leadership), at a cost that does not grow with what changed since (an earlier design
  undid and redid every later change per slice: quadratic under a write load);
* :meth:`close` unpins (the remembered values are forgotten).

The metadata.version, and so the record versions, are those at the pin. A controller that
replaces its image (a snapshot loaded from the leader) leaves the old image alone: the
generator finishes from it, consistently. Pure: no I/O.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from pykraft.controller.brokers import register_broker_version
from pykraft.controller.partitions import partition_version
from pykraft.metadata.image import Image
from pykraft.metadata.versions import MINIMUM_METADATA_VERSION

__all__ = ["SnapshotGenerator"]


class SnapshotGenerator:
    """The encoded records of ``image`` as of its state now (offset ``end - 1``), a slice
    at a time. The caller must ``close`` it (or run it to the end)."""

    def __init__(self, image: Image, end: int) -> None:
        self.image = image
        self.end = end
        self._offset = end - 1
        mv = image.metadata_version or MINIMUM_METADATA_VERSION.level
        image.timeline.pin(self._offset)
        self._values: Iterator[bytes] | None = image.iter_values(
            partition_version(mv), register_broker_version(mv), image.timeline.view(self._offset)
        )
        self.count = 0  # records generated so far

    @property
    def done(self) -> bool:
        return self._values is None

    def next_values(self, limit: int) -> list[bytes]:
        """Up to ``limit`` more encoded records; fewer (possibly none) at the end, which
        closes the generator."""
        values = self._values
        if values is None:
            return []
        out = list(itertools.islice(values, limit))
        finished = len(out) < limit
        if finished:
            self.close()
        self.count += len(out)
        return out

    def all_values(self) -> list[bytes]:
        """Every (remaining) record at once (the simulator, tools)."""
        out: list[bytes] = []
        while not self.done:
            out.extend(self.next_values(1 << 30))
        return out

    def close(self) -> None:
        """Unpin (idempotent)."""
        if self._values is not None:
            self._values = None
            self.image.timeline.unpin(self._offset)
