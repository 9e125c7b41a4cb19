"""Planted bug (tests/plants/README.md): a replica that starts canvassing with pre-votes bumps
its epoch (KIP-996 asks pre-votes in the current epoch, so that a replica that cannot win
disturbs nobody), and the core's own transition table is widened to allow it, as a change
that "fixed" the IllegalStateError would. No safety invariant breaks and the core's
self-check passes; the specification's trace rules (``pykraft.sim.spec_trace``) catch it."""

from __future__ import annotations

from pykraft.raft import roles, state


class _Bumped(roles.Prospective):
    __slots__ = ()

    def __init__(self, epoch, *args, **kwargs):  # type: ignore[no-untyped-def]
        super().__init__(epoch + 1, *args, **kwargs)


state.Prospective = _Bumped
for _targets in state.TRANSITIONS.values():
    if "prospective" in _targets:
        _targets["prospective"] = _targets["prospective"] | {state.NEXT, state.HIGHER}
