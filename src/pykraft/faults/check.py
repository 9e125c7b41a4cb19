"""The checker: what the replicas' logs must show after the faults are healed.

Run on the nodes' directories once every process has stopped. Each replica's log is read up to
the committed offset the harness saw every node reach (the final high watermark):

- every acknowledged registration is at its offset on every replica whose log holds that
  offset, as the RegisterBrokerRecord of that broker id and incarnation (else: *lost*);
- the committed prefixes are identical: the same batches (base offset, last offset, epoch,
  CRC) on every replica, from the highest log start offset up (else: *divergent*);
- at most one leader per epoch: the LeaderChange records of all replicas agree (else:
  *two leaders*).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pykraft.faults.workload import Ack
from pykraft.metadata.records import RegisterBrokerRecord
from pykraft.metadata.serde import MetadataRecordError, decode_record
from pykraft.records import CorruptRecordError, decode_records, iter_batches
from pykraft.records._control import ControlRecordType, decode_control
from pykraft.spec import check_trace_files
from pykraft.storage import FileLog
from pykraft.storage.log import PARTITION_DIR_NAME

__all__ = ["Replica", "Verdict", "check", "read_replica"]

BatchId = tuple[int, int, int, int]  # base offset, next offset, epoch, crc


@dataclass
class Replica:
    node_id: int
    start_offset: int
    end_offset: int
    batches: list[BatchId] = field(default_factory=list)
    # offset -> (broker id, incarnation) of each RegisterBrokerRecord below ``upto``
    registrations: dict[int, tuple[int, str]] = field(default_factory=dict)
    leaders: dict[int, int] = field(default_factory=dict)  # epoch -> leader id (LeaderChange)


@dataclass
class Verdict:
    committed: int
    acked: int
    checked: int = 0  # acknowledgements found where they belong, on every replica holding them
    lost: list[str] = field(default_factory=list)
    divergences: list[str] = field(default_factory=list)
    two_leaders: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.lost or self.divergences or self.two_leaders)


def read_replica(node_id: int, data: Path, upto: int) -> Replica:
    """Batches below ``upto`` of the log in ``data`` (a stopped node's metadata.log.dir)."""
    log = FileLog.open(data / PARTITION_DIR_NAME)
    try:
        replica = Replica(node_id, log.start_offset, log.end_offset)
        offset = log.start_offset
        while offset < min(upto, log.end_offset):
            chunk = log.read(offset, 1 << 20)
            for header, pos in iter_batches(chunk):
                if header.base_offset >= upto:
                    break
                replica.batches.append(
                    (header.base_offset, header.next_offset, header.epoch, header.crc)
                )
                _records(replica, header.is_control, header.epoch, chunk[pos : pos + header.size])
                offset = header.next_offset
            else:
                continue
            break
        return replica
    finally:
        log.close()


def _records(replica: Replica, control: bool, epoch: int, batch: bytes) -> None:
    for record in decode_records(batch):
        if control:
            try:
                kind, message = decode_control(record)
            except CorruptRecordError:
                continue
            if kind == ControlRecordType.LEADER_CHANGE:
                replica.leaders.setdefault(epoch, int(message.leader_id))  # type: ignore[attr-defined]
            continue
        if record.value is None:
            continue
        try:
            decoded, _ = decode_record(record.value)
        except MetadataRecordError:
            continue
        if isinstance(decoded, RegisterBrokerRecord):
            replica.registrations[record.offset] = (
                int(decoded.broker_id),
                str(decoded.incarnation_id),
            )


def check(replicas: Iterable[Replica], acked: Iterable[Ack], committed: int) -> Verdict:
    replicas = list(replicas)
    acks = list(acked)
    verdict = Verdict(committed=committed, acked=len(acks))
    for ack in acks:
        want = (ack.broker_id, str(ack.incarnation))
        holders = [r for r in replicas if r.start_offset <= ack.offset < r.end_offset]
        if ack.offset >= committed:
            verdict.lost.append(
                f"offset {ack.offset} acknowledged, above the committed {committed}"
            )
            continue
        if not holders:
            continue  # below every log start: in the snapshots only
        bad = [r.node_id for r in holders if r.registrations.get(ack.offset) != want]
        if bad:
            found = {r.node_id: r.registrations.get(ack.offset) for r in holders}
            verdict.lost.append(
                f"offset {ack.offset}: acknowledged broker {want[0]} incarnation {want[1]}; "
                f"replicas hold {found}"
            )
        else:
            verdict.checked += 1
    start = max(r.start_offset for r in replicas)
    reference = None
    for r in replicas:
        mine = [b for b in r.batches if b[0] >= start]
        if r.end_offset < committed:
            verdict.divergences.append(
                f"node {r.node_id} ends at {r.end_offset}, below the committed {committed}"
            )
        if reference is None:
            reference = (r.node_id, mine)
            continue
        ref_id, ref = reference
        if mine != ref:
            first = next(
                (i for i, (a, b) in enumerate(zip(mine, ref, strict=False)) if a != b),
                min(len(mine), len(ref)),
            )
            verdict.divergences.append(
                f"node {r.node_id} and node {ref_id} differ at committed batch {first}: "
                f"{mine[first] if first < len(mine) else None} vs "
                f"{ref[first] if first < len(ref) else None}"
            )
    leaders: dict[int, tuple[int, int]] = {}
    for r in replicas:
        for epoch, leader in r.leaders.items():
            seen = leaders.setdefault(epoch, (leader, r.node_id))
            if seen[0] != leader:
                verdict.two_leaders.append(
                    f"epoch {epoch}: leader {seen[0]} in node {seen[1]}'s log, "
                    f"{leader} in node {r.node_id}'s"
                )
    return verdict


@dataclass
class SpecWalk:
    """The pykraft controllers' specification traces, walked as one history (``pykraft.spec``)."""

    files: int
    steps: int
    violation: str | None

    def line(self) -> str:
        verdict = "none forbidden" if self.violation is None else f"FORBIDDEN {self.violation}"
        return f"specification trace: {self.steps} steps of {self.files} controllers, {verdict}"


def walk_spec_traces(paths: Iterable[Path]) -> SpecWalk | None:
    """Every existing trace file merged by time through the rules; None when there is none
    (Kafka's controllers write none)."""
    found = [p for p in paths if p.exists()]
    if not found:
        return None
    steps, violation = check_trace_files(found)
    return SpecWalk(len(found), steps, None if violation is None else str(violation))
