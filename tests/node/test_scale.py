"""The 1,000,000-partition path on real controller processes (issue 30): not timed, only that
it works. The image of 10,000 topics of 100 partitions (RF 3, six brokers) is built in
memory by the real controller (``sim/standalone.py``) and laid down as the snapshot two
controllers of a three-voter static quorum start from (as a quorum that ran a long time
would have it); then, on the real processes:

* two controllers load it at start and one of them is elected;
* the third, started empty, catches up through FetchSnapshot (the whole snapshot over the
  wire) and loads it;
* each controller writes a snapshot of its own (SIGUSR1: generated in slices, made durable
  off the event loop);
* a restarted controller loads the snapshot it wrote;
* the snapshots the three wrote hold the same records, a million PartitionRecords among
  them: the same image everywhere.
"""

from __future__ import annotations

import hashlib
import re
import signal
from pathlib import Path

import pytest

from pykraft.controller.snapshot_generator import SnapshotGenerator
from pykraft.raft.types import OffsetAndEpoch
from pykraft.records import decode_values, iter_batches
from pykraft.sim.standalone import build_cluster
from pykraft.storage import (
    PARTITION_DIR_NAME,
    FileSnapshotStore,
    lay_down_compacted,
)
from pykraft.storage.snapshots import validate_snapshot

from .procs import Proc, describe_quorum, fmt, free_ports, make_config, wait_for

# A million partitions take GBs and both cores for minutes: CI runs it alone.
pytestmark = pytest.mark.alone

TOPICS, PER_TOPIC = 10_000, 100
PARTITION_RECORD = 3  # PartitionRecord's type id (the second byte of its framing)
# Controllers register with each new leader (KIP-919), so a snapshot written before a
# controller's new registration committed and one written after it differ there only.
REGISTER_CONTROLLER_RECORD = 27
LOADED = "metadata image loaded from snapshot"
WRITTEN = "metadata snapshot written"
FETCHED = "snapshot loaded snapshot_id="  # the raft layer installed one from the leader
CAUGHT_UP = "metadata image caught up"
SNAPSHOT_NAME = re.compile(r"(\d{20})-(\d{10})\.checkpoint")
# Loads and FetchSnapshot of ~120 MB on a shared 2-core machine: generous, not a goal.
SCALE_STEP_S = 240


def _partition_dir(p: Proc) -> Path:
    return p.data / PARTITION_DIR_NAME


def _newest_written(p: Proc, before: OffsetAndEpoch) -> OffsetAndEpoch | None:
    """The newest snapshot file after ``before`` (named once durable), by name only: polled
    while the controller works, so no 120 MB validation per look."""
    ids = sorted(
        OffsetAndEpoch(int(m[1]), int(m[2]))
        for f in _partition_dir(p).glob("*.checkpoint")
        if (m := SNAPSHOT_NAME.fullmatch(f.name))
    )
    newer = [i for i in ids if i > before]
    return newer[-1] if newer else None


def _digest(p: Proc, sid: OffsetAndEpoch) -> tuple[str, int]:
    """The snapshot's records hashed (not its header's timestamps, not the controllers'
    registrations), and its PartitionRecords counted. Read batch by batch, checked as a load
    checks them (``validate_snapshot``, then each batch's CRC), without a ``Record`` each."""
    path = FileSnapshotStore.open(_partition_dir(p)).path(sid)
    data = path.read_bytes()
    validate_snapshot(data, str(path))
    h = hashlib.sha256()
    partitions = 0
    for header, pos in iter_batches(data):
        if header.is_control:
            continue
        for value in decode_values(data[pos : pos + header.size]):
            value = value or b""
            if len(value) > 1 and value[1] == REGISTER_CONTROLLER_RECORD:
                continue
            h.update(len(value).to_bytes(4, "big"))
            h.update(value)
            partitions += len(value) > 1 and value[1] == PARTITION_RECORD
    return h.hexdigest(), partitions


