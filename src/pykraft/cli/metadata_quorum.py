"""``pykraft metadata-quorum`` (Kafka's kafka-metadata-quorum.sh, SPEC I2).

    pykraft metadata-quorum (--bootstrap-controller H:P[,H:P] | --bootstrap-server H:P)
        [--command-config F] COMMAND
    describe --status | --replication [--human-readable]
    add-controller --command-config F       (run with the new controller's config)
    remove-controller --controller-id N --controller-directory-id UUID
    reassign (--voters ID,ID,... | --cancel | --describe) [--wait]   (KIP-642, pykraft's own)

Output is Kafka's tool's, character for character (checked against Kafka 4.3's
``MetadataQuorumCommand`` in ``tests/interop``). ``describe --status`` prints ``Key: value``
lines with values from column 25; ``CurrentVoters`` is a list of ``{"id": N, "directoryId":
"...", "endpoints": ["LISTENER://host:port"]}`` and ``CurrentObservers`` of ``{"id": N,
"directoryId": "..."}`` (directory ids in Kafka's base64 form; the key is left out when the
directory id is unknown, and ``endpoints`` when there are none). ``MaxFollowerLag`` is the
largest (leader LEO - voter LEO); ``MaxFollowerLagTimeMs`` the difference between the
leader's and that voter's last caught-up times (0 when it is the leader, -1 when unknown).
``describe --replication`` prints a table (leader, other voters, observers) as Kafka's
``ToolsUtils.prettyPrintTable`` does: every cell left-aligned to its column's widest cell and
followed by a tab; an unknown directory id shows as the zero UUID
(``AAAAAAAAAAAAAAAAAAAAAA``); ``--human-readable`` shows timestamps as ``N ms ago``.

Every command calls :class:`pykraft.admin.AdminClient`; errors are one line on stderr and exit
code 1.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pykraft.cli._common import add_admin_options, admin_client, command_group

STATUS_KEY_WIDTH = 24


def register(sub: Any) -> None:
    parser, commands = command_group(
        sub,
        "metadata-quorum",
        help="describe and change the KRaft quorum (kafka-metadata-quorum)",
        dest="quorum_command",
    )
    add_admin_options(parser)
    describe = commands.add_parser("describe", help="describe the metadata quorum")
    what = describe.add_mutually_exclusive_group(required=True)
    what.add_argument("--status", action="store_true", help="quorum status")
    what.add_argument("--replication", action="store_true", help="each replica's progress")
    describe.add_argument(
        "--human-readable", action="store_true", help="timestamps as 'N ms ago' (--replication)"
    )
    describe.set_defaults(func=_describe)
    add = commands.add_parser("add-controller", help="add the controller of --command-config")
    add.add_argument(
        "--command-config", dest="add_command_config", type=Path, help="the new controller's config"
    )
    add.set_defaults(func=_add)
    remove = commands.add_parser("remove-controller", help="remove a controller (voter)")
    remove.add_argument("--controller-id", type=int, required=True)
    remove.add_argument("--controller-directory-id", required=True, help="Kafka base64 UUID")
    remove.set_defaults(func=_remove)
    reassign = commands.add_parser(
        "reassign",
        help="move the voter set to other controllers, one voter at a time (KIP-642)",
    )
    action = reassign.add_mutually_exclusive_group(required=True)
    action.add_argument(
        "--voters", metavar="ID,ID,...", help="the target voter set (voters or observers)"
    )
    action.add_argument(
        "--cancel", action="store_true", help="go back to the voters it started from"
    )
    action.add_argument("--describe", action="store_true", help="the reassignment in progress")
    reassign.add_argument(
        "--wait", action="store_true", help="wait until the voter set is the target"
    )
    reassign.add_argument(
        "--wait-ms", type=int, default=300_000, help="bound on --wait (default 300000)"
    )
    reassign.set_defaults(func=_reassign)


def _fail(message: object) -> int:
    print(f"pykraft metadata-quorum: {message}", file=sys.stderr)
    return 1


def _run(args: argparse.Namespace, main: Any) -> int:
    from pykraft.admin import AdminError

    async def go() -> int:
        async with admin_client(args) as admin:
            code: int = await main(admin)
            return code

    try:
        return asyncio.run(go())
    except AdminError as e:
        return _fail(e)
    except ValueError as e:  # bad bootstrap address
        return _fail(e)


# -- describe ------------------------------------------------------------------------------


def _directory(directory_id: uuid.UUID | None) -> str:
    """Kafka's base64 form; the zero UUID when unknown (as Kafka's ``Uuid.ZERO_UUID``)."""
    from pykraft.storage import uuid_to_kafka

    return uuid_to_kafka(directory_id or uuid.UUID(int=0))


def _node(info: Any, replica: Any, *, endpoints: bool) -> str:
    text = f'{{"id": {replica.replica_id}'
    if replica.directory_id is not None and replica.directory_id.int != 0:
        text += f', "directoryId": "{_directory(replica.directory_id)}"'
    if endpoints:
        listed = info.nodes.get(replica.replica_id, ())
        if listed:
            text += ', "endpoints": [' + ", ".join(f'"{e}"' for e in listed) + "]"
    return text + "}"


def status_lines(cluster_id: str, info: Any) -> list[str]:
    """The ``describe --status`` lines for a :class:`pykraft.admin.QuorumInfo`."""
    leader = info.leader
    max_lag = 0
    lag_time_ms = -1
    if leader is not None:
        lagging = max(info.voters, key=lambda v: leader.log_end_offset - v.log_end_offset)
        max_lag = leader.log_end_offset - lagging.log_end_offset
        if lagging.replica_id == leader.replica_id:
            lag_time_ms = 0
        elif lagging.last_caught_up_timestamp >= 0 and leader.last_caught_up_timestamp >= 0:
            lag_time_ms = leader.last_caught_up_timestamp - lagging.last_caught_up_timestamp
    voters = "[" + ", ".join(_node(info, v, endpoints=True) for v in info.voters) + "]"
    observers = "[" + ", ".join(_node(info, o, endpoints=False) for o in info.observers) + "]"
    rows = [
        ("ClusterId", cluster_id),
        ("LeaderId", info.leader_id),
        ("LeaderEpoch", info.leader_epoch),
        ("HighWatermark", info.high_watermark),
        ("MaxFollowerLag", max_lag),
        ("MaxFollowerLagTimeMs", lag_time_ms),
        ("CurrentVoters", voters),
        ("CurrentObservers", observers),
    ]
    return [f"{key + ':':<{STATUS_KEY_WIDTH}}{value}" for key, value in rows]


def replication_lines(info: Any, *, human_readable: bool, now_ms: int) -> list[str]:
    """The ``describe --replication`` table for a :class:`pykraft.admin.QuorumInfo`."""
    leader = info.leader
    leader_leo = leader.log_end_offset if leader is not None else 0

    def when(ts: int) -> str:
        if not human_readable or ts < 0:
            return str(ts)
        return f"{max(0, now_ms - ts)} ms ago"

    ordered = sorted(info.voters, key=lambda v: v.replica_id != info.leader_id)
    rows = [
        [
            str(r.replica_id),
            _directory(r.directory_id),
            str(r.log_end_offset),
            str(leader_leo - r.log_end_offset),  # as Kafka: not clamped
            when(r.last_fetch_timestamp),
            when(r.last_caught_up_timestamp),
            status,
        ]
        for group, kind in ((ordered, "voter"), (info.observers, "observer"))
        for r in group
        for status in [
            "Observer"
            if kind == "observer"
            else ("Leader" if r.replica_id == info.leader_id else "Follower")
        ]
    ]
    header = [
        "NodeId",
        "DirectoryId",
        "LogEndOffset",
        "Lag",
        "LastFetchTimestamp",
        "LastCaughtUpTimestamp",
        "Status",
    ]
    table = [header, *rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    return ["".join(f"{cell:<{w}}\t" for cell, w in zip(row, widths, strict=True)) for row in table]


def _describe(args: argparse.Namespace) -> int:
    async def main(admin: Any) -> int:
        info = await admin.describe_quorum()
        if args.status:
            cluster = await admin.describe_cluster()
            lines = status_lines(cluster.cluster_id, info)
        else:
            lines = replication_lines(
                info, human_readable=args.human_readable, now_ms=int(time.time() * 1000)
            )
        print("\n".join(lines), flush=True)
        return 0

    return _run(args, main)


# -- add / remove --------------------------------------------------------------------------


def controller_identity(path: Path) -> tuple[int, uuid.UUID, str, list[Any]]:
    """(node id, directory id, cluster id, controller endpoints) of a controller's config:
    what Kafka's add-controller reads from ``--command-config`` and its ``meta.properties``.
    Raises ValueError with a one-line reason."""
    from pykraft.admin import RaftVoterEndpoint
    from pykraft.node.config import ConfigError, load_config
    from pykraft.storage import StorageError, read_meta_properties

    try:
        config = load_config(path)
    except ConfigError as e:
        raise ValueError(str(e)) from None
    if not config.is_controller:
        raise ValueError(f"{path}: process.roles does not include controller")
    try:
        meta = read_meta_properties(config.metadata_log_dir)
    except StorageError as e:
        raise ValueError(str(e)) from None
    if meta is None or meta.directory_id is None:
        raise ValueError(f"{config.metadata_log_dir} is not formatted (no directory.id)")
    endpoints = []
    for name in config.controller_listener_names:
        for listener in config.listeners:
            if listener.name == name:
                if not listener.host or listener.port == 0:
                    raise ValueError(f"listener {name} needs a host and a port to be added")
                endpoints.append(RaftVoterEndpoint(name, listener.host, listener.port))
    return config.node_id, meta.directory_id, meta.cluster_id, endpoints


def _add(args: argparse.Namespace) -> int:
    path = args.add_command_config or args.command_config
    if path is None:
        return _fail("add-controller needs --command-config (the new controller's config)")
    try:
        node_id, directory_id, cluster_id, endpoints = controller_identity(path)
    except ValueError as e:
        return _fail(e)

    async def main(admin: Any) -> int:
        await admin.add_controller(node_id, directory_id, endpoints, cluster_id=cluster_id)
        print(
            f"Added controller {node_id} with directory id {_directory(directory_id)} and "
            f"endpoints: {', '.join(str(e) for e in endpoints)}"
        )
        return 0

    return _run(args, main)


def _remove(args: argparse.Namespace) -> int:
    from pykraft.storage import kafka_to_uuid

    try:
        directory_id = kafka_to_uuid(args.controller_directory_id)
    except ValueError as e:
        return _fail(f"--controller-directory-id: {e}")

    async def main(admin: Any) -> int:
        await admin.remove_controller(args.controller_id, directory_id)
        print(
            f"Removed KRaft controller {args.controller_id} with directory id "
            f"{args.controller_directory_id}"
        )
        return 0

    return _run(args, main)


# -- reassign (KIP-642) --------------------------------------------------------------------

WAIT_POLL_S = 0.5


def reassignment_lines(moving: Any, info: Any) -> list[str]:
    """``reassign --describe``: KIP-455's listing of the metadata partition plus each
    replica's lag from DescribeQuorum."""
    if moving is None:
        return ["No reassignment of the voter set is in progress."]
    end = info.leader.log_end_offset if info.leader is not None else 0
    offsets = {r.replica_id: r.log_end_offset for r in (*info.voters, *info.observers)}
    target = sorted(set(moving.replicas) - set(moving.removing))
    lines = [
        f"Current voters: {','.join(str(v.replica_id) for v in info.voters)}",
        f"Target voters:  {','.join(map(str, target))}",
        f"Adding:         {','.join(map(str, moving.adding)) or '-'}",
        f"Removing:       {','.join(map(str, moving.removing)) or '-'}",
    ]
    for replica in moving.replicas:
        reached = offsets.get(replica)
        lag = "unknown" if reached is None or reached < 0 else str(max(0, end - reached))
        lines.append(f"  replica {replica}: log end offset {reached}, lag {lag}")
    return lines


