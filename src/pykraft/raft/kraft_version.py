"""The kraft.version feature at the leader: upgrade 0 -> 1 through UpdateFeatures (D10).

The upgrade is allowed only if every voter and every registered observer supports the new
level. The leader learns voters' ranges from UpdateRaftVoter (sent by every voter with
listeners after each leader change, also at kraft.version 0) and its own from its config;
observers' ranges come from each controller's ControllerRegistration (KIP-919), kept in
``VoterChanges.registered_observers``. The KRaftVersion
record and the VotersRecord are then written in one batch (``membership``), through the one
pending voter change, and the answer leaves once that batch commits. Downgrades are refused
with INVALID_UPDATE_VERSION.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from kio.schema.errors import ErrorCode

from pykraft.raft import membership
from pykraft.raft.membership import ChangeOperation, PendingChange, Reply
from pykraft.raft.messages import UpdateFeaturesRequest
from pykraft.raft.types import ReplicaKey

if TYPE_CHECKING:
    from pykraft.raft.context import CoreContext

SUPPORTED_KRAFT_VERSIONS = (0, 1)
OPERATION: Final = ChangeOperation.UPDATE_KRAFT_VERSION


def unsupported_by(core: CoreContext, version: int) -> list[str]:
    """Who does not support ``version`` (or has not told us its range)."""
    low, high = core.config.kraft_versions
    missing = [] if low <= version <= high else [f"leader {core.local_key.id}"]
    for vid, info in core.voters.voters.items():
        if vid == core.local_key.id:
            continue
        reported = core.changes.reported_voters.get(vid)
        if reported is None and core.control.kraft_version >= 1:
            reported = info
        if reported is None:
            missing.append(f"voter {vid} (range unknown: no UpdateRaftVoter yet)")
        elif not reported.min_kraft_version <= version <= reported.max_kraft_version:
            missing.append(f"voter {vid}")
    for oid, (o_low, o_high) in sorted(core.changes.registered_observers.items()):
        if oid in core.voters.voters:
            continue  # a controller that registered and is a voter now: checked above
        if not o_low <= version <= o_high:
            missing.append(f"observer {oid}")
    return missing


def start_update(
    core: CoreContext, version: int, reply: Reply, timeout_ms: int, now_ms: int, validate_only: bool
) -> None:
    current = core.control.kraft_version
    if version < current:
        membership.answer_now(
            core,
            OPERATION,
            reply,
            ErrorCode.invalid_update_version,
            f"kraft.version cannot be downgraded from {current} to {version}",
        )
        return
    if version not in SUPPORTED_KRAFT_VERSIONS:
        membership.answer_now(
            core,
            OPERATION,
            reply,
            ErrorCode.invalid_update_version,
            f"kraft.version {version} is not supported",
        )
        return
    missing = unsupported_by(core, version)
    if missing:
        membership.answer_now(
            core,
            OPERATION,
            reply,
            ErrorCode.invalid_update_version,
            f"kraft.version {version} is not supported by " + ", ".join(missing),
        )
        return
    if version == current or validate_only:
        membership.answer_now(core, OPERATION, reply, ErrorCode.none, None)  # nothing to write
        return
    change = PendingChange(OPERATION, ReplicaKey(core.local_key.id), (), now_ms + timeout_ms, reply)
    change.target_version = version
    membership.start(core, change, now_ms)


def handle_update_features(
    core: CoreContext, src: int, rid: int, body: UpdateFeaturesRequest, now_ms: int
) -> None:
    """A peer's UpdateFeatures for kraft.version, after ``membership.admit_admin_request``."""
    reply = membership.admit_admin_request(core, src, rid, body)
    if reply is not None:
        start_update(core, body.kraft_version, reply, body.timeout_ms, now_ms, body.validate_only)
