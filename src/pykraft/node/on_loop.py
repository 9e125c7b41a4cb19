"""A step run on the node's event loop from another thread, with a bound: how the HTTP
endpoint's threads (metrics scrapes, health probes) read the node without ever touching its
state off the loop, and without hanging when the loop is held."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable
from typing import TypeVar

__all__ = ["LoopTimeout", "call_on_loop"]

T = TypeVar("T")


class LoopTimeout(Exception):
    """The node's event loop did not run a posted step within the bound."""


def call_on_loop(loop: asyncio.AbstractEventLoop, fn: Callable[[], T], timeout_s: float) -> T:
    """``fn()`` run on ``loop``'s thread, from another thread; LoopTimeout when the loop
    does not run it within ``timeout_s`` (or is gone)."""
    try:
        if asyncio.get_running_loop() is loop:
            return fn()  # already on the loop (tests)
    except RuntimeError:
        pass
    done: concurrent.futures.Future[T] = concurrent.futures.Future()

    def step() -> None:
        try:
            done.set_result(fn())
        except BaseException as e:  # pragma: no cover - handed to the caller
            done.set_exception(e)

    try:
        loop.call_soon_threadsafe(step)
        return done.result(timeout_s)
    except (RuntimeError, concurrent.futures.TimeoutError):
        raise LoopTimeout from None
