"""The controller mutation quota (KIP-599): ``controller_mutation_rate`` limits how many
partitions a user / client id may create or delete per second, enforced by the controller
on CreateTopics, DeleteTopics and CreatePartitions (docs/kafka/SECURITY-CONTRACT.md 6.3).

Theory of operation. The rate of a caller is the most specific ``controller_mutation_rate``
quota in the log for its (user, client id), in Kafka's order of precedence (user and client
id, user and default client, user, default user and client id, default user and default
client, default user, client id, default client). Each entity has a token bucket holding at
most ``rate x 11 windows x 1 s`` (Kafka's ``controller.quota.window.num`` and
``.size.seconds``) that refills at ``rate`` per second. Topics are taken in request order:
once the bucket is below zero, each further topic is refused with THROTTLING_QUOTA_EXCEEDED
(strict versions: CreateTopics v6+, DeleteTopics v5+, CreatePartitions v3+); a topic that
drives it below zero is still accepted, as in Kafka. The response's throttle time is how long
the bucket needs to get back to zero. Older versions are never refused.

The buckets live on the active controller only (as Kafka's quota manager does) and use the
controller's clock input, so the simulator replays them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, cast

from kio.schema.errors import ErrorCode

from pykraft.metadata.image import Image
from pykraft.protocol import views

__all__ = ["THROTTLED", "MutationQuotas"]

WINDOW_NUM: Final = 11  # controller.quota.window.num
WINDOW_SIZE_S: Final = 1  # controller.quota.window.size.seconds
KEY: Final = "controller_mutation_rate"
THROTTLED: Final = "The throttling quota has been exceeded."

Entity = tuple[tuple[str, str | None], ...]


def _entities(user: str, client_id: str) -> list[Entity]:
    """Kafka's quota precedence, most specific first."""
    return [
        (("client-id", client_id), ("user", user)),
        (("client-id", None), ("user", user)),
        (("user", user),),
        (("client-id", client_id), ("user", None)),
        (("client-id", None), ("user", None)),
        (("user", None),),
        (("client-id", client_id),),
        (("client-id", None),),
    ]


@dataclass(slots=True)
class _Bucket:
    tokens: float
    last_ms: int


class MutationQuotas:
    """The token buckets of the entities that made mutations."""

    def __init__(self) -> None:
        self._buckets: dict[Entity, _Bucket] = {}

    def rate(self, image: Image, user: str, client_id: str) -> tuple[Entity, float] | None:
        quotas = image.client_quotas
        for entity in _entities(user, client_id):
            value = quotas.value(entity, KEY)
            if value is not None:
                return entity, value
        return None

    def _bucket(self, entity: Entity, rate: float, now_ms: int) -> _Bucket:
        burst = rate * WINDOW_NUM * WINDOW_SIZE_S
        bucket = self._buckets.get(entity)
        if bucket is None:
            bucket = self._buckets[entity] = _Bucket(burst, now_ms)
        bucket.tokens = min(burst, bucket.tokens + rate * max(0, now_ms - bucket.last_ms) / 1000)
        bucket.last_ms = now_ms
        return bucket

    def admit(
        self,
        image: Image,
        user: str,
        client_id: str,
        now_ms: int,
        items: list[object],
        partitions: Callable[[object], int],
        strict: bool,
    ) -> tuple[list[object], list[object], int]:
        """(admitted items, throttled items, throttle time ms) for one request."""
        found = self.rate(image, user, client_id)
        if found is None or found[1] <= 0:
            return items, [], 0
        entity, rate = found
        bucket = self._bucket(entity, rate, now_ms)
        admitted: list[object] = []
        throttled: list[object] = []
        for item in items:
            if strict and bucket.tokens < 0:
                throttled.append(item)
                continue
            bucket.tokens -= partitions(item)
            admitted.append(item)
        throttle_ms = int(-bucket.tokens / rate * 1000) if bucket.tokens < 0 else 0
        return admitted, throttled, throttle_ms


def item_field(api_key: int, request: object) -> str:
    """The request's list of topics."""
    if api_key == 20 and not hasattr(request, "topics"):
        return "topic_names"
    return "topics"


def partitions_of(api_key: int, image: Image, default_partitions: int) -> Callable[[object], int]:
    """How many partitions one topic of the request creates or deletes (an entry of its
    ``item_field``)."""

    def created(item: object) -> int:
        t = cast(views.create_topics.CreatableTopic, item)
        if int(t.num_partitions) > 0:
            return int(t.num_partitions)
        return len(t.assignments) or default_partitions

    def deleted(t: object) -> int:
        name = t if isinstance(t, str) else getattr(t, "name", None)  # a name before v6
        topic_id = image.topics_by_name.get(name) if name else getattr(t, "topic_id", None)
        topic = image.topics.get(topic_id) if topic_id is not None else None
        return 0 if topic is None else len(topic.partitions)

    def added(item: object) -> int:
        t = cast(views.create_partitions.CreatePartitionsTopic, item)
        topic_id = image.topics_by_name.get(t.name)
        current = len(image.topics[topic_id].partitions) if topic_id in image.topics else 0
        return max(0, int(t.count) - current)

    return {19: created, 20: deleted}.get(api_key, added)


THROTTLED_CODE: Final = ErrorCode.throttling_quota_exceeded
