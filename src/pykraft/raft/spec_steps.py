"""One core's steps in the KRaft specification's terms, as trace lines (issue 49 item 2).

Theory of operation. The KRaft TLA+ specifications (``Vanlightly/kafka-tlaplus``) move a
server through role and epoch changes, votes, appends (a leader's own, a follower's from a
Fetch answer), truncations on a diverging epoch, snapshot loads, high watermark advances and
voter-set changes. ``RaftCore`` reports each of them through two hooks: ``on_transition``
(every role change, several per input when one input causes several) and ``on_log`` (every
change of the log, the high watermark and the voter set in force). ``SpecRecorder`` turns
them into one JSON-ready ``(kind, details)`` pair each and hands it to a sink:

* the simulator's sink writes the trace and walks the step through the rules at once
  (``pykraft.spec``, via ``pykraft.sim.spec_trace``);
* a real node's sink appends it to a file (``pykraft.spec.trace.file``,
  ``node/spec_trace_file.py``), which ``pykraft dev sim check-trace`` walks afterwards, with
  the other nodes' files merged by time.

The kinds (every one carries ``replica``, the replica key as "id:directory"):

* ``spec_start``: the core (re)started: ``role``, ``epoch``, ``leader_id``, ``voted``,
  ``log_start``, ``log_end``, ``last_epoch``, ``hwm``, ``voters``;
* ``transition``: ``from``, ``to``, ``from_epoch``, ``epoch``, ``leader_id``, ``voted``;
* ``spec_append``: ``own`` (a leader's append, else a follower's from a Fetch answer), the
  ``role`` and ``epoch`` it happened in, ``batches`` as [base, last offset, epoch, CRC];
* ``spec_truncate``: ``end`` (the new log end); ``spec_snapshot``: ``offset``, ``epoch`` (the
  log now starts at a fetched snapshot);
* ``spec_hwm``: ``hwm``, ``role``, ``epoch``;
* ``spec_voters``: the voter set in force changed: ``offset`` of its record (-1 the bootstrap
  checkpoint, -2 static), ``voters``, ``cause`` (the log step that changed it), ``role``,
  ``epoch``, ``hwm``.

Recording does no I/O and reads only the core: the sink decides where a line goes.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from pykraft.records import scan_batches

if TYPE_CHECKING:
    from pykraft.raft.api import RaftApi
    from pykraft.raft.roles import Role
    from pykraft.raft.types import ReplicaKey
    from pykraft.raft.voters import VoterSet

__all__ = ["Sink", "SpecRecorder", "key_text", "voters_text"]

Sink = Callable[[str, dict[str, object]], None]
_CRC: Final = struct.Struct(">I")
_CRC_AT: Final = 17  # a v2 batch header's CRC: after base offset, length, epoch and magic


def key_text(key: ReplicaKey) -> str:
    return f"{key.id}:{key.directory_id}"


def voters_text(voters: VoterSet) -> list[str]:
    return [key_text(k) for k in voters.keys]


class SpecRecorder:
    """Hooks one core (``attach``) and hands each of its steps to ``sink``."""

    __slots__ = ("_cause", "_chained", "_core", "_replica", "_sink")

    def __init__(self, key: ReplicaKey, core: RaftApi, sink: Sink) -> None:
        self._core = core
        self._replica = key_text(key)
        self._sink = sink
        self._cause = "start"
        self._chained = core.on_transition
        core.on_transition = self._on_transition
        core.on_log = self._on_log
        log = core.log
        voted = core.voted_key
        sink(
            "spec_start",
            {
                "replica": self._replica,
                "role": core.role,
                "epoch": core.epoch,
                "leader_id": core.leader_id,
                "voted": None if voted is None else key_text(voted),
                "log_start": log.start_offset,
                "log_end": log.end_offset,
                "last_epoch": log.last_fetched_epoch(),
                "hwm": core.high_watermark,
                "voters": voters_text(core.voters),
            },
        )

    def _on_transition(self, old: Role, new: Role) -> None:
        key = self._core.local_key
        before, after = old.election(key), new.election(key)
        voted = after.voted_key
        self._sink(
            "transition",
            {
                "replica": self._replica,
                "from": old.name,
                "to": new.name,
                "from_epoch": before.epoch,
                "epoch": after.epoch,
                "leader_id": after.leader_id,
                "voted": None if voted is None else key_text(voted),
            },
        )
        if self._chained is not None:
            self._chained(old, new)

    def _on_log(self, kind: str, offset: int, batches: bytes) -> None:
        core = self._core
        details: dict[str, object] = {"replica": self._replica}
        if kind == "voters":
            details.update(offset=offset, voters=voters_text(core.voters), cause=self._cause)
            details.update(role=core.role, epoch=core.epoch, hwm=core.high_watermark)
            self._sink("spec_voters", details)
            return
        self._cause = kind
        if kind == "hwm":
            details.update(hwm=offset, role=core.role, epoch=core.epoch)
            self._sink("spec_hwm", details)
        elif kind == "truncate":
            details["end"] = offset
            self._sink("spec_truncate", details)
        elif kind == "snapshot":
            details.update(offset=offset, epoch=core.log.last_fetched_epoch())
            self._sink("spec_snapshot", details)
        else:
            spans = scan_batches(batches, verify_crc=False)
            details.update(own=kind == "append", role=core.role, epoch=core.epoch)
            details["batches"] = [
                [s[2], s[3] - 1, s[4], _CRC.unpack_from(batches, s[0] + _CRC_AT)[0]] for s in spans
            ]
            self._sink("spec_append", details)
