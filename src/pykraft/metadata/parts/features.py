"""Finalized features and the ZooKeeper migration state (Kafka's ``FeaturesImage``, replayed as
``FeatureControlManager.replay``).

Theory of operation. A FeatureLevelRecord finalizes one feature at a level; level 0 removes
a feature, except ``metadata.version``, which is never removed. ``epoch`` is the offset of
the last FeatureLevelRecord (ApiVersions' FinalizedFeaturesEpoch). The KIP-866 migration
state (ZkMigrationStateRecord, 0 = NONE) lives here as it does in Kafka's FeaturesImage.
A snapshot writes ``metadata.version`` first, the other features by name, then the migration
state when there is one.
"""

from __future__ import annotations

from collections.abc import Iterator

from pykraft.metadata import records as r
from pykraft.metadata.timeline import NOW, PinnedView, Timeline
from pykraft.metadata.versions import METADATA_VERSION

__all__ = ["FeaturesImage"]


class FeaturesImage:
    """Invariant (``check``): no feature but ``metadata.version`` at level 0."""

    def __init__(self, timeline: Timeline) -> None:
        self._tl = timeline
        self.levels: dict[str, int] = {}
        self.epoch = -1
        self.migration_state = 0

    @property
    def metadata_version(self) -> int | None:
        return self.levels.get(METADATA_VERSION)

    def replay(self, rec: r.FeatureLevelRecord, offset: int) -> None:
        tl = self._tl
        tl.assign(self, "epoch", offset)
        if rec.feature_level == 0 and rec.name != METADATA_VERSION:
            tl.delete(self.levels, rec.name)
        else:
            tl.put(self.levels, rec.name, rec.feature_level)

    def replay_migration(self, rec: r.ZkMigrationStateRecord) -> None:
        self._tl.assign(self, "migration_state", rec.zk_migration_state)

    def records(
        self, view: PinnedView = NOW
    ) -> Iterator[tuple[r.FeatureLevelRecord | r.ZkMigrationStateRecord, int]]:
        levels = dict(view.items(self.levels))
        if METADATA_VERSION in levels:
            yield (
                r.FeatureLevelRecord(name=METADATA_VERSION, feature_level=levels[METADATA_VERSION]),
                0,
            )
        for name, level in sorted(levels.items()):
            if name != METADATA_VERSION:
                yield r.FeatureLevelRecord(name=name, feature_level=level), 0
        migration_state = view.attr(self, "migration_state")
        assert isinstance(migration_state, int)
        if migration_state:
            yield r.ZkMigrationStateRecord(zk_migration_state=migration_state), 0

    def check(self) -> None:
        for name, level in self.levels.items():
            assert level > 0 or name == METADATA_VERSION, (name, level)
