"""The simulation trace: one JSON object per line (JSONL), one line per thing that happened.

Field names are stable (a Spark job reads them). Every line has:

* ``t``     -- simulated time in ms
* ``i``     -- index of the event being processed (0 for setup, events count from 1)
* ``node``  -- the node concerned (an int), or null
* ``kind``  -- one of the kinds below

and, by kind:

* ``start``     node started (first start and restarts): ``incarnation``, ``role``, ``epoch``,
                ``voter`` (bool), ``directory_id``
* ``deliver``   a message delivered to ``node``: ``src``, ``msg`` (type name, e.g.
                ``FetchRequest``), ``request_id``, plus the message's scalar fields under their
                own names (``epoch``, ``leader_id``, ``high_watermark``, ``fetch_offset`` ...;
                byte fields appear as ``<name>_bytes`` lengths; replica keys as "id:dir"
                strings; (offset, epoch) pairs as two-element lists)
* ``drop``      a message lost: ``src``, ``dst``, ``msg``, ``reason`` (``blocked``, ``drop``,
                ``link_loss``, ``stale`` (addressed to a previous incarnation or already
                answered/timed out), ``refused`` (destination down))
* ``poll``      a timer fired on ``node``
* ``request_failed``  ``node``'s request to ``dst`` (``request_id``) got no answer
* ``role``      ``node`` changed role, epoch or known leader: ``role``, ``old_role``,
                ``epoch``, ``leader_id``
* ``transition`` every role transition of ``node``'s core, several per event when one input
                causes several (``pykraft.spec`` checks them against the KRaft
                specification's rules): ``replica`` ("id:dir"), ``from``, ``to``,
                ``from_epoch``, ``epoch``, ``leader_id``, ``voted`` ("id:dir" or null)
* ``spec_start``, ``spec_append``, ``spec_truncate``, ``spec_snapshot``, ``spec_hwm``,
  ``spec_voters``  the core's other steps in the specification's terms (a start, an append
                of its own or fetched, a truncation, a snapshot load, a high watermark move,
                a change of the voter set in force), fields as ``pykraft.raft.spec_steps``
                lists them
* ``recovered`` a recovery from a lost majority (``pykraft.sim.majority_loss``): ``seed``,
                ``epoch``, ``point``, ``lost_offsets``, ``survivors``
* ``hwm``       ``node``'s high watermark moved: ``old``, ``new``
* ``commit``    a batch became committed (first seen below a leader's high watermark):
                ``base_offset``, ``next_offset``, ``epoch`` (``node`` is the leader)
* ``append``    the workload appended on leader ``node``: ``epoch``, ``last_offset``,
                ``records``
* ``snapshot``  ``node``'s application created a snapshot: ``offset``, ``epoch``
* ``fault``     a fault injected: ``fault`` (kind), ``targets`` (node ids or [src, dst]
                pairs), ``duration_ms``
* ``heal``      a fault healed: ``fault``, ``targets``
* ``phase``     ``phase``: ``faults`` (start), ``heal`` (faults stop, everything heals),
                ``end``
* ``violation`` ``invariant``, ``message``
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from enum import Enum
from typing import IO

from pykraft.raft.types import OffsetAndEpoch, ReplicaKey


def describe_message(body: object) -> dict[str, object]:
    """The type name and scalar fields of a message, JSON-ready."""
    out: dict[str, object] = {"msg": type(body).__name__}
    for name in getattr(type(body), "__slots__", ()):
        value = getattr(body, name)
        if isinstance(value, bytes):
            out[f"{name}_bytes"] = len(value)
        elif isinstance(value, bool | int | str) or value is None:
            out[name] = int(value) if isinstance(value, Enum) else value
        elif isinstance(value, ReplicaKey):
            out[name] = str(value)
        elif isinstance(value, OffsetAndEpoch):
            out[name] = [value.offset, value.epoch]
        elif isinstance(value, tuple) and all(isinstance(v, ReplicaKey) for v in value):
            out[name] = [str(v) for v in value]
    return out


class TraceWriter:
    """Writes trace lines to a text stream (or any ``str`` sink) and keeps their SHA-256,
    so two runs can be compared byte for byte without storing the trace."""

    __slots__ = ("_sha", "_write", "lines")

    def __init__(self, sink: IO[str] | Callable[[str], object] | None = None) -> None:
        if sink is None:
            self._write: Callable[[str], object] | None = None
        elif callable(sink):
            self._write = sink
        else:
            self._write = sink.write
        self._sha = hashlib.sha256()
        self.lines = 0

    def emit(self, t: int, i: int, node: int | None, kind: str, **details: object) -> None:
        record: dict[str, object] = {"t": t, "i": i, "node": node, "kind": kind}
        record.update(details)
        line = json.dumps(record, separators=(",", ":")) + "\n"
        self._sha.update(line.encode())
        self.lines += 1
        if self._write is not None:
            self._write(line)

    @property
    def sha256(self) -> str:
        return self._sha.hexdigest()
