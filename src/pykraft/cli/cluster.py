"""``pykraft cluster describe`` (``topics.cluster_describe``: brokers and controllers) and
``pykraft cluster health``: every node's health answers in one table (issue 47).

Each node serves ``/health/live``, ``/health/ready`` and ``/health/safe-to-restart`` on its
``metrics.port`` (``node/health.py``); this asks each endpoint given for all three and prints
one line per node: the node id, its state and leader as it sees them, the three answers (UP or
DOWN, or "no answer" for an endpoint that did not answer within ``--timeout-ms``) and the
reasons of the first answer that is DOWN (else why a restart is safe). ``--json`` prints the
answers as they came. The exit code is 0 when every node is live and ready, 1 when one is not
(a script's gate before a restart: ``safe-to-restart`` is for the node about to go).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Final

from pykraft.cli._common import UsageError, add_admin_options, command_group
from pykraft.cli.topics import cluster_describe

CHECKS: Final = ("live", "ready", "safe-to-restart")
Answer = tuple[int | None, dict[str, Any]]  # HTTP status (None: no answer), the JSON


def register(sub: Any) -> None:
    _, commands = command_group(
        sub, "cluster", help="the brokers and controllers of the cluster", dest="cluster_command"
    )
    describe = commands.add_parser("describe", help="brokers and controllers")
    add_admin_options(describe)
    describe.add_argument(
        "--metadata-log-dir", type=Path, metavar="DIR", help="read a metadata log, offline"
    )
    describe.set_defaults(func=cluster_describe)
    health = commands.add_parser(
        "health", help="every node's live, ready and safe-to-restart answers"
    )
    health.add_argument(
        "--endpoints",
        required=True,
        metavar="HOST:PORT[,...]",
        help="the nodes' metrics ports (metrics.port), which serve /health/*",
    )
    health.add_argument("--timeout-ms", type=int, default=10_000, help="per request")
    health.add_argument("--json", action="store_true", help="print the answers as JSON")
    health.set_defaults(func=_health)


def _word(answer: Answer) -> str:
    status = answer[0]
    return "no answer" if status is None else ("UP" if status == 200 else "DOWN")


def _line(endpoint: str, answers: dict[str, Answer]) -> str:
    ready = answers["ready"][1]
    node = ready.get("node_id", answers["live"][1].get("node_id", "?"))
    state = f"{ready.get('state', '?')}/leader {ready.get('leader_id', '?')}"
    down = next((a for a in answers.values() if a[0] != 200), answers["safe-to-restart"])
    reasons = "; ".join(down[1].get("reasons", []))
    words = "  ".join(f"{check} {_word(answers[check])}" for check in CHECKS)
    return f"node {node:<4} {endpoint:<21} {state:<22} {words}  {reasons}"


def _health(args: argparse.Namespace) -> int:
    endpoints = [e.strip() for e in args.endpoints.split(",") if e.strip()]
    if not endpoints or any(":" not in e for e in endpoints):
        raise UsageError("--endpoints takes host:port[,host:port...] (the nodes' metrics.port)")
    from pykraft.admin.roll import ask

    timeout_s = args.timeout_ms / 1000
    every = {e: {check: ask(e, check, timeout_s) for check in CHECKS} for e in endpoints}
    if args.json:
        out = {
            e: {c: {"status": a[0], **a[1]} for c, a in answers.items()}
            for e, answers in every.items()
        }
        print(json.dumps(out, indent=1))
    else:
        for endpoint, answers in every.items():
            print(_line(endpoint, answers))
    healthy = all(a["live"][0] == 200 and a["ready"][0] == 200 for a in every.values())
    sys.stdout.flush()
    return 0 if healthy else 1
