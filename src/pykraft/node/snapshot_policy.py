"""When a controller writes a metadata snapshot (Kafka's ``SnapshotGenerator``).

A snapshot is due after ``metadata.log.max.record.bytes.between.snapshots`` bytes of records
since the last one, or ``metadata.log.max.snapshot.interval.ms`` after the last one when any
record came since (0 turns the timer off), or at once when an operator asks (``pykraft
server`` on SIGUSR1). One snapshot is written at a time. Pure bookkeeping: the controller
host reports what it applied and when it starts and finishes a snapshot; whether the image
is the committed state (so that a snapshot may be taken now) is the host's to check.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SnapshotPolicy"]


@dataclass(slots=True)
class SnapshotPolicy:
    max_bytes: int  # metadata.log.max.record.bytes.between.snapshots
    interval_ms: int  # metadata.log.max.snapshot.interval.ms; 0: never by time
    last_ms: int = 0  # when the last snapshot started (or the host started)
    bytes_since: int = 0  # record bytes applied since
    requested: bool = False
    writing: bool = False

    def applied(self, size_bytes: int) -> None:
        self.bytes_since += size_bytes

    def reloaded(self) -> None:
        """The image was reloaded from the latest snapshot: nothing applied since."""
        self.bytes_since = 0

    def request(self) -> None:
        self.requested = True

    def due(self, now_ms: int) -> bool:
        if self.writing:
            return False
        if self.requested or self.bytes_since >= self.max_bytes:
            return True
        return (
            self.interval_ms > 0
            and self.bytes_since > 0
            and now_ms - self.last_ms >= self.interval_ms
        )

    def started(self, now_ms: int) -> None:
        self.writing = True
        self.requested = False
        self.bytes_since = 0
        self.last_ms = now_ms

    def finished(self) -> None:
        self.writing = False