def test_a_million_partitions_load_replicate_snapshot_and_restart(tmp_path: Path) -> None:
    cluster = build_cluster(33, TOPICS, PER_TOPIC)
    image = cluster.c.image
    assert image.topics_image.partition_count == TOPICS * PER_TOPIC
    generator = SnapshotGenerator(image, cluster.offset)
    values = generator.all_values()
    del cluster, image, generator
    sid = OffsetAndEpoch(len(values) + 1000, 1)  # the log compacted below it, epoch 1

    ports = free_ports(3)
    voters = ",".join(f"{i + 1}@127.0.0.1:{port}" for i, port in enumerate(ports))
    # Brokers registered in the image never heartbeat here: sessions outlive the test.
    extra = "broker.session.timeout.ms=3600000\n"
    procs = [
        make_config(tmp_path, i + 1, port, voters=voters, extra=extra)
        for i, port in enumerate(ports)
    ]
    # Controllers 1 and 2 start from the snapshot; controller 3 starts empty, so the leader
    # (1 or 2: 3's log is behind theirs) serves it the whole snapshot.
    seeded, empty = procs[:2], procs[2]
    try:
        for p in procs:
            fmt(p)
        for p in seeded:
            lay_down_compacted(_partition_dir(p), sid, values, tuple(q.node_id for q in procs))
        del values
        for p in procs:
            p.start()
        bootstrap = ",".join(p.address for p in procs)
        for p in seeded:
            wait_for(lambda p=p: LOADED in p.text(), f"controller {p.node_id} loaded", SCALE_STEP_S)
        wait_for(
            lambda: describe_quorum(bootstrap, timeout_ms=5_000).leader_id > 0,
            "a leader",
            SCALE_STEP_S,
        )
        wait_for(
            lambda: FETCHED in empty.text() and CAUGHT_UP in empty.text(),
            "the empty controller's snapshot fetched from the leader and loaded",
            SCALE_STEP_S,
        )
        # Under load the empty controller may lead later, but only once it holds the
        # snapshot: a voter with an empty log never wins a vote against 1 and 2.
        before_install = empty.text().split(FETCHED)[0]
        assert f"leader={empty.node_id} " not in before_install, before_install[-2000:]

        def caught_up() -> bool:
            info = describe_quorum(bootstrap, timeout_ms=5_000)
            return min(v.log_end_offset for v in info.voters) > sid.offset

        wait_for(caught_up, "every voter past the snapshot", SCALE_STEP_S)

        # Each writes its own snapshot of the million partitions.
        for p in procs:
            p.send(signal.SIGUSR1)
        for p in procs:
            wait_for(
                lambda p=p: _newest_written(p, sid) is not None,
                f"controller {p.node_id}'s snapshot",
                SCALE_STEP_S,
            )
            wait_for(lambda p=p: WRITTEN in p.text(), f"controller {p.node_id} wrote", 60)

        # A restarted controller loads the snapshot it wrote.
        restarted = empty
        own = _newest_written(restarted, sid)
        assert own is not None
        restarted.stop(signal.SIGTERM)
        loads = restarted.text().count(LOADED)
        restarted.start()
        wait_for(
            lambda: restarted.text().count(LOADED) > loads,
            "the restarted controller loaded",
            SCALE_STEP_S,
        )
        last_load = restarted.text().split(LOADED)[-1].split("\n")[0]
        assert f"offset={own.offset}," in last_load.replace(" ", ""), last_load

        # The snapshots are named once durable: the controllers' work is done, and the
        # digests below get the cores.
        written_ids = {p.node_id: _newest_written(p, sid) for p in procs}
        for p in procs:
            p.kill()
        digests = {}
        for p in procs:
            written = written_ids[p.node_id]
            assert written is not None
            digests[p.node_id] = _digest(p, written)
        assert len(set(digests.values())) == 1, digests
        assert next(iter(digests.values()))[1] == TOPICS * PER_TOPIC
    finally:
        for p in procs:
            p.kill()
