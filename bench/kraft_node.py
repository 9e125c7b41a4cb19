"""One pykraft voter for the benchmarks (a child of ``run_all.py``), embedding ``RaftNode``.

    python bench/kraft_node.py --id N --ports P1,P2,P3 --dir DIR [--cluster-id ID]
        [--election-timeout-ms MS] [--fetch-timeout-ms MS] [--linger-ms MS] [--steady-ms MS]

The process formats its log dir on first start (static voters, kraft.version 0), runs a
``pykraft.node.RaftNode`` on 127.0.0.1 with fsync on (every flush is an fsync: SPEC B13) and
answers JSON-line commands on stdin with ``@@ {json}`` lines on stdout:

- ``status``: role, epoch, leader, high watermark, log end offset;
- ``load``: the appender load of ``_load.py`` through the embedding API, timed from the
  ``append`` call to the commit callback (``on_commit``) that covers its last offset; with
  ``schedule`` in the spec, one paced caller of ``schedule_append`` instead (Kafka's
  ``TestRaftServer`` workload);
- ``fill``: append ``records_per_call`` records of ``record_bytes`` per call from
  ``appenders`` concurrent callers until ``target_bytes`` more log bytes are committed (the
  catch-up benchmark's fast log builder);
- ``snapshot``: a snapshot at the high watermark holding ``bytes`` of synthetic records
  (``RaftNode.create_snapshot``); the log start offset moves to it;
- ``add_self``: AddRaftVoter for this node (``AdminClient.add_controller`` to the voters), in
  the background; an ``added`` message (wall-clock ``t``, ``error``) follows when answered;
- ``profile_start`` / ``profile_stop`` {``path``}: pyinstrument over the whole process
  between the two (the catch-up case's ``profile_dir``); ``profiled`` answers the stop;
- ``quit``: graceful shutdown. EOF on stdin ends the process too.

``status`` also reports the log's bytes, start offset, a snapshot download in progress and
``first_data_t``: the wall-clock time the node first received log or snapshot bytes (polled
every 5 ms until then), so catch-up can be timed without the process start.

``--dynamic``: no ``controller.quorum.voters``; ``--ports`` are the bootstrap servers and the
initial voters (kraft.version 1, ``--initial-controllers`` with directory ids derived from
the node ids); a node whose id is past them is formatted without initial controllers and
starts as an observer (KIP-853), e.g. ``--id 2 --ports P1 --port P2 --dynamic``.

With ``--steady-ms`` the node, while leader, appends one 100-byte record every interval and
emits ``first_commit`` (wall-clock time) for the first record it sees committed in each
epoch: the failover benchmark's "first commit in the new epoch".
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import heapq
import json
import logging
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from _common import LOOPBACK, emit
from _load import AsyncLoad, LoadSpec, ScheduleLoad
from pykraft.node.config import NodeConfig
from pykraft.node.driver import RaftNode
from pykraft.raft.snapshots import RaftSnapshotWriter
from pykraft.storage import InitialController, format_storage

# Directory ids of the initial voters in --dynamic mode: derived from the node id, so that
# every initial voter formats with the same voter set.
_DIR_NS = uuid.UUID("6f1c0d5e-8a8e-4c1b-9d55-3f5e8f7a2b10")

LISTENER = "CONTROLLER"


def properties(args: argparse.Namespace) -> dict[str, str]:
    ports = [int(p) for p in args.ports.split(",")]
    port = ports[args.id - 1] if args.port is None else args.port
    if args.dynamic:
        quorum = {"controller.quorum.bootstrap.servers": ",".join(f"{LOOPBACK}:{p}" for p in ports)}
    else:
        voters = ",".join(f"{i + 1}@{LOOPBACK}:{p}" for i, p in enumerate(ports))
        quorum = {"controller.quorum.voters": voters}
    return {
        "node.id": str(args.id),
        "process.roles": "controller",
        "listeners": f"{LISTENER}://{LOOPBACK}:{port}",
        "controller.listener.names": LISTENER,
        "metadata.log.dir": str(args.dir),
        **quorum,
        "controller.quorum.election.timeout.ms": str(args.election_timeout_ms),
        "controller.quorum.fetch.timeout.ms": str(args.fetch_timeout_ms),
        "controller.quorum.append.linger.ms": str(args.linger_ms),
    }


class Committed:
    """Commit waiters keyed by offset, resolved by the node's ``on_commit(high_watermark)``.

    Invariant: every offset in the heap is >= the last high watermark seen."""

    def __init__(self) -> None:
        self.high_watermark = 0
        self._heap: list[tuple[int, int, asyncio.Future[None]]] = []
        self._seq = 0

    def on_commit(self, high_watermark: int) -> None:
        self.high_watermark = high_watermark
        heap = self._heap
        while heap and heap[0][0] < high_watermark:
            fut = heapq.heappop(heap)[2]
            if not fut.done():
                fut.set_result(None)

    def wait(self, offset: int) -> asyncio.Future[None] | None:
        if offset < self.high_watermark:
            return None
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._seq += 1
        heapq.heappush(self._heap, (offset, self._seq, fut))
        return fut

    def fail_all(self, error: BaseException) -> None:
        for _, _, fut in self._heap:
            if not fut.done():
                fut.set_exception(error)
        self._heap.clear()


async def steady_appender(node: RaftNode, committed: Committed, interval_ms: int) -> None:
    """While leader: one record per interval; report the first commit of each epoch."""
    reported: set[int] = set()
    value = b"s" * 100
    while True:
        await asyncio.sleep(interval_ms / 1000)
        core = node.core
        if core is None or core.role != "leader":
            continue
        epoch = core.epoch
        with contextlib.suppress(Exception):
            offset = await node.append([value])
            fut = committed.wait(offset)
            if fut is not None:
                await asyncio.wait_for(fut, timeout=30)
            if epoch not in reported and core.epoch == epoch:
                reported.add(epoch)
                emit({"type": "first_commit", "epoch": epoch, "t": time.time(), "offset": offset})


async def profiled(load: AsyncLoad | ScheduleLoad, spec: LoadSpec, out: Path) -> dict[str, Any]:
    """The load under pyinstrument (the whole process: node, network, appenders)."""
    from pyinstrument import Profiler

    profiler = Profiler(interval=0.001, async_mode="disabled")
    profiler.start()
    try:
        result = await load.run(spec)
    finally:
        profiler.stop()
    out.write_text(profiler.output_text(unicode=False, color=False, show_all=False))
    result["profile"] = str(out)
    return result


def format_dir(args: argparse.Namespace, props: dict[str, str]) -> None:
    config = NodeConfig.from_properties(props)
    if not args.dynamic:
        format_storage(config, args.cluster_id, ignore_formatted=True)
        return
    ports = [int(p) for p in args.ports.split(",")]
    initial = [
        InitialController(i + 1, LOOPBACK, p, uuid.uuid5(_DIR_NS, str(i + 1)))
        for i, p in enumerate(ports)
    ]
    joining = args.id > len(ports)  # a new controller: an observer until AddRaftVoter
    format_storage(
        config,
        args.cluster_id,
        initial_controllers=None if joining else initial,
        ignore_formatted=True,
    )


def log_bytes(log: Any) -> int:
    return sum(size for _base, _next, size in log.segments())


class DataWatch:
    """The wall-clock time this node first held fetched log or snapshot bytes."""

    def __init__(self, node: RaftNode) -> None:
        self.node = node
        self.first_data_t: float | None = None
        self.task = asyncio.create_task(self._watch())

    def _progress(self) -> tuple[int, int]:
        core = self.node.core
        if core is None:
            return (0, 0)
        sf = core.fetch.snapshot
        return (log_bytes(core.log), sf.position if sf is not None else 0)

    async def _watch(self) -> None:
        base = self._progress()
        while True:
            await asyncio.sleep(0.005)
            now = self._progress()
            if now[0] > base[0] or now[1] > 0:
                self.first_data_t = time.time()
                return


def status(node: RaftNode, watch: DataWatch | None = None) -> dict[str, Any]:
    core = node.core
    if core is None:
        return {"type": "status", "role": "starting"}
    sf = core.fetch.snapshot
    latest = core.snapshots.latest()
    return {
        "type": "status",
        "role": core.role,
        "epoch": core.epoch,
        "leader_id": core.leader_id,
        "high_watermark": core.high_watermark,
        "log_end_offset": core.log.end_offset,
        "log_start_offset": core.log.start_offset,
        "log_bytes": log_bytes(core.log),
        "snapshot_offset": latest.offset if latest is not None else None,
        "snapshot_fetch_position": sf.position if sf is not None else None,
        "voter_ids": sorted(core.voters.ids),
        "first_data_t": watch.first_data_t if watch is not None else None,
        "t": time.time(),
    }


async def fill(node: RaftNode, committed: Committed, cmd: dict[str, Any]) -> dict[str, Any]:
    """Append until ``target_bytes`` more log bytes are committed (bounded by ``timeout_s``)."""
    core = node.core
    assert core is not None
    values = [b"f" * int(cmd["record_bytes"])] * int(cmd["records_per_call"])
    target = log_bytes(core.log) + int(cmd["target_bytes"])
    deadline = time.monotonic() + float(cmd.get("timeout_s", 600))
    t0 = time.perf_counter()
    calls = 0

    async def appender() -> None:
        nonlocal calls
        while log_bytes(core.log) < target and time.monotonic() < deadline:
            offset = await node.append(values)
            calls += 1
            fut = committed.wait(offset)
            if fut is not None:
                await asyncio.wait_for(fut, timeout=60)

    await asyncio.gather(*(appender() for _ in range(int(cmd.get("appenders", 4)))))
    seconds = time.perf_counter() - t0
    return {
        "type": "filled",
        "calls": calls,
        "seconds": seconds,
        "log_bytes": log_bytes(core.log),
        "log_end_offset": core.log.end_offset,
        "high_watermark": core.high_watermark,
        "reached": log_bytes(core.log) >= target,
    }


async def snapshot(node: RaftNode, cmd: dict[str, Any]) -> dict[str, Any]:
    """A snapshot at the high watermark of ``bytes`` synthetic records, written in one go
    through ``RaftNode.create_snapshot`` (which keeps it clear of a running flush)."""
    core = node.core
    assert core is not None
    t0 = time.perf_counter()
    record_bytes = int(cmd.get("record_bytes", 10240))
    per_batch = int(cmd.get("records_per_batch", 100))
    values = [b"s" * record_bytes] * per_batch

    def write(writer: RaftSnapshotWriter) -> None:
        written = 0
        while written < int(cmd["bytes"]):
            writer.append(values, node.now_ms())
            written += record_bytes * per_batch

    sid = await node.create_snapshot(write)
    return {
        "type": "snapshotted",
        "offset": sid.offset,
        "epoch": sid.epoch,
        "size": core.snapshots.size(sid),
        "log_start_offset": core.log.start_offset,
        "seconds": time.perf_counter() - t0,
    }


async def add_self(node: RaftNode, args: argparse.Namespace, timeout_s: float) -> None:
    """AddRaftVoter for this node, as ``pykraft metadata-quorum add-controller`` sends it."""
    from pykraft.admin import AdminClient, RaftVoterEndpoint

    bootstrap = ",".join(f"{LOOPBACK}:{p}" for p in args.ports.split(","))
    timeout_ms = int(timeout_s * 1000)
    t0 = time.time()
    error = None
    try:
        async with AdminClient(
            bootstrap, request_timeout_ms=timeout_ms, timeout_ms=timeout_ms
        ) as admin:
            await admin.add_controller(
                args.id,
                node.directory_id,
                [RaftVoterEndpoint(LISTENER, LOOPBACK, node.port)],
                timeout_ms=timeout_ms,
            )
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
    emit({"type": "added", "t": time.time(), "sent_t": t0, "error": error})


async def serve(args: argparse.Namespace) -> None:
    props = properties(args)
    args.dir.mkdir(parents=True, exist_ok=True)
    format_dir(args, props)
    committed = Committed()
    scheduled: list[ScheduleLoad] = []

    def on_commit(high_watermark: int) -> None:
        committed.on_commit(high_watermark)
        if scheduled:
            scheduled[0].on_commit(high_watermark)

    node = RaftNode(NodeConfig.from_properties(props), on_commit=on_commit)
    scheduled.append(ScheduleLoad(node.schedule_append))
    await node.start()
    watch = DataWatch(node)

    async def append(values: list[bytes]) -> None:
        offset = await node.append(values)
        fut = committed.wait(offset)
        if fut is not None:
            await fut

    load = AsyncLoad(append)
    # As RaftNode's docstring advises embedders (and `pykraft server` does): the startup
    # objects (modules, kio schema classes, the core) leave the cyclic GC's generations, so a
    # full collection under load does not stall for 30-50 ms. PySyncObj's node does the same.
    gc.collect()
    gc.freeze()
    tasks = []
    if args.steady_ms:
        tasks.append(asyncio.create_task(steady_appender(node, committed, args.steady_ms)))
    emit({"type": "started", "id": args.id, "t": time.time()})
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 20)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    profiler: Any = None
    while True:
        line = await reader.readline()
        if not line:
            break
        cmd: dict[str, Any] = json.loads(line)
        if cmd["cmd"] == "status":
            emit(status(node, watch))
        elif cmd["cmd"] == "fill":
            emit(await fill(node, committed, cmd))
        elif cmd["cmd"] == "snapshot":
            emit(await snapshot(node, cmd))
        elif cmd["cmd"] == "profile_start":
            from pyinstrument import Profiler

            profiler = Profiler(interval=0.001, async_mode="disabled")
            profiler.start()
        elif cmd["cmd"] == "profile_stop" and profiler is not None:
            profiler.stop()
            Path(cmd["path"]).write_text(
                profiler.output_text(unicode=False, color=False, show_all=False)
            )
            profiler = None
            emit({"type": "profiled", "path": cmd["path"]})
        elif cmd["cmd"] == "add_self":
            tasks.append(asyncio.create_task(add_self(node, args, float(cmd["timeout_s"]))))
        elif cmd["cmd"] == "load":
            spec = LoadSpec.from_dict(cmd["spec"])
            t0 = time.perf_counter()
            driver = scheduled[0] if spec.schedule else load
            if cmd.get("profile"):
                result = await profiled(driver, spec, Path(cmd["profile"]))
            else:
                result = await driver.run(spec)
            result["wall_s"] = time.perf_counter() - t0
            emit({"type": "load", "result": result})
        elif cmd["cmd"] == "quit":
            break
    watch.task.cancel()
    for task in tasks:
        task.cancel()
    committed.fail_all(ConnectionError("bench node stopping"))
    await asyncio.wait_for(node.shutdown(), timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--id", type=int, required=True)
    parser.add_argument("--ports", required=True, help="voter ports, in id order from 1")
    parser.add_argument("--port", type=int, default=None, help="own port if not a voter")
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--cluster-id", default="MkU3OEVBNTcwNTJENDM2Qg")
    parser.add_argument("--election-timeout-ms", type=int, default=1000)
    parser.add_argument("--fetch-timeout-ms", type=int, default=2000)
    parser.add_argument("--linger-ms", type=int, default=25)
    parser.add_argument("--steady-ms", type=int, default=0)
    parser.add_argument("--dynamic", action="store_true", help="KIP-853 voters (see above)")
    args = parser.parse_args()
    # PYKRAFT_BENCH_LOG=INFO puts the node's log lines (role transitions, ...) in the child's
    # log file under the bench workdir: for finding where failover time goes.
    level = os.environ.get("PYKRAFT_BENCH_LOG")
    if level:
        logging.basicConfig(
            level=level, stream=sys.stderr, format="%(asctime)s.%(msecs)03d %(name)s %(message)s"
        )
    try:
        import uvloop

        uvloop.run(serve(args))
    except Exception as exc:
        emit({"type": "error", "error": f"{type(exc).__name__}: {exc}"})
        raise


if __name__ == "__main__":
    main()
