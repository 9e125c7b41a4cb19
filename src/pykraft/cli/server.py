"""``pykraft server start <file.properties>`` (Kafka's kafka-server-start.sh)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pykraft.cli._common import command_group


def register(sub: Any) -> None:
    _, commands = command_group(sub, "server", help="run a KRaft node", dest="server_command")
    start = commands.add_parser("start", help="start a node until SIGTERM / Ctrl-C")
    start.add_argument("config", type=Path, help="server .properties file")
    start.set_defaults(func=_start)


def _start(args: argparse.Namespace) -> int:
    from pykraft.node.server import run_server

    return run_server(args.config)
