"""What losing leadership costs the metadata controller (issue 26, part 1): before, the image
was rebuilt from the newest snapshot and the whole committed log since; now it reverts the
uncommitted records' changes in memory (``metadata/timeline.py``).

    .venv/bin/python bench/bench_failover.py [--records 1000000] [--uncommitted 1000] [--dir DIR]

A single-voter core over a real ``FileLog`` (fsynced segments, as a node has) is elected; the
real ``MetaLogListener`` writes a cluster of ``--records`` committed metadata records (topics
of 1,000 partitions, PartitionRecords through the controller's own write path, batches of
10,000 records). It then writes ``--uncommitted`` ISR changes (PartitionChangeRecords) that
do not commit, and a BeginQuorumEpoch of a later epoch takes its leadership away. Timed, on
that same log and image:

- ``revert``: the listener's ``sync`` that deactivates (the image back at the committed
  offset, in memory): what runs now;
- ``rebuild``: the same image made again from the log (no snapshot: the whole committed log
  read, decoded and replayed), which is what the host did before.

Both must give the same image (checked: the digest of the records a snapshot would hold).
Not a test: the figures depend on the machine.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
import uuid
from pathlib import Path

from pykraft.controller.config import ControllerConfig
from pykraft.controller.log_listener import LeaderChange, MetaLogListener
from pykraft.controller.quorum_controller import QuorumController
from pykraft.controller.result import RecordList
from pykraft.metadata import records as r
from pykraft.raft.config import RaftConfig
from pykraft.raft.core import RaftCore
from pykraft.raft.messages import BeginQuorumEpochRequest, Inbound
from pykraft.raft.types import ReplicaKey
from pykraft.raft.voters import VoterSet
from pykraft.sim.controller import image_digest
from pykraft.sim.memory import MemoryQuorumStateStore
from pykraft.storage import FileLog
from pykraft.storage.snapshots import FileSnapshotStore

BATCH = 10_000
PARTITIONS_PER_TOPIC = 1_000


def new_listener() -> MetaLogListener:
    def new_controller() -> QuorumController:
        return QuorumController(
            ControllerConfig(), node_id=1, cluster_id="bench", rng=random.Random(1)
        )

    return MetaLogListener(new_controller)


def elected(directory: Path) -> RaftCore:
    core = RaftCore(
        config=RaftConfig(),
        local_key=ReplicaKey(1),
        voters=VoterSet.from_ids((1,)),
        log=FileLog.open(directory),
        quorum_state=MemoryQuorumStateStore(),
        snapshots=FileSnapshotStore.open(directory),
        rng=random.Random(1),
        now_ms=0,
    )
    now = 0
    while core.role != "leader":
        now += 500
        core.poll(now)
        flush(core, now)
    return core


def flush(core: RaftCore, now: int) -> None:
    core.ready(now)
    core.log.flush()
    core.on_flushed(now)
    core.ready(now)


def cluster_records(count: int) -> list[RecordList]:
    """``count`` records: topics of PARTITIONS_PER_TOPIC partitions, in batches."""
    batches: list[RecordList] = []
    batch: RecordList = []
    topic = 0
    written = 0
    while written < count:
        topic_id = uuid.UUID(int=(topic + 1) << 64)
        batch.append((r.TopicRecord(name=f"t{topic}", topic_id=topic_id), 0))
        written += 1
        for p in range(PARTITIONS_PER_TOPIC):
            if written >= count:
                break
            replicas = (p % 5, (p + 1) % 5, (p + 2) % 5)
            record = r.PartitionRecord(
                partition_id=p,
                topic_id=topic_id,
                replicas=replicas,
                isr=replicas,
                leader=replicas[0],
                leader_epoch=0,
                partition_epoch=0,
            )
            batch.append((record, 0))
            written += 1
            if len(batch) >= BATCH:
                batches.append(batch)
                batch = []
        topic += 1
    if batch:
        batches.append(batch)
    return batches


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--uncommitted", type=int, default=1_000)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        directory = Path(tmp) / "__cluster_metadata-0"
        directory.mkdir()
        core = elected(directory)
        listener = new_listener()
        now = 10_000
        flush(core, now)
        assert listener.sync(core, now) is LeaderChange.ACTIVATED
        flush(core, now)
        listener.sync(core, now)
        started = time.perf_counter()
        for batch in cluster_records(args.records):
            listener.write(core, batch, now)
            flush(core, now)
            listener.sync(core, now)
        built = time.perf_counter() - started
        committed = core.high_watermark
        expected = image_digest(listener.image)
        topic_id = uuid.UUID(int=1 << 64)
        changes: RecordList = [
            (
                r.PartitionChangeRecord(
                    partition_id=i % PARTITIONS_PER_TOPIC, topic_id=topic_id, isr=(i % 5,)
                ),
                0,
            )
            for i in range(args.uncommitted)
        ]
        for i in range(0, len(changes), 100):
            listener.write(core, changes[i : i + 100], now)  # not flushed: not committed
        uncommitted = listener.position - committed
        undo = len(listener.image.timeline)
        core.step(
            Inbound(2, 1, BeginQuorumEpochRequest(None, core.epoch + 1, 2, ReplicaKey(1))), now
        )
        started = time.perf_counter()
        change = listener.sync(core, now)
        revert_s = time.perf_counter() - started
        assert change is LeaderChange.DEACTIVATED, change
        assert image_digest(listener.image) == expected, "revert: not the committed image"
        rebuilt = new_listener()
        started = time.perf_counter()
        rebuilt.load_snapshot(core)  # no snapshot: position = log start
        rebuilt.sync(core, now)  # replays the whole committed log
        rebuild_s = time.perf_counter() - started
        assert rebuilt.position == committed
        assert image_digest(rebuilt.image) == expected, "rebuild: not the committed image"
        core.log.close()
    print(
        f"log: {committed:,} committed records (written through the active controller in {built:.1f} s), "
        f"{uncommitted:,} uncommitted records ({undo:,} undo entries)"
    )
    print(f"failover, before (rebuild from the log): {rebuild_s * 1000:10.1f} ms")
    print(f"failover, now (revert in memory):       {revert_s * 1000:10.3f} ms")
    print(f"ratio rebuild / revert: {rebuild_s / max(revert_s, 1e-9):,.0f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
