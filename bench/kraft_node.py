"""One pykraft voter for the benchmarks (a child of ``run_all.py``), embedding ``RaftNode``.

    python bench/kraft_node.py --id N --ports P1,P2,P3 --dir DIR [--cluster-id ID]
        [--election-timeout-ms MS] [--fetch-timeout-ms MS] [--linger-ms MS] [--steady-ms MS]

The process formats its log dir on first start (static voters, kraft.version 0), runs a
``pykraft.node.RaftNode`` on 127.0.0.1 with fsync on (every flush is an fsync: SPEC B13) and
answers JSON-line commands on stdin with ``@@ {json}`` lines on stdout:

- ``status``: role, epoch, leader, high watermark, log end offset;
- ``load``: the appender load of ``_load.py`` through the embedding API, timed from the
  ``append`` call to the commit callback (``on_commit``) that covers its last offset;
- ``quit``: graceful shutdown. EOF on stdin ends the process too.

With ``--steady-ms`` the node, while leader, appends one 100-byte record every interval and
emits ``first_commit`` (wall-clock time) for the first record it sees committed in each
epoch: the failover benchmark's "first commit in the new epoch".
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import heapq
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from _common import LOOPBACK, emit
from _load import AsyncLoad, LoadSpec
from pykraft.node.config import NodeConfig
from pykraft.node.driver import RaftNode
from pykraft.storage import ServerConfig, format_storage

LISTENER = "CONTROLLER"


def properties(args: argparse.Namespace) -> dict[str, str]:
    ports = [int(p) for p in args.ports.split(",")]
    port = ports[args.id - 1] if args.port is None else args.port
    voters = ",".join(f"{i + 1}@{LOOPBACK}:{p}" for i, p in enumerate(ports))
    return {
        "node.id": str(args.id),
        "process.roles": "controller",
        "listeners": f"{LISTENER}://{LOOPBACK}:{port}",
        "controller.listener.names": LISTENER,
        "metadata.log.dir": str(args.dir),
        "controller.quorum.voters": voters,
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


async def profiled(load: AsyncLoad, spec: LoadSpec, out: Path) -> dict[str, Any]:
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


def status(node: RaftNode) -> dict[str, Any]:
    core = node.core
    if core is None:
        return {"type": "status", "role": "starting"}
    return {
        "type": "status",
        "role": core.role,
        "epoch": core.epoch,
        "leader_id": core.leader_id,
        "high_watermark": core.high_watermark,
        "log_end_offset": core.log.end_offset,
        "t": time.time(),
    }


async def serve(args: argparse.Namespace) -> None:
    props = properties(args)
    args.dir.mkdir(parents=True, exist_ok=True)
    format_storage(ServerConfig.from_properties(props), args.cluster_id, ignore_formatted=True)
    committed = Committed()
    node = RaftNode(NodeConfig.from_properties(props), on_commit=committed.on_commit)
    await node.start()

    async def append(values: list[bytes]) -> None:
        offset = await node.append(values)
        fut = committed.wait(offset)
        if fut is not None:
            await fut

    load = AsyncLoad(append)
    tasks = []
    if args.steady_ms:
        tasks.append(asyncio.create_task(steady_appender(node, committed, args.steady_ms)))
    emit({"type": "started", "id": args.id})
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 20)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while True:
        line = await reader.readline()
        if not line:
            break
        cmd: dict[str, Any] = json.loads(line)
        if cmd["cmd"] == "status":
            emit(status(node))
        elif cmd["cmd"] == "load":
            spec = LoadSpec.from_dict(cmd["spec"])
            t0 = time.perf_counter()
            if cmd.get("profile"):
                result = await profiled(load, spec, Path(cmd["profile"]))
            else:
                result = await load.run(spec)
            result["wall_s"] = time.perf_counter() - t0
            emit({"type": "load", "result": result})
        elif cmd["cmd"] == "quit":
            break
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
