"""Apache Kafka as a peer: its jars (through ``scripts/kafka.sh``), its servers and its tools
as real processes on 127.0.0.1.

``KafkaDist.get("4")`` fetches (once; later calls are offline) the distribution pinned in
``interop/kafka-4/pom.xml`` and knows its classpath. From it:

* ``dist.run(main_class, *args)`` runs a tool to completion (``MetadataQuorumCommand``,
  ``DumpLogSegments``, ``StorageTool`` ...) and returns its ``CompletedProcess``;
* ``dist.start(main_class, *args, log=path)`` starts a long-lived process (a controller, a
  broker, ``TestRaftServer``) whose stdout and stderr go to ``log``; ``KafkaProcess`` waits for
  a log line with a bound, and ``kill``/``stop`` always leave no process behind.

Every process is started in its own session, so a kill reaches the JVM and anything it
spawned; ``KafkaProcess.kill_all()`` (called by the test fixtures and at exit) ends every
process this module started that is still running.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import re
import shutil
import signal
import subprocess
import threading
import time
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Final

__all__ = [
    "KAFKA_MAIN",
    "QUICK_SERVER_JVM",
    "REFERENCE_DIST",
    "SERVER_JVM_ENV",
    "KafkaDist",
    "KafkaError",
    "KafkaProcess",
    "exporter_agent",
    "pom_version",
    "repo_root",
    "server_jvm",
    "write_properties",
]

# Main classes of the servers and tools pykraft runs (the same the shell scripts of a Kafka
# distribution run).
KAFKA_MAIN: Final = {
    "server": "kafka.Kafka",
    "storage": "kafka.tools.StorageTool",
    "metadata-quorum": "org.apache.kafka.tools.MetadataQuorumCommand",
    "dump-log": "org.apache.kafka.tools.DumpLogSegments",
    "metadata-shell": "org.apache.kafka.shell.MetadataShell",
    "topics": "org.apache.kafka.tools.TopicCommand",
    "features": "org.apache.kafka.tools.FeatureCommand",
    "reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "configs": "kafka.admin.ConfigCommand",
    "acls": "org.apache.kafka.tools.AclCommand",
    "delegation-tokens": "org.apache.kafka.tools.DelegationTokenCommand",
    "client-metrics": "org.apache.kafka.tools.ClientMetricsCommand",
    "console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "test-raft-server": "kafka.tools.TestRaftServer",
    "zookeeper": "org.apache.zookeeper.server.ZooKeeperServerMain",
}

# Tools whose main class moved, from the release (major, minor) on: Kafka 4.4 moved
# ConfigCommand from the core (Scala) jar to kafka-tools.
KAFKA_MAIN_MOVED: Final = {
    "configs": ((4, 4), "org.apache.kafka.tools.ConfigCommand"),
}

# A tool's JVM: small heap, quick start (C1 only, serial GC); servers get the full JIT.
TOOL_JVM: Final = ("-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
SERVER_JVM: Final = ("-Xms128m", "-Xmx1g", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20")
# Servers that live seconds to minutes and move little data (the test suite's): the quick
# compiler only and the serial collector, as the tools; the optimizing compiler's threads
# cost more CPU than they win back there, and a 2-core machine runs several such JVMs.
# A JVM maps a class-data-sharing archive of the classes its program loads (the JDK's dynamic
# CDS, JDK 13+) instead of reading and verifying them from the jars: the first run of a
# program writes the archive as it exits (-XX:ArchiveClassesAtExit), later runs map it
# (-XX:SharedArchiveFile). Measured here: `kafka-storage format` 0.75 -> 0.40 s, a combined
# Kafka 4.4.0 server to "Kafka Server started" 1.8-2.2 -> 0.9-1.1 s. The interop tests run
# Kafka's tools hundreds of times (70 in test_kafka_cluster alone, 131 s of its 199) and
# start a hundred-odd servers. An archive's name carries a digest of all it depends on (the
# java binary, the JVM options, the classpath, the main class), so a stale one is never
# offered; a JVM that cannot use one runs without it, silently (-Xlog:cds*=off: the tools'
# output stays theirs). ``PYKRAFT_KAFKA_CDS``: "tools" (the default: tools only, so that
# benchmarks time Kafka's servers as Kafka starts them), "all" (the test suite: servers
# too), "0" (none).
CDS_ENV: Final = "PYKRAFT_KAFKA_CDS"
# Programs that run without an archive whatever CDS_ENV says. Kafka 4.3.1's metadata shell
# on this JDK (17.0.15): with the archive its `ls` wrote, a later `cat` of a partition answered
# "No such file or directory" (with one `cat` wrote, `ls` and `cat` both worked): what a run
# does may depend on which run dumped the archive, so the shell, whose commands differ
# most, goes without.
CDS_REFUSED: Final = frozenset({"org.apache.kafka.shell.MetadataShell"})
CDS_QUIET: Final = "-Xlog:cds*=off"
# Exit codes after which a server's archive is whole: its own exit, or SIGTERM's shutdown
# (143). After a SIGKILL the archive may be cut short and is dropped.
_CLEAN_EXITS: Final = frozenset({0, 130, 143})
QUICK_SERVER_JVM: Final = ("-Xms64m", "-Xmx1g", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
SERVER_JVM_ENV: Final = "PYKRAFT_KAFKA_SERVER_JVM"
COMMON_JVM: Final = ("-Djava.awt.headless=true", "-Dfile.encoding=UTF-8")


def server_jvm() -> tuple[str, ...]:
    """The JVM options of a server started without its own: ``SERVER_JVM``, or the
    space-separated options in ``PYKRAFT_KAFKA_SERVER_JVM`` (the test suite sets
    ``QUICK_SERVER_JVM`` there; benchmarks and ``pykraft local up`` keep the full JIT)."""
    options = os.environ.get(SERVER_JVM_ENV, "").split()
    return tuple(options) if options else SERVER_JVM


EXPORTER_DIST: Final = "jmx-exporter"  # interop/kafka-jmx-exporter/pom.xml


def exporter_agent(port: int) -> str:
    """The JVM option that attaches the Prometheus JMX exporter's agent to a Kafka server,
    serving its MBeans on ``port`` under the rules of
    ``interop/kafka-jmx-exporter/controller-metrics.yml`` (the names Kafka users' dashboards
    read)."""
    jar = KafkaDist.get(EXPORTER_DIST).classpath
    rules = repo_root() / "interop" / "kafka-jmx-exporter" / "controller-metrics.yml"
    return f"-javaagent:{jar}={port}:{rules}"


class KafkaError(RuntimeError):
    """Kafka could not be fetched or a Kafka process did not do what was asked."""


def repo_root() -> Path:
    """The source tree this package runs from (``scripts/`` and ``interop/`` live there)."""
    return Path(__file__).resolve().parents[3]


REFERENCE_DIST: Final = "4.4"
"""The distribution pykraft's own tooling runs brokers from (``pykraft local up``, the main
job): Kafka 4.4.0, the newest release, whose ``kafka-storage format`` default (4.4-IV2) is
``storage format``'s too. The interop tests name theirs (``"4"``: 4.3.1, the long-standing
peer; ``"4.4"``, ``"4.1"``, ``"3.9"``)."""


def pom_version(name: str) -> str:
    """The Kafka version ``interop/kafka-<name>/pom.xml`` pins (no fetch needed)."""
    pom = repo_root() / "interop" / f"kafka-{name}" / "pom.xml"
    match = re.search(r"<kafka.version>([^<]+)</kafka.version>", pom.read_text())
    if match is None:
        raise KafkaError(f"{pom} pins no <kafka.version>")
    return match.group(1)


def write_properties(path: Path, values: Mapping[str, object]) -> Path:
    """A Kafka ``.properties`` file of ``values`` (one ``key=value`` line each)."""
    path.write_text("".join(f"{k}={v}\n" for k, v in values.items()))
    return path


@dataclass(frozen=True)
class KafkaDist:
    """A fetched Kafka distribution: ``name`` is the ``interop/kafka-<name>`` project."""

    name: str
    version: str
    classpath: str

    _cache: ClassVar[dict[str, KafkaDist]] = {}

    @classmethod
    def get(cls, name: str = "4") -> KafkaDist:
        """Fetch (first call; later runs are offline) and return the distribution."""
        if name in cls._cache:
            return cls._cache[name]
        script = repo_root() / "scripts" / "kafka.sh"
        if shutil.which("java") is None:
            raise KafkaError("Java 17+ is needed to run Apache Kafka (no `java` on PATH)")
        result = subprocess.run(
            [str(script), "fetch", name], capture_output=True, text=True, timeout=900
        )
        if result.returncode != 0:
            raise KafkaError(f"scripts/kafka.sh fetch {name} failed: {result.stderr.strip()}")
        dist = cls(name, pom_version(name), result.stdout.strip())
        cls._cache[name] = dist
        return dist

    @property
    def label(self) -> str:
        """How tests name it: ``kafka-4.3.1``."""
        return f"kafka-{self.version}"

    @property
    def _release(self) -> tuple[int, int]:
        major, minor = self.version.split(".")[:2]
        return int(major), int(minor)

    @property
    def default_release(self) -> str:
        """The release its ``kafka-storage format`` starts a cluster at when none is named
        (its own: ``4.3`` for 4.3.1, at 4.3-IV0)."""
        return "{}.{}".format(*self._release)

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    def _logging(self, server: bool) -> list[str]:
        """Servers log INFO to stdout (their log file); tools WARN to stderr, so that their
        stdout is only what they print."""
        interop = repo_root() / "interop"
        if self.major >= 4:
            config = "log4j2.yaml" if server else "log4j2-tools.yaml"
            return [f"-Dlog4j2.configurationFile={interop / config}"]
        return [f"-Dlog4j.configuration=file:{interop / 'log4j.properties'}"]

    def command(
        self,
        main: str,
        args: Iterable[str],
        *,
        jvm: Sequence[str] = TOOL_JVM,
        server: bool = False,
    ) -> list[str]:
        """The ``java`` command line running ``main`` (a class name or a ``KAFKA_MAIN`` key)."""
        return [
            "java",
            *jvm,
            *COMMON_JVM,
            *self._logging(server),
            "-cp",
            self.classpath,
            self.main_class(main),
            *args,
        ]

    def main_class(self, main: str) -> str:
        """The class ``main`` names (a class name or a ``KAFKA_MAIN`` key), in this release."""
        moved = KAFKA_MAIN_MOVED.get(main)
        if moved is not None and self._release >= moved[0]:
            return moved[1]
        return KAFKA_MAIN.get(main, main)

    def archive(self, main: str, jvm: Sequence[str], *, server: bool = False) -> Path | None:
        """The class-data-sharing archive of ``main`` run with ``jvm`` (``CDS_ENV``), or None
        when archives are off for it or there is no ``java``."""
        java = shutil.which("java")
        mode = os.environ.get(CDS_ENV, "tools")
        if java is None or mode == "0" or (server and mode != "all"):
            return None
        if any(option.startswith("-javaagent:") for option in jvm):
            return None  # the JVM refuses to dump an archive with an agent attached
        main_class = self.main_class(main)
        if main_class in CDS_REFUSED:
            return None
        binary = os.path.realpath(java)
        parts = (binary, str(os.stat(binary).st_mtime_ns), *jvm, self.classpath, main_class)
        digest = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]
        name = f"{self.name}-{main_class.rsplit('.', 1)[-1]}-{digest}.jsa"
        return repo_root() / ".cache" / "cds" / name

    @staticmethod
    def _cds(archive: Path | None) -> tuple[tuple[str, ...], Path | None]:
        """(JVM options, the file being written or None) for ``archive``: map it when it
        exists, else write it at exit under a name of this writer's own (two first runs of
        a program may overlap)."""
        if archive is None:
            return (), None
        if archive.is_file():
            return (f"-XX:SharedArchiveFile={archive}", CDS_QUIET), None
        archive.parent.mkdir(parents=True, exist_ok=True)
        part = archive.with_suffix(
            f".{os.getpid()}-{threading.get_ident()}-{time.monotonic_ns()}.part"
        )
        return (f"-XX:ArchiveClassesAtExit={part}", CDS_QUIET), part

    def run(
        self,
        main: str,
        *args: str,
        timeout_s: float = 120,
        input_text: str | None = None,
        check: bool = True,
    ) -> subprocess.CompletedProcess[str]:
        """Run a tool to completion; with ``check`` a non-zero exit raises ``KafkaError``
        carrying the tool's output. Its JVM starts from the tool's class-data-sharing archive,
        or writes it (``CDS_ENV``)."""
        archive = self.archive(main, TOOL_JVM)
        cds, dumping = self._cds(archive)
        try:
            result = subprocess.run(
                self.command(main, args, jvm=(*TOOL_JVM, *cds)),
                capture_output=True,
                text=True,
                timeout=timeout_s,
                input=input_text,
            )
            if dumping is not None and archive is not None and dumping.is_file():
                os.replace(dumping, archive)
        finally:
            if dumping is not None:
                dumping.unlink(missing_ok=True)
        if check and result.returncode != 0:
            raise KafkaError(
                f"{main} {' '.join(args)} exited {result.returncode}\n"
                f"stdout:\n{result.stdout[-4000:]}\nstderr:\n{result.stderr[-4000:]}"
            )
        return result

    def start(
        self,
        main: str,
        *args: str,
        log: Path,
        jvm: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> KafkaProcess:
        """Start a long-lived process; its stdout and stderr are appended to ``log``.
        Without ``jvm``: ``server_jvm()``. With ``CDS_ENV`` "all" its JVM maps the program's
        class-data-sharing archive, or writes it when it exits cleanly."""
        options = server_jvm() if jvm is None else tuple(jvm)
        archive = self.archive(main, options, server=True)
        cds, dumping = self._cds(archive)
        argv = self.command(main, args, jvm=(*options, *cds), server=True)
        process = KafkaProcess.spawn(argv, log=log, env=env)
        if dumping is not None and archive is not None:
            _publish_at_exit(process.popen, dumping, archive)
        return process

    def format_storage(
        self,
        config: Path,
        cluster_id: str,
        *flags: str,
    ) -> subprocess.CompletedProcess[str]:
        """``kafka-storage format --config <config> --cluster-id <id> <flags>``."""
        return self.run(
            "storage", "format", "--config", str(config), "--cluster-id", cluster_id, *flags
        )


def _publish_at_exit(popen: subprocess.Popen[bytes], part: Path, archive: Path) -> None:
    """Once ``popen`` has exited (however it is stopped: the callers keep their own ways),
    its class-data-sharing archive is put in place if it exited cleanly, else dropped."""

    def watch() -> None:
        while popen.poll() is None:
            time.sleep(0.5)
        try:
            if popen.returncode in _CLEAN_EXITS and part.is_file() and part.stat().st_size:
                os.replace(part, archive)
        finally:
            part.unlink(missing_ok=True)

    threading.Thread(target=watch, name="cds-archive", daemon=True).start()


class KafkaProcess:
    """One running JVM (or any process this module spawned) with its log file."""

    _running: ClassVar[weakref.WeakSet[KafkaProcess]] = weakref.WeakSet()

    def __init__(self, popen: subprocess.Popen[bytes], log: Path, argv: Sequence[str]) -> None:
        self.popen = popen
        self.log = log
        self.argv = list(argv)
        KafkaProcess._running.add(self)

    @classmethod
    def spawn(
        cls, argv: Sequence[str], *, log: Path, env: Mapping[str, str] | None = None
    ) -> KafkaProcess:
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as out:
            popen = subprocess.Popen(
                list(argv),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                env={**os.environ, **env} if env is not None else None,
            )
        return cls(popen, log, argv)

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def running(self) -> bool:
        return self.popen.poll() is None

    def text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.text().splitlines()[-lines:])

    def wait_for_line(
        self, pattern: str, timeout_s: float = 60, *, after: int = 0
    ) -> re.Match[str]:
        """Wait until the log (from character ``after``) has a line matching ``pattern``;
        raises ``KafkaError`` with the log's tail when the process exits or time runs out."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout_s
        while True:
            match = regex.search(self.text(), after)
            if match is not None:
                return match
            if not self.running:
                raise KafkaError(
                    f"process exited ({self.popen.returncode}) before /{pattern}/:\n{self.tail()}"
                )
            if time.monotonic() > deadline:
                raise KafkaError(f"no /{pattern}/ within {timeout_s} s:\n{self.tail()}")
            time.sleep(0.1)

    def signal(self, signum: int) -> None:
        if self.running:
            os.killpg(self.popen.pid, signum)

    def kill(self) -> int:
        """SIGKILL the process group and reap it."""
        if self.running:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGKILL)
        return self.popen.wait(timeout=30)

    def stop(self, timeout_s: float = 30) -> int:
        """SIGTERM (a clean shutdown), SIGKILL after ``timeout_s``."""
        if self.running:
            self.signal(signal.SIGTERM)
            try:
                return self.popen.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                pass
        return self.kill()

    @classmethod
    def kill_all(cls) -> None:
        for process in list(cls._running):
            process.kill()


atexit.register(KafkaProcess.kill_all)
