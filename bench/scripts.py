"""Every benchmark script outside run_all.py's own phases, as a phase ``run_all.py`` runs.

One row per script: the ``--only`` name that runs it, its arguments for a full and a
``--quick`` run, whether a run without ``--only`` includes it (the long ones, which write
gigabytes or take an hour, run only when named), and, for a script that writes its figures
as JSON (``--out``), that it does. ``run_all.py`` runs each as a child process of its own and
keeps its stdout, its exit code and its JSON; ``tests/test_bench_reach.py`` checks that every
``bench_*.py`` and ``wl_*.py`` is reachable from run_all.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import BENCH_DIR, REPO_DIR


@dataclass(frozen=True)
class Script:
    phase: str  # the name run_all.py --only takes
    script: str  # bench/<script>.py
    full: tuple[str, ...]
    quick: tuple[str, ...]
    default: bool  # part of a run without --only
    writes_json: bool = False  # takes --out PATH and writes its figures there
    timeout_s: int = 3600


# fmt: off
SCRIPTS: tuple[Script, ...] = (  # a table reads better whole: one row per script
    Script("sim", "bench_sim", ("--events", "200000", "--profiles", "none,chaos"),
           ("--events", "20000", "--profiles", "none,chaos"), True),
    Script("log", "bench_log", ("--records", "1000000"), ("--records", "50000"), True),
    Script("protocol", "bench_protocol", (), (), True),
    Script("controller", "bench_controller", (), (), True),
    Script("batch", "bench_batch", (), ("--batches", "50", "--repeat", "1"), True),
    Script("elr", "bench_elr", (), ("--topics", "100", "--repeat", "1"), True),
    Script("balance", "bench_balance", (), ("--topics", "100"), True, writes_json=True),
    Script("hwm", "bench_hwm", (), ("--seeds", "1", "--events", "3000"), True, writes_json=True),
    Script("duties", "bench_duties", (), (), False, writes_json=True),
    Script("retention", "bench_retention", (), ("--partitions", "10000"), False,
           writes_json=True),
    Script("snapshot", "bench_snapshot", ("--partitions", "100000", "1000000"),
           ("--partitions", "10000"), False),
    Script("authorizer", "bench_authorizer", (), ("--sizes", "1000", "--repeat", "1"), False,
           writes_json=True),
    Script("controller-failover", "bench_failover", (), ("--records", "20000"), False),
    Script("restart", "bench_restart", (), ("--gib", "0.25", "--tails-mib", "0,64"), False),
    Script("security", "bench_security", (),
           ("--writes", "50", "--handshakes", "20", "--kinds", "pykraft"), False),
    Script("migration", "bench_migration", (), ("--topics", "200"), False),
    Script("history", "bench_history", (), ("--partitions", "2000", "--brokers", "30"), False),
    Script("pipeline", "bench_pipeline", ("ingest",), ("ingest", "--mb", "2"), False),
    Script("faults", "bench_faults", (), ("--seconds", "60"), False),
    Script("sweep", "bench_sweep", (), ("--seeds-per-profile", "1", "--profiles", "none,chaos"),
           False),
)
# fmt: on


def run_script(row: Script, *, quick: bool, out_dir: Path, log: Any) -> dict[str, Any]:
    """Run one script as it is; its stdout verbatim, its JSON figures when it writes any.
    A script that fails or times out is a result with ``error``; the run goes on."""
    args = list(row.quick if quick else row.full)
    json_path = out_dir / f"{row.phase}.json"
    if row.writes_json:
        args += ["--out", str(json_path)]
    log(f"   {row.script} {' '.join(args)}")
    try:
        proc = subprocess.run(
            [sys.executable, str(BENCH_DIR / f"{row.script}.py"), *args],
            capture_output=True,
            text=True,
            timeout=row.timeout_s,
            cwd=REPO_DIR,
        )
    except subprocess.TimeoutExpired:
        return {"script": row.script, "args": args, "error": f"timed out after {row.timeout_s} s"}
    result: dict[str, Any] = {
        "script": row.script,
        "args": args,
        "rc": proc.returncode,
        "stdout": proc.stdout,
        "stderr": proc.stderr[-2000:],
    }
    if proc.returncode != 0:
        result["error"] = f"exit code {proc.returncode}"
    if row.writes_json and json_path.exists():
        result["figures"] = json.loads(json_path.read_text())
    return result
