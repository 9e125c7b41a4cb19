"""The records a controller writes when it becomes active (Kafka's
``ActivationRecordsGenerator``).

Theory of operation. On a log that has metadata.version: an abort of a metadata transaction
left open by the previous active controller, and the KIP-866 records (refuse a migration of
a cluster born in KRaft; finalize one migrated). On an empty log: the bootstrap features
(metadata.version first; the release's defaults when the directory has no bootstrap
checkpoint), the bootstrap checkpoint's other records (SCRAM users of ``storage format
--add-scram``), with ELR on from the start the cluster's ``min.insync.replicas`` as a config
record, and the migration state -- in one metadata transaction from 3.6-IV1.
"""

from __future__ import annotations

from collections.abc import Sequence

from pykraft.controller import migration
from pykraft.controller.config import ControllerConfig
from pykraft.controller.features import elr_safety_records
from pykraft.controller.result import RecordList
from pykraft.metadata import records as r
from pykraft.metadata.image import Image
from pykraft.metadata.serde import MetadataRecord
from pykraft.metadata.versions import (
    ELR_VERSION,
    IBP_3_6_IV1,
    METADATA_VERSION,
    release_features,
)

__all__ = ["activation_records"]


def activation_records(
    image: Image,
    config: ControllerConfig,
    *,
    bootstrap: dict[str, int] | None,
    bootstrap_records: Sequence[MetadataRecord] = (),
) -> RecordList:
    """The records of an activation on ``image``; ``bootstrap``: the bootstrap checkpoint's
    feature levels, ``bootstrap_records`` its other records."""
    records: RecordList = []
    if image.in_transaction:
        records.append((r.AbortTransactionRecord(reason="Controller failover"), 0))
    if image.metadata_version is not None:
        # KIP-866: refuse a migration of a cluster born in KRaft; finalize one migrated.
        records += migration.activation_records(
            image,
            enabled=config.zk_migration_enabled,
            empty_log=False,
            metadata_version=image.metadata_version,
        )
    else:
        # Without a bootstrap checkpoint: the release's default features (Kafka's
        # BootstrapMetadata.fromVersion with the features' defaults).
        features = dict(bootstrap or release_features(config.bootstrap_metadata_version))
        level = features.pop(METADATA_VERSION)
        body: RecordList = [(r.FeatureLevelRecord(name=METADATA_VERSION, feature_level=level), 0)]
        body += [
            (r.FeatureLevelRecord(name=name, feature_level=value), 0)
            for name, value in sorted(features.items())
            if value
        ]
        body += [(rec, 0) for rec in bootstrap_records]
        if features.get(ELR_VERSION, 0) > 0:
            # Kafka's ActivationRecordsGenerator: with ELR from the start, the cluster's
            # min.insync.replicas is a config record (controller/features.py).
            body += elr_safety_records(image, config.min_insync_replicas)
        body += migration.activation_records(
            image,
            enabled=config.zk_migration_enabled,
            empty_log=True,
            metadata_version=level,
        )
        if level >= IBP_3_6_IV1:
            body = [
                (r.BeginTransactionRecord(name="Bootstrap records"), 0),
                *body,
                (r.EndTransactionRecord(), 0),
            ]
        records.extend(body)
    return records
