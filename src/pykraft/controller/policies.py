"""Create-topic and alter-config policies as Python plug-ins, in the shape of Kafka's
``org.apache.kafka.server.policy.CreateTopicPolicy`` and ``AlterConfigPolicy``.

Theory of operation. ``create.topic.policy.class.name`` and
``alter.config.policy.class.name`` name a Python class (``package.module:Class`` or
``package.module.Class``; ``node/plugins.py`` loads it at start and refuses a Java class name
with one line). The controller calls its ``validate`` with the request's metadata, as Kafka's
controller calls its policy: for each topic of a CreateTopics (ValidateOnly too) once the topic
passed Kafka's own checks and before any record is written, with the partition count and
replication factor it will have (defaults applied), or with the manual assignment; for each
resource of an AlterConfigs or IncrementalAlterConfigs once its configs passed validation,
with the configs the request alters (None for a deletion) and the caller's principal. A
``PolicyViolation`` raised there refuses that topic or resource with POLICY_VIOLATION and its
message, as Kafka answers a ``PolicyViolationException``; any other exception refuses it with
UNKNOWN_SERVER_ERROR (``policy_checks.py``, where the controller calls them). The controller stays deterministic as long as the policy is (it runs
on every request the active controller handles, never on replay).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

__all__ = [
    "AlterConfigPolicy",
    "AlterConfigRequestMetadata",
    "CreateTopicPolicy",
    "CreateTopicRequestMetadata",
    "PolicyViolation",
]


class PolicyViolation(Exception):
    """Raised by a policy's ``validate``: the request is refused with POLICY_VIOLATION."""


@dataclass(frozen=True, slots=True)
class CreateTopicRequestMetadata:
    """Kafka's ``CreateTopicPolicy.RequestMetadata``: ``num_partitions`` and
    ``replication_factor`` are None when the request assigns replicas itself."""

    topic: str
    num_partitions: int | None
    replication_factor: int | None
    replicas_assignments: dict[int, list[int]] | None
    configs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AlterConfigRequestMetadata:
    """Kafka's ``AlterConfigPolicy.RequestMetadata``: the resource (type code: 2 topic, 4
    broker, ...), the configs the request sets (None: deleted) and who asks."""

    resource_type: int
    resource_name: str
    configs: dict[str, str | None]
    principal: str | None


class CreateTopicPolicy(Protocol):
    def validate(self, request: CreateTopicRequestMetadata) -> None: ...


class AlterConfigPolicy(Protocol):
    def validate(self, request: AlterConfigRequestMetadata) -> None: ...
