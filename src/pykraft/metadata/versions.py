"""Kafka's ``metadata.version`` levels and the other feature flags a cluster finalizes.

The levels are Kafka's ``MetadataVersion`` (``server-common``; read from the 4.3.1 and 4.4.0
jars): each release adds "IV" (internal version) steps, and a feature level names one. A
release name without an IV ("3.9") means its last IV. Kafka 4.x brokers and controllers run
nothing below 3.3-IV3 (7). Each level says whether it changed the metadata (Kafka's
``didMetadataChange``): a downgrade across such a level could lose records, so it is refused.

The other features (``Feature`` in ``server-common``) each have levels introduced at a
metadata.version (their "bootstrap" level): a cluster formatted or upgraded to a release gets
every feature at the highest level whose bootstrap level it reaches (``default_level``), and a
level may depend on other features (eligible.leader.replicas.version 1 needs metadata.version
4.0-IV1, where the partition records gained the ELR fields).

``storage format`` without ``--release-version`` starts a cluster at
``DEFAULT_METADATA_VERSION``: 4.4-IV2 (33), Kafka 4.4.0's ``LATEST_PRODUCTION``, which is what
Kafka 4.4.0's ``kafka-storage format`` writes when no release is named. As with Kafka's tool,
a cluster whose brokers run an older Kafka is formatted at their release
(``--release-version 4.3`` for 4.3.1 brokers): a broker refuses to register where the
finalized level is above the highest it supports.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

__all__ = [
    "DEFAULT_METADATA_VERSION",
    "ELR_VERSION",
    "FEATURES",
    "FEATURE_SPECS",
    "METADATA_VERSION",
    "MINIMUM_METADATA_VERSION",
    "FeatureSpec",
    "MetadataVersion",
    "broker_registration_features",
    "default_level",
    "dependency_error",
    "metadata_changed_between",
    "metadata_version",
    "parse_release_version",
    "release_features",
    "release_supported_features",
]

METADATA_VERSION: Final = "metadata.version"


@dataclass(frozen=True, slots=True)
class MetadataVersion:
    level: int
    release: str  # "3.9"
    iv: int  # 0 for IV0
    metadata_changed: bool = False  # Kafka's didMetadataChange

    @property
    def name(self) -> str:
        return f"{self.release}-IV{self.iv}"


# (release, IV, level, didMetadataChange), from Kafka 4.4.0's MetadataVersion.
_TABLE: Final = (
    ("3.3", 3, 7, True),
    ("3.4", 0, 8, True),
    ("3.5", 0, 9, False),
    ("3.5", 1, 10, False),
    ("3.5", 2, 11, True),
    ("3.6", 0, 12, False),
    ("3.6", 1, 13, True),
    ("3.6", 2, 14, True),
    ("3.7", 0, 15, True),
    ("3.7", 1, 16, False),
    ("3.7", 2, 17, True),
    ("3.7", 3, 18, False),
    ("3.7", 4, 19, False),
    ("3.8", 0, 20, False),
    ("3.9", 0, 21, False),
    ("4.0", 0, 22, False),
    ("4.0", 1, 23, True),
    ("4.0", 2, 24, False),
    ("4.0", 3, 25, False),
    ("4.1", 0, 26, False),
    ("4.1", 1, 27, False),
    ("4.2", 0, 28, False),
    ("4.2", 1, 29, False),
    ("4.3", 0, 30, True),
    ("4.4", 0, 31, False),
    ("4.4", 1, 32, True),
    ("4.4", 2, 33, True),
)
VERSIONS: Final = tuple(
    MetadataVersion(level, release, iv, changed) for release, iv, level, changed in _TABLE
)
_BY_LEVEL: Final = {v.level: v for v in VERSIONS}
MINIMUM_METADATA_VERSION: Final = _BY_LEVEL[7]
DEFAULT_METADATA_VERSION: Final = _BY_LEVEL[33]  # Kafka 4.4.0's kafka-storage default
# Levels of interest to the controller (the record shapes each one writes).
IBP_3_4_IV0: Final = 8  # ZooKeeper brokers may register (KIP-866 migration)
IBP_3_5_IV2: Final = 11  # SCRAM credentials in the log (UserScramCredentialRecord)
IBP_3_6_IV0: Final = 12  # brokers no longer need a leader epoch bump on every ISR shrink
IBP_3_6_IV1: Final = 13  # Begin/End/AbortTransactionRecord
IBP_3_6_IV2: Final = 14  # delegation tokens in the log (DelegationTokenRecord)
IBP_3_7_IV0: Final = 15  # RegisterControllerRecord, ControllerRegistration
IBP_3_7_IV2: Final = 17  # directory ids in registrations and partitions
IBP_4_0_IV1: Final = 23  # PartitionRecord/PartitionChangeRecord v2 (ELR fields)

IBP_4_1_IV0: Final = 26  # eligible.leader.replicas.version 1 by default
IBP_4_3_IV0: Final = 30  # cordoned log directories (KIP-1066)
IBP_4_4_IV1: Final = 32  # CIDR host patterns in ACLs
IBP_4_4_IV2: Final = 33  # UnregisterController

ELR_VERSION: Final = "eligible.leader.replicas.version"


@dataclass(frozen=True, slots=True)
class FeatureSpec:
    """A feature flag other than metadata.version (Kafka's ``Feature``): for each level above
    0, the metadata.version it is the default from, and what it needs of other features."""

    name: str
    bootstrap: dict[int, int]  # level -> the metadata.version from which it is the default
    needs: dict[int, dict[str, int]]  # level -> {feature: minimum level}

    @property
    def max_level(self) -> int:
        return max(self.bootstrap)


# Feature flags besides metadata.version that a cluster may finalize (0 = the feature off),
# as Kafka 4.4.0 defines them. kraft.version lives in the raft layer. group.version (KIP-848
# consumer groups), transaction.version (KIP-890), share.version (KIP-932 share groups, 2: their
# dead-letter queue) and streams.version (KIP-1071) change only what brokers do;
# eligible.leader.replicas.version (KIP-966) changes the controller's elections
# (``controller/partition_change.py``).
FEATURE_SPECS: Final = {
    spec.name: spec
    for spec in (
        FeatureSpec(ELR_VERSION, {1: 26}, {1: {METADATA_VERSION: 23}}),
        FeatureSpec("group.version", {1: 22}, {}),
        FeatureSpec("share.version", {1: 28, 2: 31}, {}),
        FeatureSpec("streams.version", {1: 29}, {}),
        FeatureSpec("transaction.version", {1: 24, 2: 24}, {}),
    )
}
FEATURES: Final = {name: (0, spec.max_level) for name, spec in FEATURE_SPECS.items()}


def default_level(feature: str, metadata_version: int) -> int:
    """Kafka's ``Feature.defaultLevel``: the highest level of ``feature`` whose bootstrap
    metadata.version ``metadata_version`` reaches (0: off)."""
    spec = FEATURE_SPECS[feature]
    return max((lvl for lvl, mv in spec.bootstrap.items() if mv <= metadata_version), default=0)


def release_features(metadata_version: int) -> dict[str, int]:
    """The finalized features of a release: metadata.version and every other feature at its
    default level, the levels above 0 only (``kafka-storage format --release-version`` and
    ``kafka-features upgrade --release-version``)."""
    out = {METADATA_VERSION: metadata_version}
    for name in sorted(FEATURE_SPECS):
        level = default_level(name, metadata_version)
        if level > 0:
            out[name] = level
    return out


def release_supported_features(metadata_version: int) -> dict[str, tuple[int, int]]:
    """What a broker of the release whose newest level is ``metadata_version`` advertises
    (Kafka's ``BrokerFeatures.defaultSupportedFeatures``): metadata.version from the minimum,
    kraft.version 0-1, and every other feature from 0 to its level in that release, the
    features whose level there is 0 left out (Kafka 4.3.1: ``release_supported_features(30)``).
    Exact for 4.2 and later; 4.0 and 4.1 brokers also advertised features whose default came
    only in a later release (4.0: eligible.leader.replicas.version 0-1)."""
    out = {
        METADATA_VERSION: (MINIMUM_METADATA_VERSION.level, metadata_version),
        "kraft.version": (0, 1),
    }
    for name in sorted(FEATURE_SPECS):
        level = default_level(name, metadata_version)
        if level > 0:
            out[name] = (0, level)
    return out


def broker_registration_features(metadata_version: int) -> list[dict[str, int | str]]:
    """``release_supported_features`` as BrokerRegistration's ``Features`` entries."""
    return [
        {"name": name, "min_supported_version": low, "max_supported_version": high}
        for name, (low, high) in release_supported_features(metadata_version).items()
    ]


def dependency_error(feature: str, level: int, finalized: dict[str, int]) -> str | None:
    """Why ``feature`` cannot be at ``level`` beside the ``finalized`` levels (Kafka's
    ``Feature.validateVersion``), or None."""
    if level <= 0 or feature == METADATA_VERSION:
        return None
    mv = finalized.get(METADATA_VERSION, 0)
    if mv < MINIMUM_METADATA_VERSION.level:
        return f"{feature} {level} needs metadata.version {MINIMUM_METADATA_VERSION.name} or later"
    for name, minimum in FEATURE_SPECS[feature].needs.get(level, {}).items():
        have = finalized.get(name, 0)
        if have < minimum:
            shown = _BY_LEVEL[minimum].name if name == METADATA_VERSION else str(minimum)
            return (
                f"{feature} level {level} depends on {name} level {minimum} ({shown}), "
                f"which would be {have}"
            )
    return None


def metadata_changed_between(low: int, high: int) -> bool:
    """Whether a level in (``low``, ``high``] changed the metadata (Kafka's
    ``checkIfMetadataChanged``): a downgrade from ``high`` to ``low`` could lose records."""
    return any(v.metadata_changed for v in VERSIONS if low < v.level <= high)


def metadata_version(level: int) -> MetadataVersion:
    """The version of ``level``; ``ValueError`` for one Kafka 4.x does not know."""
    try:
        return _BY_LEVEL[level]
    except KeyError:
        raise ValueError(
            f"metadata.version level {level} is not one of {VERSIONS[0].level}.."
            f"{VERSIONS[-1].level} ({VERSIONS[0].name} to {VERSIONS[-1].name})"
        ) from None


_RELEASE: Final = re.compile(r"^(\d+\.\d+)(?:-IV(\d+))?$")


def parse_release_version(text: str) -> MetadataVersion:
    """``--release-version``: "3.9", "3.9-IV0" or "4.0-IV3"; ``ValueError`` otherwise."""
    match = _RELEASE.match(text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not a release version such as 3.9 or 4.0-IV3")
    release, iv = match.group(1), match.group(2)
    candidates = [v for v in VERSIONS if v.release == release]
    if iv is not None:
        candidates = [v for v in candidates if v.iv == int(iv)]
    if not candidates:
        raise ValueError(
            f"unknown release version {text!r}: Kafka 4.x knows "
            f"{VERSIONS[0].name} to {VERSIONS[-1].name}"
        )
    return candidates[-1]
