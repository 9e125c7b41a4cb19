"""The core's own cheap self-checks (``RaftCore.check_invariants``), run by the tests and by
the simulator after every event; the simulator's cluster-wide invariants are in
``sim/invariants.py``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pykraft.raft.config import IllegalStateError
from pykraft.raft.roles import Leader

if TYPE_CHECKING:
    from pykraft.raft.context import CoreContext

# What a replica outside the voter set may be: an observer is Unattached or Follower; a
# leader that removed itself (D5) stays Leader until it resigns, and so is a replica whose
# removal is not committed.
_OUTSIDE_THE_VOTERS = ("unattached", "follower", "leader", "resigned")


def check_core(core: CoreContext) -> None:
    """Log offsets ordered, the control records in step with the log, the leader's high
    watermark within its log and at most one VotersRecord above it, observers in the roles
    observers may hold."""
    log = core.log
    assert log.start_offset <= log.flushed_offset <= log.end_offset
    assert core.control.next_offset == log.end_offset, (core.control.next_offset, log)
    qs = core.quorum
    # Durable before it is relied on: a restart must not forget that this key was a voter.
    assert not core.was_voter or qs.store.was_voter()
    role = qs.role
    if isinstance(role, Leader):
        hwm = core.high_watermark
        assert hwm <= log.end_offset
        if hwm > role.epoch_start_offset:
            # One voter change at a time: at most one VotersRecord above the HWM. Only
            # checkable once the leader has committed in its own epoch: before that its
            # HWM (not persisted, learnt again after a restart) may lag records that an
            # earlier leader committed long ago (bug 6 in tests/sim/test_regressions.py,
            # seeds 157 and 929).
            # Offsets strictly increase along the history: the second to last entry
            # below the HWM means at most one above it.
            voters = core.control.voter_history.entries
            assert len(voters) < 2 or voters[-2][0] < hwm, [o for o, _ in voters if o >= hwm]
    if not qs.may_campaign and role.name not in _OUTSIDE_THE_VOTERS:
        raise IllegalStateError(f"observer in role {role.name}")
