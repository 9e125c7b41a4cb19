"""``force-standalone`` on a stopped controller's metadata log directory: the seed of a quorum
that lost its majority becomes its only voter (issue 48 item 2; Confluent's
``kafka-metadata-recovery force-standalone`` does the same for its platform).

Theory of operation. KRaft takes the voter set from the newest VotersRecord in the log,
committed or not (KIP-853). So the seed's log gets one more control batch, a VotersRecord
naming the seed alone (its directory id and endpoints as the old voter set recorded them),
written at a new epoch ``N`` one above any the directory knew, and ``quorum-state`` moves to
``N`` with no leader and no vote. Started again, the seed times out, is the whole majority of
its one-voter set, leads at ``N + 1`` and commits its whole log, the old tail included: the
seed's log is the recovered truth, which is why the seed must be the most up-to-date survivor
(``survey.py``). The quorum then grows back with ``add-controller`` (KIP-853).

Each step is recorded in ``metadata-recovery.json`` in the directory before the next starts,
so an interrupted run goes on where it stopped:

1. ``backup``: the whole directory copied first (``--backup-dir``); nothing else is touched
   before the copy is complete;
2. ``truncate``: a torn tail after the last valid batch is cut (a start would cut it too);
3. ``voters``: the VotersRecord appended and fsynced (skipped if the log already ends with it);
4. ``quorum-state``: epoch ``N``, written atomically; the clean-shutdown markers removed, so
   that pykraft's and Kafka's controllers both scan the tail from their recovery point and
   learn epoch ``N`` from the batch.

The note keeps the old voters (id and directory id): what a returning old voter is told apart
by. One that comes back with its old directory follows the seed's higher epoch and, once it
has the new voter set, is an observer; it is a voter again only when added.

``rewrite-endpoints`` (KIP-1347's case: the voters' endpoints recorded in the log no longer
resolve, so no voter can reach another) writes, the same way, the voter set in force with new
endpoints for the voters named: the same voters and directory ids, on the seed alone. The seed
is then the most up-to-date log at a higher epoch: the other voters, started with their new
listeners, grant it their votes (the answers travel on the seed's own connections), and learn
the new endpoints from it once it leads. Appending the record to every voter's directory
instead would be wrong: at each directory's own log end, one epoch would name different
records at different offsets, and log matching would no longer hold.

The new epoch is one above every epoch the seed *and every surveyed survivor* knew: a
survivor (an observer, or a voter that stood in a later election) may know a later epoch than
the seed, even one whose batches it holds; the seed leading in such an epoch would write other
batches under the same (offset, epoch) than that survivor holds, and log matching would fail.

The format is Kafka's, so the same runs on the directories of Kafka 4.x's own controllers,
which then start from them. ``force_standalone_replica`` takes the same decisions and writes
the same batch and quorum state through a replica's storage interfaces (``ReplicatedLog``,
``QuorumStateStore``): the simulator's majority-loss profile recovers with it.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Final

from pykraft.raft.types import NO_LEADER, ElectionState, Endpoint
from pykraft.records import VoterRecordEntry, decode_control, decode_records, valid_prefix
from pykraft.records import voters_batch as build_voters_batch
from pykraft.records.control_records import VotersRecord
from pykraft.storage._files import StorageError, atomic_write, fsync_dir, fsync_file
from pykraft.storage.checkpoints import CLEAN_SHUTDOWN_FILE
from pykraft.storage.log import PARTITION_DIR_NAME
from pykraft.storage.meta import kafka_to_uuid, uuid_to_kafka
from pykraft.storage.quorum_state import FileQuorumStateStore
from pykraft.storage.survey import DirectorySurvey

if TYPE_CHECKING:
    from pykraft.raft.interfaces import QuorumStateStore, ReplicatedLog

__all__ = [
    "NOTE_FILE",
    "STEPS",
    "RecoveryError",
    "RecoveryNote",
    "force_standalone",
    "force_standalone_replica",
    "read_note",
    "rewrite_endpoints",
    "rewrite_voters",
]

NOTE_FILE: Final = "metadata-recovery.json"
STEPS: Final = ("backup", "truncate", "voters", "quorum-state")


class RecoveryError(StorageError):
    """The directory cannot be made standalone as it is (the message says why)."""


@dataclass
class RecoveryNote:
    """What a force-standalone (or rewrite-endpoints) run decided and which of its steps
    are done. ``voters``: the voter set it writes (``voter_to_json``); empty in a note of an
    earlier release, which wrote the seed alone."""

    node_id: int
    directory_id: str
    epoch: int  # the new epoch N
    offset: int  # where the new VotersRecord is written
    backup: str
    old_voters: list[tuple[int, str | None]]
    done: list[str] = field(default_factory=list)
    operation: str = "force-standalone"
    voters: list[dict[str, object]] = field(default_factory=list)

    def write(self, log_dir: Path) -> None:
        atomic_write(log_dir / NOTE_FILE, json.dumps(asdict(self), indent=2).encode())


def read_note(log_dir: Path) -> RecoveryNote | None:
    path = log_dir / NOTE_FILE
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    data["old_voters"] = [tuple(v) for v in data["old_voters"]]
    return RecoveryNote(**data)


def voter_to_json(voter: VoterRecordEntry) -> dict[str, object]:
    return {
        "id": voter.voter_id,
        "directory_id": None if voter.directory_id is None else uuid_to_kafka(voter.directory_id),
        "endpoints": [[e.name, e.host, e.port] for e in voter.endpoints],
        "kraft_versions": [voter.min_kraft_version, voter.max_kraft_version],
    }


def voter_from_json(data: dict[str, object]) -> VoterRecordEntry:
    """``voter_to_json`` read back (a recovery note's voter set)."""
    directory, endpoints, versions = data["directory_id"], data["endpoints"], data["kraft_versions"]
    assert isinstance(endpoints, list) and isinstance(versions, list)
    return VoterRecordEntry(
        int(str(data["id"])),
        None if directory is None else kafka_to_uuid(str(directory)),
        tuple(Endpoint(str(n), str(h), int(p)) for n, h, p in endpoints),
        int(versions[0]),
        int(versions[1]),
    )


def seed_entry(survey: DirectorySurvey) -> VoterRecordEntry:
    """The seed as the voter set in force records it (its directory id, its endpoints)."""
    if survey.voters is None:
        raise RecoveryError(
            f"{survey.path}: no VotersRecord (kraft.version 0, a static quorum): the voters are "
            "controller.quorum.voters; set it to this controller alone on it and start it"
        )
    for voter in survey.voters:
        if voter.voter_id == survey.node_id:
            if voter.directory_id is None or uuid_to_kafka(voter.directory_id) != (
                survey.directory_id
            ):
                raise RecoveryError(
                    f"{survey.path}: voter {voter.voter_id} of the voter set has another "
                    f"directory id than this directory ({survey.directory_id}): another replica"
                )
            return voter
    raise RecoveryError(
        f"{survey.path}: node {survey.node_id} is not a voter of the voter set in force "
        f"({[v.voter_id for v in survey.voters]}): an observer's log cannot seed the quorum"
    )


def force_standalone(
    survey: DirectorySurvey,
    backup: Path,
    now_ms: int,
    survivors: Sequence[DirectorySurvey] = (),
) -> RecoveryNote:
    """Make ``survey.path`` (a stopped controller's directory) a quorum of itself alone, at
    an epoch above every one it and the ``survivors`` knew; resume an interrupted run from
    its note. Returns the note, every step done."""
    voters = [seed_entry(survey)]
    return rewrite_voters(survey, voters, backup, now_ms, "force-standalone", survivors)


def force_standalone_replica(
    survey: DirectorySurvey,
    storage: tuple[ReplicatedLog, QuorumStateStore],
    now_ms: int,
    survivors: Sequence[DirectorySurvey] = (),
) -> RecoveryNote:
    """``force_standalone`` on a stopped replica's storage interfaces (``survey`` read from
    them by ``survey_replica``): the same note, VotersRecord batch and quorum state; no
    backup and no note on disk (nothing to resume: each write is one call)."""
    log, quorum_state = storage
    voters = [seed_entry(survey)]
    note = plan_rewrite(survey, voters, Path(), "force-standalone", survivors)
    log.append(build_voters_batch(note.offset, note.epoch, now_ms, voters))
    log.flush()
    quorum_state.write(ElectionState(note.epoch, NO_LEADER, None))
    note.done.extend(STEPS[1:])
    return note


def plan_rewrite(
    survey: DirectorySurvey,
    voters: list[VoterRecordEntry],
    backup: Path,
    operation: str,
    survivors: Sequence[DirectorySurvey] = (),
) -> RecoveryNote:
    """The note of a new run: the new epoch (one above every epoch the seed and the
    ``survivors`` knew), the offset of the VotersRecord (the seed's log end), the voters it
    writes and the former voters."""
    if survey.problems:
        raise RecoveryError(f"{survey.path}: {'; '.join(survey.problems)}")
    assert survey.node_id is not None and survey.directory_id is not None
    old = [
        (v.voter_id, None if v.directory_id is None else uuid_to_kafka(v.directory_id))
        for v in survey.voters or ()
    ]
    epoch = 1 + max(max(s.last_epoch, s.quorum_epoch or 0) for s in (survey, *survivors))
    note = RecoveryNote(
        survey.node_id, survey.directory_id, epoch, survey.log_end_offset, str(backup), old
    )
    note.operation, note.voters = operation, [voter_to_json(v) for v in voters]
    return note


def rewrite_endpoints(
    survey: DirectorySurvey,
    endpoints: dict[int, tuple[Endpoint, ...]],
    backup: Path,
    now_ms: int,
    survivors: Sequence[DirectorySurvey] = (),
) -> RecoveryNote:
    """The voter set in force with the endpoints of the voters named in ``endpoints``
    replaced (KIP-1347's case: endpoints that no longer resolve), written on the seed as
    ``force_standalone`` writes its set; the same voters, the same directory ids."""
    seed_entry(survey)  # the seed is a voter of a dynamic quorum
    assert survey.voters is not None
    unknown = sorted(set(endpoints) - {v.voter_id for v in survey.voters})
    if unknown:
        raise RecoveryError(
            f"{survey.path}: {unknown} not voters of the voter set in force "
            f"({[v.voter_id for v in survey.voters]}): this rewrites endpoints only; change "
            "membership with add-controller and remove-controller once the quorum runs"
        )
    voters = [
        replace(v, endpoints=endpoints[v.voter_id]) if v.voter_id in endpoints else v
        for v in survey.voters
    ]
    return rewrite_voters(survey, voters, backup, now_ms, "rewrite-endpoints", survivors)


def rewrite_voters(
    survey: DirectorySurvey,
    voters: list[VoterRecordEntry],
    backup: Path,
    now_ms: int,
    operation: str,
    survivors: Sequence[DirectorySurvey] = (),
) -> RecoveryNote:
    """Write ``voters`` as the voter set in force of the seed ``survey.path`` (a stopped
    controller's directory) at a new epoch, after a backup; resume an interrupted run from its
    note (whose voter set wins). Returns the note, every step done."""
    log_dir = survey.path
    note = read_note(log_dir)
    if note is None:
        note = plan_rewrite(survey, voters, backup, operation, survivors)
        note.write(log_dir)
    elif note.voters:
        voters = [voter_from_json(v) for v in note.voters]
    partition = log_dir / PARTITION_DIR_NAME
    for step in STEPS:
        if step in note.done:
            continue
        if step == "backup":
            _backup(log_dir, Path(note.backup))
        elif step == "truncate":
            _truncate_torn_tail(partition)
        elif step == "voters":
            _append_voters(partition, note, voters, now_ms)
        else:
            FileQuorumStateStore(partition).write(ElectionState(note.epoch, NO_LEADER, None))
            for marker in (partition / CLEAN_SHUTDOWN_FILE, log_dir / CLEAN_SHUTDOWN_FILE):
                marker.unlink(missing_ok=True)
            fsync_dir(partition)
        note.done.append(step)
        note.write(log_dir)
    return note


def _backup(log_dir: Path, backup: Path) -> None:
    if backup.exists():  # a copy an interrupted run left unfinished
        shutil.rmtree(backup)
    # The directory as it was: without the note this run wrote first.
    shutil.copytree(log_dir, backup, symlinks=True, ignore=shutil.ignore_patterns(NOTE_FILE))
    for path in backup.rglob("*"):
        if path.is_file():
            fsync_file(path)
    fsync_dir(backup.parent)


def _segments(partition: Path) -> list[Path]:
    return sorted(partition.glob("*.log"), key=lambda p: p.name)


def _truncate_torn_tail(partition: Path) -> None:
    segments = _segments(partition)
    if not segments:
        return
    last = segments[-1]
    _, valid = valid_prefix(last.read_bytes())
    if valid < last.stat().st_size:
        os.truncate(last, valid)
        fsync_file(last)


def _append_voters(
    partition: Path, note: RecoveryNote, voters: list[VoterRecordEntry], now_ms: int
) -> None:
    segments = _segments(partition)
    target = partition / f"{note.offset:020d}.log"  # a new segment where the log ends
    if segments:
        headers, _ = valid_prefix(segments[-1].read_bytes())
        end = headers[-1].next_offset if headers else int(segments[-1].name.split(".")[0])
        if end > note.offset:
            if _ends_with_voters(segments[-1], note, voters):
                return  # written before the run was interrupted
            raise RecoveryError(f"{partition}: the log grew past {note.offset} since the note")
        if end == note.offset:
            target = segments[-1]
    batch = build_voters_batch(note.offset, note.epoch, now_ms, voters)
    with target.open("ab") as f:
        f.write(batch)
        f.flush()
        os.fsync(f.fileno())
    fsync_dir(partition)


def _ends_with_voters(segment: Path, note: RecoveryNote, voters: list[VoterRecordEntry]) -> bool:
    data = segment.read_bytes()
    headers, valid = valid_prefix(data)
    last = headers[-1]
    if not last.is_control or last.epoch != note.epoch or last.base_offset != note.offset:
        return False
    batch = data[valid - last.size : valid]
    for record in decode_records(batch):
        _, message = decode_control(record)
        if isinstance(message, VotersRecord):
            return [VoterRecordEntry.from_record(v) for v in message.voters] == voters
    return False
