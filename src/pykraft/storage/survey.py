"""What a controller's metadata log directory holds, read without changing it, and which of
several survivors should seed a quorum that lost its majority (``pykraft metadata-recovery
survey``; issue 48).

Theory of operation. A quorum whose majority is gone for good can only be brought back from
one survivor's log, and the survivor must hold every record the lost quorum committed. Raft's
rule for "most up to date" is the one to follow: the log whose last batch has the highest
epoch, then the longest log (Confluent's ``kafka-metadata-recovery`` seeds the same way;
offset alone is wrong: a deposed leader's uncommitted tail can be longer than the committed
log of the new epoch). Every directory is read as it is on disk: the segments are scanned for
their longest valid prefix (as a starting node's recovery would find it, without truncating
the torn tail), the snapshots are listed and the newest read for its voter set, the control
records after it give the voter set in force; ``meta.properties`` and ``quorum-state`` are
read as written. The format is Kafka's, so the directories of Kafka's own controllers are read
the same way.

The high watermark is not kept on disk by Kafka's controllers nor by pykraft's: the newest
snapshot's end offset is a lower bound of what the node knew committed (a snapshot is only
taken below the high watermark), and it is reported as that.

``survey_replica`` reads the same from a replica's storage interfaces (``ReplicatedLog``,
``SnapshotStore``, ``QuorumStateStore``) instead of files: the simulator's majority-loss
profile (``pykraft.sim.majority_loss``) surveys its in-memory replicas with it and recovers
through ``recommend`` and ``recovery.force_standalone_replica``, the same rules as the tool.
"""

from __future__ import annotations

import mmap
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pykraft.records import (
    BatchHeader,
    ControlRecordType,
    VoterRecordEntry,
    decode_control,
    decode_records,
    valid_prefix,
)
from pykraft.records.control_records import KRaftVersionRecord, VotersRecord
from pykraft.storage._files import StorageError
from pykraft.storage.log import PARTITION_DIR_NAME
from pykraft.storage.meta import read_meta_properties, uuid_to_kafka
from pykraft.storage.quorum_state import FileQuorumStateStore, QuorumStateError
from pykraft.storage.snapshots import (
    FileSnapshotStore,
    SnapshotContents,
    decode_snapshot,
    read_snapshot,
)

if TYPE_CHECKING:
    from pykraft.raft.interfaces import QuorumStateStore, ReplicatedLog, SnapshotStore

__all__ = [
    "DirectorySurvey",
    "Recommendation",
    "recommend",
    "survey_directory",
    "survey_replica",
]


@dataclass
class DirectorySurvey:
    """One metadata log directory as found on disk."""

    path: Path
    cluster_id: str | None = None
    node_id: int | None = None
    directory_id: str | None = None
    quorum_epoch: int | None = None  # quorum-state's leaderEpoch
    voted_id: int | None = None
    leader_id: int | None = None
    log_start_offset: int = 0
    log_end_offset: int = 0  # of the longest valid prefix
    last_epoch: int = 0  # the epoch of the last valid batch (or of the newest snapshot)
    torn_bytes: int = 0  # after the valid prefix: what a start would truncate
    snapshots: list[tuple[int, int, int]] = field(default_factory=list)  # (offset, epoch, bytes)
    refused_snapshots: list[str] = field(default_factory=list)
    kraft_version: int | None = None
    voters: tuple[VoterRecordEntry, ...] | None = None  # None: static voters (kraft.version 0)
    voters_offset: int | None = None  # where the voter set in force was written
    problems: list[str] = field(default_factory=list)

    @property
    def committed_at_least(self) -> int:
        """A lower bound of the high watermark this node knew: its newest snapshot's end."""
        return self.snapshots[-1][0] if self.snapshots else 0

    @property
    def rank(self) -> tuple[int, int]:
        """Raft's up-to-date order: the last epoch, then the log end offset."""
        return (self.last_epoch, self.log_end_offset)

    def as_json(self) -> dict[str, object]:
        return {
            "path": str(self.path),
            "cluster_id": self.cluster_id,
            "node_id": self.node_id,
            "directory_id": self.directory_id,
            "quorum_epoch": self.quorum_epoch,
            "voted_id": self.voted_id,
            "leader_id": self.leader_id,
            "log_start_offset": self.log_start_offset,
            "log_end_offset": self.log_end_offset,
            "last_epoch": self.last_epoch,
            "torn_bytes": self.torn_bytes,
            "high_watermark_at_least": self.committed_at_least,
            "snapshots": [{"offset": o, "epoch": e, "bytes": b} for o, e, b in self.snapshots],
            "refused_snapshots": self.refused_snapshots,
            "kraft_version": self.kraft_version,
            "voters": None if self.voters is None else [_voter_json(v) for v in self.voters],
            "voters_offset": self.voters_offset,
            "problems": self.problems,
        }


