"""Replication throttles managed by the controller during reassignments (KIP-73's configs,
set and removed the way ``kafka-reassign-partitions --throttle`` does by hand).

The policy is one dynamic cluster config, ``reassignment.replication.throttled.rate``
(bytes/s, set on the cluster default broker resource: ``pykraft reassign --throttle`` or any
IncrementalAlterConfigs). While it is set the active controller keeps, after every change, the
throttle configs equal to what the reassignments in flight need, and nothing else:

* on each topic with partitions moving: ``leader.replication.throttled.replicas`` lists
  ``partition:broker`` for the replicas a move copies from (its replicas less the adding
  ones) and ``follower.replication.throttled.replicas`` for the replicas being added;
* on each broker holding such a replica: ``leader.replication.throttled.rate`` and
  ``follower.replication.throttled.rate`` equal to the policy's rate;
* everywhere else these four keys are removed: when a batch completes, when the whole
  reassignment does, when it is cancelled, and after a controller failover (the new active
  controller reconciles from the log). Deleting the policy removes them all.

While the policy is set the controller owns these four keys: a value set on them by hand is
replaced at the next change.
"""

from __future__ import annotations

from typing import Final

from pykraft.metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE, Image
from pykraft.metadata.records import ConfigRecord

__all__ = ["THROTTLE_KEYS", "THROTTLE_POLICY", "desired", "policy", "reconcile"]

THROTTLE_POLICY: Final = "reassignment.replication.throttled.rate"
LEADER_REPLICAS: Final = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS: Final = "follower.replication.throttled.replicas"
LEADER_RATE: Final = "leader.replication.throttled.rate"
FOLLOWER_RATE: Final = "follower.replication.throttled.rate"
TOPIC_KEYS: Final = (LEADER_REPLICAS, FOLLOWER_REPLICAS)
BROKER_KEYS: Final = (LEADER_RATE, FOLLOWER_RATE)
THROTTLE_KEYS: Final = TOPIC_KEYS + BROKER_KEYS

Resource = tuple[int, str]


def policy(image: Image) -> str | None:
    return image.configs.get((BROKER_RESOURCE, ""), {}).get(THROTTLE_POLICY)


def desired(image: Image, rate: str) -> dict[Resource, dict[str, str]]:
    """The throttle configs the reassignments in flight need at ``rate``."""
    leaders: dict[str, list[str]] = {}
    followers: dict[str, list[str]] = {}
    brokers: set[int] = set()
    for topic_id, index in sorted(image.moving):
        p = image.partition(topic_id, index)
        if p is None:
            continue
        name = image.topics[topic_id].name
        sources = [b for b in p.replicas if b not in p.adding]
        leaders.setdefault(name, []).extend(f"{index}:{b}" for b in sources)
        followers.setdefault(name, []).extend(f"{index}:{b}" for b in p.adding)
        brokers.update(p.replicas)
    out: dict[Resource, dict[str, str]] = {}
    for name, entries in leaders.items():
        configs = {LEADER_REPLICAS: ",".join(entries)}
        if followers.get(name):
            configs[FOLLOWER_REPLICAS] = ",".join(followers[name])
        out[(TOPIC_RESOURCE, name)] = configs
    for broker in sorted(brokers):
        out[(BROKER_RESOURCE, str(broker))] = {LEADER_RATE: rate, FOLLOWER_RATE: rate}
    return out


def reconcile(image: Image, rate: str | None) -> list[tuple[ConfigRecord, int]]:
    """ConfigRecords that make the throttle keys equal to ``desired`` (all removed when
    ``rate`` is None)."""
    want = {} if rate is None else desired(image, rate)
    records: list[tuple[ConfigRecord, int]] = []
    resources = set(want)
    for (kind, name), configs in image.configs.items():
        keys = TOPIC_KEYS if kind == TOPIC_RESOURCE else BROKER_KEYS if name else ()
        if kind in (TOPIC_RESOURCE, BROKER_RESOURCE) and any(k in configs for k in keys):
            resources.add((kind, name))
    for kind, name in sorted(resources):
        have = image.configs.get((kind, name), {})
        wanted = want.get((kind, name), {})
        keys = TOPIC_KEYS if kind == TOPIC_RESOURCE else BROKER_KEYS
        for key in keys:
            value = wanted.get(key)
            if have.get(key) != value:
                records.append(
                    (ConfigRecord(resource_type=kind, resource_name=name, name=key, value=value), 0)
                )
    return records
