"""The producer id block handed out last (Kafka's ``ProducerIdsImage``, replayed as
``ProducerIdControlManager.replay``).

Theory of operation. Each ProducerIdsRecord says which broker (id, epoch) got the block that
ends before ``next_producer_id``; AllocateProducerIds hands out the next block from there. A
snapshot writes the last record again, or nothing while no block was ever handed out.
"""

from __future__ import annotations

from collections.abc import Iterator

from pykraft.metadata import records as r
from pykraft.metadata.timeline import NOW, PinnedView, Timeline

__all__ = ["ProducerIdsImage"]


class ProducerIdsImage:
    """Invariant (``check``): ``next_producer_id`` never negative."""

    def __init__(self, timeline: Timeline) -> None:
        self._tl = timeline
        self.next_producer_id = 0
        self.owner: tuple[int, int] = (-1, -1)  # (broker id, broker epoch)

    def replay(self, rec: r.ProducerIdsRecord) -> None:
        self._tl.assign(self, "next_producer_id", rec.next_producer_id)
        self._tl.assign(self, "owner", (rec.broker_id, rec.broker_epoch))

    def records(self, view: PinnedView = NOW) -> Iterator[tuple[r.ProducerIdsRecord, int]]:
        next_producer_id = view.attr(self, "next_producer_id")
        assert isinstance(next_producer_id, int)
        if next_producer_id:
            owner = view.attr(self, "owner")
            assert isinstance(owner, tuple)
            broker_id, epoch = owner
            yield (
                r.ProducerIdsRecord(
                    broker_id=broker_id, broker_epoch=epoch, next_producer_id=next_producer_id
                ),
                0,
            )

    def check(self) -> None:
        assert self.next_producer_id >= 0, self.next_producer_id
