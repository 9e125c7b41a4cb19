"""Walking steps through the rules: one at a time (the simulator), or trace files.

Theory of operation. ``SpecState`` owns the role rules (``roles.py``) and the log rules
(``logs.py``) and routes each step to them by its kind (``pykraft.raft.spec_steps`` lists the
kinds). ``check_trace_lines`` walks one trace (the simulator's, whose other lines it skips);
``check_trace_files`` walks several nodes' files as one history: their lines merged by their
``t`` (a real node writes the host's monotonic clock in nanoseconds, shared by every process
on one machine, taken as the step happens: a step another node's step caused always carries a
later time). The first step the rules forbid is returned with the file and line it came from.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from pykraft.spec.logs import Details, LogRules, num
from pykraft.spec.roles import RoleRules, SpecViolation, Step

__all__ = ["SPEC_KINDS", "SpecState", "check_trace_files", "check_trace_lines"]


@dataclass(slots=True)
class SpecState:
    roles: RoleRules = field(default_factory=RoleRules)
    logs: LogRules = field(default_factory=LogRules)
    steps: int = 0

    def step(self, node: int, kind: str, d: Details) -> None:
        """Walk one step; raises ``SpecViolation`` on a step the rules forbid."""
        self.steps += 1
        if kind == "transition":
            self.roles.check(_transition(node, d))
        elif kind == "spec_start":
            self.roles.started(str(d["replica"]), num(d, "epoch"), node)
        rule = _LOG_RULES.get(kind)
        if rule is not None:
            rule(self.logs, node, d)

    def recovered(self, epoch: int, point: int) -> None:
        """A recovery from a lost majority (the simulator's ``recovered`` line)."""
        self.roles.forget_epochs_from(epoch)
        self.logs.recovered(point)


# The log rules' method for each kind of step (a transition goes to both sets of rules).
_LOG_RULES: Final[dict[str, Callable[[LogRules, int, Details], None]]] = {
    "transition": LogRules.transition,
    "spec_start": LogRules.start,
    "spec_append": LogRules.append,
    "spec_truncate": LogRules.truncate,
    "spec_snapshot": LogRules.snapshot,
    "spec_hwm": LogRules.hwm,
    "spec_voters": LogRules.voters,
}
SPEC_KINDS = frozenset(_LOG_RULES)


def _transition(node: int, d: Details) -> Step:
    voted = d.get("voted")
    return Step(
        node,
        str(d["replica"]),
        str(d["from"]),
        str(d["to"]),
        num(d, "from_epoch"),
        num(d, "epoch"),
        num(d, "leader_id"),
        None if voted is None else str(voted),
    )


def _walk(
    state: SpecState, events: Iterable[tuple[str, dict[str, object]]]
) -> SpecViolation | None:
    for where, event in events:
        kind = str(event.get("kind"))
        try:
            if kind in SPEC_KINDS:
                state.step(num(event, "node"), kind, event)
            elif kind == "recovered":
                state.recovered(num(event, "epoch"), num(event, "point"))
        except SpecViolation as v:
            v.message = f"{where}: {v.message}"
            return v
    return None


def check_trace_lines(lines: Iterable[str]) -> tuple[int, SpecViolation | None]:
    """Walk one trace (JSON lines). Returns the steps walked and the first violation (its
    message names the trace line), or None."""
    state = SpecState()
    events = ((f"trace line {n}", json.loads(line)) for n, line in enumerate(lines, 1))
    violation = _walk(state, events)
    return state.steps, violation


def _lines(path: Path, index: int) -> Iterator[tuple[int, int, int, str, dict[str, object]]]:
    with path.open() as f:
        for number, line in enumerate(f, 1):
            if not line.endswith("\n"):
                break  # a line cut short by a kill: the node wrote no more
            event = json.loads(line)
            yield num(event, "t"), index, number, f"{path.name} line {number}", event


def check_trace_files(paths: Iterable[Path]) -> tuple[int, SpecViolation | None]:
    """Walk several nodes' trace files as one history, merged by time."""
    state = SpecState()
    merged = heapq.merge(*(_lines(p, i) for i, p in enumerate(paths)))
    violation = _walk(state, ((where, event) for _, _, _, where, event in merged))
    return state.steps, violation
