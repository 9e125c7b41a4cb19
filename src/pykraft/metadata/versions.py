"""Kafka's ``metadata.version`` levels and the other feature flags a cluster finalizes.

The levels are Kafka's ``MetadataVersion`` (``server-common``; read from the 4.3.1 jar): each
release adds "IV" (internal version) steps, and a feature level names one. A release name
without an IV ("3.9") means its last IV. Kafka 4.x brokers and controllers run nothing below
3.3-IV3 (7).

pykraft's controller formats new clusters at ``DEFAULT_METADATA_VERSION``: 4.0-IV3 (25), the
newest level every Kafka 4.x broker (4.0 through 4.3) accepts, which also has the record
shapes of 3.7-IV2+ (directory ids) and of 4.0-IV1+ (PartitionRecord/PartitionChangeRecord v2).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

__all__ = [
    "DEFAULT_METADATA_VERSION",
    "FEATURES",
    "METADATA_VERSION",
    "MINIMUM_METADATA_VERSION",
    "MetadataVersion",
    "metadata_version",
    "parse_release_version",
]

METADATA_VERSION: Final = "metadata.version"


@dataclass(frozen=True, slots=True)
class MetadataVersion:
    level: int
    release: str  # "3.9"
    iv: int  # 0 for IV0

    @property
    def name(self) -> str:
        return f"{self.release}-IV{self.iv}"


_TABLE: Final = (
    ("3.3", 3, 7),
    ("3.4", 0, 8),
    ("3.5", 0, 9),
    ("3.5", 1, 10),
    ("3.5", 2, 11),
    ("3.6", 0, 12),
    ("3.6", 1, 13),
    ("3.6", 2, 14),
    ("3.7", 0, 15),
    ("3.7", 1, 16),
    ("3.7", 2, 17),
    ("3.7", 3, 18),
    ("3.7", 4, 19),
    ("3.8", 0, 20),
    ("3.9", 0, 21),
    ("4.0", 0, 22),
    ("4.0", 1, 23),
    ("4.0", 2, 24),
    ("4.0", 3, 25),
    ("4.1", 0, 26),
    ("4.1", 1, 27),
    ("4.2", 0, 28),
    ("4.2", 1, 29),
    ("4.3", 0, 30),
)
VERSIONS: Final = tuple(MetadataVersion(level, release, iv) for release, iv, level in _TABLE)
_BY_LEVEL: Final = {v.level: v for v in VERSIONS}
MINIMUM_METADATA_VERSION: Final = _BY_LEVEL[7]
DEFAULT_METADATA_VERSION: Final = _BY_LEVEL[25]
# Levels of interest to the controller (the record shapes each one writes).
IBP_3_4_IV0: Final = 8  # ZooKeeper brokers may register (KIP-866 migration)
IBP_3_5_IV2: Final = 11  # SCRAM credentials in the log (UserScramCredentialRecord)
IBP_3_6_IV0: Final = 12  # brokers no longer need a leader epoch bump on every ISR shrink
IBP_3_6_IV1: Final = 13  # Begin/End/AbortTransactionRecord
IBP_3_6_IV2: Final = 14  # delegation tokens in the log (DelegationTokenRecord)
IBP_3_7_IV0: Final = 15  # RegisterControllerRecord, ControllerRegistration
IBP_3_7_IV2: Final = 17  # directory ids in registrations and partitions
IBP_4_0_IV1: Final = 23  # PartitionRecord/PartitionChangeRecord v2 (ELR fields)

# Feature flags besides metadata.version that a cluster may finalize, with the range
# pykraft's controller supports (0 = the feature off). kraft.version lives in the raft layer.
# These four change only what brokers do (KIP-848 consumer groups, KIP-890 transactions,
# KIP-932 share groups, KIP-1071 streams groups); eligible.leader.replicas.version (KIP-966)
# changes the controller's elections, which pykraft does not implement: it stays 0.
FEATURES: Final = {
    "group.version": (0, 1),
    "transaction.version": (0, 2),
    "share.version": (0, 1),
    "streams.version": (0, 1),
}


def metadata_version(level: int) -> MetadataVersion:
    """The version of ``level``; ``ValueError`` for one Kafka 4.x does not know."""
    try:
        return _BY_LEVEL[level]
    except KeyError:
        raise ValueError(
            f"metadata.version level {level} is not one of "
            f"{VERSIONS[0].level}..{VERSIONS[-1].level}"
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
