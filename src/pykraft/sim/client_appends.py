"""The simulator's client appends as a history of operations, checked for linearizability
(issue 49 item 3; the same history the fault runs' checker reads, ``faults/linearizable.py``).

Theory of operation. Each client append (``Simulation._append``) is invoked at the time the
leader took it, with the epoch it was taken in and the offset of its last record; it is
answered when that offset commits in that epoch (the committed history's batch holding it
has the append's epoch; ``CommittedHistory.recorded_at_ms`` is when the leader first said so),
else it is never answered (its records went with the leadership, or with a majority lost and
recovered). The sequential specification is a log: an append answered before another is
invoked holds a lower offset. With every answered offset distinct, that is the whole check,
in one pass over the appends by falling offset (the least answer time among the higher
offsets must not come before an invocation). ``pykraft verify``'s tests hand the same history
to Porcupine (``write_history``) and get the same verdict.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from dataclasses import dataclass
from pathlib import Path

from pykraft.sim.history import CommittedHistory, InvariantViolation

__all__ = ["Append", "append_history", "check_appends", "write_history"]

INVARIANT = "appends-linearizable"


@dataclass(frozen=True, slots=True)
class Append:
    call_ms: int
    return_ms: int | None  # None: never answered
    epoch: int
    offset: int  # its last record's


def append_history(taken: list[tuple[int, int, int]], history: CommittedHistory) -> list[Append]:
    """``taken``: (time, epoch, last offset) of each append, as the leader took it."""
    bases = sorted(history.by_base)
    out = []
    for call_ms, epoch, offset in taken:
        at = bisect_right(bases, offset) - 1
        batch = history.by_base[bases[at]] if at >= 0 else None
        answered = None
        if batch is not None and offset < batch.next_offset and batch.epoch == epoch:
            answered = history.recorded_at_ms.get(batch.next_offset)
        out.append(Append(call_ms, answered, epoch, offset))
    return out


def check_appends(appends: list[Append]) -> int:
    """Raise ``appends-linearizable`` on the first append answered before another was
    invoked that holds a higher offset than it, or on two answered appends at one offset.
    Returns the number of answered appends."""
    answered = sorted((a for a in appends if a.return_ms is not None), key=lambda a: -a.offset)
    first: Append | None = None  # the first answered among the higher offsets
    previous: Append | None = None
    for append in answered:
        assert append.return_ms is not None
        if previous is not None and previous.offset == append.offset:
            raise InvariantViolation(INVARIANT, f"two appends answered at offset {append.offset}")
        if first is not None and first.return_ms is not None and first.return_ms < append.call_ms:
            raise InvariantViolation(
                INVARIANT,
                f"the append answered at offset {first.offset} (t={first.return_ms} ms) came "
                f"before the append invoked at t={append.call_ms} ms, answered at the lower "
                f"offset {append.offset}",
            )
        if first is None or append.return_ms < (first.return_ms or 0):
            first = append
        previous = append
    return len(answered)


def write_history(appends: list[Append], path: Path) -> Path:
    """The appends as the checker's JSON lines (``faults/linearizable.py``'s fields; times in
    ns of simulated time)."""
    lines = []
    for a in appends:
        ret = None if a.return_ms is None else a.return_ms * 1_000_000
        fields = {"client": 0, "call": a.call_ms * 1_000_000, "kind": "append", "key": ""}
        fields |= {"result": "unknown" if ret is None else "ok", "offset": a.offset}
        lines.append(json.dumps({**fields, "return": ret}, separators=(",", ":")))
    path.write_text("".join(line + "\n" for line in lines))
    return path
