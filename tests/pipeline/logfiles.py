"""Build nodes' metadata log directories in Kafka's layout from batches made with
``pykraft.records``, for the pipeline tests."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from pathlib import Path

from pykraft.raft.types import Endpoint, ReplicaKey
from pykraft.records import (
    VoterRecordEntry,
    build_batch,
    kraft_version_batch,
    leader_change_batch,
    read_header,
    snapshot_footer_batch,
    snapshot_header_batch,
    voters_batch,
)

VOTERS = (1, 2, 3)
T0_MS = 1_700_000_000_000


def voter_entries(ids: Sequence[int] = VOTERS) -> list[VoterRecordEntry]:
    return [
        VoterRecordEntry(i, uuid.UUID(int=i), (Endpoint("CONTROLLER", "127.0.0.1", 9090 + i),))
        for i in ids
    ]


class LogBuilder:
    """Appends batches with dense offsets, like a leader would."""

    def __init__(self) -> None:
        self.batches: list[bytes] = []
        self.next_offset = 0

    def _add(self, batch: bytes) -> None:
        self.batches.append(batch)
        self.next_offset = read_header(batch).next_offset

    def leader_change(self, epoch: int, leader: int, voters: Sequence[int] = VOTERS) -> None:
        keys = [ReplicaKey(v) for v in voters]
        ts = T0_MS + self.next_offset
        self._add(leader_change_batch(self.next_offset, epoch, ts, leader, keys, keys[:2]))

    def voters(self, epoch: int, ids: Sequence[int] = VOTERS) -> None:
        ts = T0_MS + self.next_offset
        self._add(voters_batch(self.next_offset, epoch, ts, voter_entries(ids)))

    def data(self, epoch: int, count: int = 3, tag: str = "x") -> None:
        values = [json.dumps({"tag": tag, "i": i}).encode() for i in range(count)]
        self._add(build_batch(self.next_offset, epoch, values, T0_MS + self.next_offset))

    def copy(self) -> LogBuilder:
        other = LogBuilder()
        other.batches = list(self.batches)
        other.next_offset = self.next_offset
        return other


def write_node(
    root: Path, node: int, batches: Sequence[bytes], *, batches_per_segment: int = 3
) -> Path:
    """``root/node-N`` with meta.properties and segments of ``batches_per_segment`` batches."""
    log_dir = root / f"node-{node}"
    part = log_dir / "__cluster_metadata-0"
    part.mkdir(parents=True, exist_ok=True)
    (log_dir / "meta.properties").write_text(
        f"version=1\ncluster.id=test-cluster\nnode.id={node}\ndirectory.id={uuid.UUID(int=node)}\n"
    )
    for i in range(0, len(batches), batches_per_segment):
        chunk = batches[i : i + batches_per_segment]
        base = read_header(chunk[0]).base_offset
        (part / f"{base:020d}.log").write_bytes(b"".join(chunk))
    (part / "quorum-state").write_text('{"leaderId": 1, "leaderEpoch": 1}')
    return log_dir


def write_snapshot(log_dir: Path, end_offset: int, epoch: int, values: Sequence[bytes]) -> Path:
    batches = [
        snapshot_header_batch(0, epoch, T0_MS, T0_MS),
        kraft_version_batch(1, epoch, T0_MS, 1),
        voters_batch(2, epoch, T0_MS, voter_entries()),
    ]
    if values:
        batches.append(build_batch(3, epoch, list(values), T0_MS))
    batches.append(snapshot_footer_batch(3 + len(values), epoch, T0_MS))
    path = log_dir / "__cluster_metadata-0" / f"{end_offset:020d}-{epoch:010d}.checkpoint"
    path.write_bytes(b"".join(batches))
    return path
