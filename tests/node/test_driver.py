"""The driver's flush: inline on the loop while flushes are fast, on its own thread once they
are slow (the loop keeps answering while the disk works); either way nothing of a ``Ready``
that asked for a flush is acted on before the flush completed."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from pykraft.admin.describe import describe_quorum_request
from pykraft.net.client import Connection
from pykraft.node import flush as flush_module
from pykraft.node.appends import APPEND_BATCH_RECORDS_MAX
from pykraft.node.config import NodeConfig, load_config
from pykraft.node.driver import RaftNode
from pykraft.node.flush import FLUSH_INLINE_MAX_MS, Flusher
from pykraft.raft.snapshots import RaftSnapshotWriter
from pykraft.records import decode_records, iter_batches
from pykraft.storage import format_storage, read_snapshot

from .procs import CLUSTER_ID, free_ports

FLUSH_S = 0.3


def single_voter(tmp_path: Path) -> Path:
    (port,) = free_ports(1)
    path = tmp_path / "n.properties"
    path.write_text(
        "node.id=1\nprocess.roles=controller\n"
        f"listeners=CONTROLLER://127.0.0.1:{port}\ncontroller.listener.names=CONTROLLER\n"
        f"metadata.log.dir={tmp_path / 'data'}\ncontroller.quorum.voters=1@127.0.0.1:{port}\n"
        "controller.quorum.append.linger.ms=1\n"
    )
    format_storage(load_config(path), CLUSTER_ID)
    return path


async def elected(node: RaftNode) -> None:
    """Wait (10 s at most) until the single voter ``node`` is leader."""
    loop = asyncio.get_running_loop()
    assert node.core is not None
    deadline = loop.time() + 10
    while node.core.role != "leader":
        assert loop.time() < deadline, "no election"
        await asyncio.sleep(0.01)


@contextlib.asynccontextmanager
async def leader_node(config: NodeConfig) -> AsyncIterator[RaftNode]:
    """A started single-voter node, once elected; shut down on exit."""
    node = RaftNode(config)
    await node.start()
    try:
        await elected(node)
        assert node.core is not None
        yield node
    finally:
        await node.shutdown()


def test_slow_fsync_does_not_block_the_loop_and_gates_the_commit(tmp_path: Path) -> None:
    config = load_config(single_voter(tmp_path))

    async def go() -> None:
        async with leader_node(config) as node:
            assert node.core is not None
            await node.wait_committed(node.core.log.end_offset - 1)
            log = node.log
            real_flush = log.flush
            threads: list[str] = []
            durable: list[int] = []

            def slow_flush() -> None:
                threads.append(threading.current_thread().name)
                time.sleep(FLUSH_S)
                real_flush()
                durable.append(log.end_offset)

            log.flush = slow_flush  # type: ignore[method-assign]
            # As after a slow flush: the next one is the thread's (the fault injected here).
            node._flusher.average_ms = FLUSH_S * 1000
            offset = await node.append([b"first"])
            committed = asyncio.ensure_future(node.wait_committed(offset))
            # While the disk works, the loop answers a client: the answer arrives before the
            # flush completed (causal order, no wall-clock bound).
            conn = await Connection.open("127.0.0.1", node.port, timeout_ms=1000)
            try:
                answer: Any = await conn.request(describe_quorum_request(), timeout_ms=1000)
                assert not durable, "answered only after the flush"
                assert answer.topics[0].partitions[0].leader_id == 1
            finally:
                conn.close()
                await conn.wait_closed()
            # An append during the flush waits for it, then gets its own (group) flush.
            second = asyncio.ensure_future(node.append([b"second"]))
            assert not committed.done()
            await committed
            assert durable and durable[0] > offset  # committed only once on disk
            second_offset = await second
            await node.wait_committed(second_offset)
            assert durable[-1] > second_offset
            assert threads and all(t.startswith("pykraft-fsync") for t in threads)

    asyncio.run(go())


def test_flusher_goes_to_the_thread_while_flushes_are_slow() -> None:
    class Log:
        def __init__(self) -> None:
            self.delay_s = 0.0

        def flush(self) -> None:
            time.sleep(self.delay_s)

    flusher, log_ = Flusher(), Log()
    try:
        assert not flusher.in_thread
        log_.delay_s = FLUSH_INLINE_MAX_MS * 2 / 1000
        while not flusher.in_thread:
            flusher.flush(log_)  # type: ignore[arg-type]
        log_.delay_s = 0.0
        flushes = 0
        while flusher.in_thread:
            flusher.flush(log_)  # type: ignore[arg-type]
            flushes += 1
        assert flushes < 20  # the moving average forgets a slow spell soon
    finally:
        flusher.shutdown()


def test_fast_flushes_run_inline_and_gate_the_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = load_config(single_voter(tmp_path))
    # However slow this machine's disk is now: the decision is the Flusher's (tested above).
    monkeypatch.setattr(flush_module, "FLUSH_INLINE_MAX_MS", float("inf"))

    async def go() -> None:
        async with leader_node(config) as node:
            assert node._log is not None
            real_flush = node._log.flush
            threads: list[str] = []
            durable: list[int] = []

            def flush() -> None:
                threads.append(threading.current_thread().name)
                real_flush()
                assert node._log is not None
                durable.append(node._log.end_offset)

            node._log.flush = flush  # type: ignore[method-assign]
            for n in range(5):
                offset = await node.append([b"v%d" % n])
                await node.wait_committed(offset)
                assert durable and durable[-1] > offset  # committed only once on disk
            assert threads and set(threads) == {threading.current_thread().name}

    asyncio.run(go())


def test_api_versions_advertises_the_cores_kraft_versions(tmp_path: Path) -> None:
    """ApiVersions names the kraft.version range of the core's RaftConfig (finalized: the
    version in force)."""
    config = load_config(single_voter(tmp_path))

    async def go() -> None:
        async with leader_node(config) as node:
            assert node.core is not None
            answer: Any = node._api_versions(4)  # v3 omits features whose minimum is 0
            supported = {f.name: (f.min_version, f.max_version) for f in answer.supported_features}
            assert supported == {"kraft.version": node.core.config.kraft_versions}
            finalized = {f.name: f.max_version_level for f in answer.finalized_features}
            assert finalized == {"kraft.version": node.core.kraft_version}

    asyncio.run(go())


def test_concurrent_appends_get_dense_offsets(tmp_path: Path) -> None:
    """Concurrent append calls get dense offsets, in call order, and commit."""
    config = load_config(single_voter(tmp_path))

    async def go() -> None:
        async with leader_node(config) as node:
            lasts = await asyncio.gather(*(node.append([b"x"] * n) for n in (1, 2, 3)))
            assert lasts[1] - lasts[0] == 2 and lasts[2] - lasts[1] == 3
            await node.wait_committed(lasts[2])

    asyncio.run(go())


def test_scheduled_records_commit_at_the_offsets_they_were_promised(tmp_path: Path) -> None:
    """schedule_append (Kafka's scheduleAppend) answers offsets at once; mixed with append
    calls and past the batch limit, each record commits at the offset it was promised."""
    config = load_config(single_voter(tmp_path))

    async def go() -> None:
        async with leader_node(config) as node:
            assert node.core is not None
            epoch = node.core.epoch
            promised = {node.schedule_append([b"s%d" % i]): b"s%d" % i for i in range(5)}
            appended = node.append([b"a0", b"a1"])  # after the five scheduled ones
            promised.update({node.schedule_append([b"t%d" % i]): b"t%d" % i for i in range(3)})
            last_a = await appended
            promised[last_a] = b"a1"
            many = [b"m%d" % i for i in range(APPEND_BATCH_RECORDS_MAX + 10)]
            promised[node.schedule_append(many)] = many[-1]  # appended at once
            assert sorted(promised) == sorted(set(promised))  # no offset promised twice
            end = max(promised)
            await node.wait_committed(end, epoch)
            data = node.log.read(min(promised), 1 << 24)
            values = {
                r.offset: r.value
                for header, pos in iter_batches(data)
                for r in decode_records(data[pos : pos + header.size])
            }
            assert {o: values[o] for o in promised} == promised
            assert not node.core.scheduled_count

    asyncio.run(go())


def test_create_snapshot_writes_the_state_at_the_high_watermark_and_drops_a_failed_one(
    tmp_path: Path,
) -> None:
    """RaftNode.create_snapshot: the application's records are in the frozen snapshot, its id
    is the high watermark, the log start may move to it; an error in ``write`` leaves no
    snapshot behind and the node keeps working."""
    config = load_config(single_voter(tmp_path))

    async def go() -> None:
        async with leader_node(config) as node:
            assert node.core is not None
            last = await node.append([b"a"] * 50)
            await node.wait_committed(last)

            def fail(writer: RaftSnapshotWriter) -> None:
                writer.append([b"partial"])
                raise RuntimeError("application failed")

            with pytest.raises(RuntimeError):
                await node.create_snapshot(fail)
            assert node.core.snapshots.latest() is None

            sid = await node.create_snapshot(lambda w: w.append([b"state-1", b"state-2"]))
            assert sid.offset == node.core.high_watermark
            contents = read_snapshot(node.core.snapshots, sid)
            assert [r.value for r in contents.records] == [b"state-1", b"state-2"]
            assert node.core.log.start_offset <= sid.offset
            after = await node.append([b"b"])  # appends still commit after the snapshot
            await node.wait_committed(after)

    asyncio.run(go())


def test_a_snapshot_written_over_many_turns_is_made_durable_off_the_event_loop(
    tmp_path: Path,
) -> None:
    """RaftNode.open_snapshot / freeze_snapshot (a large image's snapshot, as the metadata
    controller writes it a slice per turn): the log goes on committing between the slices and
    while the snapshot's fsync and check run on another thread; the snapshot holds the
    slices at the offset it was opened at. A second writer of the same id gets a file of its
    own, and one aborted leaves nothing behind."""
    config = load_config(single_voter(tmp_path))

    async def go() -> None:
        async with leader_node(config) as node:
            core = node.core
            assert core is not None
            await node.wait_committed(await node.append([b"a"] * 20))
            end = core.high_watermark
            writer = node.open_snapshot()
            other = node.open_snapshot()
            other.append([b"other"])
            other.abort()
            committed_while_durable = threading.Event()
            threads: list[threading.Thread] = []
            storage = writer._writer
            made_durable = storage.make_durable

            def slow_make_durable() -> None:
                threads.append(threading.current_thread())
                # Returns only once the loop has committed a record meanwhile: on the
                # loop's own thread this would wait its whole 20 s and the test fail.
                assert committed_while_durable.wait(20), "the event loop was held"
                made_durable()

            storage.make_durable = slow_make_durable  # type: ignore[method-assign]
            for n in range(5):
                writer.append([b"slice-%d-%d" % (n, i) for i in range(3)], node.now_ms())
                await node.wait_committed(await node.append([b"between"]))
            freezing = asyncio.ensure_future(node.freeze_snapshot(writer))
            while not threads:
                await asyncio.sleep(0.01)
            await node.wait_committed(await node.append([b"during"]))
            committed_while_durable.set()
            sid = await freezing
            assert threads[0] is not threading.main_thread()
            assert sid.offset == end
            values = [r.value for r in read_snapshot(core.snapshots, sid).records]
            assert values == [b"slice-%d-%d" % (n, i) for n in range(5) for i in range(3)]
            assert core.snapshots.latest() == sid
            assert not list(core.snapshots.dir.glob("*.part"))

    asyncio.run(go())
