"""``pykraft migration`` (KIP-866):

    pykraft migration describe --zookeeper HOST:PORT[/chroot] [--metrics HOST:PORT]
    pykraft migration export --zookeeper HOST:PORT[/chroot] --out zk-export.jsonl

Where a ZooKeeper-to-KRaft migration stands, from ZooKeeper (``/migration``: the KRaft
controller writing and the last metadata offset mirrored; ``/controller``,
``/controller_epoch``; the ZooKeeper brokers alive under ``/brokers/ids``) and, with
``--metrics``, from the active controller's Prometheus endpoint (Kafka's gauges
ZkMigrationState, MigratingZkBrokerCount, ZkWriteBehindLag). One ``Name: value`` line each.

``export`` writes every znode a migration reads (one JSON line each: path, data in base64,
zkVersion, children) for ``pykraft pipeline migration-dry-run``.
"""

from __future__ import annotations

import argparse
import contextlib
from typing import Any

from pykraft.cli._common import command_group

STATES = {0: "NONE", 1: "MIGRATION", 2: "PRE_MIGRATION", 3: "POST_MIGRATION", 4: "ZK"}


def register(sub: Any) -> None:
    _, commands = command_group(
        sub, "migration", help="ZooKeeper to KRaft migration (KIP-866)", dest="migration_command"
    )
    describe = commands.add_parser("describe", help="where the migration stands")
    describe.add_argument("--zookeeper", required=True, metavar="HOST:PORT[/chroot]")
    describe.add_argument(
        "--metrics", metavar="HOST:PORT", help="the active controller's metrics endpoint"
    )
    describe.set_defaults(func=_describe)
    export = commands.add_parser("export", help="the znodes a migration reads, as JSON lines")
    export.add_argument("--zookeeper", required=True, metavar="HOST:PORT[/chroot]")
    export.add_argument("--out", required=True, help="output file")
    export.set_defaults(func=_export)


def _export(args: argparse.Namespace) -> int:
    from kazoo.exceptions import KazooException

    from pykraft.migration import zk_client
    from pykraft.migration.zk_export import export_lines

    try:
        with zk_client.session(args.zookeeper, timeout_s=10) as zk:
            snapshot = zk_client.read_snapshot(zk)
    except (KazooException, OSError) as e:
        print(f"Error: cannot read ZooKeeper at {args.zookeeper}: {e}")
        return 1
    with open(args.out, "w") as out:
        for line in export_lines(snapshot):
            out.write(line + "\n")
    print(f"{len(snapshot.nodes)} znodes written to {args.out}")
    return 0


def _describe(args: argparse.Namespace) -> int:
    from kazoo.exceptions import KazooException, NoNodeError

    from pykraft.migration import zk_client, zk_data, zk_writes

    lines: list[tuple[str, object]] = []
    try:
        with zk_client.session(args.zookeeper, timeout_s=10) as zk:
            try:
                cid, cepoch, offset, epoch = zk_writes.parse_migration(zk.get(zk_data.MIGRATION)[0])
                lines += [
                    ("KRaftControllerId", cid),
                    ("KRaftControllerEpoch", cepoch),
                    ("MigratedMetadataOffset", offset),
                    ("MigratedMetadataEpoch", epoch),
                    ("InitialLoadDone", str(offset > 0).lower()),
                ]
            except NoNodeError:
                lines.append(("Migration", "not started (no /migration)"))
            try:
                controller = zk.get(zk_data.CONTROLLER)[0].decode()
            except NoNodeError:
                controller = "none"
            lines.append(("Controller", controller))
            with contextlib.suppress(NoNodeError):
                lines.append(("ZkControllerEpoch", int(zk.get(zk_data.CONTROLLER_EPOCH)[0])))
            brokers = sorted(int(b) for b in zk.get_children(zk_data.BROKER_IDS))
            lines.append(("ZkBrokers", ",".join(map(str, brokers)) or "none"))
    except (KazooException, OSError, zk_data.ZkDataError) as e:
        print(f"Error: cannot read ZooKeeper at {args.zookeeper}: {e}")
        return 1
    if args.metrics:
        from pykraft.interop.cluster import read_metrics
        from pykraft.node.controller_metrics import metric_name

        host, _, port = args.metrics.rpartition(":")
        try:
            values = read_metrics(host, int(port), timeout_s=10)
        except (OSError, ValueError) as e:
            print(f"Error: cannot read metrics at {args.metrics}: {e}")
            return 1
        state = values.get(metric_name("ZkMigrationState"))
        lines.append(
            ("ZkMigrationState", STATES.get(int(state), state) if state is not None else "-")
        )
        for name in ("MigratingZkBrokerCount", "ZkWriteBehindLag"):
            value = values.get(metric_name(name))
            lines.append((name, "-" if value is None else int(value)))
    for name, shown in lines:
        print(f"{name}: {shown}")
    return 0
