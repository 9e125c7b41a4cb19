"""Client quotas: the ClientQuotaRecords in force, by entity and key (Kafka's
``ClientQuotasImage``, replayed as ``ClientQuotaControlManager.replay``).

Theory of operation. An entity is a set of (entity type, name) pairs -- user, client-id, ip;
a None name is the type's default -- held here in one order (by type, then name) whatever
order a record lists them in, so a lookup by the controller's entity finds a record Kafka's
controller wrote. A record sets one key of an entity, or with ``remove`` deletes it: the key
is gone (an entity left without keys is gone too), never kept as a 0.0 tombstone. (It was:
a removed user quota then hid the default user's, and tombstones piled up in snapshots:
issue 46.) The mutation quota and AlterClientQuotas read ``value``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from pykraft.metadata import records as r
from pykraft.metadata.timeline import NOW, PinnedView, Timeline

__all__ = ["ClientQuotas", "Entity", "entity_of"]

IP: Final = "ip"
IP_RATE: Final = "connection_creation_rate"
Entity = tuple[tuple[str, str | None], ...]  # ((entity type, name or None = default), ...)


def entity_of(rec: r.ClientQuotaRecord) -> Entity:
    """The record's entity in the part's one order (by type, then name)."""
    pairs = ((str(e.entity_type), e.entity_name) for e in rec.entity)
    return tuple(sorted(pairs, key=lambda pair: (pair[0], pair[1] or "")))


class ClientQuotas:
    """Invariant (``check``): no entity without keys, no record with ``remove`` set."""

    def __init__(self, timeline: Timeline) -> None:
        self._tl = timeline
        self.by_entity: dict[Entity, dict[str, r.ClientQuotaRecord]] = {}
        # Records replayed for an ``ip`` entity (KIP-612 connection rates): a listener's
        # connection quotas are read again when this moves, without a walk otherwise.
        self.ip_changes = 0

    def __len__(self) -> int:
        return sum(len(keys) for keys in self.by_entity.values())

    def replay(self, rec: r.ClientQuotaRecord) -> None:
        tl = self._tl
        entity = entity_of(rec)
        if any(kind == IP for kind, _ in entity):
            tl.assign(self, "ip_changes", self.ip_changes + 1)
        keys = self.by_entity.get(entity)
        if rec.remove:
            if keys is not None:
                tl.delete(keys, rec.key)
                if not keys:
                    tl.delete(self.by_entity, entity)
        elif keys is None:
            tl.put(self.by_entity, entity, {rec.key: rec})
        else:
            tl.put(keys, rec.key, rec)

    def value(self, entity: Entity, key: str) -> float | None:
        keys = self.by_entity.get(entity)
        rec = None if keys is None else keys.get(key)
        return None if rec is None else float(rec.value)

    def ip_rates(self) -> dict[str | None, float]:
        """Each ``ip`` entity's connection_creation_rate (None: the default entity)."""
        return {
            entity[0][1]: float(keys[IP_RATE].value)
            for entity, keys in self.by_entity.items()
            if len(entity) == 1 and entity[0][0] == IP and IP_RATE in keys
        }

    def records(self, view: PinnedView = NOW) -> Iterator[tuple[r.ClientQuotaRecord, int]]:
        # The order the image wrote when these were kept with the other kinds (by repr).
        kept = [
            ((entity, key), rec)
            for entity, keys in view.items(self.by_entity)
            for key, rec in view.items(keys)
        ]
        for _, rec in sorted(kept, key=lambda kv: repr(kv[0])):
            yield rec, 0

    def check(self) -> None:
        for entity, keys in self.by_entity.items():
            assert keys, entity
            for key, rec in keys.items():
                assert not rec.remove and rec.key == key and entity_of(rec) == entity, rec