def _voter_json(voter: VoterRecordEntry) -> dict[str, object]:
    return {
        "id": voter.voter_id,
        "directory_id": None if voter.directory_id is None else uuid_to_kafka(voter.directory_id),
        "endpoints": [f"{e.name}://{e.host}:{e.port}" for e in voter.endpoints],
    }


def survey_directory(log_dir: Path) -> DirectorySurvey:
    """``log_dir`` (a controller's ``metadata.log.dir``) as found on disk; nothing is
    written. What cannot be read is listed in ``problems``."""
    found = DirectorySurvey(log_dir)
    if not log_dir.is_dir():
        found.problems.append("no such directory")
        return found
    try:
        meta = read_meta_properties(log_dir)
    except StorageError as e:
        meta = None
        found.problems.append(f"meta.properties: {e}")
    if meta is not None:
        found.cluster_id, found.node_id = meta.cluster_id, meta.node_id
        found.directory_id = uuid_to_kafka(meta.directory_id)
    partition = log_dir / PARTITION_DIR_NAME
    if not partition.is_dir():
        found.problems.append(f"{PARTITION_DIR_NAME}: missing")
        return found
    _read_quorum_state(found, FileQuorumStateStore(partition))
    _read_snapshots(found, partition)
    _scan_segments(found, partition)
    return found


def survey_replica(
    label: Path,
    cluster_id: str,
    directory_id: uuid.UUID,
    node_id: int,
    storage: tuple[ReplicatedLog, SnapshotStore, QuorumStateStore],
) -> DirectorySurvey:
    """What ``survey_directory`` reports, read from a replica's storage interfaces (``label``
    names it in the report); nothing is written."""
    log, snapshots, quorum_state = storage
    found = DirectorySurvey(label, cluster_id, node_id, uuid_to_kafka(directory_id))
    _read_quorum_state(found, quorum_state)
    latest = snapshots.latest()
    if latest is not None:
        size = snapshots.size(latest) or 0
        found.snapshots.append((latest.offset, latest.epoch, size))
        data = snapshots.read(latest, 0, size)
        _take_snapshot(found, decode_snapshot(latest, data, f"{label}: snapshot {latest}"))
    else:
        found.log_start_offset = found.log_end_offset = log.start_offset
    data = log.read(log.start_offset, 1 << 62) if log.end_offset > log.start_offset else b""
    headers, _valid = valid_prefix(data)
    _scan(found, data, headers)
    return found


def _read_quorum_state(found: DirectorySurvey, store: QuorumStateStore) -> None:
    try:
        state = store.read()
    except QuorumStateError as e:
        found.problems.append(str(e))
        return
    if state is None:
        return
    found.quorum_epoch, found.leader_id = state.epoch, state.leader_id
    found.voted_id = None if state.voted_key is None else state.voted_key.id


def _read_snapshots(found: DirectorySurvey, partition: Path) -> None:
    store = FileSnapshotStore.open(partition)
    found.refused_snapshots = [p.name for p in store.refused]
    for snapshot_id in store.snapshot_ids():
        size = store.size(snapshot_id) or 0
        found.snapshots.append((snapshot_id.offset, snapshot_id.epoch, size))
    latest = store.latest()
    if latest is None:
        return
    _take_snapshot(found, read_snapshot(store, latest))


