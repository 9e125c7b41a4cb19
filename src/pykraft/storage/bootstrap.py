"""``bootstrap.checkpoint``: the features a new cluster starts with, as Kafka's ``kafka-storage
format`` writes them into the metadata log directory (``BootstrapDirectory``).

A snapshot-format file (SnapshotHeader, one batch of FeatureLevelRecords with
``metadata.version`` first, SnapshotFooter; epoch 0, offsets from 0), written tmp + fsync +
rename. The active controller reads it to write its activation records into an empty log;
brokers never use it. Kafka 4.4's format (KIP-1170) writes the same records into the
metadata partition's 0-0 checkpoint instead; they are read from there when there is no
``bootstrap.checkpoint``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from pykraft.metadata.records import FeatureLevelRecord
from pykraft.metadata.serde import MetadataRecordError, decode_record, encode_record
from pykraft.metadata.versions import METADATA_VERSION
from pykraft.records import (
    CorruptRecordError,
    build_batch,
    decode_records,
    iter_batches,
    snapshot_footer_batch,
    snapshot_header_batch,
)
from pykraft.storage._files import StorageError, atomic_write

__all__ = [
    "BOOTSTRAP_FILE",
    "ZERO_CHECKPOINT",
    "read_bootstrap_metadata",
    "read_bootstrap_records",
    "write_bootstrap_metadata",
]

BOOTSTRAP_FILE: Final = "bootstrap.checkpoint"


def write_bootstrap_metadata(
    log_dir: Path, features: dict[str, int], records: Sequence[Any] = ()
) -> Path:
    """Write ``features`` (``metadata.version`` required) as the bootstrap checkpoint, then
    ``records`` (e.g. the UserScramCredentialRecords of ``--add-scram``), as Kafka's
    Formatter does."""
    if METADATA_VERSION not in features:
        raise ValueError("the bootstrap metadata needs metadata.version")
    ordered = [METADATA_VERSION, *sorted(n for n in features if n != METADATA_VERSION)]
    values = [
        encode_record(FeatureLevelRecord(name=name, feature_level=features[name]), 0)
        for name in ordered
    ] + [encode_record(rec, 0) for rec in records]
    now = int(time.time() * 1000)
    data = b"".join(
        (
            snapshot_header_batch(0, 0, now, 0),
            build_batch(1, 0, values, now),
            snapshot_footer_batch(1 + len(values), 0, now),
        )
    )
    path = log_dir / BOOTSTRAP_FILE
    atomic_write(path, data)
    return path


# Kafka 4.4's kafka-storage (KIP-1170) writes no bootstrap.checkpoint on a controller: the
# bootstrap records are the data records of the metadata partition's 0-0 checkpoint.
ZERO_CHECKPOINT: Final = "__cluster_metadata-0/00000000000000000000-0000000000.checkpoint"


def _bootstrap_values(log_dir: Path) -> tuple[Path, list[Any]] | None:
    """The bootstrap records (decoded), from ``bootstrap.checkpoint`` or else, as Kafka 4.4
    formats a controller, from the 0-0 checkpoint when it holds data records; None when
    neither has any."""
    for name in (BOOTSTRAP_FILE, ZERO_CHECKPOINT):
        path = log_dir / name
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            continue
        out: list[Any] = []
        try:
            for header, pos in iter_batches(data):
                if header.is_control:
                    continue
                for record in decode_records(data[pos : pos + header.size]):
                    if record.value is None:
                        raise StorageError(f"{path}: a record without a value")
                    out.append(decode_record(record.value)[0])
        except (CorruptRecordError, MetadataRecordError) as e:
            raise StorageError(f"{path}: {e}") from None
        if out or name == BOOTSTRAP_FILE:
            return path, out
    return None


def read_bootstrap_records(log_dir: Path) -> list[Any]:
    """The bootstrap records other than the features (none without any); the active
    controller writes them into an empty log."""
    found = _bootstrap_values(log_dir)
    if found is None:
        return []
    return [value for value in found[1] if not isinstance(value, FeatureLevelRecord)]


def read_bootstrap_metadata(log_dir: Path) -> dict[str, int] | None:
    """The bootstrap features (None when there are none): ``bootstrap.checkpoint``'s, or
    those Kafka 4.4's format put in the 0-0 checkpoint; a ``StorageError`` names a file that
    is not one."""
    found = _bootstrap_values(log_dir)
    if found is None:
        return None
    path, values = found
    features = {v.name: v.feature_level for v in values if isinstance(v, FeatureLevelRecord)}
    if METADATA_VERSION not in features:
        raise StorageError(f"{path}: no metadata.version")
    return features
