"""Full collections of CPython's cyclic garbage collector kept short on a running node.

Theory of operation. A full (generation 2) collection walks every tracked object that is not
frozen, on the thread that allocated last: the event loop's, so it is held meanwhile. The
controller freezes its image once loaded or replayed (``gc.freeze``, ``controller_host``),
but what requests add afterwards joins the oldest generation and every later full
collection walks it again: 104-111 ms with 100,000 ACLs created through CreateAcls (the
loop held 131 ms in ``bench/bench_authorizer.py``), and the same for topics created by the
thousand.

:func:`freeze_after_long_collections` registers a ``gc.callbacks`` hook: after a full
collection that took at least ``threshold_ms``, what survived it is frozen out of later
ones. Right after a full collection no unreachable cycle is left, so only live objects are
frozen. Acyclic ones (the image's records and parts) are still freed by reference counting
when a later record replaces them; a cycle that becomes garbage while frozen is never
collected, which is why only a long collection freezes: one happens each time about
``threshold_ms`` worth of long-lived objects has accumulated (metadata growth), not in a
steady state, where full collections walk little and stay short.
"""

from __future__ import annotations

import gc
import logging
import time
from typing import Final

__all__ = ["THRESHOLD_MS", "freeze_after_long_collections", "freeze_from_now_on", "stop_freezing"]

log = logging.getLogger("pykraft.node")

THRESHOLD_MS: Final = 20.0  # a full collection this long freezes its survivors


class _Hook:
    def __init__(self, threshold_ms: float) -> None:
        self.threshold_ms = threshold_ms
        self.started = 0.0
        self.freezes = 0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self.started = time.perf_counter()
            return
        took_ms = (time.perf_counter() - self.started) * 1000
        if took_ms >= self.threshold_ms:
            gc.freeze()
            self.freezes += 1
            log.info(
                "a full garbage collection took %.0f ms: what survived it is frozen out of "
                "later ones (%d so far)",
                took_ms,
                self.freezes,
            )


def freeze_after_long_collections(threshold_ms: float = THRESHOLD_MS) -> _Hook:
    """Install the hook (once per process); returns it (``freezes`` counts what it did)."""
    for callback in gc.callbacks:
        if isinstance(callback, _Hook):
            callback.threshold_ms = threshold_ms
            return callback
    hook = _Hook(threshold_ms)
    gc.callbacks.append(hook)
    return hook


def freeze_from_now_on(threshold_ms: float = THRESHOLD_MS) -> _Hook:
    """Freeze what exists now (without a collection), and from now on what survives each
    long full collection."""
    gc.freeze()
    return freeze_after_long_collections(threshold_ms)


def stop_freezing() -> None:
    """Remove the hook (tests)."""
    gc.callbacks[:] = [c for c in gc.callbacks if not isinstance(c, _Hook)]
