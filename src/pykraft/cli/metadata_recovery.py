"""``pykraft metadata-recovery``: offline tools for a quorum that lost its majority (issue 48).

``survey`` reads the surviving controllers' metadata log directories -- pykraft's or Kafka's
own controllers', the format is the same -- without changing them, and names the one to seed
the recovered quorum (``storage/survey.py``: the highest last epoch, then the longest log).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pykraft.cli._common import command_group

if TYPE_CHECKING:
    from pykraft.storage.survey import DirectorySurvey


def register(sub: Any) -> None:
    _, commands = command_group(
        sub,
        "metadata-recovery",
        help="recover a quorum that lost its majority (offline, on the controllers' directories)",
        dest="recovery_command",
    )
    survey = commands.add_parser(
        "survey",
        help="describe the surviving controllers' metadata log directories and name the seed",
    )
    survey.add_argument(
        "directories", nargs="*", type=Path, metavar="METADATA_LOG_DIR", help="metadata.log.dir"
    )
    survey.add_argument(
        "--config",
        "-c",
        action="append",
        default=[],
        type=Path,
        help="a controller's .properties (its metadata.log.dir is surveyed); repeatable",
    )
    survey.add_argument("--json", action="store_true", help="print JSON")
    survey.set_defaults(func=_survey)


def _directories(args: argparse.Namespace) -> list[Path]:
    from pykraft.storage.properties import load_properties

    found = list(args.directories)
    for config in args.config:
        props = load_properties(config)
        found.append(Path(props.get("metadata.log.dir") or props["log.dirs"].split(",")[0]))
    return found


def _survey(args: argparse.Namespace) -> int:
    from pykraft.storage import ConfigError, StorageError
    from pykraft.storage.survey import recommend, survey_directory

    try:
        directories = _directories(args)
    except (OSError, KeyError, ConfigError, StorageError) as e:
        print(f"error: cannot read a controller's config: {e}", file=sys.stderr)
        return 2
    if not directories:
        print("error: name at least one metadata log directory (or --config)", file=sys.stderr)
        return 2
    surveys = [survey_directory(d) for d in directories]
    advice = recommend(surveys)
    if args.json:
        seed = None if advice.seed is None else str(advice.seed.path)
        report = {
            "directories": [s.as_json() for s in surveys],
            "seed": seed,
            "reasons": list(advice.reasons),
        }
        print(json.dumps(report, indent=2))
    else:
        for s in surveys:
            print("\n".join(_describe(s)))
        name = "none" if advice.seed is None else f"node {advice.seed.node_id} ({advice.seed.path})"
        print(f"seed: {name}")
        for reason in advice.reasons:
            print(f"  {reason}")
    return 0 if advice.seed is not None else 1


def _describe(s: DirectorySurvey) -> list[str]:
    from pykraft.storage.meta import uuid_to_kafka

    lines = [
        f"node {s.node_id if s.node_id is not None else '?'}: {s.path}",
        f"  cluster.id {s.cluster_id}, directory.id {s.directory_id}",
    ]
    if s.quorum_epoch is not None:
        lines.append(
            f"  quorum-state: epoch {s.quorum_epoch}, leader {s.leader_id}, voted {s.voted_id}"
        )
    lines.append(
        f"  log: offsets [{s.log_start_offset}, {s.log_end_offset}), last epoch {s.last_epoch}"
        + (f", {s.torn_bytes} torn bytes after it" if s.torn_bytes else "")
    )
    lines.append(f"  high watermark: at least {s.committed_at_least} (the newest snapshot's end)")
    for offset, epoch, size in s.snapshots:
        lines.append(f"  snapshot {offset}-{epoch}: {size} bytes")
    for name in s.refused_snapshots:
        lines.append(f"  snapshot {name}: REFUSED (corrupt)")
    if s.voters is None:
        lines.append("  voter set: static (controller.quorum.voters; no VotersRecord)")
    else:
        lines.append(f"  voter set (written at offset {s.voters_offset}):")
        for v in s.voters:
            directory = "-" if v.directory_id is None else uuid_to_kafka(v.directory_id)
            endpoints = " ".join(f"{e.name}://{e.host}:{e.port}" for e in v.endpoints)
            lines.append(f"    voter {v.voter_id} directory.id {directory} {endpoints}")
    if s.kraft_version is not None:
        lines.append(f"  kraft.version {s.kraft_version}")
    lines.extend(f"  problem: {p}" for p in s.problems)
    return lines
