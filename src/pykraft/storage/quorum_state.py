"""The ``quorum-state`` file: Kafka's QuorumStateData as JSON, in the version Kafka writes
for the finalized kraft.version (``KRaftVersion.quorumStateVersion``): data_version 1 at
kraft.version 1::

    {"leaderId":-1,"leaderEpoch":3,"votedId":2,"votedDirectoryId":"<22-char uuid>","data_version":1}

and data_version 0 at kraft.version 0, which a binary from before KIP-853 can read (the
rollback the seed asks for)::

    {"clusterId":"","leaderId":1,"leaderEpoch":3,"votedId":-1,"appliedOffset":0,
     "currentVoters":[{"voterId":1},{"voterId":2},{"voterId":3}],"data_version":0}

Written tmp + fsync + rename + directory fsync, so ``write`` is durable when it returns.
A file that cannot be parsed is a ``QuorumStateError`` naming it: the node must not start
as if it had never voted. data_version 0 files (ClusterId, AppliedOffset, CurrentVoters)
are read too.
"""

from __future__ import annotations

import json
from pathlib import Path

from pykraft.raft.types import NO_LEADER, ElectionState, ReplicaKey
from pykraft.storage._files import StorageError, atomic_write
from pykraft.storage.meta import ZERO_UUID, kafka_to_uuid, uuid_to_kafka

QUORUM_STATE_FILE = "quorum-state"
# pykraft's own, beside Kafka's quorum-state (whose format it must not change): present once
# this directory's replica key was in a committed voter set (RaftCore.was_voter). Kafka's
# controllers ignore it.
WAS_VOTER_FILE = "was-voter"


class QuorumStateError(StorageError):
    """The quorum-state file is torn or not valid QuorumStateData."""


class FileQuorumStateStore:
    """Implements ``QuorumStateStore``."""

    def __init__(self, partition_dir: Path) -> None:
        self.path = partition_dir / QUORUM_STATE_FILE
        self.was_voter_path = partition_dir / WAS_VOTER_FILE

    def was_voter(self) -> bool:
        return self.was_voter_path.exists()

    def remember_voter(self) -> None:
        atomic_write(self.was_voter_path, b"this replica key was a voter; it does not auto-join\n")

    def read(self) -> ElectionState | None:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            data = json.loads(text)
            if not isinstance(data, dict):
                raise TypeError("not a JSON object")
            version = data["data_version"]
            if version not in (0, 1):
                raise ValueError(f"data_version {version} is not supported")
            epoch, leader_id, voted_id = data["leaderEpoch"], data["leaderId"], data["votedId"]
            if not all(type(v) is int for v in (epoch, leader_id, voted_id)):
                raise TypeError("leaderEpoch, leaderId and votedId must be integers")
            directory_id = None
            if version == 1:
                directory_id = kafka_to_uuid(data.get("votedDirectoryId", uuid_to_kafka(ZERO_UUID)))
        except (ValueError, KeyError, TypeError) as exc:
            raise QuorumStateError(
                f"{self.path}: unreadable quorum state ({exc}): {text[:200]!r}"
            ) from None
        if epoch < 0:
            raise QuorumStateError(f"{self.path}: negative leaderEpoch {epoch}")
        voted = None
        if voted_id >= 0:
            voted = ReplicaKey(voted_id, None if directory_id == ZERO_UUID else directory_id)
        return ElectionState(
            epoch=epoch, leader_id=leader_id if leader_id >= 0 else NO_LEADER, voted_key=voted
        )

    def write(
        self, state: ElectionState, *, kraft_version: int = 1, voter_ids: tuple[int, ...] = ()
    ) -> None:
        assert state.epoch >= 0
        voted = state.voted_key
        data: dict[str, object]
        if kraft_version == 0:
            data = {
                "clusterId": "",
                "leaderId": state.leader_id,
                "leaderEpoch": state.epoch,
                "votedId": voted.id if voted else -1,
                "appliedOffset": 0,
                "currentVoters": [{"voterId": v} for v in voter_ids],
                "data_version": 0,
            }
        else:
            directory_id = voted.directory_id if voted and voted.directory_id else ZERO_UUID
            data = {
                "leaderId": state.leader_id,
                "leaderEpoch": state.epoch,
                "votedId": voted.id if voted else -1,
                "votedDirectoryId": uuid_to_kafka(directory_id),
                "data_version": 1,
            }
        atomic_write(self.path, json.dumps(data, separators=(",", ":")).encode())
