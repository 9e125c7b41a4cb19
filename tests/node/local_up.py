"""``pykraft local up`` as a test runs it: started with its output read line by line, waited on
for a line, stopped with Ctrl-C (SIGINT) as a user stops it."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time

__all__ = ["local_up", "read_until", "stop"]


def local_up(*args: str) -> subprocess.Popen[str]:
    """``pykraft local up ARGS``, its stdout and stderr in one text pipe."""
    return subprocess.Popen(
        [sys.executable, "-m", "pykraft.cli.main", "local", "up", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def read_until(
    process: subprocess.Popen[str], pattern: str, seen: list[str], timeout_s: float = 180
) -> re.Match[str]:
    """The first line from now on matching ``pattern``; every line read goes to ``seen``."""
    assert process.stdout is not None
    deadline = time.monotonic() + timeout_s
    for line in process.stdout:
        seen.append(line)
        found = re.search(pattern, line)
        if found:
            return found
        assert time.monotonic() < deadline, seen
    raise AssertionError(f"no line matching {pattern!r}: {seen}")


def stop(process: subprocess.Popen[str], timeout_s: float = 90) -> str:
    """Ctrl-C, then the rest of its output (killed when it does not stop in time)."""
    process.send_signal(signal.SIGINT)
    try:
        rest, _ = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        rest, _ = process.communicate()
    return rest
