"""The image's client-quota part (``metadata/parts/quotas.py``): any sequence of sets and
removals leaves what Kafka's ClientQuotaControlManager leaves (a removal deletes the key, an
entity without keys is gone), whatever order a record lists its entity in; a snapshot of it
replays to the same part."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.metadata import records as r
from pykraft.metadata.image import Image
from pykraft.metadata.parts.quotas import Entity

EntityData = r.client_quota_record.EntityData
ENTITIES: list[Entity] = [
    (("user", "alice"),),
    (("user", None),),
    (("client-id", "app"), ("user", "alice")),
    (("client-id", None),),
]
KEYS = ["controller_mutation_rate", "producer_byte_rate", "request_percentage"]

steps = st.lists(
    st.tuples(
        st.sampled_from(ENTITIES),
        st.sampled_from(KEYS),
        st.integers(1, 5).map(float),
        st.booleans(),  # remove
        st.booleans(),  # the record lists the entity in reverse order
    ),
    max_size=40,
)


def record(
    entity: Entity, key: str, value: float, remove: bool, reverse: bool
) -> r.ClientQuotaRecord:
    pairs = reversed(entity) if reverse else entity
    return r.ClientQuotaRecord(
        entity=tuple(EntityData(entity_type=t, entity_name=n) for t, n in pairs),
        key=key,
        value=0.0 if remove else value,
        remove=remove,
    )


@settings(max_examples=300, deadline=None)
@given(ops=steps)
def test_sets_and_removals_leave_what_kafka_leaves(
    ops: list[tuple[Entity, str, float, bool, bool]],
) -> None:
    image = Image()
    model: dict[Entity, dict[str, float]] = {}  # ClientQuotaControlManager's clientQuotaData
    for offset, (entity, key, value, remove, reverse) in enumerate(ops):
        image.replay(record(entity, key, value, remove, reverse), 0, offset)
        if remove:
            model.get(entity, {}).pop(key, None)
            if entity in model and not model[entity]:
                del model[entity]
        else:
            model.setdefault(entity, {})[key] = value
    quotas = image.client_quotas
    quotas.check()
    for entity in ENTITIES:
        for key in KEYS:
            assert quotas.value(entity, key) == model.get(entity, {}).get(key)
    written = list(quotas.records())
    assert len(written) == sum(len(keys) for keys in model.values())  # no tombstone
    again = Image()
    for offset, (rec, version) in enumerate(written):
        again.replay(rec, version, offset)
    assert again.client_quotas.by_entity == quotas.by_entity
