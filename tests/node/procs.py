"""Helpers for end-to-end tests with real ``pykraft server start`` processes on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from pykraft.admin import AdminClient, QuorumInfo
from pykraft.admin.types import AdminError
from pykraft.cli.local import free_ports
from pykraft.node.server import debug_value
from pykraft.records import decode_records, iter_batches

__all__ = [
    "CLUSTER_ID",
    "STEP_TIMEOUT_S",
    "Proc",
    "cli",
    "describe_quorum",
    "fmt",
    "free_ports",
    "make_config",
    "wait_for",
]

CLUSTER_ID = "X5SvYNT7TJu0jYq2_o3_vg"
STEP_TIMEOUT_S = 20
COMMITTED = re.compile(r"committed offset=(\d+) epoch=(\d+) value=(\S+)")
TRANSITION = re.compile(
    r"role transition node\.id=\d+ from=(\S+) to=(\S+) from_epoch=\d+ epoch=(\d+)"
)

# Short timeouts keep elections and failure detection fast on a loaded 2-core machine, but
# not so short that a scheduling hiccup starts an election.
FAST_QUORUM = (
    "controller.quorum.election.timeout.ms=500\n"
    "controller.quorum.fetch.timeout.ms=1000\n"
    "controller.quorum.request.timeout.ms=1000\n"
    "controller.quorum.append.linger.ms=5\n"
)


def cli(*args: str, timeout_s: float = STEP_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pykraft.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


@dataclass
class Proc:
    """One server process: its config, data directory and combined output file."""

    node_id: int
    port: int
    config: Path
    data: Path
    output: Path
    metrics_port: int | None = None
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        with self.output.open("ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "pykraft.cli.main", "server", "start", str(self.config)],
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def send(self, signum: int) -> None:
        assert self.process is not None
        self.process.send_signal(signum)

    def stop(self, signum: int = signal.SIGTERM) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signum)
        return self.process.wait(timeout=STEP_TIMEOUT_S)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def text(self) -> str:
        return self.output.read_text() if self.output.exists() else ""

    def transitions(self) -> list[tuple[str, str, int]]:
        return [(a, b, int(e)) for a, b, e in TRANSITION.findall(self.text())]

    def committed(self) -> list[tuple[int, int, str]]:
        """The ``committed`` lines of the debug appender: (offset, epoch, value)."""
        return [(int(o), int(e), v) for o, e, v in COMMITTED.findall(self.output.read_text())]

    def log_values(self) -> dict[int, bytes | None]:
        """Every record of the on-disk log (read while the process is stopped): the debug
        appender's values (``pykraft.node.server.debug_value``), others as stored."""
        values: dict[int, bytes | None] = {}
        for segment in sorted((self.data / "__cluster_metadata-0").glob("*.log")):
            buf = segment.read_bytes()
            for header, pos in iter_batches(buf):
                if header.is_control:
                    continue
                for record in decode_records(buf[pos : pos + header.size]):
                    values[record.offset] = debug_value(record.value) or record.value
        return values

    def health(self, what: str, timeout_s: float = 10) -> tuple[int, dict[str, Any]]:
        """``/health/<what>`` on the metrics port: (HTTP status, the JSON answer)."""
        assert self.metrics_port is not None
        url = f"http://127.0.0.1:{self.metrics_port}/health/{what}"
        try:
            with urllib.request.urlopen(url, timeout=timeout_s) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def scrape(self) -> dict[str, float]:
        """The metrics endpoint as {name or name{label=value}: value}."""
        assert self.metrics_port is not None
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as response:
            body = response.read().decode()
        values: dict[str, float] = {}
        for family in text_string_to_metric_families(body):
            for sample in family.samples:
                labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
                values[f"{sample.name}{{{labels}}}" if labels else sample.name] = sample.value
        return values


def make_config(
    tmp: Path,
    node_id: int,
    port: int,
    *,
    voters: str | None,
    extra: str = "",
    metrics_port: int | None = None,
) -> Proc:
    config = tmp / f"n{node_id}.properties"
    data = tmp / f"data{node_id}"
    text = (
        f"node.id={node_id}\n"
        "process.roles=controller\n"
        f"listeners=CONTROLLER://127.0.0.1:{port}\n"
        "controller.listener.names=CONTROLLER\n"
        f"metadata.log.dir={data}\n" + FAST_QUORUM + extra
    )
    if voters is not None:
        text += f"controller.quorum.voters={voters}\n"
    if metrics_port is not None:
        text += f"metrics.port={metrics_port}\n"
    config.write_text(text)
    return Proc(node_id, port, config, data, tmp / f"n{node_id}.out", metrics_port)


def fmt(p: Proc, *mode: str) -> None:
    """``pykraft storage format`` of ``p``'s directory in ``mode`` (e.g. ``--standalone``)."""
    result = cli("storage", "format", "--config", str(p.config), "--cluster-id", CLUSTER_ID, *mode)
    assert result.returncode == 0, result.stderr


def describe_quorum(bootstrap: str, *, timeout_ms: int) -> QuorumInfo:
    """DescribeQuorum through the admin client (it follows the leader)."""

    async def go() -> QuorumInfo:
        async with AdminClient(bootstrap, timeout_ms=timeout_ms, request_timeout_ms=2_000) as admin:
            return await admin.describe_quorum()

    return asyncio.run(go())


def wait_for(predicate: Callable[[], object], what: str, timeout_s: float = STEP_TIMEOUT_S) -> None:
    """Until ``predicate()`` is true. A quorum not up yet (the admin client's AdminError,
    a refused connection) is "not yet" until the deadline, which then names the last error:
    a busy machine may take seconds to get a process to its listener."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if predicate():
                return
            error: BaseException | None = None
        except (AdminError, OSError) as exc:
            error = exc
        assert time.monotonic() < deadline, f"timed out waiting for {what} (last error: {error})"
        time.sleep(0.05)
