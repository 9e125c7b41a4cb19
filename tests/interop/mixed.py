"""A controller quorum whose members are pykraft processes and Apache Kafka controllers, on
127.0.0.1, formatted with one ``--initial-controllers`` list (kraft.version 1)."""

from __future__ import annotations

import json
import signal
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pykraft.admin import QuorumInfo
from pykraft.interop.kafka import KafkaDist, KafkaProcess, write_properties
from pykraft.records import iter_batches
from pykraft.spec import check_trace_files
from pykraft.storage import PARTITION_DIR_NAME, random_uuid, uuid_to_kafka

from ..node.procs import (
    CLUSTER_ID,
    FAST_QUORUM,
    Proc,
    cli,
    describe_quorum,
    free_ports,
    make_config,
)

__all__ = ["Member", "MixedQuorum", "committed_batches"]

# Kafka's quorum timeouts as pykraft's test processes use them (procs.FAST_QUORUM).
KAFKA_QUORUM = {line.split("=")[0]: line.split("=")[1] for line in FAST_QUORUM.strip().splitlines()}


@dataclass
class Member:
    """One controller: ``kind`` is "pykraft" or "kafka"."""

    node_id: int
    kind: str
    port: int
    directory_id: str
    config: Path
    data: Path  # the metadata log directory (holds meta.properties)
    log: Path
    proc: Proc | None = None
    kafka: KafkaProcess | None = None
    _dist: KafkaDist | None = field(default=None, repr=False)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        if self.kind == "kafka":
            return self.kafka is not None and self.kafka.running
        return (
            self.proc is not None
            and self.proc.process is not None
            and self.proc.process.poll() is None
        )

    def start(self) -> None:
        if self.kind == "kafka":
            assert self._dist is not None
            self.kafka = self._dist.start("server", str(self.config), log=self.log)
        else:
            assert self.proc is not None
            self.proc.start()

    def kill(self) -> None:
        if self.kind == "kafka":
            if self.kafka is not None:
                self.kafka.kill()
        elif self.proc is not None:
            self.proc.kill()

    def stop(self) -> None:
        """A clean shutdown (SIGTERM), as an operator stops a controller."""
        if self.kind == "kafka":
            if self.kafka is not None:
                self.kafka.stop()
        elif self.proc is not None and self.proc.process is not None:
            self.proc.stop()

    def signal(self, signum: int) -> None:
        if self.kind == "kafka":
            assert self.kafka is not None
            self.kafka.signal(signum)
        else:
            assert self.proc is not None
            self.proc.send(signum)

    def pause(self) -> None:
        self.signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.signal(signal.SIGCONT)

    def segments(self) -> list[Path]:
        return sorted((self.data / PARTITION_DIR_NAME).glob("*.log"))

    def tail(self) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-30:])
        except FileNotFoundError:
            return ""


