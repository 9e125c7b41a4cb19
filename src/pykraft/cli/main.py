"""Entry point of the ``pykraft`` command.

Each subcommand lives in its own module exposing ``register(subparsers)``, which adds an
argparse parser whose ``func`` default takes the parsed namespace and returns an exit code.
Modules are imported here so that ``pykraft --help`` lists everything; they keep their own
heavy imports inside the command functions.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Final

from pykraft import __version__
from pykraft.cli import (
    cluster,
    demo,
    faults,
    features,
    local,
    local_roll,
    metadata_backup,
    metadata_quorum,
    metadata_recovery,
    migration,
    pipeline,
    reassign,
    server,
    sim,
    storage,
    topics,
    verify,
)

# What an operator runs, listed by ``pykraft --help``.
_MODULES = (
    storage,
    server,
    metadata_quorum,
    metadata_recovery,
    metadata_backup,
    cluster,
    local_roll,
    features,
    topics,
    reassign,
    migration,
    local,
    pipeline,
    verify,
)
# Development harnesses, under ``pykraft dev``; their old top-level names (``pykraft sim``,
# ``faults``, ``demo``) still work for one release, unlisted.
DEV_MODULES: Final = (sim, faults, demo)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pykraft", description="Apache Kafka's KRaft metadata quorum in Python."
    )
    parser.add_argument("--version", action="version", version=f"pykraft {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _MODULES:
        module.register(sub)
    dev = sub.add_parser("dev", help="development harnesses: simulation, fault runs, demo")
    dev.set_defaults(func=lambda _args: _usage(dev))
    dev_sub = dev.add_subparsers(dest="dev_command", metavar="DEV_COMMAND")
    for module in DEV_MODULES:
        module.register(dev_sub)
    listed = len(sub._choices_actions)
    for module in DEV_MODULES:  # the old names, kept out of the listing
        module.register(sub)
    del sub._choices_actions[listed:]
    return parser


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


CLUSTER_ID_OPTIONS: Final = ("--cluster-id", "-t")
CLUSTER_ID_LENGTH: Final = 22  # a Kafka Uuid in base64url


def _dash_cluster_ids(argv: Sequence[str]) -> list[str]:
    """``--cluster-id -AbC...``: a cluster id a ZooKeeper-mode Kafka generated may start with
    '-' (only KRaft's Uuid.randomUuid avoids it), which argparse would read as an option;
    join it to its option (``--cluster-id=-AbC...``)."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        nxt = argv[i + 1] if i + 1 < len(argv) else ""
        if (
            arg in CLUSTER_ID_OPTIONS
            and nxt.startswith("-")
            and not nxt.startswith("--")
            and len(nxt) == CLUSTER_ID_LENGTH
        ):
            out.append(f"{arg}={nxt}")
            i += 2
            continue
        out.append(arg)
        i += 1
    return out


def _without_test_strategies() -> None:
    """Keep Hypothesis out of a pykraft process. kio registers a Hypothesis strategy for
    each of its types whenever Hypothesis can be imported (a dev dependency of this
    project, so installed wherever the tests run), which made every command's start slower
    by about a second and the server's imports several times slower on a busy machine; no
    command uses them. kio imports it in a ``try`` and goes on without it."""
    sys.modules.setdefault("hypothesis", None)  # type: ignore[arg-type]


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:  # the ``pykraft`` program itself, not a caller in its own process
        _without_test_strategies()
    parser = build_parser()
    args = parser.parse_args(_dash_cluster_ids(sys.argv[1:] if argv is None else argv))
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    from pykraft.cli._common import UsageError
    from pykraft.storage.properties import ConfigError

    try:
        code: int = func(args)
    except (ConfigError, UsageError) as e:  # e.g. a bad --command-config: one line
        print(f"pykraft: {e}", file=sys.stderr)
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main())
