"""What a topic config the topic does not set is, as Kafka's controller describes it: the
broker config it falls back to (Kafka 4.4.0's ``ServerTopicConfigSynonyms``, read from the
jar), from this controller's own settings. Kafka's ``ConfigHelper`` builds the topic's
``LogConfig`` over the controller's ``KafkaConfig`` and names the first synonym that has a
value: a dynamic config of this node (DYNAMIC_BROKER_CONFIG), the cluster default
(DYNAMIC_DEFAULT_BROKER_CONFIG), the node's properties file (STATIC_BROKER_CONFIG); with none,
the topic config's default (DEFAULT_CONFIG). Hours and minutes synonyms are converted to
milliseconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from pykraft.metadata.image import BROKER_RESOURCE, Image

__all__ = ["TOPIC_CONFIG_SYNONYMS", "broker_default"]

SOURCE_DYNAMIC_BROKER: Final = 2
SOURCE_DYNAMIC_DEFAULT_BROKER: Final = 3
SOURCE_STATIC_BROKER: Final = 4

_H: Final = 3_600_000  # hours -> ms
_M: Final = 60_000  # minutes -> ms

# topic config -> its broker synonyms in Kafka's order, each with its unit in ms (1: as is).
TOPIC_CONFIG_SYNONYMS: Final[Mapping[str, tuple[tuple[str, int], ...]]] = {
    "segment.bytes": (("log.segment.bytes", 1),),
    "segment.ms": (("log.roll.ms", 1), ("log.roll.hours", _H)),
    "segment.jitter.ms": (("log.roll.jitter.ms", 1), ("log.roll.jitter.hours", _H)),
    "segment.index.bytes": (("log.index.size.max.bytes", 1),),
    "flush.messages": (("log.flush.interval.messages", 1),),
    "flush.ms": (("log.flush.interval.ms", 1), ("log.flush.scheduler.interval.ms", 1)),
    "retention.bytes": (("log.retention.bytes", 1),),
    "retention.ms": (
        ("log.retention.ms", 1),
        ("log.retention.minutes", _M),
        ("log.retention.hours", _H),
    ),
    "max.message.bytes": (("message.max.bytes", 1),),
    "max.decompressed.message.bytes": (("max.decompressed.message.bytes", 1),),
    "index.interval.bytes": (("log.index.interval.bytes", 1),),
    "delete.retention.ms": (("log.cleaner.delete.retention.ms", 1),),
    "min.compaction.lag.ms": (("log.cleaner.min.compaction.lag.ms", 1),),
    "max.compaction.lag.ms": (("log.cleaner.max.compaction.lag.ms", 1),),
    "file.delete.delay.ms": (("log.segment.delete.delay.ms", 1),),
    "min.cleanable.dirty.ratio": (("log.cleaner.min.cleanable.ratio", 1),),
    "cleanup.policy": (("log.cleanup.policy", 1),),
    "unclean.leader.election.enable": (("unclean.leader.election.enable", 1),),
    "min.insync.replicas": (("min.insync.replicas", 1),),
    "compression.type": (("compression.type", 1),),
    "compression.gzip.level": (("compression.gzip.level", 1),),
    "compression.lz4.level": (("compression.lz4.level", 1),),
    "compression.zstd.level": (("compression.zstd.level", 1),),
    "preallocate": (("log.preallocate", 1),),
    "message.timestamp.type": (("log.message.timestamp.type", 1),),
    "message.timestamp.before.max.ms": (("log.message.timestamp.before.max.ms", 1),),
    "message.timestamp.after.max.ms": (("log.message.timestamp.after.max.ms", 1),),
    "local.retention.ms": (("log.local.retention.ms", 1),),
    "local.retention.bytes": (("log.local.retention.bytes", 1),),
    "remote.copy.lag.ms": (("log.remote.copy.lag.ms", 1),),
    "remote.copy.lag.bytes": (("log.remote.copy.lag.bytes", 1),),
}
BROKER_SYNONYMS: Final = frozenset(
    broker for synonyms in TOPIC_CONFIG_SYNONYMS.values() for broker, _ in synonyms
)


def _converted(value: str, unit: int) -> str:
    if unit == 1:
        return value
    try:
        return str(int(value.strip()) * unit)
    except ValueError:
        return value


def broker_default(
    name: str, image: Image, static: Mapping[str, str], node_id: int
) -> tuple[str, int] | None:
    """(value, source) of topic config ``name`` from the broker configs it falls back to, or
    None when none is set (the topic config's own default then, DEFAULT_CONFIG). The value is
    the controller's effective one (its properties overlaid by the cluster default, then by
    this node's dynamic configs; the first synonym set wins, as ``KafkaConfig`` resolves
    ``log.retention.ms`` before ``.minutes`` and ``.hours``); the source is the first layer
    holding any synonym, as ``ConfigHelper`` lists them."""
    synonyms = TOPIC_CONFIG_SYNONYMS.get(name, ())
    layers = (
        (image.configs.get((BROKER_RESOURCE, str(node_id)), {}), SOURCE_DYNAMIC_BROKER),
        (image.configs.get((BROKER_RESOURCE, ""), {}), SOURCE_DYNAMIC_DEFAULT_BROKER),
        (static, SOURCE_STATIC_BROKER),
    )
    source = next((src for configs, src in layers if any(b in configs for b, _ in synonyms)), None)
    if source is None:
        return None
    merged = {**static, **layers[1][0], **layers[0][0]}
    broker, unit = next((b, u) for b, u in synonyms if b in merged)
    return _converted(merged[broker], unit), source
