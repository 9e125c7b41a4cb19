"""Planted bug (tests/plants/README.md): a new leader moves the high watermark as soon as a
majority holds an offset, before any record of its own epoch is replicated -- Raft's rule
that a leader commits only through an entry of its own term (B4) skipped."""

from __future__ import annotations

from pykraft.raft import replication


def _early(core, leader, now_ms):  # type: ignore[no-untyped-def]
    own = None if core.is_observer else core.log.flushed_offset
    candidate = leader.progress.high_watermark_candidate(len(core.voters), own)
    if core.set_high_watermark(candidate):
        replication.complete_purgatory(core, now_ms)


replication.update_high_watermark = _early
