"""Delegation tokens: the DelegationTokenRecords in force, by token id (Kafka's
``DelegationTokenImage``).

Theory of operation. A token is created, renewed (a new expiration) and expired or
cancelled (RemoveDelegationTokenRecord) by id; the record is kept as written (its HMAC is
never stored: it is derived from the id and the shared secret). Create/Renew/Expire/Describe
DelegationToken read ``by_id``; the dual write mirrors the set to ZooKeeper.
"""

from __future__ import annotations

from collections.abc import Iterator

from pykraft.metadata import records as r
from pykraft.metadata.timeline import NOW, PinnedView, Timeline

__all__ = ["DelegationTokens"]


class DelegationTokens:
    def __init__(self, timeline: Timeline) -> None:
        self._tl = timeline
        self.by_id: dict[str, r.DelegationTokenRecord] = {}

    def __len__(self) -> int:
        return len(self.by_id)

    def replay(self, rec: r.DelegationTokenRecord) -> None:
        self._tl.put(self.by_id, rec.token_id, rec)

    def replay_remove(self, rec: r.RemoveDelegationTokenRecord) -> None:
        self._tl.delete(self.by_id, rec.token_id)

    def records(self, view: PinnedView = NOW) -> Iterator[tuple[r.DelegationTokenRecord, int]]:
        # The order the image wrote when these were kept with the other kinds (by repr).
        for _, rec in sorted(view.items(self.by_id), key=lambda kv: repr(kv[0])):
            yield rec, 0

    def check(self) -> None:
        for token_id, rec in self.by_id.items():
            assert rec.token_id == token_id, token_id
