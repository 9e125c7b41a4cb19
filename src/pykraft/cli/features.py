"""``pykraft features`` (Kafka's kafka-features.sh), for the one feature the quorum owns:

    pykraft features (--bootstrap-controller H:P[,H:P] | --bootstrap-server H:P)
        describe
        upgrade --feature kraft.version=N [--dry-run]
        downgrade --feature kraft.version=N [--dry-run]

``describe`` prints Kafka's tool's lines, one per supported feature (``Feature: NAME
SupportedMinVersion: .. SupportedMaxVersion: .. FinalizedVersionLevel: .. Epoch: ..``, from
the ApiVersions of the first node that answers; ``-`` for an unknown epoch). ``downgrade`` is
sent as Kafka's tool sends it (UpdateFeatures, safe downgrade) and refused by the quorum for
kraft.version, as Kafka refuses it ("Could not downgrade ...").

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
        sub,
        "features",
        help="describe, upgrade and downgrade kraft.version (kafka-features)",
        dest="features_command",
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
    describe = commands.add_parser("describe", help="supported and finalized features")
    _where(describe, default=argparse.SUPPRESS)
    describe.set_defaults(func=_describe)
    downgrade = commands.add_parser("downgrade", help="downgrade a feature's finalized version")
    _where(downgrade, default=argparse.SUPPRESS)
    downgrade.add_argument("--feature", action="append", required=True, metavar="NAME=VERSION")
    downgrade.add_argument("--dry-run", action="store_true", help="validate only")
    downgrade.set_defaults(func=_downgrade)


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


def feature_line(info: Any) -> str:
    """Kafka's FeatureCommand describe line for one feature."""
    finalized = "-" if info.finalized is None else str(info.finalized)
    epoch = "-" if info.epoch < 0 else str(info.epoch)
    return (
        f"Feature: {info.name:<40s}  SupportedMinVersion: {info.min_version!s:<15s}  "
        f"SupportedMaxVersion: {info.max_version!s:<15s}  "
        f"FinalizedVersionLevel: {finalized:<15s}  Epoch: {epoch}"
    )


def _admin(args: argparse.Namespace) -> Any:
    from pykraft.admin import AdminClient

    controllers = args.bootstrap_controller is not None
    return AdminClient(
        args.bootstrap_controller if controllers else args.bootstrap_server,
        bootstrap_controllers=controllers,
        timeout_ms=args.timeout_ms,
    )


def _describe(args: argparse.Namespace) -> int:
    from pykraft.admin import AdminError

    if (args.bootstrap_controller is None) == (args.bootstrap_server is None):
        return _fail("give exactly one of --bootstrap-controller and --bootstrap-server")

    async def go() -> list[Any]:
        async with _admin(args) as admin:
            features: list[Any] = await admin.describe_features()
            return features

    try:
        features = asyncio.run(go())
    except (AdminError, ValueError) as e:
        return _fail(e)
    for info in features:
        print(feature_line(info))
    return 0


def _downgrade(args: argparse.Namespace) -> int:
    from pykraft.admin import AdminError

    try:
        version = _parse_feature(args.feature)
    except ValueError as e:
        return _fail(e)
    if (args.bootstrap_controller is None) == (args.bootstrap_server is None):
        return _fail("give exactly one of --bootstrap-controller and --bootstrap-server")

    async def go() -> None:
        async with _admin(args) as admin:
            await admin.update_feature(
                KRAFT_VERSION, version, upgrade_type=2, validate_only=args.dry_run
            )

    try:
        asyncio.run(go())
    except AdminError as e:
        print(f"Could not downgrade {KRAFT_VERSION} to {version}. {e.message or e}")
        print("1 out of 1 operation(s) failed.")
        return 1
    except ValueError as e:
        return _fail(e)
    verb = "can be downgraded" if args.dry_run else "was downgraded"
    print(f"{KRAFT_VERSION} {verb} to {version}.")
    return 0


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
