"""A replica's log as the trace checker knows it: which epoch wrote each offset.

Theory of operation. By the log matching property, two logs holding the same epoch at one
offset agree on everything below it, so the checker keeps no records, only the runs of one
epoch (Kafka's leader epoch cache): ``runs`` lists (start offset, epoch) in ascending order,
``end`` is the log end offset. Offsets below ``known_from`` are held but unknown to the
checker (a replica first seen with a log already written, or one a recovery rewrote):
``epoch_at`` answers None for them, and every rule treats None as "cannot tell", never as a
failure. A snapshot load starts the log over at the snapshot's end offset.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

__all__ = ["EpochLog"]


@dataclass(slots=True)
class EpochLog:
    end: int = 0
    known_from: int = 0
    runs: list[tuple[int, int]] = field(default_factory=list)  # (start offset, epoch)

    @classmethod
    def unknown(cls, end: int) -> EpochLog:
        """A log of ``end`` offsets, none of them known."""
        return cls(end, end)

    @property
    def last_epoch(self) -> int | None:
        return self.runs[-1][1] if self.runs else None

    def epoch_at(self, offset: int) -> int | None:
        """The epoch that wrote ``offset``; None when the log does not hold it or the
        checker cannot tell."""
        if not self.known_from <= offset < self.end or not self.runs:
            return None
        index = bisect_right(self.runs, (offset, 1 << 62)) - 1
        return None if index < 0 else self.runs[index][1]

    def append(self, base: int, last: int, epoch: int) -> None:
        """One batch at the log end (the caller checked ``base == end``)."""
        if not self.runs or self.runs[-1][1] != epoch:
            self.runs.append((base, epoch))
        self.end = last + 1

    def truncate(self, end: int) -> None:
        while self.runs and self.runs[-1][0] >= end:
            self.runs.pop()
        self.end = min(self.end, end)
        self.known_from = min(self.known_from, self.end)

    def agrees(self, other: EpochLog, offset: int) -> bool | None:
        """Whether both logs hold ``offset`` from the same epoch (so, by log matching,
        everything below it); None when either cannot tell."""
        mine, theirs = self.epoch_at(offset), other.epoch_at(offset)
        if mine is None or theirs is None:
            return None
        return mine == theirs

    def copy_range(self, source: EpochLog, upto: int) -> None:
        """Extend this log (the committed prefix) to ``upto`` with ``source``'s epochs;
        unknown in ``source`` makes the whole extension unknown."""
        if upto <= self.end:
            return
        if source.known_from > self.end or source.end < upto:
            self.runs.clear()
            self.end = self.known_from = upto
            return
        start = self.end
        for run_start, _epoch in source.runs:
            if run_start >= upto:
                break
            at = max(run_start, start)
            nxt = source.epoch_at(at)
            if nxt is not None and self.last_epoch != nxt:
                self.runs.append((at, nxt))
        self.end = upto
