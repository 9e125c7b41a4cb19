"""Dynamic configs by resource (Kafka's ``ConfigurationsImage``, replayed as
``ConfigurationControlManager.replay``).

Theory of operation. A ConfigRecord sets one config of a resource (type, name), or with a
null value deletes it; a resource left without configs is gone. The name "" of a BROKER
resource is the cluster default. A topic's configs go with the topic: the image calls
``remove_resource`` when it replays the topic's RemoveTopicRecord (Kafka's
ReplicationControlManager deletes them the same way). A snapshot writes every config, by
resource then name.
"""

from __future__ import annotations

from collections.abc import Iterator

from pykraft.metadata import records as r
from pykraft.metadata.timeline import NOW, PinnedView, Timeline

__all__ = ["ConfigResource", "ConfigurationsImage"]

ConfigResource = tuple[int, str]  # (resource type code, resource name)


class ConfigurationsImage:
    """Invariant (``check``): no resource without configs."""

    def __init__(self, timeline: Timeline) -> None:
        self._tl = timeline
        self.by_resource: dict[ConfigResource, dict[str, str]] = {}

    def replay(self, rec: r.ConfigRecord) -> None:
        key = (rec.resource_type, rec.resource_name)
        tl = self._tl
        configs = self.by_resource.get(key)
        if rec.value is None:
            if configs is not None:
                tl.delete(configs, rec.name)
                if not configs:
                    tl.delete(self.by_resource, key)
        elif configs is None:
            tl.put(self.by_resource, key, {rec.name: rec.value})
        else:
            tl.put(configs, rec.name, rec.value)

    def remove_resource(self, resource: ConfigResource) -> None:
        self._tl.delete(self.by_resource, resource)

    def records(self, view: PinnedView = NOW) -> Iterator[tuple[r.ConfigRecord, int]]:
        for (resource_type, resource_name), configs in sorted(view.items(self.by_resource)):
            for name, value in sorted(view.items(configs)):
                yield (
                    r.ConfigRecord(
                        resource_type=resource_type,
                        resource_name=resource_name,
                        name=name,
                        value=value,
                    ),
                    0,
                )

    def check(self) -> None:
        for resource, configs in self.by_resource.items():
            assert configs, resource
