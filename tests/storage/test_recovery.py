"""``force-standalone`` on directories written by the real storage code: the seed's log ends
with a VotersRecord of the seed alone at a new epoch and quorum-state is at that epoch; a run
interrupted after any step goes on from its note and writes the batch once; the refusals (a
more up-to-date survivor, a voter accepting connections, a static quorum, an observer); the
new epoch above every survivor's; the simulator's variant over storage interfaces."""

from __future__ import annotations

import shutil
import socket
import uuid
from pathlib import Path

import pytest

from pykraft.cli.main import main
from pykraft.raft.types import NO_LEADER, ElectionState
from pykraft.records import build_batch, valid_prefix
from pykraft.storage.log import PARTITION_DIR_NAME, FileLog
from pykraft.storage.meta import MetaProperties, write_meta_properties
from pykraft.storage.quorum_state import FileQuorumStateStore
from pykraft.storage.recovery import (
    NOTE_FILE,
    RecoveryError,
    force_standalone,
    force_standalone_replica,
    read_note,
)
from pykraft.storage.snapshots import FileSnapshotStore
from pykraft.storage.survey import survey_directory, survey_replica

from .test_survey import CLUSTER, _controller, digest


def _standalone(log_dir: Path, tmp_path: Path) -> None:
    survey = survey_directory(log_dir)
    force_standalone(survey, tmp_path / f"{log_dir.name}.backup", 1_000)


def test_the_seed_ends_as_the_only_voter_at_a_new_epoch(tmp_path: Path) -> None:
    seed = _controller(tmp_path, 1, [(1, 10), (3, 20)])
    before = digest(seed)
    _standalone(seed, tmp_path)
    after = survey_directory(seed)
    assert after.voters is not None and [v.voter_id for v in after.voters] == [1]
    assert after.voters[0].directory_id is not None
    assert (after.last_epoch, after.log_end_offset, after.voters_offset) == (4, 32, 31)
    state = FileQuorumStateStore(seed / PARTITION_DIR_NAME).read()
    assert state is not None and state.epoch == 4 and state.voted_key is None
    note = read_note(seed)
    assert note is not None and note.done == ["backup", "truncate", "voters", "quorum-state"]
    assert [i for i, _ in note.old_voters] == [1, 2, 3]
    backup = tmp_path / "c1.backup"
    assert digest(backup) == before  # the backup is the directory as it was
    with FileLog.open(seed / PARTITION_DIR_NAME) as log:  # a start reads it whole
        assert log.end_offset == 32 and log.epochs()[-1][0] == 4


@pytest.mark.parametrize(
    ("noted", "batch_written"),
    [("backup", False), ("truncate", False), ("truncate", True), ("voters", True)],
    ids=["after-backup", "after-truncate", "batch-written-not-noted", "after-voters"],
)
def test_an_interrupted_run_goes_on_from_its_note(
    tmp_path: Path, noted: str, batch_written: bool
) -> None:
    interrupted = _controller(tmp_path, 2, [(1, 10)])
    _standalone(interrupted, tmp_path)
    note = read_note(interrupted)
    assert note is not None
    note.done = note.done[: note.done.index(noted) + 1]  # the steps after it never ran
    note.write(interrupted)
    if not batch_written:
        segment = sorted((interrupted / PARTITION_DIR_NAME).glob("*.log"))[-1]
        segment.write_bytes(segment.read_bytes()[: -_size_of_last_batch(interrupted)])
    _standalone(interrupted, tmp_path)
    again = survey_directory(interrupted)
    assert (again.last_epoch, again.log_end_offset) == (2, 12)  # one VotersRecord, not two
    assert again.voters is not None and [v.voter_id for v in again.voters] == [2]
    resumed = read_note(interrupted)
    assert resumed is not None and resumed.done[-1] == "quorum-state"


def _size_of_last_batch(log_dir: Path) -> int:
    segment = sorted((log_dir / PARTITION_DIR_NAME).glob("*.log"))[-1]
    headers, _ = valid_prefix(segment.read_bytes())
    return headers[-1].size


def test_a_more_up_to_date_survivor_is_refused_unless_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    behind = _controller(tmp_path, 1, [(1, 10), (2, 5)])
    ahead = _controller(tmp_path, 2, [(1, 10), (3, 1)])
    args = ["metadata-recovery", "force-standalone", str(behind), "--survivor", str(ahead)]
    before = digest(behind)
    assert main(args) == 1
    assert "node 2" in capsys.readouterr().err and digest(behind) == before
    assert main([*args, "--allow-less-up-to-date-seed"]) == 0
    assert (behind / NOTE_FILE).exists()


def test_a_voter_accepting_connections_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as listening:  # voter 2's endpoint answers
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        seed = _controller(tmp_path, 1, [(1, 5)], base_port=port - 2)
        assert main(["metadata-recovery", "force-standalone", str(seed)]) == 1
    assert f"voter 2 accepts connections at 127.0.0.1:{port}" in capsys.readouterr().err
    assert not (seed / NOTE_FILE).exists()


