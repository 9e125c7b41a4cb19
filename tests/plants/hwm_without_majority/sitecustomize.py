"""Planted bug (tests/plants/README.md): a leader that moves the high watermark to its own
flushed log end, counting no follower -- a commit without a majority (B7)."""

from __future__ import annotations

from pykraft.raft import replication


def _alone(core, leader, now_ms):  # type: ignore[no-untyped-def]
    own = core.log.flushed_offset
    if own > leader.epoch_start_offset and core.set_high_watermark(own):
        replication.complete_purgatory(core, now_ms)


replication.update_high_watermark = _alone
