"""The metadata image's parts, one per concern, with Kafka's image names where they clash with
the maps they hold: ``FeaturesImage``, ``ClusterImage``, ``TopicsImage``,
``ConfigurationsImage``, ``ProducerIdsImage``, and the ACLs, client quotas, SCRAM credentials
and delegation tokens (``Acls``, ``ClientQuotas``, ``ScramCredentials``,
``DelegationTokens``), with the timeline maps their control managers keep.

Theory of operation. Each part owns the state its records build, the indexes its readers
look things up in, its replay (one method per record type), the records a snapshot writes of
it (``records(view)``, read through a ``PinnedView`` so the snapshot generator can write a
pinned offset in slices) and ``check()``, its invariants, which the simulator runs after
every event. Every change goes through the image's one ``Timeline`` (the role of Kafka's
``SnapshotRegistry``), so the active controller's revert to the committed offset and its
reads at that offset cover the parts as they cover the rest of the image.

``metadata/image.py`` composes the parts and hands each record type to its part
(``_REPLAY``); the one rule that spans two parts (a removed topic's configs go with it) is
the image's. A part imports nothing of the image but the timeline and ``errors.ImageError``,
so it can be read, tested and replaced alone.
"""
