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
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from pykraft.controller.log_listener import MetaLogListener

__all__ = [
    "THRESHOLD_MS",
    "ImageFreezer",
    "freeze_after_long_collections",
    "freeze_from_now_on",
    "stop_freezing",
]

log = logging.getLogger("pykraft.node")
CONTROLLER_LOG = logging.getLogger("pykraft.controller")  # the image is the controller's

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


class ImageFreezer:
    """The controller's image out of the cyclic collector's full collections: once loaded
    from a snapshot, and once replayed up to the high watermark at start, it is as
    long-lived as the process (a full collection would walk it all: some 0.7 s for a million
    partitions, the loop held; bench/bench_snapshot.py). Its records are acyclic: reference
    counting still frees what later records replace. An image a snapshot replaces is handed
    back to the collector once."""

    def __init__(self) -> None:
        self.image_frozen = False  # the image in use holds records and is frozen
        self._refreeze = False  # a snapshot replaces a frozen image: unfreeze, collect
        self._caught_up = False  # replayed up to the high watermark once since the start

    def replacing(self, side_load_cut_short: bool) -> None:
        """A snapshot is being installed: the frozen image in use (or the frozen part a cut
        short side load left behind) goes back to the collector once the new one is in."""
        self._refreeze = self._refreeze or self.image_frozen or side_load_cut_short

    def after_sync(self, listener: MetaLogListener, high_watermark: int) -> bool:
        """Freeze what the last sync loaded or caught up; True when an image was loaded from
        a snapshot (the caller's snapshot policy starts counting afresh)."""
        loaded = listener.loaded is not None
        if loaded:
            CONTROLLER_LOG.info("metadata image loaded from snapshot %s", listener.loaded)
            listener.loaded = None
            if self._refreeze:
                # It replaced a frozen image: that one is handed back to the collector (its
                # controller's cycles would keep it alive). One full collection, on a rare
                # event (a standby that fell behind the leader's log start).
                gc.unfreeze()
                gc.collect()
            self._freeze(listener)
            self._refreeze = False
        if not self._caught_up and listener.position >= high_watermark > 0:
            self._caught_up = True
            self._freeze(listener)
            CONTROLLER_LOG.info(
                "metadata image caught up position=%d; frozen out of full collections",
                listener.position,
            )
        return loaded

    def _freeze(self, listener: MetaLogListener) -> None:
        gc.freeze()
        self.image_frozen = listener.position > 0

    def metric(self) -> tuple[str, str, float]:
        """``pykraft_gc_image_frozen``: 1 once the image in use is frozen."""
        return (
            "pykraft_gc_image_frozen",
            "1 when the metadata image in use is out of the cyclic collector's full "
            "collections (gc.freeze once loaded or replayed), else 0",
            float(self.image_frozen),
        )
