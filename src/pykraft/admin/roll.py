"""Rolling restarts and upgrades of a cluster (issue 47 item 4): the controllers one at a time,
then the brokers one at a time, each only when it is safe, resumable where it stopped.

Theory of operation. The rule is Strimzi's KRaft roller's: a controller is restarted only
when the controllers that stay make a caught-up majority of the voters, which its own
``/health/safe-to-restart`` answers (``node/health.py``); the active controller goes last (one
election instead of one per restart). After a restart the roller waits for the node to be
back: a new process (``/health/live`` answers with another ``incarnation``; from a version
without one, after it was seen not to answer) that is ready
(``/health/ready``: a member of the quorum, caught up with its leader, its image loaded).
A broker is restarted only with no under-replicated partition in the cluster (its controlled
shutdown then moves leadership away without losing an in-sync replica); after a restart the
roller waits for it to have been fenced (it went away) and to be unfenced again, then for
every partition to be fully replicated again. What it waits on is read from the
controllers: DescribeCluster and Metadata, as the active controller's image has them.

A step that is not safe is refused with the reason (:class:`RollRefused`) and nothing is
restarted; the nodes done so far are in the state file, so the same command run again goes on
with the next node. How a node is restarted is the caller's (``restart``, True when it knows
the new process started): ``pykraft roll``
runs an operator's command per node, ``pykraft local roll`` asks a running ``pykraft local
up``, which can also start a controller from another pykraft build (an upgrade).
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TypeVar

from pykraft.admin.client import AdminClient, AdminError
from pykraft.admin.metadata import brokers, topics

__all__ = ["Health", "Node", "RollRefused", "Roller", "ask", "reasons"]

Health = tuple[int | None, dict[str, object]]  # HTTP status (None: no answer), the JSON
POLL_S: Final = 0.25
T = TypeVar("T")


def ask(endpoint: str, check: str, timeout_s: float) -> Health:
    """``/health/<check>`` of ``endpoint``: (status, answer); (None, {reasons}) on no answer."""
    url = f"http://{endpoint}/health/{check}"
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        try:
            return e.code, json.loads(e.read())
        except ValueError:
            return e.code, {"reasons": [f"HTTP {e.code} without a health answer"]}
    except (OSError, ValueError) as e:
        return None, {"reasons": [f"no answer: {e}"]}


def reasons(answer: Health) -> str:
    """The reasons of a health answer, in one line."""
    found = answer[1].get("reasons")
    return "; ".join(str(r) for r in found) if isinstance(found, list) else ""


@dataclass(frozen=True)
class Node:
    kind: str  # "controller" or "broker"
    node_id: int
    health: str = ""  # a controller's metrics.port (host:port), which serves /health/*

    @property
    def key(self) -> str:
        return f"{self.kind}-{self.node_id}"


class RollRefused(Exception):
    """A step that is not safe now: nothing was restarted for it."""


class Roller:
    """Invariant: ``done`` (kept in ``state``) are the nodes restarted and back, in order."""

    def __init__(
        self,
        admin: Callable[[], AdminClient],
        controllers: Sequence[Node],
        brokers_: Sequence[Node],
        restart: Callable[[Node], bool],
        state: Path,
        *,
        say: Callable[[str], None] = print,
        timeout_s: float = 300.0,
    ) -> None:
        self.admin, self.restart, self.state, self.say = admin, restart, state, say
        self.controllers, self.brokers = list(controllers), list(brokers_)
        self.timeout_s = timeout_s
        self.done: list[str] = json.loads(state.read_text())["done"] if state.exists() else []

    def run(self) -> None:
        """Every node not done yet; raises :class:`RollRefused` at an unsafe step."""
        if self.done:
            self.say(f"resuming: {', '.join(self.done)} done before")
        for node in self._controller_order():
            if node.key not in self.done:
                self._roll_controller(node)
        for node in self.brokers:
            if node.key not in self.done:
                self._roll_broker(node)
        self.say(f"rolled {len(self.controllers)} controllers and {len(self.brokers)} brokers")
        self.state.unlink(missing_ok=True)

    # -- controllers ----------------------------------------------------------------------

    def _controller_order(self) -> list[Node]:
        """Followers first, the active controller last."""
        leader = self._sync(lambda admin: admin.describe_quorum()).leader_id
        return sorted(self.controllers, key=lambda n: (n.node_id == leader, n.node_id))

    def _roll_controller(self, node: Node) -> None:
        safe = ask(node.health, "safe-to-restart", 5.0)
        if safe[0] != 200:
            why = reasons(safe)
            raise RollRefused(f"controller {node.node_id} is not safe to restart: {why}")
        before = ask(node.health, "live", 5.0)[1].get("incarnation")
        self.say(f"restarting controller {node.node_id} ({reasons(safe)})")
        # Known to be a new process: the restart says so, or a new incarnation answers (a
        # version without one, from before 0.2: once seen not to answer).
        went = [self.restart(node) or before is not None]

        def back() -> str | None:
            live = ask(node.health, "live", 2.0)
            went[0] = went[0] or live[0] != 200
            now = live[1].get("incarnation")
            if live[0] != 200 or not went[0] or (before is not None and now == before):
                return "its new process to answer"
            ready = ask(node.health, "ready", 2.0)
            return None if ready[0] == 200 else reasons(ready)

        self._wait(back, f"controller {node.node_id} back and caught up")
        self._did(node)

    # -- brokers --------------------------------------------------------------------------

    def _roll_broker(self, node: Node) -> None:
        under = self._under_replicated()
        if under:
            raise RollRefused(
                f"broker {node.node_id} is not safe to restart: {len(under)} partitions are "
                f"under-replicated ({', '.join(under[:5])})"
            )
        self.say(f"restarting broker {node.node_id} (controlled shutdown)")
        self.restart(node)  # known back by its registration, whatever this says
        self._wait(
            lambda: None if self._fenced(node.node_id) else "it to go",
            f"broker {node.node_id} to stop",
        )
        self._wait(
            lambda: "it to register and catch up" if self._fenced(node.node_id) else None,
            f"broker {node.node_id} unfenced again",
        )

        def replicated() -> str | None:
            left = self._under_replicated()
            return (
                f"{len(left)} partitions under-replicated ({', '.join(left[:5])})" if left else None
            )

        self._wait(replicated, "every partition fully replicated")
        self._did(node)

    def _fenced(self, broker_id: int) -> bool:
        """Fenced, or not registered at all."""
        _, found = self._sync(brokers)
        return not any(b.broker_id == broker_id and not b.fenced for b in found)

    def _under_replicated(self) -> list[str]:
        found = self._sync(topics)
        return [
            f"{t.name}-{p.partition}"
            for t in found
            for p in t.partitions
            if len(p.isr) < len(p.replicas)
        ]

    # -- common ---------------------------------------------------------------------------

    def _sync(self, what: Callable[[AdminClient], Awaitable[T]]) -> T:
        """One admin call, on a client of its own."""

        async def go() -> T:
            async with self.admin() as admin:
                return await what(admin)

        return asyncio.run(go())

    def _wait(self, why_not: Callable[[], str | None], what: str) -> None:
        """Until ``why_not()`` is None (an AdminError is "not yet"); RollRefused past the
        timeout, naming the last reason."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                reason = why_not()
            except AdminError as e:
                reason = str(e)
            if reason is None:
                return
            if time.monotonic() > deadline:
                raise RollRefused(
                    f"gave up waiting for {what} after {self.timeout_s:g} s: {reason}"
                )
            time.sleep(POLL_S)

    def _did(self, node: Node) -> None:
        self.done.append(node.key)
        self.state.write_text(json.dumps({"done": self.done}))
        self.say(f"{node.kind} {node.node_id} done")
