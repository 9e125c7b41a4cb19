"""A real node's steps in the KRaft specification's terms, one JSON line each, to the file
``pykraft.spec.trace.file`` names (pykraft's own setting; off when unset).

Theory of operation. ``attach`` hooks the node's core with ``raft.spec_steps.SpecRecorder``
(the same recorder the simulator uses) and appends each step to the file as one JSON line:
``t`` (the host's monotonic clock in nanoseconds, read as the step happens, so the files of
every node on one machine merge into one history by time), ``node``, ``kind`` and the step's
fields. The file is line-buffered: a node killed with SIGKILL loses no line it wrote, and a
restarted node appends to the same file, starting with a ``spec_start`` line.
``pykraft dev sim check-trace FILE...`` walks the files through the specification's rules
(``pykraft.spec``). The cost is one small write per log change or role change.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from pykraft.raft.spec_steps import SpecRecorder

if TYPE_CHECKING:
    from pykraft.raft.api import RaftApi

__all__ = ["SpecTraceFile", "attach"]


class SpecTraceFile:
    __slots__ = ("_file", "_node")

    def __init__(self, path: Path, node_id: int) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: TextIO = path.open("a", encoding="utf-8", buffering=1)
        self._node = node_id

    def write(self, kind: str, details: dict[str, object]) -> None:
        record: dict[str, object] = {"t": time.monotonic_ns(), "node": self._node, "kind": kind}
        record.update(details)
        self._file.write(json.dumps(record, separators=(",", ":")) + "\n")

    def close(self) -> None:
        self._file.close()


def attach(path: Path | None, node_id: int, core: RaftApi) -> SpecTraceFile | None:
    """Trace ``core`` to ``path`` (None: no trace)."""
    if path is None:
        return None
    trace = SpecTraceFile(path, node_id)
    SpecRecorder(core.local_key, core, trace.write)
    return trace
