"""What the ``pykraft`` subcommand modules share: a command group's parser, and the admin
commands' options and client. Every admin command takes, as Kafka's tools do,
``--bootstrap-server`` (brokers) or ``--bootstrap-controller`` (controllers), exactly one,
``--command-config`` (client properties: TLS and SASL) and ``--timeout-ms``; one function,
:func:`admin_client`, builds the client from them."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pykraft.admin import AdminClient
    from pykraft.net.security import ClientSecurity

BOOTSTRAP_SERVER = "the brokers to connect to: host:port[,host:port...] (a broker forwards)"
BOOTSTRAP_CONTROLLER = "the controllers to connect to: host:port[,host:port...]"


class UsageError(Exception):
    """Options that do not go together: one line on stderr, exit code 1."""


def command_group(sub: Any, name: str, *, help: str, dest: str) -> tuple[Any, Any]:
    """``pykraft NAME COMMAND``: the group's parser and its commands' subparsers. Run without
    a command, the group prints its help and exits with 2."""
    parser: argparse.ArgumentParser = sub.add_parser(name, help=help)

    def usage(args: argparse.Namespace) -> int:
        parser.print_help()
        return 2

    parser.set_defaults(func=usage)
    return parser, parser.add_subparsers(dest=dest, metavar="COMMAND")


def add_bootstrap(parser: argparse.ArgumentParser, *, after_command: bool = False) -> None:
    """``--bootstrap-server`` and ``--bootstrap-controller``. Which one was given (exactly
    one) is checked by :func:`admin_client`, so that a command group can take them before
    and after its command (``after_command``: the subcommand's copy, which leaves the
    group's value alone when absent)."""
    default = argparse.SUPPRESS if after_command else None
    parser.add_argument(
        "--bootstrap-server", metavar="HOST:PORT[,...]", default=default, help=BOOTSTRAP_SERVER
    )
    parser.add_argument(
        "--bootstrap-controller",
        metavar="HOST:PORT[,...]",
        default=default,
        help=BOOTSTRAP_CONTROLLER,
    )


def add_admin_options(parser: argparse.ArgumentParser) -> None:
    """Every admin option: the two bootstrap options, ``--command-config``, ``--timeout-ms``."""
    add_bootstrap(parser)
    add_timeout_ms(parser)


def admin_client(args: argparse.Namespace, *, request_timeout_ms: int = 5_000) -> AdminClient:
    """The admin client the command's options ask for: to the brokers or to the controllers,
    with the ``--command-config`` security and the ``--timeout-ms`` bound."""
    from pykraft.admin import AdminClient

    server: str | None = getattr(args, "bootstrap_server", None)
    controller: str | None = getattr(args, "bootstrap_controller", None)
    if controller is not None and server is None:
        bootstrap, controllers = controller, True
    elif server is not None and controller is None:
        bootstrap, controllers = server, False
    else:
        raise UsageError("give exactly one of --bootstrap-server and --bootstrap-controller")
    return AdminClient(
        bootstrap,
        bootstrap_controllers=controllers,
        request_timeout_ms=request_timeout_ms,
        timeout_ms=args.timeout_ms,
        security=client_security(args),
    )


def add_timeout_ms(parser: argparse.ArgumentParser) -> None:
    """``--timeout-ms`` and ``--command-config``."""
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
