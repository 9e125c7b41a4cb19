"""``pykraft server start <file.properties>`` (Kafka's kafka-server-start.sh)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser("server", help="run a KRaft node")

    def usage(args: argparse.Namespace) -> int:
        parser.print_help()
        return 2

    parser.set_defaults(func=usage)
    commands = parser.add_subparsers(dest="server_command", metavar="COMMAND")
    start = commands.add_parser("start", help="start a node until SIGTERM / Ctrl-C")
    start.add_argument("config", type=Path, help="server .properties file")
    start.set_defaults(func=_start)


def _start(args: argparse.Namespace) -> int:
    from pykraft.node.server import run_server

    return run_server(args.config)
