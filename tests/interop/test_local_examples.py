"""``pykraft local up`` as a new user meets it (issue 47 item 6): every command its start-up
output tells the user to try works exactly as printed, run through a shell from another
directory: Kafka's console producer and consumer by their usual names over the project's jars
(``scripts/kafka.sh run``), kafka-python in the project's environment, and the health command.
The status line is printed when the cluster's state changes, not every second."""

from __future__ import annotations

import itertools
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pykraft.interop.kafka import KafkaDist

from ..node.local_up import read_until, stop

pytestmark = pytest.mark.slow


def _shell(line: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", line], cwd=cwd, capture_output=True, text=True, timeout=180, input=stdin
    )


def test_every_printed_example_works_as_typed(kafka: KafkaDist, tmp_path: Path) -> None:
    state = tmp_path / "local"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pykraft.cli.main",
            "local",
            "up",
            "--controllers",
            "1",
            "--brokers",
            "1",
            "--dir",
            str(state),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    seen: list[str] = []
    try:
        producer = read_until(process, r"^try: (.*kafka-console-producer.*)$", seen).group(1)
        python = read_until(process, r"^try: (.*python.* -c .*)$", seen).group(1)
        consumer = read_until(process, r"^try: (.*kafka-console-consumer.*)$", seen).group(1)
        health = read_until(process, r"^health: (.*)$", seen).group(1)
        read_until(process, r"brokers=100:up", seen)

        sent = _shell(producer, elsewhere, stdin="from-the-console\n")
        assert sent.returncode == 0, sent.stdout + sent.stderr
        sent = _shell(python, elsewhere)
        assert sent.returncode == 0, sent.stdout + sent.stderr
        reader = subprocess.Popen(
            ["bash", "-c", consumer],
            cwd=elsewhere,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        got: list[str] = []
        try:
            assert reader.stdout is not None
            for line in reader.stdout:
                got.append(line.strip())
                if {"from-the-console", "hi"} <= set(got):
                    break
        finally:
            os.killpg(reader.pid, signal.SIGKILL)
            reader.communicate()  # reaps it and closes its pipe
        assert {"from-the-console", "hi"} <= set(got), got

        shown = _shell(health, elsewhere)
        assert shown.returncode == 0, shown.stdout + shown.stderr
        assert "live UP  ready UP" in shown.stdout, shown.stdout
    finally:
        rest = stop(process)
    assert process.returncode == 0, "".join(seen) + rest
    # Status lines only when the state changed: a quiet cluster prints none in between.
    statuses = [line for line in seen + rest.splitlines() if "leader=" in line]
    keys = [re.sub(r" (high_watermark|lag)=\S+", "", s.split(" ", 1)[1]) for s in statuses]
    assert all(a != b for a, b in itertools.pairwise(keys)), statuses
