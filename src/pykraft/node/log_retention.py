"""The metadata log kept within ``metadata.max.retention.bytes`` and
``metadata.max.retention.ms``, as Kafka's controllers keep it (``KafkaMetadataLog.maybeClean``:
``cleanSnapshotsRetentionSize`` then ``cleanSnapshotsRetentionMs``).

Theory of operation. A snapshot does not cut the log by itself: the log and the snapshots
before the newest stay while they fit the retention, so a broker or controller that lagged
fetches the records it missed instead of the whole image (a FetchSnapshot of a million
partitions is some 100 MB). Each time a snapshot is frozen, the snapshots are walked oldest
first; the oldest one goes, and the log before the next one with it, while

* the log (what would be kept of it) and the snapshots still kept together exceed
  ``metadata.max.retention.bytes`` (Kafka's default 100 MiB; -1: no size limit), or
* the oldest snapshot's last record is older than ``metadata.max.retention.ms`` (7 days;
  -1: no time limit), by its SnapshotHeader's LastContainedLogTimestamp.

The newest snapshot always stays, and with it the log after it. The core then advances the
log start (``RaftApi.delete_before_snapshot``: only to a kept snapshot at or below the high
watermark). Kafka also runs the same check every 60 s between snapshots; here it runs when a
snapshot is frozen, which a node does at least every ``metadata.log.max.snapshot.interval.ms``
while records arrive, so an aged snapshot may outlive its retention by up to that interval.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from pykraft.raft.interfaces import ReplicatedLog
from pykraft.raft.types import OffsetAndEpoch
from pykraft.storage import FileLog, FileSnapshotStore

__all__ = [
    "DEFAULT_RETENTION_BYTES",
    "DEFAULT_RETENTION_MS",
    "LogRetention",
    "SnapshotFacts",
    "clean_target",
]

DEFAULT_RETENTION_BYTES: Final = 100 * 1024 * 1024  # metadata.max.retention.bytes
DEFAULT_RETENTION_MS: Final = 7 * 24 * 3600 * 1000  # metadata.max.retention.ms


@dataclass(frozen=True, slots=True)
class SnapshotFacts:
    snapshot_id: OffsetAndEpoch
    size_bytes: int
    timestamp_ms: int  # LastContainedLogTimestamp


def clean_target(
    snapshots: Sequence[SnapshotFacts],
    log_bytes_from: Callable[[int], int],
    log_start: int,
    now_ms: int,
    retention_bytes: int,
    retention_ms: int,
) -> OffsetAndEpoch | None:
    """The snapshot to advance the log start to, or None (``snapshots`` oldest first;
    ``log_bytes_from(offset)``: the log's bytes once it starts at ``offset``)."""
    kept = 0  # the index of the oldest snapshot that stays
    if retention_bytes >= 0:
        total = sum(s.size_bytes for s in snapshots)
        start = log_start
        while kept + 1 < len(snapshots) and log_bytes_from(start) + total > retention_bytes:
            total -= snapshots[kept].size_bytes
            kept += 1
            start = snapshots[kept].snapshot_id.offset
    if retention_ms >= 0:
        while kept + 1 < len(snapshots) and now_ms - snapshots[kept].timestamp_ms > retention_ms:
            kept += 1
    return snapshots[kept].snapshot_id if kept > 0 else None


class LogRetention:
    """The core's ``snapshot_retention`` hook on a node (``node/storage.new_core``)."""

    def __init__(
        self,
        log: FileLog,
        snapshots: FileSnapshotStore,
        retention_bytes: int = DEFAULT_RETENTION_BYTES,
        retention_ms: int = DEFAULT_RETENTION_MS,
        wall_clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self._log = log
        self._snapshots = snapshots
        self.retention_bytes = retention_bytes
        self.retention_ms = retention_ms
        self._wall_clock_ms = wall_clock_ms

    def __call__(self, _frozen: OffsetAndEpoch, _log: ReplicatedLog) -> OffsetAndEpoch | None:
        store = self._snapshots
        facts = [
            SnapshotFacts(sid, store.size(sid) or 0, store.last_contained_timestamp_ms(sid))
            for sid in store.snapshot_ids()
        ]
        log = self._log
        return clean_target(
            facts,
            log.bytes_kept_from,
            log.start_offset,
            self._wall_clock_ms(),
            self.retention_bytes,
            self.retention_ms,
        )
