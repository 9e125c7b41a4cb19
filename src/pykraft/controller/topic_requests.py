"""Topic requests a metadata controller answers: CreateTopics, DeleteTopics and
CreatePartitions. Pure functions of the image (the plans come from ``topics.py``) returning
the records and the response fields, as Kafka's ``ReplicationControlManager`` does."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from pykraft.controller import topics as t
from pykraft.controller.config import ControllerConfig, RandomSource
from pykraft.controller.describe_configs import describe_configs
from pykraft.controller.errors import ApiError, check_op_size, topic_error
from pykraft.controller.partitions import partition_version
from pykraft.controller.policies import CreateTopicRequestMetadata
from pykraft.controller.policy_checks import check_create_topic
from pykraft.controller.result import RecordList
from pykraft.metadata import records as r
from pykraft.metadata.image import TOPIC_RESOURCE, Image
from pykraft.protocol import views
from pykraft.protocol.apis import ApiKey

__all__ = ["create_partitions", "create_topics", "delete_topics"]


def create_topics(
    image: Image,
    config: ControllerConfig,
    rng: RandomSource,
    metadata_version: int,
    request: views.CreateTopicsRequest,
) -> tuple[RecordList, views.CreateTopicsResponse]:
    """CreateTopics: each topic planned against the image (duplicates refused), its configs
    described as Kafka answers them; no records with ValidateOnly."""
    validate_only = bool(getattr(request, "validate_only", False))
    pversion = partition_version(metadata_version)
    check_op_size(sum(_records_of_topic(topic, config.num_partitions) for topic in request.topics))
    names = [topic.name for topic in request.topics]
    duplicates = {n for n in names if names.count(n) > 1}
    records: RecordList = []
    results: list[views.create_topics_response.CreatableTopicResult] = []
    for topic in request.topics:
        name = topic.name
        if name in duplicates:
            results.append(
                topic_error(name, ApiError(ErrorCode.invalid_request, "Duplicate topic name."))
            )
            continue
        try:
            plan = t.plan_topic(
                image,
                config,
                rng,
                name=name,
                num_partitions=int(topic.num_partitions),
                replication_factor=int(topic.replication_factor),
                assignments=[
                    (int(a.partition_index), tuple(int(x) for x in a.broker_ids))
                    for a in topic.assignments
                ],
                configs={c.name: c.value for c in topic.configs},
                version=pversion,
            )
            check_create_topic(config.create_topic_policy, _policy_metadata(topic, plan))
        except ApiError as e:
            results.append(topic_error(name, e))
            continue
        if not validate_only:
            records.extend(plan.records)
        configs = describe_configs(
            _with_topic(image, name, plan.configs), [_TopicResource(name)], config
        )[0]["configs"]
        results.append(
            {
                "name": name,
                "topic_id": plan.topic_id if not validate_only else uuid.UUID(int=0),
                "error_code": 0,
                "error_message": None,
                "num_partitions": plan.num_partitions,
                "replication_factor": plan.replication_factor,
                "configs": [_created_config(c) for c in configs],
            }
        )
    return records, {"throttle_time": 0, "topics": results}


def _policy_metadata(
    topic: views.create_topics.CreatableTopic, plan: t.TopicPlan
) -> CreateTopicRequestMetadata:
    """What create.topic.policy.class.name sees of a topic (Kafka's RequestMetadata): the
    partition count and replication factor it gets, or the manual assignment."""
    if topic.assignments:
        assignments = {
            int(a.partition_index): [int(b) for b in a.broker_ids] for a in topic.assignments
        }
        return CreateTopicRequestMetadata(plan.name, None, None, assignments, dict(plan.configs))
    return CreateTopicRequestMetadata(
        plan.name, plan.num_partitions, plan.replication_factor, None, dict(plan.configs)
    )


def check_deletion_enabled(config: ControllerConfig, api_key: int, version: int) -> None:
    """delete.topic.enable=false refuses a DeleteTopics whole, before its authorization
    (Kafka 4.4.0's ControllerApis.deleteTopics): INVALID_REQUEST below v3."""
    if api_key != ApiKey.DELETE_TOPICS or config.delete_topic_enable:
        return
    if version < 3:
        raise ApiError(ErrorCode.invalid_request, "This version does not support topic deletion.")
    raise ApiError(ErrorCode.topic_deletion_disabled, "Topic deletion is disabled.")


def delete_topics(
    image: Image, version: int, request: views.DeleteTopicsRequest
) -> tuple[RecordList, views.DeleteTopicsResponse]:
    """DeleteTopics by name (v0-5) or by name or id (v6+, not both)."""
    wanted: list[tuple[str | None, uuid.UUID | None]] = []
    if version >= 6:
        wanted = [(topic.name, topic.topic_id) for topic in getattr(request, "topics", ())]
    else:
        wanted = [(name, None) for name in getattr(request, "topic_names", ())]
    records: RecordList = []
    results: list[views.delete_topics_response.DeletableTopicResult] = []
    deleted: set[uuid.UUID] = set()
    for name, topic_id in wanted:
        has_id = topic_id is not None and topic_id.int != 0
        entry: views.delete_topics_response.DeletableTopicResult = {
            "name": name,
            "topic_id": topic_id or uuid.UUID(int=0),
        }
        if has_id and name is not None:
            entry["error_code"] = ErrorCode.invalid_request
            entry["error_message"] = "Either topic name or topic ID must be specified, not both"
        elif has_id:
            assert topic_id is not None
            topic = image.topics.get(topic_id)
            if topic is None:
                entry["error_code"] = ErrorCode.unknown_topic_id
                entry["error_message"] = f"No topic with ID {topic_id}"
            else:
                entry["name"] = topic.name
                entry["error_code"] = 0
        else:
            found = image.topics_by_name.get(name or "")
            if found is None:
                entry["error_code"] = ErrorCode.unknown_topic_or_partition
                entry["error_message"] = "This server does not host this topic-partition."
            else:
                entry["topic_id"] = found
                entry["error_code"] = 0
                topic_id = found
        tid = entry["topic_id"]
        if entry["error_code"] == 0 and tid is not None and tid not in deleted:
            deleted.add(tid)
            records.extend(t.delete_topic(image, tid))
        results.append(entry)
    return records, {"throttle_time": 0, "responses": results}


def create_partitions(
    image: Image, rng: RandomSource, metadata_version: int, request: views.CreatePartitionsRequest
) -> tuple[RecordList, views.CreatePartitionsResponse]:
    """CreatePartitions: new partitions placed as Kafka places them, or as assigned."""
    validate_only = bool(request.validate_only)
    pversion = partition_version(metadata_version)
    check_op_size(sum(_new_partitions_of(image, topic) for topic in request.topics))
    names = [topic.name for topic in request.topics]
    records: RecordList = []
    results: list[views.create_partitions_response.CreatePartitionsTopicResult] = []
    for topic in request.topics:
        try:
            if names.count(topic.name) > 1:
                raise ApiError(ErrorCode.invalid_request, "Duplicate topic name.")
            assignments = (
                None
                if topic.assignments is None
                else [tuple(int(x) for x in a.broker_ids) for a in topic.assignments]
            )
            new = t.new_partitions(
                image,
                rng,
                name=topic.name,
                count=int(topic.count),
                assignments=assignments,
                version=pversion,
            )
            if not validate_only:
                records.extend(new)
            results.append({"name": topic.name, "error_code": 0, "error_message": None})
        except ApiError as e:
            results.append({"name": topic.name, "error_code": e.code, "error_message": e.message})
    return records, {"throttle_time": 0, "results": results}


def _records_of_topic(topic: views.create_topics.CreatableTopic, num_partitions: int) -> int:
    """The records CreateTopics would write for ``topic`` (its TopicRecord, partitions and
    configs), counted before anything is planned (``check_op_size``)."""
    partitions = len(topic.assignments) or int(topic.num_partitions)
    if partitions < 0:
        partitions = num_partitions
    return 1 + partitions + len(topic.configs)


def _new_partitions_of(image: Image, topic: views.create_partitions.CreatePartitionsTopic) -> int:
    """The partitions CreatePartitions would add to ``topic`` (0 for an unknown topic)."""
    topic_id = image.topics_by_name.get(topic.name)
    if topic_id is None:
        return 0
    return max(0, int(topic.count) - len(image.topics[topic_id].partitions))


def _created_config(
    c: views.describe_configs_response.DescribeConfigsResourceResult,
) -> views.create_topics_response.CreatableTopicConfigs:
    """A described config as CreateTopics answers it (without its type)."""
    return {
        "name": c["name"],
        "value": c["value"],
        "read_only": c["read_only"],
        "config_source": c["config_source"],
        "is_sensitive": c["is_sensitive"],
    }


@dataclass(frozen=True, slots=True)
class _TopicResource:
    resource_name: str
    resource_type: int = TOPIC_RESOURCE
    configuration_keys: None = None


def _with_topic(image: Image, name: str, configs: dict[str, str]) -> Image:
    """A view of ``image`` in which topic ``name`` exists with ``configs`` (for describing
    the configs of a topic being created)."""
    view = Image()
    view.replay(r.TopicRecord(name=name, topic_id=uuid.UUID(int=0)), 0, 0)
    for key, value in configs.items():
        config = r.ConfigRecord(
            resource_type=TOPIC_RESOURCE, resource_name=name, name=key, value=value
        )
        view.replay(config, 0, 0)
    return view
