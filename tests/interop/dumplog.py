"""Kafka's ``kafka-dump-log --cluster-metadata-decoder`` output, parsed, and the same view of
a file through pykraft's own readers, so that tests can compare the two batch by batch."""

from __future__ import annotations

import dataclasses
import json
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pykraft.interop.kafka import KafkaDist
from pykraft.metadata.serde import decode_record
from pykraft.records import ControlRecordType, decode_control, decode_records, iter_batches
from pykraft.storage import uuid_to_kafka

__all__ = ["Batch", "Record", "feature_levels", "kafka_dump", "pykraft_dump", "same_payload"]


@dataclass
class Record:
    offset: int
    kind: str  # a control type (Kafka's name: LeaderChange, KRaftVoters ...) or a data type
    payload: Any  # Kafka's JSON (dict) / pykraft's decoded value


@dataclass
class Batch:
    base_offset: int
    last_offset: int
    count: int
    epoch: int
    is_control: bool
    crc: int
    size: int
    position: int
    create_time_ms: int  # the batch's max timestamp (Kafka prints it as CreateTime)
    records: list[Record]

    def header(self) -> tuple[int, ...]:
        return (
            self.base_offset,
            self.last_offset,
            self.count,
            self.epoch,
            int(self.is_control),
            self.crc,
            self.size,
            self.position,
            self.create_time_ms,
        )


_FIELD = re.compile(r"(\w+): (\S+)")
_CONTROL_RECORD = re.compile(r"headerKeys: \[\] (\w+):? (\{.*\})$")
_DATA_RECORD = re.compile(r"headerKeys: \[\] payload: (\{.*\})$")
CONTROL_NAMES = {
    ControlRecordType.LEADER_CHANGE: "LeaderChange",
    ControlRecordType.SNAPSHOT_HEADER: "SnapshotHeader",
    ControlRecordType.SNAPSHOT_FOOTER: "SnapshotFooter",
    ControlRecordType.KRAFT_VERSION: "KRaftVersion",
    ControlRecordType.KRAFT_VOTERS: "KRaftVoters",
}


def kafka_dump(kafka: KafkaDist, *files: Path) -> dict[str, list[Batch]]:
    """Each file's batches as Kafka's DumpLogSegments prints them."""
    out = kafka.run(
        "dump-log", "--cluster-metadata-decoder", "--files", ",".join(str(f) for f in files)
    ).stdout
    result: dict[str, list[Batch]] = {}
    batches: list[Batch] = []
    for line in out.splitlines():
        if line.startswith("Dumping "):
            batches = result.setdefault(Path(line.split(" ", 1)[1]).name, [])
        elif line.startswith("baseOffset:"):
            f = dict(_FIELD.findall(line))
            assert f["isvalid"] == "true", line
            batches.append(
                Batch(
                    int(f["baseOffset"]),
                    int(f["lastOffset"]),
                    int(f["count"]),
                    int(f["partitionLeaderEpoch"]),
                    f["isControl"] == "true",
                    int(f["crc"]),
                    int(f["size"]),
                    int(f["position"]),
                    int(f["CreateTime"]),
                    [],
                )
            )
        elif line.startswith("| offset:"):
            offset = int(line.split()[2])
            data = _DATA_RECORD.search(line)
            if data is not None:
                payload = json.loads(data.group(1))
                batches[-1].records.append(Record(offset, payload["type"], payload))
                continue
            control = _CONTROL_RECORD.search(line)
            assert control is not None, line
            batches[-1].records.append(
                Record(offset, control.group(1), json.loads(control.group(2)))
            )
    return result


def _type_name(cls_name: str) -> str:
    """FeatureLevelRecord -> FEATURE_LEVEL_RECORD (Kafka's MetadataRecordType names)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", cls_name).upper()


def pykraft_dump(path: Path) -> list[Batch]:
    """A segment's or snapshot's batches through pykraft's readers: ``iter_batches``,
    ``decode_control`` and the metadata record codec."""
    buf = path.read_bytes()
    batches = []
    for header, pos in iter_batches(buf):
        records = []
        for record in decode_records(buf[pos : pos + header.size]):
            if header.is_control:
                kind, message = decode_control(record)
                records.append(Record(record.offset, CONTROL_NAMES[kind], message))
            else:
                assert record.value is not None
                value, version = decode_record(record.value)
                records.append(
                    Record(record.offset, _type_name(type(value).__name__), (value, version))
                )
        batches.append(
            Batch(
                header.base_offset,
                header.last_offset,
                header.record_count,
                header.partition_leader_epoch,
                header.is_control,
                header.crc,
                header.size,
                pos,
                header.max_timestamp,
                records,
            )
        )
    return batches


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() if part != "id" else "Id" for part in rest)


def _to_json(value: Any) -> Any:
    if isinstance(value, uuid.UUID):
        return uuid_to_kafka(value)
    if isinstance(value, tuple | list):
        return [_to_json(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {_camel(f.name): _to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return value


def same_payload(ours: Any, theirs: dict[str, Any]) -> bool:
    """Kafka's JSON of a record equals pykraft's decoded value on every field Kafka printed."""
    if isinstance(ours, tuple):  # a metadata record: (value, version)
        value, version = ours
        if theirs.get("version") != version:
            return False
        ours_json, theirs = _to_json(value), theirs["data"]
    else:  # a control record (a kio entity)
        ours_json = _kio_json(ours)
    return _subset(theirs, ours_json)


def _kio_json(entity: Any) -> Any:
    if dataclasses.is_dataclass(entity) and not isinstance(entity, type):
        return {
            _camel(f.name): _kio_json(getattr(entity, f.name)) for f in dataclasses.fields(entity)
        }
    if isinstance(entity, tuple | list):
        return [_kio_json(v) for v in entity]
    if isinstance(entity, uuid.UUID):
        return uuid_to_kafka(entity)
    if hasattr(entity, "timestamp") and hasattr(entity, "tzinfo"):
        return int(entity.timestamp() * 1000)
    return int(entity) if isinstance(entity, int) else entity


def _subset(theirs: Any, ours: Any) -> bool:
    if isinstance(theirs, dict):
        if not isinstance(ours, dict):
            return False
        lowered = {k.lower(): v for k, v in ours.items()}
        return all(
            k.lower() in lowered and _subset(v, lowered[k.lower()]) for k, v in theirs.items()
        )
    if isinstance(theirs, list):
        return (
            isinstance(ours, list)
            and len(ours) == len(theirs)
            and all(_subset(t, o) for t, o in zip(theirs, ours, strict=True))
        )
    return bool(theirs == ours)


def feature_levels(kafka: KafkaDist, path: Path) -> list[tuple[str, int]]:
    """The FeatureLevelRecords of one checkpoint file, in order, as Kafka's tool decodes them."""
    [batches] = kafka_dump(kafka, path).values()
    return [
        (r.payload["data"]["name"], r.payload["data"]["featureLevel"])
        for b in batches
        for r in b.records
        if r.kind == "FEATURE_LEVEL_RECORD"
    ]
