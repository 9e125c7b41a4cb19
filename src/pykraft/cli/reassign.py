"""``pykraft reassign``: Kafka's kafka-reassign-partitions against the controllers, with
KIP-435's limits and controller-managed throttles::

    pykraft reassign (--bootstrap-server H:P[,H:P] | --bootstrap-controller H:P[,H:P])
        [--command-config F] [--timeout-ms MS]
        --generate --topics-to-move-json-file F --broker-list 4,5,6
        --execute --reassignment-json-file F [--additional] [--throttle BYTES/S]
                  [--replica-count R] [--partition-count P] [--leader-movements L]
                  [--replica-movements M]
        --verify --reassignment-json-file F
        --cancel --reassignment-json-file F
        --list
        --describe

The files and the lines printed are Kafka's tool's (the plan JSON ``{"version":1,
"partitions":[{"topic":..,"partition":..,"replicas":[..],"log_dirs":[..]}]}``, "Successfully
started partition reassignments for t-0,t-1", "Reassignment of partition t-0 is completed.",
...). Differences, because the controllers do the work Kafka's tool does by hand:

* ``--throttle`` sets ``reassignment.replication.throttled.rate``; the active controller then
  keeps the KIP-73 throttle configs equal to what the moves in flight need and removes them
  as batches, reassignments or cancels complete (``controller/throttles.py``), so ``--verify``
  has nothing to clear.
* ``--replica-count``/``--partition-count``/``--leader-movements``/``--replica-movements``
  set KIP-435's cluster-wide limits (``reassignment.parallel.*``,
  ``reassignment.max.concurrent.replica.movements``) before the plan is submitted; they apply
  from the next step of every reassignment.
* ``--describe`` prints each moving partition's final target and the step in flight
  (ListPartitionReassignments v1), the limits and the throttle. How many bytes a new replica
  is behind is known to the brokers, not to the controllers: Kafka's
  ``kafka-log-dirs --describe`` against a broker shows it.
* log_dirs other than "any" (moves between a broker's directories) are refused: that is the
  brokers' AlterReplicaLogDirs, for Kafka's tool with ``--bootstrap-server``.

Errors are one line on stderr, exit code 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from pykraft.cli._common import add_admin_options, admin_client

Partition = tuple[str, int]

CANNOT_EXECUTE = (
    "Cannot execute because there is an existing partition assignment.  Use --additional to "
    "override this and create a new partition assignment in addition to the existing one."
)
LIMIT_OPTIONS = {
    "replica_count": "reassignment.parallel.replica.count",
    "partition_count": "reassignment.parallel.partition.count",
    "leader_movements": "reassignment.parallel.leader.movements",
    "replica_movements": "reassignment.max.concurrent.replica.movements",
}
THROTTLE_POLICY = "reassignment.replication.throttled.rate"


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "reassign", help="move partitions between brokers (kafka-reassign-partitions)"
    )
    add_admin_options(parser)
    action = parser.add_mutually_exclusive_group(required=True)
    for name in ("generate", "execute", "verify", "cancel", "list", "describe"):
        action.add_argument(f"--{name}", action="store_true")
    parser.add_argument("--reassignment-json-file", type=Path, metavar="FILE")
    parser.add_argument("--topics-to-move-json-file", type=Path, metavar="FILE")
    parser.add_argument("--broker-list", metavar="B,B,...")
    parser.add_argument("--additional", action="store_true")
    parser.add_argument("--throttle", type=int, metavar="BYTES/S")
    for option in LIMIT_OPTIONS:
        parser.add_argument(f"--{option.replace('_', '-')}", type=int, metavar="N")
    parser.set_defaults(func=_reassign)


def _fail(message: object) -> int:
    print(f"pykraft reassign: {message}", file=sys.stderr)
    return 1


def _name(p: Partition) -> str:
    return f"{p[0]}-{p[1]}"


def parse_plan(text: str) -> dict[Partition, tuple[int, ...]]:
    """A reassignment JSON file (Kafka's format), checked as Kafka's tool checks it."""
    try:
        data = json.loads(text)
        entries = data["partitions"]
        plan_list = [
            ((str(e["topic"]), int(e["partition"])), tuple(int(b) for b in e["replicas"]), e)
            for e in entries
        ]
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"not a reassignment JSON file: {e}") from None
    if not plan_list:
        raise ValueError("Partition reassignment list cannot be empty")
    if any(not replicas for _, replicas, _ in plan_list):
        raise ValueError("Partition replica list cannot be empty")
    keys = [key for key, _, _ in plan_list]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise ValueError(
            "Partition reassignment contains duplicate topic partitions: "
            + ",".join(_name(k) for k in twice)
        )
    duplicates = [
        f"{_name(key)} contains multiple entries for "
        + ",".join(str(b) for b in sorted({b for b in replicas if replicas.count(b) > 1}))
        for key, replicas, _ in plan_list
        if len(set(replicas)) != len(replicas)
    ]
    if duplicates:
        raise ValueError(
            "Partition replica lists may not contain duplicate entries: " + ". ".join(duplicates)
        )
    for key, _, entry in plan_list:
        dirs = entry.get("log_dirs")
        if dirs is not None and any(d != "any" for d in dirs):
            raise ValueError(
                f'{_name(key)}: log_dirs other than "any" move replicas between a broker\'s '
                "directories (AlterReplicaLogDirs, a broker API): use Kafka's tool with "
                "--bootstrap-server for those"
            )
    return {key: replicas for key, replicas, _ in plan_list}


def plan_json(plan: dict[Partition, tuple[int, ...]]) -> str:
    """Kafka's ``formatAsReassignmentJson``."""
    return json.dumps(
        {
            "version": 1,
            "partitions": [
                {
                    "topic": topic,
                    "partition": index,
                    "replicas": list(replicas),
                    "log_dirs": ["any"] * len(replicas),
                }
                for (topic, index), replicas in sorted(plan.items())
            ],
        },
        separators=(",", ":"),
    )


def generate(
    current: dict[Partition, tuple[int, ...]], brokers: list[int]
) -> dict[Partition, tuple[int, ...]]:
    """Each partition's replicas spread over ``brokers`` round robin, keeping its replication
    factor (partition p of a topic starts at broker p mod n, as Kafka's assignment does with
    a start index of 0)."""
    out = {}
    for (topic, index), replicas in sorted(current.items()):
        rf = len(replicas)
        if rf > len(brokers):
            raise ValueError(
                f"Replication factor: {rf} larger than available brokers: {len(brokers)}."
            )
        out[(topic, index)] = tuple(brokers[(index + i) % len(brokers)] for i in range(rf))
    return out


def _reassign(args: argparse.Namespace) -> int:
    from pykraft.admin import AdminError

    needs_plan = args.execute or args.verify or args.cancel
    if needs_plan and args.reassignment_json_file is None:
        return _fail("--reassignment-json-file is required")
    try:
        plan = parse_plan(args.reassignment_json_file.read_text()) if needs_plan else {}
    except (OSError, ValueError) as e:
        return _fail(e)

    async def go() -> int:
        async with admin_client(args) as admin:
            if args.generate:
                return await _generate(admin, args)
            if args.execute:
                return await _execute(admin, args, plan)
            if args.verify:
                return await _verify(admin, plan)
            if args.cancel:
                return await _cancel(admin, plan)
            if args.list:
                return await _list(admin)
            return await _describe(admin)

    try:
        return asyncio.run(go())
    except (AdminError, ValueError) as e:
        return _fail(e)


async def _assignment(admin: Any, topics: list[str] | None) -> dict[Partition, tuple[int, ...]]:
    from pykraft.admin.metadata import topics as list_topics

    return {
        (t.name, p.partition): tuple(p.replicas)
        for t in await list_topics(admin, topics)
        for p in t.partitions
    }


async def _generate(admin: Any, args: argparse.Namespace) -> int:
    if args.topics_to_move_json_file is None or not args.broker_list:
        return _fail("--generate needs --topics-to-move-json-file and --broker-list")
    try:
        data = json.loads(args.topics_to_move_json_file.read_text())
        names = [str(t["topic"]) for t in data["topics"]]
        brokers = [int(b) for b in args.broker_list.split(",")]
    except (OSError, ValueError, KeyError, TypeError) as e:
        return _fail(f"cannot read the topics or brokers: {e}")
    if len(set(brokers)) != len(brokers):
        return _fail(f"Broker list contains duplicate entries: {args.broker_list}")
    if len(set(names)) != len(names):
        return _fail(f"List of topics to reassign contains duplicate entries: {names}")
    current = await _assignment(admin, names)
    proposed = generate(current, brokers)
    print(f"Current partition replica assignment\n{plan_json(current)}\n")
    print(f"Proposed partition reassignment configuration\n{plan_json(proposed)}")
    return 0


async def _execute(admin: Any, args: argparse.Namespace, plan: dict[Partition, Any]) -> int:
    from pykraft.admin.reassignments import (
        alter_cluster_configs,
        alter_reassignments,
        list_reassignments,
    )

    ongoing, _ = await list_reassignments(admin)
    if ongoing and not args.additional:
        return _fail(CANNOT_EXECUTE)
    current = await _assignment(admin, sorted({t for t, _ in plan}))
    missing = [k for k in plan if k not in current]
    if missing:
        return _fail(f"Topic partition {_name(missing[0])} not found")
    print(
        "Current partition replica assignment\n\n"
        f"{plan_json({k: current[k] for k in plan})}\n\n"
        "Save this to use as the --reassignment-json-file option during rollback"
    )
    limits = {
        name: str(getattr(args, option))
        for option, name in LIMIT_OPTIONS.items()
        if getattr(args, option) is not None
    }
    if args.throttle is not None:
        limits[THROTTLE_POLICY] = str(args.throttle)
    await alter_cluster_configs(admin, limits)
    if args.throttle is not None:
        print(
            f"The inter-broker throttle limit was set to {args.throttle} B/s "
            "(the controllers remove it as the moves complete)"
        )
    errors = {k: e for k, e in (await alter_reassignments(admin, plan)).items() if e}
    if errors:
        lines = "\n".join(f"{_name(k)}: {e}" for k, e in sorted(errors.items()))
        return _fail(f"Error reassigning partition(s):\n{lines}")
    s = "" if len(plan) == 1 else "s"
    print(
        f"Successfully started partition reassignment{s} for "
        + ",".join(_name(k) for k in sorted(plan))
    )
    return 0


async def _verify(admin: Any, plan: dict[Partition, tuple[int, ...]]) -> int:
    from pykraft.admin.reassignments import list_reassignments

    ongoing, _ = await list_reassignments(admin, plan)
    moving = {(o.topic, o.partition) for o in ongoing}
    current = await _assignment(admin, sorted({t for t, _ in plan}))
    print("Status of partition reassignment:")
    for key, target in sorted(plan.items()):
        if key in moving:
            print(f"Reassignment of partition {_name(key)} is still in progress.")
        elif current.get(key) == target:
            print(f"Reassignment of partition {_name(key)} is completed.")
        else:
            have = ",".join(map(str, current.get(key, ())))
            print(
                f"There is no active reassignment of partition {_name(key)}, but replica set "
                f"is {have} rather than {','.join(map(str, target))}."
            )
    return 0


async def _cancel(admin: Any, plan: dict[Partition, tuple[int, ...]]) -> int:
    from pykraft.admin.reassignments import alter_reassignments, list_reassignments

    ongoing, _ = await list_reassignments(admin, plan)
    active = sorted({(o.topic, o.partition) for o in ongoing} & set(plan))
    if not active:
        print("None of the specified partition reassignments are active.")
        return 0
    results = await alter_reassignments(admin, dict.fromkeys(active))
    errors = {k: e for k, e in results.items() if e}
    if errors:
        lines = "\n".join(f"{_name(k)}: {e}" for k, e in sorted(errors.items()))
        return _fail(f"Error cancelling partition reassignment(s):\n{lines}")
    s = "" if len(active) == 1 else "s"
    print(f"Successfully cancelled partition reassignment{s} for: " + ",".join(map(_name, active)))
    return 0


def _ids(values: tuple[int, ...]) -> str:
    return ",".join(map(str, values))


async def _list(admin: Any) -> int:
    from pykraft.admin.reassignments import list_reassignments

    ongoing, _ = await list_reassignments(admin)
    if not ongoing:
        print("No partition reassignments found.")
        return 0
    print("Current partition reassignments:")
    for o in sorted(ongoing, key=lambda o: (o.topic, o.partition)):
        line = f"{o.topic}-{o.partition}: replicas: {_ids(o.replicas)}."
        if o.adding:
            line += f" adding: {_ids(o.adding)}."
        if o.removing:
            line += f" removing: {_ids(o.removing)}."
        print(line)
    return 0


async def _describe(admin: Any) -> int:
    from pykraft.admin.reassignments import cluster_configs, list_reassignments

    ongoing, steps = await list_reassignments(admin)
    configs = await cluster_configs(admin)
    limits = ", ".join(
        f"{name}={configs.get(name, 'unbounded')}" for name in LIMIT_OPTIONS.values()
    )
    print(f"Limits: {limits}")
    rate = configs.get(THROTTLE_POLICY)
    print(f"Throttle: {rate + ' B/s, managed by the controllers' if rate else 'none'}")
    if not ongoing:
        print("No partition reassignments found.")
        return 0
    by_key = {(s.topic, s.partition): s for s in steps}
    for o in sorted(ongoing, key=lambda o: (o.topic, o.partition)):
        step = by_key.get((o.topic, o.partition))
        now = (
            f"step: {_ids(step.current)} -> {_ids(step.target)}"
            if step is not None
            else "waiting for its next step"
        )
        print(
            f"{o.topic}-{o.partition}: final target: {_ids(o.final)}. "
            f"replicas: {_ids(o.replicas)}. {now}."
        )
    return 0
