"""Per-node totals of decoded columns: what ``committed_prefixes`` and ingest's summary need.

Each ingest task sums the columns of its file as they are decoded (``NodeTotals.add``) and
hands the sums back as a few bytes of JSON; the driver merges them per node (``merge``).
Pure Python, no Spark.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pykraft.pipeline import decode
from pykraft.pipeline.committed import NodeLog

Latest = tuple[int, int, int]  # (offset, epoch, voter count)


@dataclass(slots=True)
class NodeTotals:
    files: int = 0
    file_bytes: int = 0
    batches: int = 0
    records: int = 0
    log_start_offset: int | None = None  # first segment batch's base offset
    log_end_offset: int | None = None  # end of the last CRC-valid segment batch
    snapshot_end_offset: int = 0  # latest CRC-valid snapshot
    # (offset, epoch, voter count) of the latest voter set / leader change seen
    voter_set: Latest | None = None
    leader_change: Latest | None = None

    def add(self, cols: decode.Columns) -> None:
        """Count one chunk of decoded columns (``pykraft.pipeline.schemas`` order)."""
        c = cols.columns
        if cols.table == decode.FILES:
            self.files += len(cols)
            self.file_bytes += sum(c[3])
        elif cols.table == decode.BATCHES:
            self.batches += len(cols)
            segment = [i for i, source in enumerate(c[1]) if source == decode.SEGMENT]
            if segment:
                self.log_start_offset = _min(self.log_start_offset, min(c[4][i] for i in segment))
                ends = [c[5][i] + 1 for i in segment if c[12][i]]
                if ends:
                    self.log_end_offset = _max(self.log_end_offset, max(ends))
        elif cols.table == decode.RECORDS:
            self.records += len(cols)
        elif cols.table == decode.SNAPSHOTS:
            ends = [end for end, crc_ok in zip(c[2], c[7], strict=True) if crc_ok]
            self.snapshot_end_offset = max([self.snapshot_end_offset, *ends])
        elif cols.table == decode.VOTER_SETS:
            latest = max(zip(c[2], c[3], map(len, c[4]), strict=True))
            self.voter_set = _max(self.voter_set, latest)
        elif cols.table == decode.LEADER_CHANGES:
            latest = max(zip(c[2], c[3], map(len, c[6]), strict=True))
            self.leader_change = _max(self.leader_change, latest)

    def merge(self, other: NodeTotals) -> NodeTotals:
        return NodeTotals(
            self.files + other.files,
            self.file_bytes + other.file_bytes,
            self.batches + other.batches,
            self.records + other.records,
            _min(self.log_start_offset, other.log_start_offset),
            _max(self.log_end_offset, other.log_end_offset),
            max(self.snapshot_end_offset, other.snapshot_end_offset),
            _max(self.voter_set, other.voter_set),
            _max(self.leader_change, other.leader_change),
        )

    def node_log(self, node: int) -> NodeLog:
        snap = self.snapshot_end_offset
        end = self.log_end_offset if self.log_end_offset is not None else snap
        start = self.log_start_offset if self.log_start_offset is not None else snap
        return NodeLog(node, min(start, end), end, snap)

    def to_json(self) -> bytes:
        return json.dumps(dataclasses.asdict(self)).encode()

    @classmethod
    def from_json(cls, data: bytes) -> NodeTotals:
        fields: dict[str, Any] = json.loads(data)
        for key in ("voter_set", "leader_change"):
            if fields[key] is not None:
                fields[key] = tuple(fields[key])
        return cls(**fields)


def _min(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else min(a, b)


def _max(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else max(a, b)


def voter_count(totals: Mapping[int, NodeTotals]) -> int | None:
    """Size of the latest voter set in any node's log: VotersRecord, else LeaderChange."""
    voter_sets = [t.voter_set for t in totals.values() if t.voter_set is not None]
    changes = [t.leader_change for t in totals.values() if t.leader_change is not None]
    for latest in (max(voter_sets, default=None), max(changes, default=None)):
        if latest is not None:
            return int(latest[2])
    return None