def _take_snapshot(found: DirectorySurvey, contents: SnapshotContents) -> None:
    latest = contents.snapshot_id
    found.kraft_version, found.voters = contents.kraft_version, contents.voters
    found.voters_offset = latest.offset if contents.voters is not None else None
    found.log_start_offset = found.log_end_offset = latest.offset
    found.last_epoch = latest.epoch


def _scan_segments(found: DirectorySurvey, partition: Path) -> None:
    """The longest valid prefix of the segments in offset order, and the voter set and
    kraft.version its control records leave in force."""
    segments = sorted(partition.glob("*.log"), key=lambda p: p.name)
    for number, path in enumerate(segments):
        base = int(path.name.split(".")[0])
        if number == 0 and not found.snapshots:
            found.log_start_offset = base
        if base > found.log_end_offset and found.log_end_offset > found.log_start_offset:
            found.problems.append(f"{path.name}: offsets before {base} missing")
            return
        if path.stat().st_size == 0:
            continue
        with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            headers, valid = valid_prefix(data)
            _scan(found, data, headers)
            if valid < len(data):
                found.torn_bytes += len(data) - valid
                if number != len(segments) - 1:
                    found.problems.append(f"{path.name}: invalid data before the last segment")
                    return


def _scan(found: DirectorySurvey, data: bytes | mmap.mmap, headers: Sequence[BatchHeader]) -> None:
    """The batches of ``data`` (valid, in offset order) above what ``found`` holds: the log
    end, the last epoch and the control records' voter set and kraft.version."""
    for header, start in zip(headers, _positions(headers), strict=True):
        if header.next_offset <= found.log_end_offset:
            continue  # below the newest snapshot
        found.log_end_offset, found.last_epoch = header.next_offset, header.epoch
        if header.is_control:
            _control(found, bytes(data[start : start + header.size]), header.base_offset)


def _positions(headers: Sequence[BatchHeader]) -> list[int]:
    positions, pos = [], 0
    for header in headers:
        positions.append(pos)
        pos += header.size
    return positions


def _control(found: DirectorySurvey, batch: bytes, base_offset: int) -> None:
    for index, record in enumerate(decode_records(batch)):
        kind, message = decode_control(record)
        if kind == ControlRecordType.KRAFT_VOTERS and isinstance(message, VotersRecord):
            found.voters = tuple(VoterRecordEntry.from_record(v) for v in message.voters)
            found.voters_offset = base_offset + index
        elif isinstance(message, KRaftVersionRecord):
            found.kraft_version = int(message.k_raft_version)


@dataclass(frozen=True)
class Recommendation:
    """The seed of a recovered quorum, or why there is none."""

    seed: DirectorySurvey | None
    reasons: tuple[str, ...]


def recommend(surveys: Sequence[DirectorySurvey]) -> Recommendation:
    """The survivor whose log is most up to date (highest last epoch, then log end offset),
    among directories of one cluster that could be read."""
    usable = [s for s in surveys if s.cluster_id is not None and s.node_id is not None]
    if not usable:
        return Recommendation(None, ("no directory could be read as a formatted controller",))
    clusters = {s.cluster_id for s in usable}
    if len(clusters) > 1:
        return Recommendation(
            None, (f"the directories belong to different clusters: {sorted(map(str, clusters))}",)
        )
    ranked = sorted(usable, key=lambda s: s.rank, reverse=True)
    best = ranked[0]
    reasons = [
        f"node {best.node_id} ({best.path}) has the most up-to-date log: last epoch "
        f"{best.last_epoch}, log end offset {best.log_end_offset}"
    ]
    for other in ranked[1:]:
        why = (
            f"a lower last epoch ({other.last_epoch})"
            if other.last_epoch < best.last_epoch
            else f"a shorter log ({other.log_end_offset}) in the same epoch"
            if other.log_end_offset < best.log_end_offset
            else "an equal log (either would do)"
        )
        reasons.append(f"not node {other.node_id} ({other.path}): {why}")
    if best.problems:
        reasons.append(f"check first: node {best.node_id}'s directory has problems")
    return Recommendation(best, tuple(reasons))
