"""``python -m pykraft.ops --write`` writes the dashboard and the alert rules into ``ops/`` at
the repository's top; ``--check`` fails (exit 1) when the files there differ from what the
code would write."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pykraft.ops.alerts import rules_yaml
from pykraft.ops.dashboard import dashboard_json

ROOT = Path(__file__).resolve().parents[3]
FILES = {
    Path("ops/grafana/pykraft-controllers.json"): dashboard_json,
    Path("ops/prometheus/pykraft-alerts.yml"): rules_yaml,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pykraft.ops")
    parser.add_argument("--write", action="store_true", help="write the files")
    parser.add_argument("--check", action="store_true", help="fail if a file is stale")
    args = parser.parse_args(argv)
    stale = []
    for relative, render in FILES.items():
        path, text = ROOT / relative, render()
        if args.write:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        elif not path.exists() or path.read_text() != text:
            stale.append(str(relative))
    if stale:
        print("stale (python -m pykraft.ops --write): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
