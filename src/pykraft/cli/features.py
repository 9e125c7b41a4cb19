"""``pykraft features`` (Kafka's kafka-features.sh):

    pykraft features (--bootstrap-controller H:P[,H:P] | --bootstrap-server H:P)
        [--command-config F] [--timeout-ms MS]    (the bootstrap options also after the command)
        describe
        upgrade (--feature NAME=LEVEL ... | --release-version R) [--dry-run]
        downgrade --feature NAME=LEVEL ... [--unsafe] [--dry-run]

``describe`` prints Kafka's tool's lines, one per supported feature (``Feature: NAME
SupportedMinVersion: .. SupportedMaxVersion: .. FinalizedVersionLevel: .. Epoch: ..``), from
the ApiVersions of the first node that answers: a feature not finalized is at level 0,
metadata.version levels are printed as Kafka's release names (4.0-IV3), ``-`` is an unknown
epoch. ``upgrade``/``downgrade`` send one UpdateFeatures for every ``--feature`` to the
active controller (kraft.version to the quorum, SPEC D10; the others to the metadata
controller, checked against every registered broker's and controller's supported range);
metadata.version takes a level or a release name, and ``--release-version R`` means
metadata.version R with every other feature at R's default level (Kafka's tool; not with
``--feature``). A downgrade is a safe downgrade unless ``--unsafe``.
Each success prints Kafka's line ``NAME was upgraded to LEVEL.`` (``can be upgraded`` with
``--dry-run``); a refusal prints ``Could not upgrade NAME to LEVEL. <reason>`` and exits 1.
The bootstrap option may also follow the command.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from pykraft.cli._common import add_admin_options, add_bootstrap, admin_client, command_group


def register(sub: Any) -> None:
    parser, commands = command_group(
        sub,
        "features",
        help="describe, upgrade and downgrade feature levels (kafka-features)",
        dest="features_command",
    )
    add_admin_options(parser)
    upgrade = commands.add_parser("upgrade", help="upgrade a feature's finalized version")
    add_bootstrap(upgrade, after_command=True)  # accepted after the command too
    upgrade.add_argument(
        "--feature", action="append", metavar="NAME=LEVEL", help="a feature's new level"
    )
    upgrade.add_argument(
        "--release-version", metavar="R", help="metadata.version as a release (4.0-IV3)"
    )
    upgrade.add_argument(
        "--dry-run", action="store_true", help="validate only (UpdateFeatures ValidateOnly)"
    )
    upgrade.set_defaults(func=_upgrade)
    describe = commands.add_parser("describe", help="supported and finalized features")
    add_bootstrap(describe, after_command=True)
    describe.set_defaults(func=_describe)
    downgrade = commands.add_parser("downgrade", help="downgrade a feature's finalized version")
    add_bootstrap(downgrade, after_command=True)
    downgrade.add_argument("--feature", action="append", required=True, metavar="NAME=LEVEL")
    downgrade.add_argument("--unsafe", action="store_true", help="an unsafe (lossy) downgrade")
    downgrade.add_argument("--dry-run", action="store_true", help="validate only")
    downgrade.set_defaults(func=_downgrade)


def _fail(message: object) -> int:
    print(f"pykraft features: {message}", file=sys.stderr)
    return 1


def _parse_features(items: list[str], release_version: str | None = None) -> dict[str, int]:
    """``--feature NAME=LEVEL`` items (and ``--release-version``) as name -> level;
    ValueError names the bad item."""
    from pykraft.metadata.versions import METADATA_VERSION, parse_release_version

    levels: dict[str, int] = {}
    for item in items:
        name, sep, level = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ValueError(f"--feature {item!r}: expected NAME=LEVEL")
        if name in levels:
            raise ValueError(f"--feature {name} given twice")
        try:
            levels[name] = int(level)
        except ValueError:
            if name != METADATA_VERSION:
                raise ValueError(f"--feature {item!r}: {level!r} is not a level") from None
            levels[name] = parse_release_version(level).level
        if levels[name] < 0:
            raise ValueError(f"--feature {item!r}: negative level")
    if release_version is not None:
        if levels:
            raise ValueError("give --release-version or --feature, not both")
        # As Kafka's tool: metadata.version and every feature at the release's default
        # level, those above 0 for an upgrade.
        from pykraft.metadata.versions import release_features

        levels = release_features(parse_release_version(release_version).level)
    if not levels:
        raise ValueError("give at least one --feature (or --release-version)")
    return levels


def _level_text(name: str, level: int) -> str:
    """A level as Kafka's tool prints it (metadata.version by release name)."""
    from pykraft.metadata.versions import METADATA_VERSION, metadata_version

    if name == METADATA_VERSION:
        try:
            return metadata_version(level).name
        except ValueError:
            return str(level)
    return str(level)


def feature_line(info: Any) -> str:
    """Kafka's FeatureCommand describe line for one feature."""
    finalized = _level_text(info.name, 0 if info.finalized is None else info.finalized)
    epoch = "-" if info.epoch < 0 else str(info.epoch)
    low, high = _level_text(info.name, info.min_version), _level_text(info.name, info.max_version)
    return (
        f"Feature: {info.name:<40s}  SupportedMinVersion: {low:<15s}  "
        f"SupportedMaxVersion: {high:<15s}  "
        f"FinalizedVersionLevel: {finalized:<15s}  Epoch: {epoch}"
    )


def _describe(args: argparse.Namespace) -> int:
    from pykraft.admin import AdminError

    async def go() -> list[Any]:
        async with admin_client(args) as admin:
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
    return _update(args, upgrade_type=3 if args.unsafe else 2)


def _upgrade(args: argparse.Namespace) -> int:
    return _update(args, upgrade_type=1)


def _update(args: argparse.Namespace, *, upgrade_type: int) -> int:
    from pykraft.admin import AdminError

    try:
        levels = _parse_features(args.feature or [], getattr(args, "release_version", None))
    except ValueError as e:
        return _fail(e)

    async def go() -> None:
        async with admin_client(args) as admin:
            await admin.update_features(
                levels, upgrade_type=upgrade_type, validate_only=args.dry_run
            )

    verb = "upgrade" if upgrade_type == 1 else "downgrade"
    try:
        asyncio.run(go())
    except AdminError as e:
        for name, level in levels.items():
            print(f"Could not {verb} {name} to {_level_text(name, level)}. {e.message or e}")
        print(f"{len(levels)} out of {len(levels)} operation(s) failed.")
        return 1
    except ValueError as e:
        return _fail(e)
    done = f"can be {verb}d" if args.dry_run else f"was {verb}d"
    for name, level in levels.items():
        print(f"{name} {done} to {_level_text(name, level)}.")
    return 0
