"""Histories of client operations and their linearizability (issue 49 item 3).

Theory of operation. A client records each operation twice: when it invokes it (``invoke``:
the kind, the key it is about, its arguments, a monotonic clock's time) and when the answer
comes (``complete``: the result and its time); an operation whose answer never came (a
timeout, a lost connection, an error that does not say what happened) is completed as
``unknown`` and counts as unanswered: it may or may not have taken effect, at any time after
its invocation. ``History.write`` keeps one JSON line per operation; ``check`` hands the file
to the checker, ``tools/linearize`` (Porcupine, a Go module, built by
``scripts/linearize.sh``), which searches for an order of the operations that respects real
time and the sequential model and answers Ok, Illegal (with the smallest failing sub-history)
or Unknown (out of time). The models (``tools/linearize/models.go``):

* ``metadata``: one topic per key, through CreateTopics, DeleteTopics, CreatePartitions and
  IncrementalAlterConfigs as brokers forward them to the active controller, a broker's
  resend after a dropped connection allowed for (its answer may follow the first attempt's
  effect);
* ``log``: appends to the KRaft log, answered with the offset they were committed at.

Results are Kafka's answers named plainly: ``ok``, ``exists`` (TOPIC_ALREADY_EXISTS),
``unknown_topic`` (UNKNOWN_TOPIC_OR_PARTITION), ``invalid_partitions`` (INVALID_PARTITIONS,
with the count the message names), ``unknown``.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Final

__all__ = ["CHECKER_SCRIPT", "History", "Linearizability", "Operation", "check"]

CHECKER_SCRIPT: Final = Path(__file__).resolve().parents[3] / "scripts" / "linearize.sh"
RESULTS: Final = ("ok", "exists", "unknown_topic", "invalid_partitions", "unknown")


@dataclass(slots=True)
class Operation:
    client: int
    call: int  # ns, a monotonic clock shared by the history's clients
    kind: str  # create_topic, delete_topic, create_partitions, alter_config, append
    key: str
    count: int = 0  # create_topic, create_partitions: the partitions asked for
    value: str = ""  # alter_config: the value set
    result: str = "unknown"
    current: int = -1  # invalid_partitions: the count the answer named
    offset: int = -1  # append: the committed offset of its last record
    ret: int | None = None  # ns; None: never answered

    def line(self) -> str:
        fields = asdict(self)
        fields["return"] = fields.pop("ret")
        return json.dumps(fields, separators=(",", ":"))


@dataclass
class History:
    """Operations of concurrent clients (thread-safe)."""

    operations: list[Operation] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def invoke(
        self, client: int, kind: str, key: str, count: int = 0, value: str = ""
    ) -> Operation:
        op = Operation(client, time.monotonic_ns(), kind, key, count, value)
        with self.lock:
            self.operations.append(op)
        return op

    @staticmethod
    def complete(op: Operation, result: str, current: int = -1, offset: int = -1) -> None:
        if result not in RESULTS:
            raise ValueError(f"not a result: {result}")
        op.ret = None if result == "unknown" else time.monotonic_ns()
        op.result, op.current, op.offset = result, current, offset

    def write(self, path: Path) -> Path:
        with self.lock:
            lines = [op.line() for op in self.operations]
        path.write_text("".join(line + "\n" for line in lines))
        return path


@dataclass(frozen=True)
class Linearizability:
    """The checker's answer."""

    result: str  # Ok, Illegal, Unknown
    operations: int
    keys: int
    failing_key: str | None = None
    failing: tuple[str, ...] = ()  # the smallest failing sub-history, one line per operation
    html: Path | None = None  # Porcupine's drawing of it

    @property
    def ok(self) -> bool:
        return self.result == "Ok"

    def lines(self) -> list[str]:
        head = f"linearizability: {self.result} ({self.operations} operations, {self.keys} keys)"
        if self.failing_key is None:
            return [head]
        lines = [f"{head}; not linearizable: key {self.failing_key}, smallest failing history:"]
        return lines + [f"  {line}" for line in self.failing]


def checker() -> str:
    """The checker's path, built first when its source changed (``scripts/linearize.sh``)."""
    done = subprocess.run(
        [str(CHECKER_SCRIPT), "build"], capture_output=True, text=True, timeout=600
    )
    if done.returncode != 0 or not done.stdout.strip():
        raise RuntimeError(f"the linearizability checker did not build: {done.stderr.strip()}")
    return done.stdout.strip().splitlines()[-1]


def check(history: Path, model: str = "metadata", timeout_s: float = 60.0) -> Linearizability:
    """Check the history file with ``tools/linearize``; a failing key's drawing is written
    beside it (``<history>.html``)."""
    html = history.with_suffix(".html")
    argv = [checker(), "--model", model, "--timeout", f"{timeout_s:.0f}s", "--html", str(html)]
    done = subprocess.run(
        [*argv, str(history)], capture_output=True, text=True, timeout=timeout_s * 20 + 60
    )
    if done.returncode not in (0, 1, 3):
        raise RuntimeError(f"linearize: {done.stderr.strip()}")
    answer = json.loads(done.stdout)
    failing = tuple(_describe(op) for op in answer.get("failing") or ())
    return Linearizability(
        answer["result"],
        answer["operations"],
        answer["keys"],
        answer.get("failing_key"),
        failing,
        html if html.exists() and failing else None,
    )


def _describe(op: dict[str, object]) -> str:
    if op["kind"] == "read_acl":
        args, result = str(op["key"]), f"ACLs for {op.get('value') or 'no one'}"
    elif op["kind"] == "read":
        args, result = str(op["key"]), "unknown"
        if op["result"] == "ok":
            current = op.get("current")
            result = "absent" if current is None or int(str(current)) < 0 else (
                f"{current} partitions, retention.ms={op.get('value') or 'unset'}"
            )  # fmt: skip
    else:
        shown = (op["key"], op.get("count") or "", op.get("value") or "")
        args, result = ", ".join(str(a) for a in shown if a != ""), str(op["result"])
    if op["kind"] == "delete_acl" and op["result"] == "ok":
        result += f" ({op.get('current')} matched)"
    if result == "invalid_partitions" and op.get("current") is not None:
        result += f" (has {op['current']})"
    if op["kind"] == "append" and op.get("offset") is not None:
        result += f" at offset {op['offset']}"
    returned = "never" if op.get("return") is None else f"{op['return']}"
    return f"client {op['client']}: {op['kind']}({args}) -> {result} [{op['call']} .. {returned}]"
