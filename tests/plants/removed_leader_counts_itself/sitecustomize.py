"""Planted bug (tests/plants/README.md): a leader that removed itself from the voter set (D5)
still counts its own log toward the high watermark until it resigns."""

from __future__ import annotations

from pykraft.raft import replication


def _counts_itself(core, leader, now_ms):  # type: ignore[no-untyped-def]
    candidate = leader.progress.high_watermark_candidate(len(core.voters), core.log.flushed_offset)
    if candidate > leader.epoch_start_offset and core.set_high_watermark(candidate):
        replication.complete_purgatory(core, now_ms)


replication.update_high_watermark = _counts_itself
