"""Which registered controllers an UpdateFeatures must respect, beyond Kafka: a ghost does
not block an upgrade (issue 48 item 6).

Kafka's controller refuses a finalized level that any registered controller does not support
(``QuorumFeatures``), every ControllerRegistration counting. A controller that was stopped for
good keeps its registration, with the feature ranges of its old release, so ``kafka-features
upgrade`` is refused forever after; Kafka 4.4's way out, UnregisterController (KIP-1312),
needs 4.4-IV2, which such a cluster cannot reach. Here a registration counts only while its
controller can still run at the new level: it is a voter (a voter that is down may come back
and must support it), or the active controller saw it fetch within Kafka's observer expiry
(``describe.OBSERVER_EXPIRY_MS``, the observers DescribeQuorum lists). A registration that is
neither -- a ghost -- is left out of the check, and said once in the log.
"""

from __future__ import annotations

import logging

from pykraft.raft.api import RaftApi
from pykraft.raft.describe import active_observers
from pykraft.raft.roles import Leader

__all__ = ["GhostControllers"]

log = logging.getLogger("pykraft.controller")

Features = dict[str, tuple[int, int]]


class GhostControllers:
    """Filters the controllers' feature ranges an UpdateFeatures checks."""

    def __init__(self) -> None:
        self._said: set[int] = set()  # ghosts already named in the log

    def required(
        self, core: RaftApi, controllers: dict[int, Features], own_id: int, now_ms: int
    ) -> dict[int, Features]:
        """``controllers`` without the ghosts (all of them when this node does not lead)."""
        role = core.state
        if not isinstance(role, Leader):
            return controllers
        live = {key.id for key in core.voters.keys} | {own_id}
        live |= {p.key.id for p in active_observers(role, now_ms)}
        for ghost in sorted(set(controllers) - live - self._said):
            self._said.add(ghost)
            log.info(
                "controller %d is registered but neither a voter nor fetching: its supported "
                "features do not limit UpdateFeatures (a ghost registration)",
                ghost,
            )
        return {i: f for i, f in controllers.items() if i in live}
