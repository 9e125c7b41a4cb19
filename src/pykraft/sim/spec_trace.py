"""The simulator's side of the trace checker (issue 49 item 2): every step of every core
walked through the KRaft specification's rules as it happens.

Theory of operation. ``SpecChecker.attach`` hooks each core the simulator starts with a
``pykraft.raft.spec_steps.SpecRecorder``: its role transitions, appends (own and fetched),
truncations, snapshot loads, high watermark moves and voter-set changes each become one step,
which is written to the simulator's trace (``pykraft sim run --trace``: the kinds of
``spec_steps``) and walked through ``pykraft.spec.SpecState`` at once. A step the rules forbid
stops the run as the violation ``spec:<rule>``. The same rules walk a trace file afterwards
(``check_trace_lines``, ``pykraft sim check-trace``) and real nodes' trace files
(``pykraft dev sim check-trace``, several files merged by time).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pykraft.raft.spec_steps import SpecRecorder
from pykraft.sim.history import InvariantViolation
from pykraft.spec import SpecState, SpecViolation, check_trace_lines

if TYPE_CHECKING:
    from pykraft.raft.api import RaftApi
    from pykraft.raft.types import ReplicaKey

__all__ = ["SpecChecker", "as_invariant", "check_trace_lines"]

Trace = Callable[..., None]


def as_invariant(v: SpecViolation) -> InvariantViolation:
    return InvariantViolation(f"spec:{v.rule}", v.message, v.node)


class SpecChecker:
    """Hooks each core's steps to one ``SpecState``; writes them to the trace."""

    __slots__ = ("_trace", "state")

    def __init__(self, trace: Trace | None) -> None:
        self.state = SpecState()
        self._trace = trace

    def attach(self, node_id: int, key: ReplicaKey, core: RaftApi) -> None:
        state, trace = self.state, self._trace

        def sink(kind: str, details: dict[str, object]) -> None:
            if trace is not None:
                trace(node_id, kind, **details)
            try:
                state.step(node_id, kind, details)
            except SpecViolation as v:
                raise as_invariant(v) from None

        SpecRecorder(key, core, sink)

    def recovered(self, epoch: int, point: int) -> None:
        self.state.recovered(epoch, point)
