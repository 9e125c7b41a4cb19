"""Metadata clients of a fault run with real Kafka brokers, whose history is checked for
linearizability (issue 49 item 3; ``linearizable.py``).

``CLIENTS`` threads, each with a kafka-python admin client of its own, pick a key (a topic
among ``KEYS``) and an operation at random, a few a second, all through the run's faults:
CreateTopics (1 partition, RF 1: creation does not wait on brokers being up), DeleteTopics,
CreatePartitions (to 2-5 partitions), IncrementalAlterConfigs (``retention.ms`` set to a value
no other operation sets); or a key among ``ACL_KEYS`` (a topic resource no client uses) and
CreateAcls or DeleteAcls of a READ ACL for one of ``PRINCIPALS`` (the brokers and controllers
run Kafka's StandardAuthorizer, with ``allow.everyone.if.no.acl.found``: resources without
ACLs stay open to the workload). Each is recorded on invocation and on its answer
(``History``). At the end ``read_image`` reads every key once from the controllers' committed
image (a topic's partitions and ``retention.ms``; a resource's principals with an ACL), at the
leader's high watermark after every client stopped: a read the model checks like any other
operation. (Reads through the brokers are
not linearizable in Kafka: a broker answers from its own copy of the metadata;
``brokers_disagree`` only reports a lasting difference between them.) Kafka's answers map onto the model's results in ``_result``; any error that does
not say what happened, and every client exception, is ``unknown``.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import re
import threading
import time
from collections.abc import Callable
from typing import Any, Final

from kafka import KafkaAdminClient
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ConfigResource,
    ConfigResourceType,
    NewTopic,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from kafka.errors import KafkaError

from pykraft.faults.cluster import Node
from pykraft.faults.linearizable import History, Operation
from pykraft.metadata.image import TOPIC_RESOURCE, Image
from pykraft.net.client import Connection
from pykraft.protocol import ApiKey
from pykraft.protocol.apis import request_schema
from pykraft.protocol.build import make

__all__ = ["ACL_KEYS", "CLIENTS", "KEYS", "brokers_disagree", "read_image", "run_client"]

CLIENTS: Final = 2
KEYS: Final = ("lin-0", "lin-1", "lin-2")
ACL_KEYS: Final = ("lin-acl-0", "lin-acl-1")
PRINCIPALS: Final = ("User:lin-a", "User:lin-b", "User:lin-c")
_TOPIC_RESOURCE: Final = 2  # Kafka's ResourceType.TOPIC
_LITERAL: Final = 3  # Kafka's PatternType.LITERAL
CONFIG: Final = "retention.ms"
_RESULTS: Final = {0: "ok", 3: "unknown_topic", 36: "exists", 37: "invalid_partitions"}
# INVALID_PARTITIONS' messages name the count the topic has (Kafka's createPartitions).
_HAS: Final = re.compile(r"(?:currently has|already has) (\d+) partition")
_ERROR: Final = re.compile(r"\[Error (\d+)\]")  # kafka-python's str() of an error
_ASK_MS: Final = 3_000
_DYNAMIC_TOPIC_CONFIG: Final = 1  # DescribeConfigs' config_source of a topic's own config
_values = itertools.count(3_600_000)  # retention.ms values, each set once
_values_lock = threading.Lock()


def run_client(
    client: int,
    admin: KafkaAdminClient,
    history: History,
    rng: random.Random,
    stop: threading.Event,
    pause_s: float = 0.4,
) -> None:
    """Operations until ``stop``; returns after a client exception (the caller makes a new
    admin client: its idea of the controller may be stale)."""
    while not stop.wait(pause_s * (0.5 + rng.random())):
        key = rng.choice(KEYS + ACL_KEYS)
        table = _ACL_OPERATIONS if key in ACL_KEYS else _OPERATIONS
        kind, send = table[rng.randrange(len(table))]
        count = 1 if kind == "create_topic" else rng.randint(2, 5)
        value = rng.choice(PRINCIPALS) if key in ACL_KEYS else ""
        if kind == "alter_config":
            with _values_lock:
                value = str(next(_values))
        sized = kind in ("create_topic", "create_partitions")
        op = history.invoke(client, kind, key, count if sized else 0, value)
        try:
            result, current = send(admin, op)
        except KafkaError:
            History.complete(op, "unknown")
            return
        History.complete(op, result, current)


def _result(code: int, message: str | None = None) -> tuple[str, int]:
    result = _RESULTS.get(code, "unknown")
    found = _HAS.search(message or "") if result == "invalid_partitions" else None
    return result, int(found[1]) if found else -1


def _create(admin: KafkaAdminClient, op: Operation) -> tuple[str, int]:
    answer = admin.create_topics([NewTopic(op.key, op.count, 1)], raise_errors=False)
    return _result(_field(_first(answer, "topics"), "error_code"))


def _delete(admin: KafkaAdminClient, op: Operation) -> tuple[str, int]:
    answer = admin.delete_topics([op.key], raise_errors=False)
    return _result(_field(_first(answer, "topics", "responses"), "error_code"))


def _create_partitions(admin: KafkaAdminClient, op: Operation) -> tuple[str, int]:
    answer = admin.create_partitions({op.key: op.count}, raise_errors=False)
    first = _first(answer, "results", "topic_errors")
    return _result(_field(first, "error_code"), _field(first, "error_message"))


def _alter_config(admin: KafkaAdminClient, op: Operation) -> tuple[str, int]:
    resource = ConfigResource(ConfigResourceType.TOPIC, op.key, configs={CONFIG: op.value})
    # (raise_on_unknown would first read the topic's configs from a broker: no reads here)
    answer = admin.alter_configs([resource], raise_on_unknown=False, incremental=True)
    (per_name,) = answer.values()
    said = str(per_name[op.key])  # "OK", or the error as kafka-python writes it
    found = _ERROR.search(said)
    if said != "OK" and found is None:
        raise KafkaError(f"an answer it cannot read: {said}")
    return _result(0 if found is None else int(found[1]))


def _acl(op: Operation) -> ACL:
    """The READ ACL of ``op``'s principal (its value) on ``op``'s topic resource."""
    pattern = ResourcePattern(ResourceType.TOPIC, op.key, ACLResourcePatternType.LITERAL)
    return ACL(op.value, "*", ACLOperation.READ, ACLPermissionType.ALLOW, pattern)


def _create_acl(admin: KafkaAdminClient, op: Operation) -> tuple[str, int]:
    answer = admin.create_acls([_acl(op)])
    if answer.get("succeeded"):
        return "ok", -1
    raise KafkaError(f"CreateAcls failed: {answer.get('failed')}")  # what it did is unknown


def _delete_acl(admin: KafkaAdminClient, op: Operation) -> tuple[str, int]:
    pattern = ResourcePatternFilter(ResourceType.TOPIC, op.key, ACLResourcePatternType.LITERAL)
    flt = ACLFilter(op.value, "*", ACLOperation.READ, ACLPermissionType.ALLOW, pattern)
    # kafka-python answers (filter, the ACLs it matched, the filter's error class); it keeps
    # no per-ACL error, and the controller writes a removal for each ACL it matched.
    ((_, matched, error),) = admin.delete_acls([flt])
    if getattr(error, "errno", 0):
        raise KafkaError(f"DeleteAcls failed: {error.__name__}")
    return "ok", len(matched)


Sender = Callable[[KafkaAdminClient, Operation], tuple[str, int]]
# Each operation's kind (its name in the history) and how it is sent: on a topic key, and on
# an ACL key (a DeleteAcls answer's count is the ACLs it matched).
_OPERATIONS: Final[tuple[tuple[str, Sender], ...]] = (
    ("create_topic", _create),
    ("delete_topic", _delete),
    ("create_partitions", _create_partitions),
    ("alter_config", _alter_config),
)
_ACL_OPERATIONS: Final[tuple[tuple[str, Sender], ...]] = (
    ("create_acl", _create_acl),
    ("delete_acl", _delete_acl),
)


def read_image(image: Image, history: History, client: int, call: int, ret: int) -> None:
    """One read of every key from the controllers' committed image, taken between ``call``
    and ``ret`` (ns): a topic's partitions (``current``; -1 when absent) and its
    ``retention.ms`` as set (``value``; empty when not); an ACL key's principals with an ACL
    on it (``value``, sorted and comma-joined)."""
    for key in KEYS:
        op = history.invoke(client, "read", key)
        topic_id = image.topics_by_name.get(key)
        count = -1 if topic_id is None else len(image.topics[topic_id].partitions)
        op.call, op.value = call, image.configs.get((TOPIC_RESOURCE, key), {}).get(CONFIG, "")
        History.complete(op, "ok", current=count)
        op.ret = ret
    for key in ACL_KEYS:
        op = history.invoke(client, "read_acl", key)
        held = {acl.principal for _, acl in image.acls.on_pattern(_TOPIC_RESOURCE, key, _LITERAL)}
        op.call, op.value = call, ",".join(sorted(held))
        History.complete(op, "ok")
        op.ret = ret


def brokers_disagree(brokers: list[Node], within_s: float = 30.0) -> str:
    """Whether the brokers, each asked on its own connection (Metadata, DescribeConfigs, as a
    client asks) until they give the same answer, still differ on the keys after
    ``within_s``: "" when they agree, else every broker's answer. (A broker answers from its
    own copy of the metadata; Kafka's brokers have been seen to keep a deleted topic's config
    for its next incarnation, beside Kafka 4.3.1's own controllers too: an observation, not
    the controllers' history.)"""
    deadline = time.monotonic() + within_s
    answers: dict[int, dict[str, tuple[int, str]] | None] = {}
    while time.monotonic() < deadline:
        answers = asyncio.run(_ask_all(brokers))
        seen = list(answers.values())
        if seen and all(a is not None and a == seen[0] for a in seen):
            return ""
        time.sleep(1.0)
    return f"the brokers' answers differ after {within_s:.0f} s: {answers}"


