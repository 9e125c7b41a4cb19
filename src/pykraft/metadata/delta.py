"""What a run of metadata records changed, typed per concern (the shape of Kafka's
``MetadataDelta``: ``TopicsDelta``, ``ConfigurationsDelta``, ``ClusterDelta``,
``ProducerIdsDelta``, ``AclsDelta``, ``DelegationTokenDelta``), at the grain its reader --
KIP-866's dual write, which mirrors these concerns to ZooKeeper -- needs.

Theory of operation. While ``Image.track_changes`` is on, each applied record notes one
:data:`Change` (what it touched, with its offset) in the image's list, on the timeline (a
revert drops the notes of the records it undoes). ``Image.take_changes(upto)`` takes the notes
of the records up to a committed offset and folds them into one :class:`MetadataDelta`:
the topics and config resources touched by name, and for the concerns ZooKeeper holds as a
whole (broker registrations, the producer id block, ACLs, tokens) whether they changed.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from pykraft.metadata import records as r

__all__ = [
    "Change",
    "Concern",
    "ConcernChanged",
    "ConfigChanged",
    "MetadataDelta",
    "TopicChanged",
    "change_of",
]

TOPIC_RESOURCE = 2  # ConfigResource type of a topic


class Concern(enum.Enum):
    """A concern mirrored as a whole."""

    BROKERS = "brokers"  # a registration changed (UpdateMetadata lists the brokers)
    PRODUCER_IDS = "producer_ids"  # the next producer id moved
    ACLS = "acls"  # an ACL was created or removed
    TOKENS = "tokens"  # a delegation token was created, renewed or removed


@dataclass(frozen=True, slots=True)
class TopicChanged:
    offset: int
    name: str  # created, a partition changed, or removed


@dataclass(frozen=True, slots=True)
class ConfigChanged:
    offset: int
    resource: tuple[int, str]  # (resource type, name)


@dataclass(frozen=True, slots=True)
class ConcernChanged:
    offset: int
    concern: Concern


Change = TopicChanged | ConfigChanged | ConcernChanged

_CONCERNS: Final[dict[type, Concern]] = {
    r.RegisterBrokerRecord: Concern.BROKERS,
    r.BrokerRegistrationChangeRecord: Concern.BROKERS,
    r.FenceBrokerRecord: Concern.BROKERS,
    r.UnfenceBrokerRecord: Concern.BROKERS,
    r.UnregisterBrokerRecord: Concern.BROKERS,
    r.ProducerIdsRecord: Concern.PRODUCER_IDS,
    r.AccessControlEntryRecord: Concern.ACLS,
    r.RemoveAccessControlEntryRecord: Concern.ACLS,
    r.DelegationTokenRecord: Concern.TOKENS,
    r.RemoveDelegationTokenRecord: Concern.TOKENS,
}
_TOPIC_RECORDS: Final = (r.PartitionRecord, r.PartitionChangeRecord, r.RemoveTopicRecord)


def change_of(record: Any, offset: int, topic_name: str | None) -> Change | None:
    """What ``record`` (at ``offset``) changes of what the dual write mirrors, if anything;
    ``topic_name``: the name of the topic a partition record or a removal names, as the
    image knew it before the record."""
    if isinstance(record, r.TopicRecord):
        return TopicChanged(offset, record.name)
    if isinstance(record, _TOPIC_RECORDS):
        return None if topic_name is None else TopicChanged(offset, topic_name)
    if isinstance(record, r.ConfigRecord):
        return ConfigChanged(offset, (record.resource_type, record.resource_name))
    concern = _CONCERNS.get(type(record))
    return None if concern is None else ConcernChanged(offset, concern)


@dataclass(frozen=True)
class MetadataDelta:
    """What the records folded in changed. A topic whose config changed counts as changed
    too (``topic_names``: its config znode is written with it)."""

    topics: frozenset[str] = frozenset()
    configs: frozenset[tuple[int, str]] = frozenset()
    producer_ids: bool = False
    brokers: bool = False
    acls: bool = False
    tokens: bool = False

    @classmethod
    def of(cls, changes: Iterable[Change]) -> MetadataDelta:
        topics: set[str] = set()
        configs: set[tuple[int, str]] = set()
        concerns: set[Concern] = set()
        for change in changes:
            if isinstance(change, TopicChanged):
                topics.add(change.name)
            elif isinstance(change, ConfigChanged):
                configs.add(change.resource)
            else:
                concerns.add(change.concern)
        return cls(
            frozenset(topics),
            frozenset(configs),
            producer_ids=Concern.PRODUCER_IDS in concerns,
            brokers=Concern.BROKERS in concerns,
            acls=Concern.ACLS in concerns,
            tokens=Concern.TOKENS in concerns,
        )

    def topic_names(self) -> frozenset[str]:
        return self.topics | {name for kind, name in self.configs if kind == TOPIC_RESOURCE}

    @property
    def empty(self) -> bool:
        """Nothing for ZooKeeper to write (changed registrations go to the brokers only)."""
        return not (self.topics or self.configs or self.producer_ids or self.acls or self.tokens)
