"""``pykraft local up``: formats on first run, reuses data after, stops cleanly on Ctrl-C."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from .local_up import local_up, read_until, stop

TIMEOUT_S = 20


def run_until_leader(state: Path) -> str:
    process = local_up("--controllers", "1", "--dir", str(state))
    seen: list[str] = []
    try:
        read_until(process, r"^\S+ leader=", seen, TIMEOUT_S)
    finally:
        rest = stop(process, TIMEOUT_S)
    assert process.returncode == 0
    return "".join(seen) + rest


def test_local_up_formats_once_and_restarts(tmp_path: Path) -> None:
    state = tmp_path / "local"
    first = run_until_leader(state)
    assert "formatted" in first
    assert "bootstrap controllers: 127.0.0.1:" in first
    assert first.rstrip().endswith("stopped")
    second = run_until_leader(state)
    assert "formatted" not in second
    assert "epoch=" in second


def test_a_killed_controller_is_reported_and_restarted_on_request(tmp_path: Path) -> None:
    """Issue 29 part 5: kill -9 a controller of `local up` -- the cluster keeps running, the
    status says who is down and who leads now, and `pykraft local restart ID` brings it back."""
    state = tmp_path / "local"
    process = local_up("--controllers", "3", "--dir", str(state))
    seen: list[str] = []
    try:
        read_until(process, re.escape(" leader="), seen, 60)
        leader = int(seen[-1].split(" leader=", 1)[1].split()[0])
        victim = next(p for p in (1, 2, 3) if p == leader)  # the active controller itself
        pids = subprocess.run(
            ["pgrep", "-f", f"server start {state}/controller-{victim}.properties"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        assert len(pids) == 1, pids
        subprocess.run(["kill", "-9", pids[0]], check=True)
        read_until(process, re.escape(f"controller {victim} exited"), seen, 30)
        assert "pykraft local restart" in seen[-1]
        read_until(process, re.escape(f"down=controller {victim}"), seen, 30)
        # A new leader among the others, while the cluster runs on.
        read_until(process, re.escape(" leader="), seen, 30)
        while f"leader={victim} " in seen[-1] or "no leader" in seen[-1]:
            read_until(process, re.escape(" leader="), seen, 30)
        asked = subprocess.run(
            [
                sys.executable,
                "-m",
                "pykraft.cli.main",
                "local",
                "restart",
                str(victim),
                "--dir",
                str(state),
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert asked.returncode == 0, asked.stderr
        read_until(process, re.escape(f"controller {victim} started again"), seen, 30)
        read_until(process, re.escape(" leader="), seen, 30)
        while "down=" in seen[-1]:
            read_until(process, re.escape(" leader="), seen, 30)
    finally:
        rest = stop(process, 60)
    assert process.returncode == 0, "".join(seen)
    assert rest.rstrip().endswith("stopped")
    # Nothing to restart on a directory no `local up` runs on any more.
    gone = subprocess.run(
        [sys.executable, "-m", "pykraft.cli.main", "local", "restart", "1", "--dir", str(state)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert gone.returncode == 2 and "no `pykraft local up` is running" in gone.stderr
