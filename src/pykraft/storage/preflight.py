"""Whether a controller's config can start on its metadata log directory as a quorum member:
the static-to-dynamic conversion's order (issue 48 item 3).

Theory of operation. A quorum is static (kraft.version 0) until ``kraft.version`` is upgraded
to 1, which writes the voter set into the log (a KRaftVersionRecord and a VotersRecord).
Before that the voters exist only in ``controller.quorum.voters``: a controller whose config
drops them for ``controller.quorum.bootstrap.servers`` while its log is still at kraft.version
0 has no voter set at all. Kafka's controllers then loop unattached with ``voters=[]``
(Confluent's guide lists this order among those that crash-loop); pykraft's refuses to start
with what to do instead (``node/storage.py``), and ``pykraft storage preflight`` says so before
the restart. A directory with nothing in it yet (a new controller formatted with
``--no-initial-controllers`` holds kraft.version 1 in its bootstrap checkpoint) is not static:
it learns the voter set from the leader.
"""

from __future__ import annotations

__all__ = ["static_quorum_without_voters"]


def static_quorum_without_voters(
    kraft_version: int | None, holds_records: bool, static_voters: bool
) -> str | None:
    """Why this config cannot start on a directory whose log is at ``kraft_version`` (None:
    no KRaftVersionRecord anywhere) and ``holds_records``; None when it can."""
    if static_voters or (kraft_version or 0) >= 1 or not holds_records:
        return None
    return (
        "this quorum is static (kraft.version 0: its voters are controller.quorum.voters, the "
        "log holds no voter set) and controller.quorum.voters is not set, so this controller "
        "would know no voter at all. Set controller.quorum.voters back as before, start the "
        "controllers, upgrade kraft.version to 1 (pykraft features --bootstrap-controller ... "
        "upgrade --feature kraft.version=1, or kafka-features), then switch each controller to "
        "controller.quorum.bootstrap.servers"
    )
