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
watermark). As Kafka, the same check also runs every 60 s between snapshots
(:class:`PeriodicClean`), so an aged snapshot goes even while no snapshot is taken.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from pykraft.raft.api import RaftApi
from pykraft.raft.interfaces import ReplicatedLog
from pykraft.raft.types import OffsetAndEpoch
from pykraft.storage import FileLog, FileSnapshotStore

Runner = Callable[[Callable[[], None]], None]  # RaftNode.run: a step on the loop

__all__ = [
    "DEFAULT_RETENTION_BYTES",
    "DEFAULT_RETENTION_MS",
    "LogRetention",
    "PeriodicClean",
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


CLEAN_INTERVAL_S: Final = 60.0  # Kafka's cleaner runs maybeClean every 60 s


class PeriodicClean:
    """Kafka's ``maybeClean`` every 60 s between snapshots: an aged snapshot (and the log
    before the next one) goes without waiting for the next snapshot. Each run is stepped on
    the node's loop (``run``), never during a flush; the core's hook decides, as at a
    snapshot, and the core moves the log start."""

    def __init__(self, loop: asyncio.AbstractEventLoop, run: Runner, core: RaftApi) -> None:
        self._loop = loop
        self._run = run
        self._core = core
        self._handle: asyncio.TimerHandle | None = None

    def start(self) -> None:
        self._handle = self._loop.call_later(CLEAN_INTERVAL_S, self._tick)

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _tick(self) -> None:
        self._run(self.clean)
        self.start()

    def clean(self) -> None:
        core = self._core
        latest = core.snapshots.latest()
        if latest is None:
            return
        target = core.snapshot_retention(latest, core.log)
        if target is not None:
            core.delete_before_snapshot(target)
