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

from pykraft import __version__
from pykraft.cli import (
    demo,
    faults,
    features,
    local,
    metadata_quorum,
    migration,
    pipeline,
    reassign,
    server,
    sim,
    storage,
    topics,
)

_MODULES = (
    storage,
    server,
    metadata_quorum,
    features,
    topics,
    reassign,
    migration,
    local,
    sim,
    faults,
    demo,
    pipeline,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pykraft", description="Apache Kafka's KRaft metadata quorum in Python."
    )
    parser.add_argument("--version", action="version", version=f"pykraft {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _MODULES:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    from pykraft.storage.properties import ConfigError

    try:
        code: int = func(args)
    except ConfigError as e:  # e.g. a bad --command-config: one line, no traceback
        print(f"pykraft: {e}", file=sys.stderr)
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main())
