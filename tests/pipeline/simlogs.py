"""Run the deterministic simulator and write its nodes' logs and snapshots to disk in
Kafka's layout (``FileLog`` segments and ``.checkpoint`` files), for the audit tests."""

from __future__ import annotations

from pathlib import Path

from pykraft.raft.types import OffsetAndEpoch
from pykraft.sim import SimConfig, Simulation
from pykraft.storage.log import FileLog


def run_and_write(root: Path, config: SimConfig, *, segment_bytes: int = 4096) -> dict[int, int]:
    """Write ``root/node-N`` for each node; return each live node's HWM."""
    sim = Simulation(config)
    result = sim.run()
    assert result.violation is None, result.summary()
    hwm: dict[int, int] = {}
    for node in sim.nodes:
        log_dir = root / f"node-{node.id}"
        part = log_dir / "__cluster_metadata-0"
        log_dir.mkdir(parents=True)
        (log_dir / "meta.properties").write_text(
            f"version=1\ncluster.id=sim\nnode.id={node.id}\ndirectory.id={node.key.directory_id}\n"
        )
        latest = node.snapshots.latest()
        if latest is not None:
            size = node.snapshots.size(latest)
            assert size is not None
            data = node.snapshots.read(latest, 0, size)
            (part.mkdir(parents=True, exist_ok=True))
            (part / f"{latest.offset:020d}-{latest.epoch:010d}.checkpoint").write_bytes(data)
        flog = FileLog.open(part, segment_bytes=segment_bytes)
        start = node.log.start_offset
        if start > 0:
            epoch = latest.epoch if latest is not None and latest.offset == start else 0
            flog.reset_to_snapshot(OffsetAndEpoch(start, epoch))
        for _base, _next, _epoch, raw in node.log.batches():
            flog.append(raw)
        flog.flush()
        flog.close()
        if node.core is not None:
            hwm[node.id] = node.core.high_watermark
    return hwm
