"""One PySyncObj replica for the comparison workload (a child of ``run_all.py``).

    python bench/syncobj_node.py --port P --partners P2,P3 [--journal FILE]

A replicated counter (``@replicated def put(values)``) on 127.0.0.1, PySyncObj's defaults
except the journal: with ``--journal`` its ``FileJournal`` (an mmap that is never fsynced;
PySyncObj has no fsync at all), without it the in-memory journal. Commands arrive as JSON
lines on stdin (``status``, ``load``, ``quit``); answers go to stdout as ``@@ {json}``. EOF
on stdin (the orchestrator went away) ends the process.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from pysyncobj import FAIL_REASON, SyncObj, SyncObjConf, replicated

from _common import LOOPBACK, emit
from _load import LoadSpec, ThreadLoad


class Counter(SyncObj):  # type: ignore[misc]
    def __init__(self, self_addr: str, partners: list[str], conf: SyncObjConf):
        super().__init__(self_addr, partners, conf)
        self.records = 0
        self.bytes = 0

    @replicated  # type: ignore[misc]
    def put(self, values: list[bytes]) -> int:
        self.records += len(values)
        self.bytes += sum(len(v) for v in values)
        return self.records


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--partners", required=True, help="comma-separated ports")
    parser.add_argument("--journal", default=None)
    parser.add_argument("--batch", type=int, default=1, help="appendEntriesUseBatch (0 or 1)")
    args = parser.parse_args()
    partners = [f"{LOOPBACK}:{p}" for p in args.partners.split(",")]
    conf = SyncObjConf(
        journalFile=args.journal,
        appendEntriesUseBatch=bool(args.batch),
        dynamicMembershipChange=False,
    )
    node = Counter(f"{LOOPBACK}:{args.port}", partners, conf)

    def issue(values: list[bytes], on_done: Callable[[bool], None]) -> None:
        node.put(values, callback=lambda _res, err: on_done(err == FAIL_REASON.SUCCESS))

    load = ThreadLoad(issue)
    gc.collect()  # as bench/kraft_node.py does: startup objects out of the cyclic GC's way
    gc.freeze()
    emit({"type": "started", "port": args.port})
    for line in sys.stdin:  # bounded by the orchestrator closing stdin
        cmd: dict[str, Any] = json.loads(line)
        if cmd["cmd"] == "status":
            leader = node._getLeader()
            emit(
                {
                    "type": "status",
                    "leader": bool(node._isLeader()),
                    "ready": bool(node._isReady()),
                    "leader_addr": str(leader) if leader is not None else None,
                    "records": node.records,
                }
            )
        elif cmd["cmd"] == "load":
            spec = LoadSpec.from_dict(cmd["spec"])
            t0 = time.perf_counter()
            result = load.run(spec)
            result["wall_s"] = time.perf_counter() - t0
            emit({"type": "load", "result": result})
        elif cmd["cmd"] == "quit":
            break
    threading.Thread(target=node.destroy, daemon=True).start()
    time.sleep(0.2)


if __name__ == "__main__":
    main()
