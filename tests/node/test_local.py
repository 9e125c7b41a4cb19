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