def _reassign(args: argparse.Namespace) -> int:
    ids: list[int] | None = None
    if args.voters is not None:
        try:
            ids = [int(x) for x in args.voters.split(",") if x.strip()]
        except ValueError:
            return _fail(f"--voters {args.voters!r}: expected comma-separated node ids")

    async def main(admin: Any) -> int:
        if args.describe:
            moving = await admin.voter_reassignment()
            info = await admin.describe_quorum()
            print("\n".join(reassignment_lines(moving, info)), flush=True)
            return 0
        await admin.reassign_voters(None if args.cancel else ids)
        what = "Cancelled the reassignment" if args.cancel else f"Target voter set {ids}"
        print(f"{what}: accepted (written to the metadata log)", flush=True)
        if args.wait:  # bounded: --wait-ms
            deadline = time.monotonic() + args.wait_ms / 1000
            while await admin.voter_reassignment() is not None:
                if time.monotonic() > deadline:
                    return _fail(f"the reassignment did not complete within {args.wait_ms} ms")
                await asyncio.sleep(WAIT_POLL_S)
            info = await admin.describe_quorum()
            voters = ",".join(str(v.replica_id) for v in info.voters)
            print(f"Reassignment complete: voters {voters}", flush=True)
        return 0

    return _run(args, main)


def main(argv: Sequence[str] | None = None) -> int:  # pragma: no cover - convenience
    from pykraft.cli.main import main as pykraft_main

    return pykraft_main(["metadata-quorum", *(argv or sys.argv[1:])])
