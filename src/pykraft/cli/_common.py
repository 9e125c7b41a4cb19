"""What the ``pykraft`` subcommand modules share: a command group's parser, the admin
commands' ``--timeout-ms`` and ``--command-config`` (Kafka's client properties: TLS and SASL
to the controllers or brokers)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pykraft.net.security import ClientSecurity


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
    """The admin commands' options: ``--timeout-ms`` and ``--command-config``."""
    parser.add_argument(
        "--timeout-ms", type=int, default=30_000, help="bound on the whole call (default 30000)"
    )
    parser.add_argument(
        "--command-config",
        type=Path,
        default=None,
        metavar="FILE",
        help="client properties: security.protocol, ssl.*, sasl.mechanism, sasl.jaas.config",
    )


def client_security(args: argparse.Namespace) -> ClientSecurity | None:
    """The ``--command-config`` file's security settings (None without one); a bad file is
    a ConfigError naming the key."""
    path = getattr(args, "command_config", None)
    if path is None:
        return None
    from pykraft.net.errors import SecurityConfigError
    from pykraft.net.security import client_security as from_properties
    from pykraft.storage.properties import ConfigError, load_properties

    try:
        return from_properties(load_properties(path))
    except SecurityConfigError as e:
        raise ConfigError(e.key, e.problem) from None