def test_a_static_quorum_and_an_observer_are_refused(tmp_path: Path) -> None:
    static = tmp_path / "static"
    static.mkdir()
    write_meta_properties(static, MetaProperties(CLUSTER, 1, uuid.uuid4()))
    with FileLog.open(static / PARTITION_DIR_NAME) as log:
        log.append(build_batch(0, 1, [b"record"], 0))
        log.flush()
    with pytest.raises(RecoveryError, match=r"controller\.quorum\.voters"):
        _standalone(static, tmp_path)
    observer = _controller(tmp_path, 7, [(1, 5)])  # voters 1-3: node 7 is not one
    with pytest.raises(RecoveryError, match="not a voter"):
        _standalone(observer, tmp_path)


def test_rewrite_endpoints_keeps_the_voters_and_gives_the_named_ones_new_endpoints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed = _controller(tmp_path, 1, [(1, 10), (3, 20)])
    before = survey_directory(seed).voters
    assert before is not None
    ports = _free_ports(2)
    code = main(
        [
            *("metadata-recovery", "rewrite-endpoints", str(seed), "--probe-timeout-ms", "200"),
            *("--backup-dir", str(tmp_path / "backup")),
            f"--endpoint=2=CONTROLLER://127.0.0.1:{ports[0]}",
            f"--endpoint=3=CONTROLLER://localhost:{ports[1]},OTHER://[::1]:{ports[1]}",
        ]
    )
    out = capsys.readouterr()
    assert code == 0, out.err
    after = survey_directory(seed)
    assert after.voters is not None and after.last_epoch == 4 and after.voters_offset == 31
    assert [v.key for v in after.voters] == [v.key for v in before]  # the same replicas
    assert after.voters[0] == before[0]  # voter 1 unchanged
    assert [(e.host, e.port) for e in after.voters[1].endpoints] == [("127.0.0.1", ports[0])]
    assert [(e.name, e.host) for e in after.voters[2].endpoints] == [
        ("CONTROLLER", "localhost"),
        ("OTHER", "::1"),
    ]
    note = read_note(seed)
    assert note is not None and note.operation == "rewrite-endpoints"
    assert f"voter 2 CONTROLLER://127.0.0.1:{ports[0]}" in out.out

    other = _controller(tmp_path, 2, [(1, 10)])
    assert main(["metadata-recovery", "rewrite-endpoints", str(other), "--endpoint=7=C://h:1"]) == 1
    assert "[7] not voters of the voter set in force" in capsys.readouterr().err
    assert read_note(other) is None  # refused before anything was written
    assert main(["metadata-recovery", "rewrite-endpoints", str(other), "--endpoint=2=h:1"]) == 1
    assert "expected NAME://HOST:PORT" in capsys.readouterr().err


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def test_the_new_epoch_is_above_every_epoch_a_survivor_knew(tmp_path: Path) -> None:
    # Node 2 stood in a later election (its quorum-state is at epoch 9) without winning or
    # appending: the seed, node 1, is still the most up-to-date log, but leading at its own
    # epoch + 1 would reuse an epoch node 2 knows.
    seed = _controller(tmp_path, 1, [(1, 10), (3, 20)])
    voted = _controller(tmp_path, 2, [(1, 10), (3, 5)])
    FileQuorumStateStore(voted / PARTITION_DIR_NAME).write(ElectionState(9, NO_LEADER, None))
    args = ["metadata-recovery", "force-standalone", str(seed), "--survivor", str(voted)]
    assert main([*args, "--backup-dir", str(tmp_path / "backup")]) == 0
    note = read_note(seed)
    assert note is not None and note.epoch == 10
    state = FileQuorumStateStore(seed / PARTITION_DIR_NAME).read()
    assert state is not None and state.epoch == 10
    assert survey_directory(seed).last_epoch == 10  # the VotersRecord's batch


def test_the_replica_variant_writes_what_the_directory_variant_writes(tmp_path: Path) -> None:
    # The simulator recovers through survey_replica and force_standalone_replica: over the
    # same log they report and write the same as the directory tools.
    files = _controller(tmp_path, 1, [(1, 10), (3, 20)])
    copy = tmp_path / "copy"
    shutil.copytree(files, copy)
    survey = survey_directory(files)
    partition = copy / PARTITION_DIR_NAME
    with FileLog.open(partition) as log:
        store = FileQuorumStateStore(partition)
        snapshots = FileSnapshotStore.open(partition)
        replica = survey_replica(files, CLUSTER, uuid.UUID(int=1), 1, (log, snapshots, store))
        assert replica.as_json() == survey.as_json()
        note = force_standalone_replica(replica, (log, store), 1_000, [replica])
    force_standalone(survey, tmp_path / "c1.backup", 1_000)
    assert (note.epoch, note.offset, note.voters) == _noted(files)
    ours = sorted(p.name for p in partition.glob("*.log"))
    assert [(partition / n).read_bytes() for n in ours] == [
        (files / PARTITION_DIR_NAME / n).read_bytes() for n in ours
    ]
    assert store.read() == FileQuorumStateStore(files / PARTITION_DIR_NAME).read()


def _noted(log_dir: Path) -> tuple[int, int, list[dict[str, object]]]:
    note = read_note(log_dir)
    assert note is not None
    return note.epoch, note.offset, note.voters
