"""``pykraft features`` (Kafka's kafka-features.sh), for the one feature the quorum owns:

    pykraft features (--bootstrap-controller H:P[,H:P] | --bootstrap-server H:P)
        upgrade --feature kraft.version=N [--dry-run]

The bootstrap option may also follow ``upgrade`` (``pykraft features upgrade
--bootstrap-controller H:P --feature kraft.version=1``). ``upgrade`` sends UpdateFeatures to
the quorum's leader (KIP-853, SPEC D10: 0 -> 1 only if every voter and registered observer
supports it; a downgrade is refused) and prints Kafka's line ``kraft.version was upgraded
to N.`` once it committed (``--dry-run``: ``kraft.version can be upgraded to N.``). Errors
are one line on stderr and exit code 1.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from pykraft.cli._common import add_timeout_ms, command_group

KRAFT_VERSION = "kraft.version"


def _where(parser: argparse.ArgumentParser, *, default: object) -> None:
    parser.add_argument(
        "--bootstrap-controller",
        metavar="HOST:PORT[,...]",
        default=default,
        help="controller listener(s)",
    )
    parser.add_argument(
        "--bootstrap-server", metavar="HOST:PORT[,...]", default=default, help="broker listener(s)"
    )


def register(sub: Any) -> None:
    parser, commands = command_group(
        sub, "features", help="upgrade kraft.version (kafka-features)", dest="features_command"
    )
    _where(parser, default=None)
    add_timeout_ms(parser)
    upgrade = commands.add_parser("upgrade", help="upgrade a feature's finalized version")
    _where(upgrade, default=argparse.SUPPRESS)  # accepted after the command too
    upgrade.add_argument(
        "--feature",
        action="append",
        required=True,
        metavar="NAME=VERSION",
        help="kraft.version=N (the only feature the quorum owns)",
    )
    upgrade.add_argument(
        "--dry-run", action="store_true", help="validate only (UpdateFeatures ValidateOnly)"
    )
    upgrade.set_defaults(func=_upgrade)


def _fail(message: object) -> int:
    print(f"pykraft features: {message}", file=sys.stderr)
    return 1


def _parse_feature(items: list[str]) -> int:
    """The requested kraft.version; ValueError for anything else."""
    if len(items) != 1:
        raise ValueError(f"only {KRAFT_VERSION} can be upgraded here, one --feature")
    name, sep, level = items[0].partition("=")
    if not sep or name.strip() != KRAFT_VERSION:
        raise ValueError(f"--feature {items[0]!r}: expected {KRAFT_VERSION}=N")
    try:
        version = int(level)
    except ValueError:
        raise ValueError(f"--feature {items[0]!r}: {level!r} is not a version number") from None
    if version < 0:
        raise ValueError(f"--feature {items[0]!r}: negative version")
    return version


def _upgrade(args: argparse.Namespace) -> int:
    from pykraft.admin import AdminClient, AdminError

    try:
        version = _parse_feature(args.feature)
    except ValueError as e:
        return _fail(e)
    if (args.bootstrap_controller is None) == (args.bootstrap_server is None):
        return _fail("give exactly one of --bootstrap-controller and --bootstrap-server")
    controllers = args.bootstrap_controller is not None

    async def go() -> None:
        async with AdminClient(
            args.bootstrap_controller if controllers else args.bootstrap_server,
            bootstrap_controllers=controllers,
            timeout_ms=args.timeout_ms,
        ) as admin:
            await admin.update_kraft_version(version, validate_only=args.dry_run)

    try:
        asyncio.run(go())
    except (AdminError, ValueError) as e:
        return _fail(e)
    verb = "can be upgraded" if args.dry_run else "was upgraded"
    print(f"{KRAFT_VERSION} {verb} to {version}.")
    return 0
