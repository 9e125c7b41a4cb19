"""``pykraft local up``: formats on first run, reuses data after, stops cleanly on Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

TIMEOUT_S = 20


def run_until_leader(state: Path) -> str:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pykraft.cli.main",
            "local",
            "up",
            "--controllers",
            "1",
            "--dir",
            str(state),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    lines = []
    deadline = time.monotonic() + TIMEOUT_S
    try:
        for line in process.stdout:
            lines.append(line)
            if line.split(" ", 1)[-1].startswith("leader="):
                break
            assert time.monotonic() < deadline, lines
        process.send_signal(signal.SIGINT)
        rest, _ = process.communicate(timeout=TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0
    return "".join(lines) + rest


def test_local_up_formats_once_and_restarts(tmp_path: Path) -> None:
    state = tmp_path / "local"
    first = run_until_leader(state)
    assert "formatted" in first
    assert "bootstrap controllers: 127.0.0.1:" in first
    assert first.rstrip().endswith("stopped")
    second = run_until_leader(state)
    assert "formatted" not in second
    assert "epoch=" in second


def _lines(process: subprocess.Popen[str], until: str, seen: list[str], timeout_s: float) -> None:
    """Read ``process``'s output into ``seen`` until a line contains ``until``."""
    assert process.stdout is not None
    deadline = time.monotonic() + timeout_s
    for line in process.stdout:
        seen.append(line)
        if until in line:
            return
        assert time.monotonic() < deadline, seen
    raise AssertionError(f"no line with {until!r}: {seen}")


def test_a_killed_controller_is_reported_and_restarted_on_request(tmp_path: Path) -> None:
    """Issue 29 part 5: kill -9 a controller of `local up` -- the cluster keeps running, the
    status says who is down and who leads now, and `pykraft local restart ID` brings it back."""
    state = tmp_path / "local"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pykraft.cli.main",
            "local",
            "up",
            "--controllers",
            "3",
            "--dir",
            str(state),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    seen: list[str] = []
    try:
        _lines(process, " leader=", seen, 60)
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
        _lines(process, f"controller {victim} exited", seen, 30)
        assert "pykraft local restart" in seen[-1]
        _lines(process, f"down=controller {victim}", seen, 30)
        # A new leader among the others, while the cluster runs on.
        _lines(process, " leader=", seen, 30)
        while f"leader={victim} " in seen[-1] or "no leader" in seen[-1]:
            _lines(process, " leader=", seen, 30)
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
        _lines(process, f"controller {victim} started again", seen, 30)
        _lines(process, " leader=", seen, 30)
        while "down=" in seen[-1]:
            _lines(process, " leader=", seen, 30)
        process.send_signal(signal.SIGINT)
        rest, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
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