class MixedQuorum:
    """Controllers of both kinds; ``kinds`` is e.g. ``"ppk"`` (two pykraft, one Kafka)."""

    def __init__(
        self,
        kafka: KafkaDist,
        tmp: Path,
        kinds: str,
        *,
        extra_ids: int = 0,
        kafka_overrides: dict[str, object] | None = None,
        pykraft_extra: str = "",
        kafka_format: tuple[str, ...] = (),
    ) -> None:
        self.dist = kafka
        self.tmp = tmp
        self.kafka_format = kafka_format  # e.g. ("--release-version", "4.0-IV3")
        count = len(kinds)
        ports = free_ports(count + extra_ids)
        self.ports = ports
        self.bootstrap = ",".join(f"127.0.0.1:{p}" for p in ports[:count])
        self.members: dict[int, Member] = {}
        dirs = [uuid_to_kafka(random_uuid()) for _ in ports]
        self.initial = ",".join(
            f"{i + 1}@127.0.0.1:{p}:{d}"
            for i, (p, d) in enumerate(zip(ports[:count], dirs, strict=False))
        )
        for i, kind in enumerate(kinds):
            member = self._member(
                i + 1,
                "pykraft" if kind == "p" else "kafka",
                ports[i],
                dirs[i],
                kafka_overrides or {},
                pykraft_extra,
            )
            self._format(member, "--initial-controllers", self.initial)
            self.members[member.node_id] = member

    def _member(
        self,
        node_id: int,
        kind: str,
        port: int,
        directory_id: str,
        kafka_overrides: dict[str, object],
        pykraft_extra: str,
    ) -> Member:
        if kind == "pykraft":
            proc = make_config(
                self.tmp,
                node_id,
                port,
                voters=None,
                extra=f"controller.quorum.bootstrap.servers={self.bootstrap}\n"
                f"pykraft.spec.trace.file={self.spec_trace(node_id)}\n" + pykraft_extra,
            )
            return Member(
                node_id, kind, port, directory_id, proc.config, proc.data, proc.output, proc=proc
            )
        data = self.tmp / f"kafka{node_id}"
        config = write_properties(
            self.tmp / f"kafka{node_id}.properties",
            {
                "process.roles": "controller",
                "node.id": node_id,
                "controller.listener.names": "CONTROLLER",
                "listeners": f"CONTROLLER://127.0.0.1:{port}",
                "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
                "log.dirs": data,
                "controller.quorum.bootstrap.servers": self.bootstrap,
                **KAFKA_QUORUM,
                **kafka_overrides,
            },
        )
        return Member(
            node_id,
            kind,
            port,
            directory_id,
            config,
            data,
            self.tmp / f"kafka{node_id}.log",
            _dist=self.dist,
        )

    def _format(self, member: Member, *mode: str) -> None:
        if member.kind == "kafka":
            self.dist.format_storage(member.config, CLUSTER_ID, *mode, *self.kafka_format)
        else:
            # The level Kafka's tool formats its side at, so that either side may bootstrap.
            flags = list(self.kafka_format)
            release = (
                flags[flags.index("--release-version") + 1]
                if "--release-version" in flags
                else self.dist.default_release
            )
            result = cli(
                "storage",
                "format",
                "--config",
                str(member.config),
                "--cluster-id",
                CLUSTER_ID,
                "--release-version",
                release,
                *mode,
            )
            assert result.returncode == 0, result.stderr

    def add_observer(self, node_id: int, kind: str) -> Member:
        """A controller formatted with ``--no-initial-controllers`` (to be added later)."""
        port = self.ports[node_id - 1]
        member = self._member(node_id, kind, port, "", {}, "")
        self._format(member, "--no-initial-controllers")
        from pykraft.storage import read_meta_properties

        meta = read_meta_properties(member.data)
        assert meta is not None and meta.directory_id is not None
        member.directory_id = uuid_to_kafka(meta.directory_id)
        self.members[node_id] = member
        return member

    def start(self) -> None:
        for member in self.members.values():
            member.start()

    def close(self) -> None:
        for member in self.members.values():
            member.kill()

    def spec_trace(self, node_id: int) -> Path:
        """A pykraft member's ``pykraft.spec.trace.file``."""
        return self.tmp / f"spec-{node_id}.jsonl"

    def walk_spec_traces(self) -> dict[str, int]:
        """The pykraft members' specification traces merged by time and walked through the
        KRaft specification's rules (``pykraft.spec``; Kafka's controllers write none, and a
        rule that needs their state counts them as agreeing): asserts no step is forbidden,
        returns the steps walked by kind."""
        paths = [self.spec_trace(m.node_id) for m in self.members.values() if m.kind == "pykraft"]
        paths = [p for p in paths if p.exists()]
        assert paths, "no pykraft member wrote a trace"
        steps, violation = check_trace_files(paths)
        assert violation is None, violation
        kinds = Counter(
            json.loads(line)["kind"] for p in paths for line in p.read_text().splitlines()
        )
        assert steps == sum(kinds.values())
        return dict(kinds)

    def describe(self, timeout_ms: int = 5_000) -> QuorumInfo:
        return describe_quorum(self.bootstrap, timeout_ms=timeout_ms)

    def wait(
        self, predicate: Callable[[QuorumInfo], bool], what: str, timeout_s: float = 60
    ) -> QuorumInfo:
        """Poll DescribeQuorum until ``predicate`` holds."""
        deadline = time.monotonic() + timeout_s
        last: object = None
        while time.monotonic() < deadline:
            try:
                info = self.describe(timeout_ms=3_000)
            except Exception as e:  # no leader yet, a node restarting
                last = e
            else:
                if predicate(info):
                    return info
                last = info
            time.sleep(0.1)
        tails = "\n".join(f"--- {m.kind} {m.node_id}\n{m.tail()}" for m in self.members.values())
        raise AssertionError(f"timed out waiting for {what}; last: {last}\n{tails}")

    def caught_up(self) -> QuorumInfo:
        """A leader, and every voter's log end at the high watermark or past it."""
        return self.wait(
            lambda i: (
                i.leader_id > 0
                and i.high_watermark > 0
                and all(v.log_end_offset >= i.high_watermark for v in i.voters)
            ),
            "every voter caught up",
        )


def committed_batches(data: Path, high_watermark: int) -> list[tuple[int, int, int, bytes]]:
    """(base offset, epoch, CRC, bytes) of each batch wholly below ``high_watermark`` in the
    segment files of metadata log directory ``data`` (read with pykraft's reader, whichever
    implementation wrote them)."""
    batches = []
    for segment in sorted((data / PARTITION_DIR_NAME).glob("*.log")):
        buf = segment.read_bytes()
        for header, pos in iter_batches(buf):
            if header.next_offset <= high_watermark:
                batches.append(
                    (
                        header.base_offset,
                        header.partition_leader_epoch,
                        header.crc,
                        buf[pos : pos + header.size],
                    )
                )
    return batches
