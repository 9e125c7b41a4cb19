"""``pykraft storage``: random-uuid, format, info (Kafka's kafka-storage.sh)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pykraft.cli._common import command_group


def register(sub: Any) -> None:
    _, commands = command_group(
        sub, "storage", help="format and inspect a metadata log directory", dest="storage_command"
    )

    uuid_parser = commands.add_parser("random-uuid", help="print a new Kafka uuid")
    uuid_parser.set_defaults(func=_random_uuid)

    fmt = commands.add_parser("format", help="format the metadata log directory")
    fmt.add_argument("--config", "-c", required=True, type=Path, help="server .properties")
    fmt.add_argument("--cluster-id", "-t", required=True)
    # As kafka-storage: a controller without controller.quorum.voters needs one of these.
    mode = fmt.add_mutually_exclusive_group()
    mode.add_argument("--standalone", "-s", action="store_true")
    mode.add_argument("--initial-controllers", "-I", metavar="ID@HOST:PORT:DIRID,...")
    mode.add_argument("--no-initial-controllers", "-N", action="store_true")
    fmt.add_argument(
        "--release-version",
        "-r",
        metavar="VERSION",
        help=(
            "the metadata.version to start with, e.g. 3.9 or 4.0-IV3 (default 4.4-IV2, as "
            "Kafka 4.4.0's kafka-storage; name the brokers' release when they run an older Kafka)"
        ),
    )
    fmt.add_argument("--feature", "-f", action="append", default=[], metavar="NAME=LEVEL")
    fmt.add_argument("--ignore-formatted", "-g", action="store_true")
    fmt.add_argument(
        "--add-scram",
        "-S",
        action="append",
        default=[],
        metavar="MECHANISM=[name=...,password=...]",
        help="a SCRAM user in the bootstrap metadata (repeatable), as kafka-storage",
    )
    fmt.set_defaults(func=_format)

    info = commands.add_parser("info", help="describe the metadata log directory")
    info.add_argument("--config", "-c", required=True, type=Path)
    info.set_defaults(func=_info)

    preflight = commands.add_parser(
        "preflight",
        help="whether this config can start on its metadata log directory (static/dynamic)",
    )
    preflight.add_argument("--config", "-c", required=True, type=Path)
    preflight.set_defaults(func=_preflight)


def _random_uuid(args: argparse.Namespace) -> int:
    from pykraft.storage import random_uuid, uuid_to_kafka

    print(uuid_to_kafka(random_uuid()))
    return 0


def _features(args: argparse.Namespace) -> tuple[int | None, dict[str, int]]:
    """(kraft.version, the other features) from ``--feature`` and ``--release-version``."""
    from pykraft.metadata.versions import (
        FEATURES,
        METADATA_VERSION,
        metadata_version,
        parse_release_version,
    )
    from pykraft.storage import ConfigError

    kraft_version = None
    features: dict[str, int] = {}
    if args.release_version is not None:
        try:
            features[METADATA_VERSION] = parse_release_version(args.release_version).level
        except ValueError as e:
            raise ConfigError(f"--release-version: {e}") from None
    for feature in args.feature:
        name, eq, level = feature.partition("=")
        name = name.strip()
        if not eq or not level.strip().isdigit():
            raise ConfigError(f"--feature {feature!r}: expected NAME=LEVEL")
        value = int(level)
        if name == "kraft.version":
            kraft_version = value
        elif name == METADATA_VERSION:
            if args.release_version is not None:
                raise ConfigError(
                    "give metadata.version by --release-version or --feature, not both"
                )
            try:
                features[name] = metadata_version(value).level
            except ValueError as e:
                raise ConfigError(f"--feature {feature}: {e}") from None
        elif name in FEATURES:
            low, high = FEATURES[name]
            if not low <= value <= high:
                raise ConfigError(f"--feature {feature}: supported levels are {low}-{high}")
            features[name] = value
        else:
            known = ", ".join(["kraft.version", METADATA_VERSION, *sorted(FEATURES)])
            raise ConfigError(f"--feature {name}: unknown feature (known: {known})")
    return kraft_version, _with_release_defaults(features)


def _with_release_defaults(features: dict[str, int]) -> dict[str, int]:
    """As kafka-storage: every feature at the release's default level, then ``--feature``'s;
    checked against their dependencies (the ones above level 0 are returned)."""
    from pykraft.controller.features import check_bootstrap_level
    from pykraft.metadata.versions import (
        DEFAULT_METADATA_VERSION,
        METADATA_VERSION,
        dependency_error,
        release_features,
    )
    from pykraft.storage import ConfigError

    level = features.get(METADATA_VERSION, DEFAULT_METADATA_VERSION.level)
    try:
        check_bootstrap_level(level)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    features = {**release_features(level), **features}
    for name, value in features.items():
        reason = dependency_error(name, value, features)
        if reason is not None:
            raise ConfigError(f"--feature {name}={value}: {reason}")
    return {name: value for name, value in features.items() if value > 0}


def _format(args: argparse.Namespace) -> int:
    from pykraft.node.config import load_config
    from pykraft.storage import (
        ConfigError,
        StorageError,
        format_storage,
        parse_initial_controllers,
        uuid_to_kafka,
    )
    from pykraft.storage.scram import parse_add_scram

    try:
        config = load_config(args.config, require_quorum=False)
        controllers = (
            parse_initial_controllers(args.initial_controllers)
            if args.initial_controllers is not None
            else None
        )
        kraft_version, features = _features(args)
        scram = [parse_add_scram(text) for text in args.add_scram]
        meta = format_storage(
            config,
            args.cluster_id,
            standalone=args.standalone,
            initial_controllers=controllers,
            kraft_version=kraft_version,
            ignore_formatted=args.ignore_formatted,
            no_initial_controllers=args.no_initial_controllers,
            features=features,
            scram=scram,
        )
    except (ConfigError, StorageError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if meta is None:
        print(f"{config.metadata_log_dir} is already formatted; skipping (--ignore-formatted)")
    else:
        print(
            f"Formatted {config.metadata_log_dir} with cluster.id {meta.cluster_id}, "
            f"node.id {meta.node_id}, directory.id {uuid_to_kafka(meta.directory_id)}"
        )
    return 0


def _info(args: argparse.Namespace) -> int:
    from pykraft.node.config import load_config
    from pykraft.storage import ConfigError, StorageError
    from pykraft.storage.inspect import describe_log_dir

    try:
        config = load_config(args.config, require_quorum=False)
        print(describe_log_dir(config.metadata_log_dir), end="")
    except (ConfigError, StorageError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def _preflight(args: argparse.Namespace) -> int:
    """The static-to-dynamic order (``storage/preflight.py``): the check a start makes, run
    before the restart."""
    from pykraft.node.config import load_config
    from pykraft.storage import ConfigError
    from pykraft.storage.preflight import static_quorum_without_voters
    from pykraft.storage.survey import survey_directory

    try:
        config = load_config(args.config, require_quorum=False)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    found = survey_directory(config.metadata_log_dir)
    static = bool(config.quorum_voters)
    version = found.kraft_version or 0
    mode = "static (controller.quorum.voters)" if static else "dynamic (bootstrap servers)"
    print(f"{config.metadata_log_dir}: kraft.version {version}; this config: {mode}")
    for problem in found.problems:
        print(f"problem: {problem}")
    refused = static_quorum_without_voters(
        found.kraft_version, found.log_end_offset > 0 or bool(found.snapshots), static
    )
    if refused is not None:
        print(f"refused: {refused}")
        return 1
    if static and version >= 1:
        print(
            "note: kraft.version is 1, so controller.quorum.voters is ignored: the voter set in "
            "the log is in force; switch to controller.quorum.bootstrap.servers"
        )
    print("ok: this controller can start on this directory")
    return 0