async def _ask_all(brokers: list[Node]) -> dict[int, dict[str, tuple[int, str]] | None]:
    found = await asyncio.gather(*(_ask(b) for b in brokers))
    return {b.node_id: answer for b, answer in zip(brokers, found, strict=True)}


async def _ask(broker: Node) -> dict[str, tuple[int, str]] | None:
    """key -> (partitions or -1, retention.ms as set or ""), as ``broker`` answers."""
    try:
        conn = await Connection.open(
            broker.host, broker.port, timeout_ms=_ASK_MS, client_id="pykraft-faults-read"
        )
    except (ConnectionError, TimeoutError, OSError):
        return None
    try:
        metadata: Any = await conn.request(
            make(
                request_schema(ApiKey.METADATA, 12),
                {
                    "topics": [{"topic_id": None, "name": key} for key in KEYS],
                    "allow_auto_topic_creation": False,
                    "include_topic_authorized_operations": False,
                },
            ),
            timeout_ms=_ASK_MS,
        )
        counts = {str(t.name): len(t.partitions) for t in metadata.topics if t.error_code == 0}
        configs: Any = await conn.request(
            make(
                request_schema(ApiKey.DESCRIBE_CONFIGS, 4),
                {
                    "resources": [
                        {"resource_type": 2, "resource_name": k, "configuration_keys": [CONFIG]}
                        for k in counts
                    ],
                    "include_synonyms": False,
                    "include_documentation": False,
                },
            ),
            timeout_ms=_ASK_MS,
        )
    except (ConnectionError, TimeoutError, OSError):
        return None
    finally:
        conn.abort()
    values = {
        str(r.resource_name): str(c.value)
        for r in configs.results
        if r.error_code == 0
        for c in r.configs
        if c.name == CONFIG and c.config_source == _DYNAMIC_TOPIC_CONFIG and c.value is not None
    }
    return {key: (counts.get(key, -1), values.get(key, "")) for key in KEYS}


def _first(answer: Any, *fields: str) -> Any:
    for name in fields:
        items = answer.get(name) if isinstance(answer, dict) else getattr(answer, name, None)
        if items:
            return items[0]
    raise KafkaError(f"an answer without {' or '.join(fields)}: {answer!r}")


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)
