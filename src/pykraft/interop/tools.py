"""Apache Kafka's command-line tools by their usual names, over the jars the project fetched
(there is no Kafka distribution with its ``bin/`` scripts on a fresh machine; Maven gives the
jars): ``scripts/kafka.sh run kafka-console-producer --bootstrap-server ... --topic demo``.

    python -m pykraft.interop.tools TOOL [ARGS...]
    python -m pykraft.interop.tools --list

``TOOL`` is a script's name as a Kafka distribution ships it, with or without ``kafka-`` and
``.sh`` (``kafka-topics.sh``, ``kafka-topics``, ``topics``), or a main class. The tool runs
with Kafka 4.4.0's jars (the metadata shell with 4.3.1's, the last on Maven Central;
``PYKRAFT_KAFKA_DIST`` picks another distribution of ``scripts/kafka.sh``), in this process's
place (``exec``): its standard input, output and
exit code are the tool's, so an interactive console producer works as in a terminal.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Final

from pykraft.interop.kafka import KAFKA_MAIN, KafkaDist, KafkaError

__all__ = ["DIST_ENV", "main", "tool_name"]

DIST_ENV: Final = "PYKRAFT_KAFKA_DIST"
NOT_TOOLS: Final = frozenset({"server", "zookeeper", "test-raft-server"})


def tool_name(name: str) -> str | None:
    """The ``KAFKA_MAIN`` key or class ``name`` stands for; None for an unknown tool."""
    if "." in name and not name.endswith(".sh"):
        return name  # a main class
    key = name.removesuffix(".sh").removeprefix("kafka-")
    return key if key in KAFKA_MAIN and key not in NOT_TOOLS else None


def _usage() -> str:
    names = ", ".join(f"kafka-{k}" for k in sorted(KAFKA_MAIN) if k not in NOT_TOOLS)
    return f"usage: scripts/kafka.sh run TOOL [ARGS...]; TOOL is one of: {names}"


def main(argv: Sequence[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "--list"):
        print(_usage(), file=sys.stderr if not argv else sys.stdout)
        return 2 if not argv else 0
    key = tool_name(argv[0])
    if key is None:
        print(f"kafka.sh run: unknown tool {argv[0]!r}\n{_usage()}", file=sys.stderr)
        return 2
    # kafka-shell 4.4.0 is not on Maven Central: the metadata shell is 4.3.1's.
    default = "4" if key == "metadata-shell" else "4.4"
    try:
        dist = KafkaDist.get(os.environ.get(DIST_ENV, default))
    except KafkaError as e:
        print(f"kafka.sh run: {e}", file=sys.stderr)
        return 1
    command = dist.command(key, argv[1:])
    sys.stdout.flush()
    os.execvp(command[0], command)
    return 1  # pragma: no cover - exec does not return


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
