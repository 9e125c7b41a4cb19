"""Shared pieces of the benchmark harness: child processes, ports, percentiles, machine facts.

Every benchmark process is a child started through :class:`Cluster`, in its own session so
that one ``killpg`` ends it with anything it spawned; ``Cluster`` is a context manager and
also registered with ``atexit`` and SIGTERM/SIGINT, so no node outlives the run, on errors
too. Children speak a tiny line protocol: a JSON object per line on stdin (a command) and
lines starting with ``@@ `` followed by a JSON object on stdout (answers and events); any
other output is kept in the child's log file only.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import json
import os
import platform
import queue
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
PROTO_PREFIX = "@@ "
LOOPBACK = "127.0.0.1"

_LIVE: set[Child] = set()


def emit(obj: dict[str, Any]) -> None:
    """Child side: write one protocol line to stdout."""
    sys.stdout.write(PROTO_PREFIX + json.dumps(obj) + "\n")
    sys.stdout.flush()


def publish(result: dict[str, Any], out: Path) -> None:
    """A script's figures: stamped with the time (UTC), printed as one JSON line, and
    written to ``out`` (``bench/results/<phase>.json`` by default), which REPORT.md reads."""
    result["at"] = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
    print(json.dumps(result))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")


def free_ports(count: int) -> list[int]:
    """Ports the kernel hands out on 127.0.0.1 now (all held open together, then released)."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((LOOPBACK, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class ChildDied(RuntimeError):
    pass


class Child:
    """One benchmark process. Invariant: while ``proc.poll() is None`` it is in ``_LIVE``."""

    def __init__(self, name: str, argv: Sequence[str], log_path: Path, env: dict[str, str]):
        self.name = name
        self.log_path = log_path
        self._log = open(log_path, "w", buffering=1)  # noqa: SIM115 - closed in reap()
        self.proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            bufsize=1,
            start_new_session=True,
            env=env,
            cwd=REPO_DIR,
        )
        _LIVE.add(self)
        self._lines: queue.Queue[dict[str, Any] | None] = queue.Queue(maxsize=100_000)
        self._kept: dict[str, collections.deque[dict[str, Any]]] = {}
        self._reader = threading.Thread(target=self._read, name=f"read-{name}", daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._log.write(line)
            if line.startswith(PROTO_PREFIX):
                with contextlib.suppress(ValueError):
                    self._lines.put(json.loads(line[len(PROTO_PREFIX) :]))
        self._lines.put(None)

    def send(self, obj: dict[str, Any]) -> None:
        if self.proc.poll() is not None or self.proc.stdin is None:
            raise ChildDied(f"{self.name} exited with {self.proc.returncode}")
        try:
            self.proc.stdin.write(json.dumps(obj) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise ChildDied(f"{self.name}: {exc}") from exc

    def expect(self, kind: str, timeout_s: float) -> dict[str, Any]:
        """Next protocol message of type ``kind``; bounded by time. Messages of other types
        read meanwhile are kept (the last few of each type) for a later ``expect`` of theirs:
        an asynchronous ``added`` must survive the ``status`` polls made while it arrived."""
        kept = self._kept.get(kind)
        if kept:
            return kept.popleft()
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{self.name}: no {kind!r} within {timeout_s:.0f} s")
            try:
                msg = self._lines.get(timeout=left)
            except queue.Empty:
                continue
            if msg is None:
                raise ChildDied(f"{self.name} exited (see {self.log_path})")
            if msg.get("type") == "error":
                raise RuntimeError(f"{self.name}: {msg.get('error')}")
            if msg.get("type") == kind:
                return msg
            self._kept.setdefault(str(msg.get("type")), collections.deque(maxlen=16)).append(msg)

    def request(self, obj: dict[str, Any], kind: str, timeout_s: float) -> dict[str, Any]:
        self.send(obj)
        return self.expect(kind, timeout_s)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, sig)

    def reap(self, timeout_s: float = 5.0) -> None:
        """Stop the child (polite SIGTERM, then SIGKILL) and release its pipes."""
        if self.proc.poll() is None:
            self.kill(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.kill(signal.SIGKILL)
                self.proc.wait(timeout=timeout_s)
        else:
            # The leader may be dead while a grandchild in its group is not.
            self.kill(signal.SIGKILL)
        _LIVE.discard(self)
        for stream in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()
        self._reader.join(timeout=2)
        self._log.close()


class Cluster:
    """A set of children reaped together when the ``with`` block ends, however it ends."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.children: list[Child] = []

    def spawn(self, name: str, argv: Sequence[str]) -> Child:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(BENCH_DIR), str(REPO_DIR / "src")])
        env["PYTHONUNBUFFERED"] = "1"
        child = Child(name, argv, self.workdir / f"{name}.log", env)
        self.children.append(child)
        return child

    def __enter__(self) -> Cluster:
        self.workdir.mkdir(parents=True, exist_ok=True)
        return self

    def __exit__(self, *exc: object) -> None:
        for child in self.children:
            child.reap()


def reap_all() -> None:
    for child in list(_LIVE):
        child.reap(timeout_s=2)


def _on_signal(signum: int, _frame: object) -> None:
    reap_all()
    raise SystemExit(128 + signum)


def install_reaper() -> None:
    """Orchestrator side: no child outlives this process, also on SIGTERM/SIGINT."""
    atexit.register(reap_all)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)


# ---------------------------------------------------------------- statistics


def percentile(sorted_values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile of already sorted values; None when empty."""
    if not sorted_values:
        return None
    rank = max(1, int(-(-q * len(sorted_values) // 100)))  # ceil(q/100 * n)
    return sorted_values[min(rank, len(sorted_values)) - 1]


def summarize_latencies_ms(samples_ms: list[float]) -> dict[str, float | None]:
    samples_ms.sort()
    return {
        "p50_ms": percentile(samples_ms, 50),
        "p75_ms": percentile(samples_ms, 75),
        "p99_ms": percentile(samples_ms, 99),
        "p999_ms": percentile(samples_ms, 99.9),
        "max_ms": samples_ms[-1] if samples_ms else None,
        "samples": len(samples_ms),
    }


# ---------------------------------------------------------------- machine


def machine_info(workdir: Path) -> dict[str, Any]:
    cpu_model = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    mem_gib = None
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_gib = round(int(line.split()[1]) / 1024 / 1024, 1)
    disk = "unknown"
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(
            ["df", "-T", str(workdir)], capture_output=True, text=True, timeout=5
        ).stdout.splitlines()
        if len(out) >= 2:
            fields = out[1].split()
            disk = f"{fields[0]} ({fields[1]}, mounted at {fields[-1]})"
    load = None
    with contextlib.suppress(OSError):
        load = os.getloadavg()
    return {
        "nproc": os.cpu_count(),
        "cpu_model": cpu_model,
        "mem_gib": mem_gib,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(),
        "disk": disk,
        "loadavg_at_start": load,
        "free_disk_gib": round(shutil.disk_usage(workdir).free / 2**30, 1),
    }


def fsync_probe_ms(workdir: Path, count: int = 50) -> float:
    """Median time of a 4 KiB write + fsync on the bench disk: the floor of any fsync'd commit."""
    path = workdir / "fsync-probe"
    samples = []
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    try:
        block = b"\0" * 4096
        for _ in range(count):
            start = time.perf_counter()
            os.write(fd, block)
            os.fsync(fd)
            samples.append((time.perf_counter() - start) * 1000)
    finally:
        os.close(fd)
        path.unlink(missing_ok=True)
    samples.sort()
    return samples[len(samples) // 2]
