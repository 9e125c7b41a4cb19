"""The metadata image's parts, one per concern: Kafka's ``AclsImage``, ``ScramImage``,
``DelegationTokenImage`` and ``ClientQuotasImage``, with the timeline maps their control
managers keep (``AclControlManager``, ``ScramControlManager``, ...).

Theory of operation. Each part owns the state its records build, the indexes its readers
look things up in, its replay (one method per record type), the records a snapshot writes of
it (``records(view)``, read through a ``PinnedView`` so the snapshot generator can write a
pinned offset in slices) and ``check()``, its invariants, which the simulator runs after
every event. Every change goes through the image's one ``Timeline`` (the role of Kafka's
``SnapshotRegistry``), so the active controller's revert to the committed offset and its
reads at that offset cover the parts as they cover the rest of the image.

``metadata/image.py`` composes the parts and hands each record type to its part
(``Image._REPLAY``). A part imports nothing of the image but the timeline, so it can be
read, tested and replaced alone. What is not a part yet (features, cluster, topics,
configs, producer ids) is still in ``Image`` itself (issue 45).
"""
