"""Which of a ``Ready``'s messages must wait for the flush (B13).

Messages that tell a peer our log end offset as something it may count -- a Fetch's fetch
offset toward the leader's high watermark, a Vote request's last offset -- wait for the flush
(``Ready.messages_after_flush``). Everything else may leave before it.
"""

from __future__ import annotations

from typing import Final

from pykraft.raft.messages import FetchRequest, Outbound, VoteRequest

FLUSH_GATED: Final = (FetchRequest, VoteRequest)


def split_at_flush(out: list[Outbound]) -> tuple[list[Outbound], list[Outbound]]:
    """(may leave now, must wait for the flush). Order per destination is kept: whatever
    follows a held message to the same destination is held too (a follower's auto-join
    AddRaftVoter must not overtake its Fetch on the in-order connection to the leader, or
    the answer to the Fetch would queue behind an answer that waits for that Fetch)."""
    if len(out) == 1:  # the common case (a follower's one Fetch): no set, no copies
        return ([], out) if isinstance(out[0].body, FLUSH_GATED) else (out, [])
    now: list[Outbound] = []
    later: list[Outbound] = []
    held: set[int] = set()
    for m in out:
        if m.dst in held or isinstance(m.body, FLUSH_GATED):
            held.add(m.dst)
            later.append(m)
        else:
            now.append(m)
    return now, later
