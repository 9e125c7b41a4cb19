"""The global history of committed batches: what every node's committed prefix must equal.

Whenever a leader's high watermark advances, the simulator records the batches below it here
(``CommittedHistory.record``). The first record of an offset wins; any later record or read
of a committed batch that disagrees (other epoch, other CRC, other boundaries) is a
violation of "committed data never changes or disappears". Each entry also carries the
cumulative application digest after it, so a snapshot (which holds the application's state
at its end offset) can be checked too.
"""

from __future__ import annotations

from dataclasses import dataclass

_DIGEST_MASK = (1 << 64) - 1
_DIGEST_PRIME = 0x100000001B3  # FNV-1a's 64-bit prime


class InvariantViolation(Exception):
    """Raised anywhere in the simulator when an invariant breaks; the run stops there."""

    def __init__(self, invariant: str, message: str, node: int | None = None) -> None:
        super().__init__(f"{invariant}: {message}")
        self.invariant = invariant
        self.message = message
        self.node = node


def mix_digest(digest: int, crc: int) -> int:
    """The application's running digest after one more committed batch with this CRC."""
    return ((digest ^ crc) * _DIGEST_PRIME) & _DIGEST_MASK


@dataclass(frozen=True, slots=True)
class CommittedBatch:
    base_offset: int
    next_offset: int
    epoch: int
    crc: int
    data_records: int  # records of the application (0 for a control batch)
    records_after: int  # application records committed up to next_offset
    digest_after: int  # application digest up to next_offset


class CommittedHistory:
    """Invariant: batches are dense from offset 0 to ``end_offset`` (``by_base`` holds one
    entry per batch; ``by_end`` the same entries keyed by next offset)."""

    __slots__ = ("by_base", "by_end", "end_offset", "recorded_at_ms", "records")

    def __init__(self) -> None:
        self.by_base: dict[int, CommittedBatch] = {}
        self.by_end: dict[int, CommittedBatch] = {}
        self.end_offset = 0  # first offset not known committed
        self.records = 0  # application records committed
        self.recorded_at_ms: dict[int, int] = {}  # next offset -> time first committed

    def state_at(self, offset: int) -> tuple[int, int] | None:
        """(application records, digest) of the committed prefix ending at ``offset``, or
        None when ``offset`` is not a committed batch boundary."""
        if offset == 0:
            return (0, 0)
        entry = self.by_end.get(offset)
        return None if entry is None else (entry.records_after, entry.digest_after)

    def record(
        self,
        base_offset: int,
        next_offset: int,
        epoch: int,
        crc: int,
        data_records: int,
        now_ms: int,
        node: int,
    ) -> bool:
        """Record one batch a leader declared committed; True when it was new."""
        if base_offset < self.end_offset:
            self.check(base_offset, next_offset, epoch, crc, node, "leader")
            return False
        if base_offset != self.end_offset:
            raise InvariantViolation(
                "committed-dense",
                f"node {node} committed batch [{base_offset}, {next_offset}) but the committed "
                f"log ends at {self.end_offset}",
                node,
            )
        previous = self.by_end.get(base_offset)
        records, digest = (
            (0, 0)
            if previous is None
            else (
                previous.records_after,
                previous.digest_after,
            )
        )
        entry = CommittedBatch(
            base_offset,
            next_offset,
            epoch,
            crc,
            data_records,
            records + data_records,
            mix_digest(digest, crc),
        )
        self.by_base[base_offset] = entry
        self.by_end[next_offset] = entry
        self.end_offset = next_offset
        self.records = entry.records_after
        self.recorded_at_ms[next_offset] = now_ms
        return True

    def rewind(self, offset: int) -> int:
        """A recovery from a lost majority declared ``offset`` (a committed batch boundary)
        its recovery point: what was committed after it was lost with the majority, and is
        forgotten (the recovered quorum commits other batches there). Returns how many
        committed offsets were lost."""
        assert offset == 0 or offset in self.by_end, offset
        lost = self.end_offset - offset
        for base in [b for b in self.by_base if b >= offset]:
            entry = self.by_base.pop(base)
            del self.by_end[entry.next_offset]
            self.recorded_at_ms.pop(entry.next_offset, None)
        self.end_offset = offset
        self.records = self.by_end[offset].records_after if offset else 0
        return lost

    def matching_prefix(self, start: int, batches: list[tuple[int, int, int, int]]) -> int:
        """Where a log stops matching the committed history: ``batches`` are its (base,
        next, epoch, CRC) in order from ``start`` (its log start, under a snapshot of the
        committed prefix); the end of the last batch equal to the committed one there."""
        end = start
        for base, nxt, epoch, crc in batches:
            entry = self.by_base.get(base)
            if entry is None or (entry.next_offset, entry.epoch, entry.crc) != (nxt, epoch, crc):
                break
            end = nxt
        return end

    def check(
        self, base_offset: int, next_offset: int, epoch: int, crc: int, node: int, what: str
    ) -> CommittedBatch:
        """The committed batch at ``base_offset``, which must equal the one given."""
        entry = self.by_base.get(base_offset)
        if entry is None:
            if base_offset >= self.end_offset:
                raise InvariantViolation(
                    "hwm-beyond-committed",
                    f"{what} on node {node} treats [{base_offset}, {next_offset}) as committed "
                    f"but no leader committed past {self.end_offset}",
                    node,
                )
            raise InvariantViolation(
                "committed-unchanged",
                f"{what} on node {node} has a batch at {base_offset} that is not a committed "
                f"batch boundary",
                node,
            )
        if (entry.next_offset, entry.epoch, entry.crc) != (next_offset, epoch, crc):
            raise InvariantViolation(
                "committed-unchanged",
                f"{what} on node {node}: batch at {base_offset} is [{base_offset}, "
                f"{next_offset}) epoch {epoch} crc {crc:#x}, but the committed batch is "
                f"[{base_offset}, {entry.next_offset}) epoch {entry.epoch} crc {entry.crc:#x}",
                node,
            )
        return entry
