"""SCRAM credentials: the UserScramCredentialRecords in force, by (user, mechanism) (Kafka's
``ScramImage``).

Theory of operation. A credential is upserted whole (salt, stored and server keys,
iterations; never the password) and removed by (user, mechanism). The record is kept as
written, unknown tagged fields included, so a snapshot writes it back byte for byte. The
listener's SASL/SCRAM login reads ``credential`` (Kafka's ScramPublisher); AlterUserScram-
Credentials reads it to refuse the deletion of a credential that does not exist.
"""

from __future__ import annotations

from collections.abc import Iterator

from pykraft.metadata import records as r
from pykraft.metadata.timeline import NOW, PinnedView, Timeline

__all__ = ["ScramCredentials"]


class ScramCredentials:
    def __init__(self, timeline: Timeline) -> None:
        self._tl = timeline
        self.by_user: dict[tuple[str, int], r.UserScramCredentialRecord] = {}

    def __len__(self) -> int:
        return len(self.by_user)

    def replay(self, rec: r.UserScramCredentialRecord) -> None:
        self._tl.put(self.by_user, (rec.name, rec.mechanism), rec)

    def replay_remove(self, rec: r.RemoveUserScramCredentialRecord) -> None:
        self._tl.delete(self.by_user, (rec.name, rec.mechanism))

    def credential(self, user: str, mechanism: int) -> r.UserScramCredentialRecord | None:
        return self.by_user.get((user, mechanism))

    def records(self, view: PinnedView = NOW) -> Iterator[tuple[r.UserScramCredentialRecord, int]]:
        # The order the image wrote when these were kept with the other kinds (by repr).
        for _, rec in sorted(view.items(self.by_user), key=lambda kv: repr(kv[0])):
            yield rec, 0

    def check(self) -> None:
        for (user, mechanism), rec in self.by_user.items():
            assert (rec.name, rec.mechanism) == (user, mechanism), (user, mechanism)
