"""`pykraft faults`: the real-process fault harness (``pykraft.faults``).

    pykraft dev faults run [--seed N] [--seconds 60] [--voters 3] [--observers 1] [--rate R]
                       [--brokers 0] [--controllers pykraft|kafka] [--plant DIR]
                       [--no-netns] [--work DIR]

Starts ``--voters`` + ``--observers`` ``pykraft server`` processes (each in its own network
namespace unless ``--no-netns``; namespaces, tmpfs disks and partitions need root), runs the
workload and the seeded fault schedule for ``--seconds``, heals, checks the replicas' logs and
prints the report. Exits 1 when anything acknowledged was lost, replicas diverged, two leaders
shared an epoch, a high watermark went down or a leader did not come back in time.

``--brokers N`` adds N real Apache Kafka brokers with real clients (idempotent acks=all
producers, a transactional producer, a consumer group, an admin creating and deleting topics
and reassigning partitions) and the broker fault kinds; the run then also fails when an
acknowledged record is lost or duplicated, a leader was elected outside the ISR, a leader
epoch went back, a committed offset went back or a broker's view differs from the log.
``--controllers kafka`` runs the same schedule (same seed) on Apache Kafka's own controllers
(4.3.1, formatted at 4.0-IV3 as pykraft bootstraps), for the side by side.
``--plant DIR`` runs pykraft's controllers with a planted bug (``tests/plants/<bug>``, put first
on their ``PYTHONPATH``; e.g. ``elect_outside_isr``: a replica the ISR just dropped elected):
the checker must fail the run. The server itself has no switch for any planted bug.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "faults", help="fault runs on real processes (kill -9, SIGSTOP, partitions, full disk)"
    )

    def usage(args: argparse.Namespace) -> int:
        parser.print_help()
        return 2

    parser.set_defaults(func=usage)
    cmds = parser.add_subparsers(dest="faults_command", metavar="FAULTS_COMMAND")
    run_p = cmds.add_parser("run", help="one fault run; prints the report")
    run_p.add_argument("--seed", type=int, default=1)
    run_p.add_argument("--seconds", type=float, default=60.0, help="length of the fault phase")
    run_p.add_argument("--voters", type=int, default=3)
    run_p.add_argument("--observers", type=int, default=1)
    run_p.add_argument(
        "--rate",
        type=float,
        default=None,
        help="registrations per second (default 20; 2 beside --brokers)",
    )
    run_p.add_argument(
        "--brokers", type=int, default=0, help="real Apache Kafka brokers, with Kafka clients"
    )
    run_p.add_argument(
        "--controllers",
        choices=("pykraft", "kafka"),
        default="pykraft",
        help="whose controllers: pykraft's, or Apache Kafka's own for the side by side",
    )
    run_p.add_argument(
        "--plant",
        type=Path,
        default=None,
        metavar="DIR",
        help="a planted bug (tests/plants/<bug>) in pykraft's controllers: the run must fail",
    )
    run_p.add_argument("--no-netns", action="store_true", help="no namespaces: no partitions")
    run_p.add_argument("--work", type=Path, default=None, help="keep everything here")
    run_p.set_defaults(func=_cmd_run)


def _cmd_run(args: argparse.Namespace) -> int:
    from pykraft.faults.run import RunConfig, run

    if args.voters < 1 or args.observers < 0 or args.seconds <= 0 or args.brokers < 0:
        print(
            "pykraft faults: --voters >= 1, --observers >= 0, --brokers >= 0, --seconds > 0",
            file=sys.stderr,
        )
        return 2
    # SIGTERM (a timeout, a CI runner giving up) unwinds like Ctrl-C: the processes are
    # killed, the disks unmounted and the namespaces removed on the way out.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    if args.plant is not None and args.controllers == "kafka":
        print("pykraft faults: --plant breaks pykraft's controllers only", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING)
    # kafka-python logs every retry; the report counts the clients' outcomes instead.
    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    root = os.geteuid() == 0
    if not root and not args.no_netns:
        print(
            "pykraft faults: network namespaces and tmpfs disks need root "
            "(run with sudo, or --no-netns for kill/pause/restart faults only)",
            file=sys.stderr,
        )
        return 2
    report = run(
        RunConfig(
            seed=args.seed,
            seconds=args.seconds,
            voters=args.voters,
            observers=args.observers,
            netns=not args.no_netns,
            disks=root,
            rate=args.rate,
            brokers=args.brokers,
            plant=args.plant,
            controllers=args.controllers,
            work=args.work,
            log=lambda line: print(line, flush=True),
        )
    )
    print(report.format())
    return 0 if report.ok else 1
