"""A restored image written at a lower metadata.version (issue 48 item 5; Kafka never
implemented an unsafe downgrade): ``pykraft metadata restore --release-version``.

Theory of operation. A metadata.version decides which records exist and the version each is
written at. The image (``metadata/image.py``) gives its records whole, as its own level writes
them (``Image.iter_records``); each is encoded at the version the target level writes
(PartitionRecord and RegisterBrokerRecord are the ones that vary) and checked against what that
level can hold, as Kafka's image writer does with its ``handleLoss`` (``ImageWriterOptions``):

* a record type the level predates goes whole: SCRAM credentials before 3.5-IV2, delegation
  tokens before 3.6-IV2, controller registrations before 3.7-IV0, and an ACL whose host is a
  CIDR pattern before 4.4-IV1;
* a field the target version of its record lacks is reset to its default, named: for
  instance a broker's cordoned log directories (RegisterBrokerRecord v4, 4.3-IV0), a
  partition's ELR (PartitionRecord v2, 4.0-IV1) or directories (v1, 3.7-IV2). The codec
  refuses to encode such a field at that version (Kafka's UnsupportedVersionException) and
  names it; every record is also decoded back and compared, so that nothing is lost unnamed;
* metadata.version becomes the target; every other feature above what the target release
  supports is lowered to its highest level there (left out at 0), and with
  eligible.leader.replicas.version off no partition keeps an ELR.

``losses`` lists each of them; the restore refuses a downgrade that loses anything unless
the operator allows it (``--allow-loss``), and the dry run prints the list.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from typing import Any, Final

from pykraft.controller.brokers import register_broker_version
from pykraft.controller.partitions import partition_version
from pykraft.metadata.image import Image
from pykraft.metadata.records import (
    AccessControlEntryRecord,
    DelegationTokenRecord,
    FeatureLevelRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RegisterControllerRecord,
    UserScramCredentialRecord,
)
from pykraft.metadata.serde import decode_record, encode_record
from pykraft.metadata.versions import (
    ELR_VERSION,
    IBP_3_5_IV2,
    IBP_3_6_IV2,
    IBP_3_7_IV0,
    IBP_4_4_IV1,
    METADATA_VERSION,
    metadata_version,
    release_supported_features,
)
from pykraft.schema.runtime import UnsupportedVersionError

__all__ = ["write_at"]

# The metadata.version from which a record type exists (Kafka's MetadataVersion.isXSupported).
_RECORD_SINCE: Final[dict[type, int]] = {
    UserScramCredentialRecord: IBP_3_5_IV2,
    DelegationTokenRecord: IBP_3_6_IV2,
    RegisterControllerRecord: IBP_3_7_IV0,
}
_FIELD_NAME: Final = re.compile(r"^(\w+) is not supported in version")


def write_at(image: Image, target: int) -> tuple[list[bytes], list[str]]:
    """The image's records encoded as ``target`` writes them, and what they lose."""
    losses: list[str] = []
    supported = release_supported_features(target)
    elr_off = supported.get(ELR_VERSION, (0, 0))[1] == 0
    values = []
    for record, version in _records(image, target):
        since = _RECORD_SINCE.get(type(record))
        if since is not None and target < since:
            losses.append(f"{_show(record)}: needs {metadata_version(since).name}")
            continue
        if (
            isinstance(record, AccessControlEntryRecord)
            and "/" in record.host
            and target < IBP_4_4_IV1
        ):
            losses.append(
                f"{_show(record)}: a CIDR host needs {metadata_version(IBP_4_4_IV1).name}"
            )
            continue
        if isinstance(record, FeatureLevelRecord):
            record = _feature(record, target, supported, losses)
            if record is None:
                continue
        if elr_off and isinstance(record, PartitionRecord):
            record = _without_elr(record, losses)
        values.append(_encode(record, version, losses))
    return values, losses


def _records(image: Image, target: int) -> Iterator[tuple[Any, int]]:
    """The image's records as its own level writes them (whole: the image's writer would
    leave out what a lower version lacks without a word), each with the version ``target``
    writes it at."""
    mv = image.metadata_version or target
    versions = {
        PartitionRecord: partition_version(target),
        RegisterBrokerRecord: register_broker_version(target),
    }
    for record, version in image.iter_records(partition_version(mv), register_broker_version(mv)):
        yield record, versions.get(type(record), version)


def _feature(
    record: FeatureLevelRecord,
    target: int,
    supported: dict[str, tuple[int, int]],
    losses: list[str],
) -> FeatureLevelRecord | None:
    if record.name == METADATA_VERSION:
        return dataclasses.replace(record, feature_level=target)
    highest = supported.get(record.name, (0, 0))[1]
    if record.feature_level <= highest:
        return record
    losses.append(
        f"feature {record.name} {record.feature_level} lowered to {highest}: "
        f"{metadata_version(target).name} supports up to {highest}"
    )
    return dataclasses.replace(record, feature_level=highest) if highest > 0 else None


def _without_elr(record: PartitionRecord, losses: list[str]) -> PartitionRecord:
    if not record.eligible_leader_replicas and not record.last_known_elr:
        return record
    losses.append(f"{_show(record)}: its ELR (eligible.leader.replicas.version is off)")
    return dataclasses.replace(record, eligible_leader_replicas=None, last_known_elr=None)


def _encode(record: Any, version: int, losses: list[str]) -> bytes:
    """``record`` at ``version``, each field that version lacks reset to its default and
    named; a field dropped silently (decoded back different) is named too."""
    original = record
    defaults = {f.name: f for f in dataclasses.fields(record)}
    for _ in range(len(defaults)):
        try:
            value = encode_record(record, version)
            break
        except UnsupportedVersionError as e:
            found = _FIELD_NAME.match(str(e))
            name = found and _snake(found[1])
            if name not in defaults:
                raise
            if getattr(record, name):  # an empty list where the default is null is nothing
                losses.append(f"{_show(original)}: {name}")
            record = dataclasses.replace(record, **{name: _default(defaults[name])})
    else:
        raise UnsupportedVersionError(f"{_show(original)} cannot be written at version {version}")
    back, _ = decode_record(value)
    dropped = [
        name
        for name in defaults
        if name != "unknown_tagged_fields" and getattr(back, name) != getattr(record, name)
    ]
    losses.extend(f"{_show(original)}: {name}" for name in dropped)
    return value


def _default(f: dataclasses.Field[Any]) -> object:
    if f.default is not dataclasses.MISSING:
        return f.default
    assert f.default_factory is not dataclasses.MISSING
    return f.default_factory()


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _show(record: Any) -> str:
    """The record's type and what it is about, for the loss list."""
    kind = type(record).__name__
    for names in (
        ("topic_id", "partition_id"),
        ("broker_id",),
        ("controller_id",),
        ("name",),
        ("resource_name", "principal", "host"),
        ("token_id",),
    ):
        if all(hasattr(record, n) for n in names):
            return f"{kind} " + " ".join(str(getattr(record, n)) for n in names)
    return kind
