"""``pykraft metadata restore --release-version``: a backup at 4.4-IV2 restored at 4.0-IV3
(issue 48 item 5). The dry run lists exactly what 4.0-IV3 cannot hold -- a broker's cordoned
log directories, an ACL with a CIDR host, a partition's ELR once eligible.leader.replicas is
off, features 4.0 does not have -- and nothing else; without ``--allow-loss`` nothing is
written; with it, every record is at the version 4.0-IV3 writes."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from pykraft.backup.take import backup_round
from pykraft.cli.main import main
from pykraft.metadata.records import (
    AccessControlEntryRecord,
    FeatureLevelRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    UserScramCredentialRecord,
)
from pykraft.metadata.serde import decode_record, encode_record
from pykraft.metadata.versions import IBP_4_4_IV2
from pykraft.records import build_batch
from pykraft.storage.log import PARTITION_DIR_NAME
from pykraft.storage.snapshots import FileSnapshotStore, read_snapshot

from .test_backup import _source, new_controller

TOPIC = uuid.UUID(int=0xA)
DIRECTORY = uuid.UUID(int=0xD1)


def _at_44(tmp_path: Path) -> Path:
    """A backup of a 4.4-IV2 log holding what 4.0-IV3 lacks, beside what it has."""
    source, log = _source(tmp_path)
    records = [
        (FeatureLevelRecord("metadata.version", IBP_4_4_IV2), 0),
        (FeatureLevelRecord("eligible.leader.replicas.version", 1), 0),
        (FeatureLevelRecord("group.version", 1), 0),
        (FeatureLevelRecord("share.version", 2), 0),
        (FeatureLevelRecord("transaction.version", 2), 0),
        (RegisterBrokerRecord(100, broker_epoch=5, log_dirs=(DIRECTORY,),
                              cordoned_log_dirs=(DIRECTORY,)), 4),
        (TopicRecord("orders", TOPIC), 0),
        (PartitionRecord(0, TOPIC, (100,), (100,), leader=100, leader_epoch=1,
                         partition_epoch=1, directories=(DIRECTORY,),
                         eligible_leader_replicas=(), last_known_elr=(101,)), 2),
        (AccessControlEntryRecord(uuid.UUID(int=1), 2, "orders", 3, "User:alice",
                                  "10.0.0.0/8", 3, 3), 0),
        (AccessControlEntryRecord(uuid.UUID(int=2), 2, "orders", 3, "User:bob", "*", 3, 3), 0),
        (UserScramCredentialRecord("carol", 2, b"s", b"k", b"v", 8192), 0),
    ]  # fmt: skip
    for record, version in records:
        log.append(build_batch(log.end_offset, 1, [encode_record(record, version)], 1_000))
    log.flush()
    log.close(clean=True)
    target = tmp_path / "backup"
    backup_round(source, target, 1)
    return target


def test_a_downgrade_lists_exactly_what_the_lower_level_cannot_hold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    backup = _at_44(tmp_path)
    plan = ["metadata", "restore", str(backup), "--release-version", "4.0-IV3"]
    assert main([*plan, "--dry-run", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["metadata_version"], report["source_metadata_version"]) == (25, 33)
    assert sorted(report["losses"]) == sorted(
        [
            "feature eligible.leader.replicas.version 1 lowered to 0: 4.0-IV3 supports up to 0",
            "feature share.version 2 lowered to 0: 4.0-IV3 supports up to 0",
            "RegisterBrokerRecord 100: cordoned_log_dirs",
            f"PartitionRecord {TOPIC} 0: its ELR (eligible.leader.replicas.version is off)",
            "AccessControlEntryRecord orders User:alice 10.0.0.0/8: a CIDR host needs 4.4-IV1",
        ]
    )

    new, props = new_controller(tmp_path)
    assert main([*plan, "-c", str(props)]) == 1  # something would be lost: nothing written
    assert "--allow-loss" in capsys.readouterr().out and not new.exists()
    assert main([*plan, "-c", str(props), "--allow-loss"]) == 0
    store = FileSnapshotStore.open(new / PARTITION_DIR_NAME)
    (snapshot_id,) = store.snapshot_ids()
    values = [r.value for r in read_snapshot(store, snapshot_id).records if r.value]
    versions = {}
    for value in values:
        record, version = decode_record(value)
        versions[type(record).__name__] = version
        if isinstance(record, FeatureLevelRecord):
            assert (record.name, record.feature_level) in {
                ("metadata.version", 25),
                ("group.version", 1),
                ("transaction.version", 2),
            }
        if isinstance(record, PartitionRecord):
            assert record.last_known_elr is None and record.directories == (DIRECTORY,)
        if isinstance(record, AccessControlEntryRecord):
            assert record.principal == "User:bob"
    assert versions["RegisterBrokerRecord"] == 3 and versions["PartitionRecord"] == 2
    assert "UserScramCredentialRecord" in versions  # 4.0 has SCRAM

    older = ["metadata", "restore", str(backup), "--release-version", "3.6-IV1", "--dry-run"]
    assert main(older) == 0
    out = capsys.readouterr().out
    assert "lost: RegisterControllerRecord" not in out  # none in this log
    assert "lost: PartitionRecord" in out and "directories" in out  # v0: no directories
    assert main(["metadata", "restore", str(backup), "--release-version", "9.9"]) == 1
