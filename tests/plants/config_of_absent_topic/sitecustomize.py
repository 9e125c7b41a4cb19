"""Planted bug (tests/plants/README.md): a controller that accepts IncrementalAlterConfigs
for a topic that does not exist (Kafka's controller answers UNKNOWN_TOPIC_OR_PARTITION, its
ConfigResourceExistenceChecker): a deleted topic's config can be set, and a topic created
later under its name starts with it. Every answer is well formed; the fault run's
linearizability check of the metadata clients' history must catch it."""

from __future__ import annotations

from pykraft.controller import configs

_check_resource = configs.check_resource


def _topics_need_not_exist(image, resource_type, name):  # type: ignore[no-untyped-def]
    if resource_type == configs.TOPIC_RESOURCE and name:
        return None
    return _check_resource(image, resource_type, name)


configs.check_resource = _topics_need_not_exist
