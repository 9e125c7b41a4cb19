"""``pykraft topics`` (Kafka's kafka-topics.sh) and ``pykraft cluster describe``::

    pykraft topics (--bootstrap-server H:P[,H:P] | --bootstrap-controller H:P[,H:P])
        [--command-config F] [--timeout-ms MS]
        --create --topic T [--partitions N] [--replication-factor R]
                 [--replica-assignment 1:2,2:3] [--config K=V ...] [--if-not-exists]
        --list [--exclude-internal]
        --describe [--topic T] [--exclude-internal] [--under-replicated-partitions]
                   [--unavailable-partitions]
        --delete --topic T [--if-exists]
        --alter --topic T [--partitions N] [--config K=V ...] [--delete-config K ...]

    pykraft cluster describe (--bootstrap-server H:P | --bootstrap-controller H:P)
    pykraft cluster describe --metadata-log-dir DIR     (a stopped controller's data)

The flags and output lines are kafka-topics' (``Created topic T.``, the ``Topic: ..
PartitionCount: ..`` and ``\\tTopic: .. Partition: .. Leader: ..`` lines); ``--alter`` also
takes ``--config``/``--delete-config`` (kafka-configs' job in Kafka). With
``--bootstrap-server`` it talks to brokers, as Kafka's tool does (they forward to the
controller); with ``--bootstrap-controller`` to the controllers' metadata image (the active
controller's), so it also works before any broker runs. Errors are one line on stderr, exit code 1.

``cluster describe`` prints the active controller, the voters, and each registered broker:
id, endpoint, rack, fenced or not; with ``--metadata-log-dir`` (read from the files of a
stopped controller, as kafka-metadata-shell reads them) also each broker's epoch and
incarnation, and the metadata.version.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from pykraft.cli._common import UsageError, add_admin_options, admin_client


def register(sub: Any) -> None:
    parser = sub.add_parser("topics", help="create, list, describe, delete, alter topics")
    add_admin_options(parser)
    action = parser.add_mutually_exclusive_group(required=True)
    for name in ("create", "list", "describe", "delete", "alter"):
        action.add_argument(f"--{name}", action="store_true")
    parser.add_argument("--topic", metavar="T")
    parser.add_argument("--partitions", type=int)
    parser.add_argument("--replication-factor", type=int)
    parser.add_argument("--replica-assignment", metavar="B:B,B:B")
    parser.add_argument("--config", action="append", default=[], metavar="K=V")
    parser.add_argument("--delete-config", action="append", default=[], metavar="K")
    parser.add_argument("--if-not-exists", action="store_true")
    parser.add_argument("--if-exists", action="store_true")
    parser.add_argument("--exclude-internal", action="store_true")
    parser.add_argument("--under-replicated-partitions", action="store_true")
    parser.add_argument("--unavailable-partitions", action="store_true")
    parser.set_defaults(func=_topics)


def _fail(message: object) -> int:
    print(f"pykraft topics: {message}", file=sys.stderr)
    return 1


def _configs(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--config {item!r}: expected KEY=VALUE")
        out[key.strip()] = value
    return out


def _assignment(text: str) -> dict[int, list[int]]:
    """kafka-topics' ``--replica-assignment``: partitions separated by commas, the brokers
    of one partition by colons."""
    out = {}
    for index, part in enumerate(text.split(",")):
        try:
            out[index] = [int(b) for b in part.split(":")]
        except ValueError:
            raise ValueError(f"--replica-assignment {text!r}: not broker ids") from None
    return out


def _topics(args: argparse.Namespace) -> int:
    from pykraft.admin import AdminError

    try:
        configs = _configs(args.config)
    except ValueError as e:
        return _fail(e)
    if (args.create or args.delete or args.alter) and not args.topic:
        return _fail("--topic is required")

    async def go() -> int:
        async with admin_client(args) as admin:
            if args.create:
                return await _create(admin, args, configs)
            if args.list:
                return await _list(admin, args)
            if args.describe:
                return await _describe(admin, args)
            if args.delete:
                return await _delete(admin, args)
            return await _alter(admin, args, configs)

    try:
        return asyncio.run(go())
    except (AdminError, ValueError) as e:
        return _fail(e)


async def _create(admin: Any, args: argparse.Namespace, configs: dict[str, str]) -> int:
    from pykraft.admin.metadata import create_topics
    from pykraft.protocol import ErrorCode

    spec: dict[str, Any] = {"name": args.topic, "configs": configs}
    if args.replica_assignment:
        if args.partitions is not None or args.replication_factor is not None:
            return _fail("--replica-assignment excludes --partitions and --replication-factor")
        spec["assignment"] = _assignment(args.replica_assignment)
    else:
        spec["partitions"] = -1 if args.partitions is None else args.partitions
        spec["replication_factor"] = (
            -1 if args.replication_factor is None else args.replication_factor
        )
    (result,) = await create_topics(admin, [spec])
    if result.error == ErrorCode.topic_already_exists and args.if_not_exists:
        return 0
    if result.error != ErrorCode.none:
        return _fail(f"{result.error.name.upper()}: {result.message}")
    print(f"Created topic {args.topic}.")
    return 0


async def _selected(admin: Any, args: argparse.Namespace) -> list[Any]:
    from pykraft.admin.metadata import topics

    found = await topics(admin, None)
    if args.topic:
        found = [t for t in found if t.name == args.topic]
        if not found:
            raise ValueError(f"Topic '{args.topic}' does not exist as expected")
    if args.exclude_internal:
        found = [t for t in found if not t.internal]
    return found


async def _list(admin: Any, args: argparse.Namespace) -> int:
    for topic in await _selected(admin, args):
        print(topic.name)
    return 0


async def _describe(admin: Any, args: argparse.Namespace) -> int:
    from pykraft.admin.metadata import topic_configs
    from pykraft.storage import uuid_to_kafka

    filtered = args.under_replicated_partitions or args.unavailable_partitions
    for topic in await _selected(admin, args):
        parts = list(topic.partitions)
        if args.under_replicated_partitions:
            parts = [p for p in parts if len(p.isr) < len(p.replicas)]
        if args.unavailable_partitions:
            parts = [p for p in parts if p.leader < 0]
        if not filtered:
            configs = await topic_configs(admin, topic.name)
            explicit = ",".join(f"{k}={v}" for k, (v, default) in configs.items() if not default)
            rf = len(topic.partitions[0].replicas) if topic.partitions else 0
            print(
                f"Topic: {topic.name}\tTopicId: {uuid_to_kafka(topic.topic_id)}\t"
                f"PartitionCount: {len(topic.partitions)}\tReplicationFactor: {rf}\t"
                f"Configs: {explicit}"
            )
        for p in parts:
            leader = str(p.leader) if p.leader >= 0 else "none"
            print(
                f"\tTopic: {topic.name}\tPartition: {p.partition}\tLeader: {leader}\t"
                f"Replicas: {','.join(map(str, p.replicas))}\tIsr: {','.join(map(str, p.isr))}"
                f"\tElr: \tLastKnownElr: "
            )
    return 0


async def _delete(admin: Any, args: argparse.Namespace) -> int:
    from pykraft.admin.metadata import delete_topics
    from pykraft.protocol import ErrorCode

    (result,) = await delete_topics(admin, [args.topic])
    if result.error == ErrorCode.unknown_topic_or_partition:
        if args.if_exists:
            return 0
        return _fail(f"Topic '{args.topic}' does not exist as expected")
    if result.error != ErrorCode.none:
        return _fail(f"{result.error.name.upper()}: {result.message}")
    return 0


async def _alter(admin: Any, args: argparse.Namespace, configs: dict[str, str]) -> int:
    from pykraft.admin.metadata import alter_topic_configs, create_partitions
    from pykraft.protocol import ErrorCode

    if args.partitions is None and not configs and not args.delete_config:
        return _fail("--alter needs --partitions, --config or --delete-config")
    if args.partitions is not None:
        assignment = (
            list(_assignment(args.replica_assignment).values()) if args.replica_assignment else None
        )
        result = await create_partitions(admin, args.topic, args.partitions, assignment)
        if result.error != ErrorCode.none:
            return _fail(f"{result.error.name.upper()}: {result.message}")
    if configs or args.delete_config:
        result = await alter_topic_configs(admin, args.topic, configs, args.delete_config)
        if result.error != ErrorCode.none:
            return _fail(f"{result.error.name.upper()}: {result.message}")
    return 0


def cluster_describe(args: argparse.Namespace) -> int:
    if args.metadata_log_dir is not None:
        if args.bootstrap_server or args.bootstrap_controller:
            raise UsageError("give --metadata-log-dir or a bootstrap option, not both")
        return _describe_files(args.metadata_log_dir)
    from pykraft.admin import AdminError
    from pykraft.admin.metadata import brokers

    async def go() -> tuple[Any, Any]:
        async with admin_client(args) as admin:
            quorum = await admin.describe_quorum()
            _, found = await brokers(admin)
            return quorum, found

    try:
        quorum, found = asyncio.run(go())
    except AdminError as e:
        print(f"pykraft cluster: {e}", file=sys.stderr)
        return 1
    # The quorum's leader: a broker's DescribeCluster names a random broker as controller
    # (KIP-590 hides the controller from clients), the quorum's answer is the truth.
    print(f"ActiveController: {quorum.leader_id}")
    print(f"Controllers: {','.join(str(v.replica_id) for v in quorum.voters)}")
    for b in found:
        state = "fenced" if b.fenced else "unfenced"
        print(f"Broker: {b.broker_id}\tEndpoint: {b.host}:{b.port}\tRack: {b.rack}\tState: {state}")
    return 0


def _describe_files(directory: Path) -> int:
    from pykraft.metadata.image import ImageError
    from pykraft.metadata.serde import MetadataRecordError
    from pykraft.node.controller_host import load_image
    from pykraft.storage import StorageError

    try:
        image = load_image(directory)
    except (ImageError, MetadataRecordError, StorageError, OSError) as e:
        print(f"pykraft cluster: {directory}: {e}", file=sys.stderr)
        return 1
    print(f"MetadataVersion: {image.metadata_version}")
    for c in sorted(image.controllers.values(), key=lambda c: c.controller_id):
        endpoints = ",".join(f"{e.name}://{e.host}:{e.port}" for e in c.endpoints)
        print(f"Controller: {c.controller_id}\tEndpoints: {endpoints}")
    for b in sorted(image.brokers.values(), key=lambda b: b.broker_id):
        endpoints = ",".join(f"{e.name}://{e.host}:{e.port}" for e in b.endpoints)
        state = (
            "fenced"
            if b.fenced
            else "in-controlled-shutdown"
            if b.in_controlled_shutdown
            else "unfenced"
        )
        print(
            f"Broker: {b.broker_id}\tEpoch: {b.epoch}\tIncarnation: {b.incarnation_id}\t"
            f"Endpoints: {endpoints}\tRack: {b.rack}\tState: {state}"
        )
    return 0
