"""What the host tells the controller with each input (:class:`Context`), and the caller of
internal inputs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Protocol

from pykraft.controller.authorization import Caller

__all__ = ["INTERNAL_CALLER", "METADATA_TOPIC", "Context", "Duration", "duration_ms", "forwarded"]


METADATA_TOPIC: Final = "__cluster_metadata"
# The caller of a request that came with none (the simulator, internal writes): forwarded,
# so the connection rules of the token APIs do not apply.
INTERNAL_CALLER: Final = Caller(
    "User:ANONYMOUS", "127.0.0.1", forwarded=True
)  # the quorum's own partition: KIP-642 (raft/)


@dataclass(frozen=True, slots=True)
class Context:
    """What the host tells the controller with each input."""

    now_ms: int
    next_offset: int  # the offset the first returned record will be written at
    kraft_version: int = 0
    # Supported feature ranges of the controllers (by id), for UpdateFeatures.
    controller_features: dict[int, dict[str, tuple[int, int]]] = field(default_factory=dict)
    # Who makes the request (authorization.py); None: an internal input, not authorized.
    caller: Caller | None = None
    # Epoch milliseconds at ``now_ms`` (timestamps users read: delegation tokens); the
    # simulator's clock starts at 0.
    wall_clock_ms: int = 0


def forwarded(ctx: Context) -> bool:
    """The request came through a broker (an Envelope), or is internal."""
    return ctx.caller is None or ctx.caller.forwarded


class Duration(Protocol):
    """A duration field as kio reads it (``i32Timedelta``, a ``timedelta``)."""

    def total_seconds(self) -> float: ...


def duration_ms(value: int | Duration) -> int:
    """Milliseconds of a duration field (kio gives ``timedelta``s; plain values are ms)."""
    if isinstance(value, int):
        return value
    return int(value.total_seconds() * 1000)
