"""``pykraft roll`` and ``pykraft local roll``: a rolling restart (or upgrade) of a cluster's
controllers, then its brokers, each step only when it is safe (``admin/roll.py``).

``pykraft roll`` restarts each node with the operator's own command (``--restart-command``,
run by a shell with ``{kind}`` and ``{node_id}`` replaced: ``ssh ctl{node_id} sudo systemctl
restart kafka-{kind}``), the controllers' health read on their metrics ports
(``--controllers 1=host:port,...``). ``pykraft local roll`` does the same to a running ``pykraft
local up`` through its restart requests; ``--to-build DIR`` starts each controller again from
another pykraft source tree (an upgrade; the brokers are Kafka's own and keep theirs). Both
stop at the first unsafe step with the reason (exit 1) and go on from there when run again
(the state file).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pykraft.cli._common import UsageError, add_admin_options, admin_client

if TYPE_CHECKING:
    from pykraft.admin.roll import Roller

__all__ = ["register", "register_roll"]


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--timeout-s", type=float, default=300.0, help="per step (default 300)")


def register(sub: Any) -> None:
    roll = sub.add_parser("roll", help="restart or upgrade a cluster one node at a time, safely")
    add_admin_options(roll)
    roll.add_argument(
        "--controllers",
        required=True,
        metavar="ID=HOST:PORT[,...]",
        help="each controller's metrics.port, which serves /health/*",
    )
    roll.add_argument("--brokers", default="", metavar="ID[,...]", help="the brokers to roll")
    roll.add_argument(
        "--restart-command",
        required=True,
        help="a shell command restarting one node: {kind} (controller, broker), {node_id}",
    )
    roll.add_argument("--state", type=Path, default=Path("pykraft-roll.json"), help="resume file")
    _common(roll)
    roll.set_defaults(func=_roll)


def register_roll(commands: Any) -> None:
    """``pykraft local roll`` (registered by ``cli/local.py``)."""
    roll = commands.add_parser("roll", help="roll a running `pykraft local up`, one at a time")
    roll.add_argument("--dir", type=Path, default=Path("pykraft-local"), help="state directory")
    roll.add_argument("--to-build", type=Path, help="start the controllers from this pykraft tree")
    _common(roll)
    roll.set_defaults(func=_local_roll)


def _run(roller: Roller) -> int:
    from pykraft.admin.roll import RollRefused

    try:
        roller.run()
    except RollRefused as e:
        print(f"pykraft roll: refused: {e} (run it again to go on)", file=sys.stderr)
        return 1
    return 0


def _roll(args: argparse.Namespace) -> int:
    import subprocess

    from pykraft.admin.roll import Node, Roller

    controllers = []
    for item in filter(None, (i.strip() for i in args.controllers.split(","))):
        node_id, _, endpoint = item.partition("=")
        if not node_id.isdigit() or ":" not in endpoint:
            raise UsageError(f"--controllers takes ID=HOST:PORT entries, not {item!r}")
        controllers.append(Node("controller", int(node_id), endpoint))
    try:
        brokers = [Node("broker", int(b)) for b in args.brokers.split(",") if b.strip()]
    except ValueError:
        raise UsageError("--brokers takes broker ids: 100,101") from None

    def restart(node: Node) -> bool:
        command = args.restart_command.format(kind=node.kind, node_id=node.node_id)
        subprocess.run(command, shell=True, check=True)
        return False  # the incarnations tell

    factory = lambda: admin_client(args)  # noqa: E731
    return _run(
        Roller(factory, controllers, brokers, restart, args.state, timeout_s=args.timeout_s)
    )


def _members(directory: Path, kind: str) -> list[Path]:
    """``<kind>-<id>.properties`` of ``local up`` (not ``controller-client.properties``)."""
    found = directory.glob(f"{kind}-*.properties")
    return sorted(p for p in found if p.stem.split("-", 1)[1].isdigit())


def _local_roll(args: argparse.Namespace) -> int:
    from pykraft.admin import AdminClient
    from pykraft.admin.roll import Node, Roller
    from pykraft.cli.local import PID_FILE, SECURE_MARKER, request_restart, restarted
    from pykraft.cli.local_hints import CONTROLLER_CLIENT_PROPERTIES
    from pykraft.net.security import client_security
    from pykraft.node.config import load_config
    from pykraft.storage.properties import load_properties

    directory: Path = args.dir
    if not (directory / PID_FILE).exists():
        print(
            f"pykraft local roll: no `pykraft local up` is running on {directory}", file=sys.stderr
        )
        return 2
    security = None
    if (directory / SECURE_MARKER).exists():  # as the admin, with the file `local up` wrote
        security = client_security(load_properties(directory / CONTROLLER_CLIENT_PROPERTIES))
    controllers, ports = [], []
    for path in _members(directory, "controller"):
        config = load_config(path)
        ports.append(config.controller_listener.port)
        controllers.append(Node("controller", config.node_id, f"127.0.0.1:{config.metrics_port}"))
    brokers = [
        Node("broker", int(path.stem.split("-", 1)[1])) for path in _members(directory, "broker")
    ]
    build = None if args.to_build is None else args.to_build.resolve()
    if build is not None and not (build / "src" / "pykraft").is_dir():
        print(
            f"pykraft local roll: {build} is not a pykraft source tree (no src/pykraft)",
            file=sys.stderr,
        )
        return 2

    def restart(node: Node) -> bool:
        request_restart(directory, node.node_id, build if node.kind == "controller" else None)
        return restarted(directory, node.node_id, args.timeout_s)

    bootstrap = ",".join(f"127.0.0.1:{p}" for p in ports)
    factory = lambda: AdminClient(bootstrap, timeout_ms=10_000, security=security)  # noqa: E731
    state = directory / "roll-state.json"
    return _run(Roller(factory, controllers, brokers, restart, state, timeout_s=args.timeout_s))
