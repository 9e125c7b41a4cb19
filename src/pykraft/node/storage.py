"""What a node opens at start: its storage, checked against its config (Kafka's
``meta.properties`` rules), and the consensus core built over it with the config's timeouts,
voters and addresses."""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass

from pykraft.node.config import NodeConfig
from pykraft.node.log_retention import LogRetention
from pykraft.raft.core import RaftCore
from pykraft.raft.types import Endpoint, ReplicaKey
from pykraft.raft.voters import VoterSet
from pykraft.storage import (
    PARTITION_DIR_NAME,
    FileLog,
    FileQuorumStateStore,
    FileSnapshotStore,
    StorageError,
    read_meta_properties,
)
from pykraft.storage.preflight import static_quorum_without_voters

__all__ = ["NodeStartError", "NodeStorage", "new_core", "open_storage"]


class NodeStartError(Exception):
    """The node cannot start (unformatted or mismatched storage, unsupported setup)."""


@dataclass(frozen=True, slots=True)
class NodeStorage:
    """A formatted metadata log directory, opened."""

    cluster_id: str
    directory_id: uuid.UUID | None
    log: FileLog
    snapshots: FileSnapshotStore
    quorum_state: FileQuorumStateStore


def open_storage(cfg: NodeConfig) -> NodeStorage:
    """Open ``metadata.log.dir``; raises :class:`NodeStartError` when it is not formatted,
    belongs to another node.id, or cannot be read."""
    try:
        meta = read_meta_properties(cfg.metadata_log_dir, assign_directory_id=True)
    except StorageError as e:
        raise NodeStartError(str(e)) from None
    if meta is None:
        raise NodeStartError(
            f"{cfg.metadata_log_dir} is not formatted: run `pykraft storage format`"
        )
    if meta.node_id != cfg.node_id:
        raise NodeStartError(
            f"{cfg.metadata_log_dir} belongs to node.id {meta.node_id}, config says {cfg.node_id}"
        )
    partition_dir = cfg.metadata_log_dir / PARTITION_DIR_NAME
    try:
        log_ = FileLog.open(partition_dir, segment_bytes=cfg.metadata_log_segment_bytes)
        snapshots = FileSnapshotStore.open(partition_dir, owner=True)
        latest = snapshots.latest()
        if latest is not None and latest.offset > log_.end_offset:
            # Kafka's truncateToLatestSnapshot: a log kept below its newest snapshot lost
            # its tail in a crash (unflushed records a snapshot already held).
            log_.reset_to_snapshot(latest)
    except (StorageError, ValueError) as e:
        raise NodeStartError(f"cannot open {partition_dir}: {e}") from None
    return NodeStorage(
        meta.cluster_id, meta.directory_id, log_, snapshots, FileQuorumStateStore(partition_dir)
    )


def new_core(
    cfg: NodeConfig,
    storage: NodeStorage,
    rng: random.Random,
    now_ms: int,
    clock_offset_ms: int,
) -> RaftCore:
    """The core over the opened storage, with the config's timeouts and addresses.
    ``clock_offset_ms``: wall-clock minus the loop's monotonic clock (batch timestamps)."""
    listener = cfg.controller_listener
    name = listener.name
    # Static voters (kraft.version 0) when controller.quorum.voters is set; otherwise the
    # voter set comes from the log and its bootstrap checkpoint (D2, D3), and
    # controller.quorum.bootstrap.servers is where to find the leader (D8).
    voters = (
        VoterSet.from_ids(
            cfg.voter_ids,
            endpoints={v.id: (Endpoint(name, v.host, v.port),) for v in cfg.quorum_voters},
        )
        if cfg.quorum_voters
        else None
    )
    bootstrap = tuple(Endpoint(name, b.host, b.port) for b in cfg.quorum_bootstrap_servers)
    raft_config = cfg.raft_config(cluster_id=storage.cluster_id, clock_offset_ms=clock_offset_ms)
    own = (voters.endpoints(cfg.node_id) if voters is not None else ()) or (
        Endpoint(name, listener.host or "localhost", listener.port),
    )
    core = RaftCore(
        config=raft_config,
        local_key=ReplicaKey(cfg.node_id, storage.directory_id),
        voters=voters,
        log=storage.log,
        quorum_state=storage.quorum_state,
        snapshots=storage.snapshots,
        rng=rng,
        now_ms=now_ms,
        endpoints=own,
        bootstrap_servers=bootstrap,
    )
    refused = static_quorum_without_voters(
        core.kraft_version,
        storage.log.end_offset > 0 or storage.snapshots.latest() is not None,
        voters is not None,
    )
    if refused is not None:
        raise NodeStartError(f"{cfg.metadata_log_dir}: {refused}")
    core.snapshot_retention = LogRetention(
        storage.log,
        storage.snapshots,
        cfg.metadata_max_retention_bytes,
        cfg.metadata_max_retention_ms,
    )
    return core
