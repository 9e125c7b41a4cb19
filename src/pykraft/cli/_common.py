"""What the ``pykraft`` subcommand modules share: a command group's parser, the admin
commands' ``--timeout-ms``."""

from __future__ import annotations

import argparse
from typing import Any


def command_group(sub: Any, name: str, *, help: str, dest: str) -> tuple[Any, Any]:
    """``pykraft NAME COMMAND``: the group's parser and its commands' subparsers. Run without
    a command, the group prints its help and exits with 2."""
    parser: argparse.ArgumentParser = sub.add_parser(name, help=help)

    def usage(args: argparse.Namespace) -> int:
        parser.print_help()
        return 2

    parser.set_defaults(func=usage)
    return parser, parser.add_subparsers(dest=dest, metavar="COMMAND")


def add_timeout_ms(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timeout-ms", type=int, default=30_000, help="bound on the whole call (default 30000)"
    )
