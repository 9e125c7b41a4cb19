"""What the fault run's monitor reads from Apache Kafka's own controllers (``--controllers
kafka``), in the shape of pykraft's raft metrics.

pykraft's nodes serve their raft metrics over HTTP; Kafka's keep theirs in JMX, which a
Python harness cannot read without an agent. So, for a Kafka controller:

- its epoch and leader come from its ``quorum-state`` file (Kafka writes it at every
  transition, before acting on it): ``current_epoch``, ``current_leader``, and
  ``state=leader`` when it names itself;
- a node that names itself leader is asked DescribeQuorum: the leader's high watermark and
  each replica's log end offset, kept on the shared ``QuorumBoard``;
- a follower's ``high_watermark`` is then its log end offset as the newest leader answer
  reports it, capped at that leader's high watermark (a follower's own high watermark is in
  JMX only); convergence ("every node reached the target") holds the same. That value is
  not the follower's high watermark and may go down (a new leader reports the followers'
  log end offsets as it last heard them): the sample says so (``DERIVED``), and the
  monitor's "high watermark went down" judges only the leaders' own.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from pathlib import Path

from pykraft.admin import AdminClient, AdminError
from pykraft.storage import PARTITION_DIR_NAME
from pykraft.storage.quorum_state import FileQuorumStateStore, QuorumStateError

__all__ = ["DERIVED", "QuorumBoard", "scrape_kafka_controller"]

DERIVED = "high_watermark_derived"  # 1: high_watermark is a leader's view, not the node's

_TIMEOUT_MS = 500


@dataclass
class QuorumBoard:
    """The newest DescribeQuorum answer of a leader: (leader, epoch, high watermark, log end
    offset by replica id)."""

    leader: int = -1
    epoch: int = -1
    high_watermark: int = -1
    log_end: dict[int, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


def scrape_kafka_controller(
    node_id: int, address: str, data: Path, board: QuorumBoard
) -> dict[str, float] | None:
    """pykraft's raft metric names for a Kafka controller (module docstring); None when its
    quorum state cannot be read."""
    try:
        state = FileQuorumStateStore(data / PARTITION_DIR_NAME).read()
    except (OSError, QuorumStateError):
        return None
    if state is None:
        return None
    values: dict[str, float] = {"current_epoch": state.epoch, "current_leader": state.leader_id}
    if state.leader_id == node_id:
        values["state=leader"] = 1
        answer = _describe(address)
        if answer is not None and answer[0] == node_id:
            leader, epoch, hwm, log_end = answer
            with board.lock:
                if (epoch, hwm) >= (board.epoch, board.high_watermark) or leader != board.leader:
                    board.leader, board.epoch, board.high_watermark = leader, epoch, hwm
                    board.log_end = log_end
            values["high_watermark"] = hwm
        return values
    with board.lock:
        end = board.log_end.get(node_id)
        if end is not None and board.high_watermark >= 0:
            values["high_watermark"] = min(end, board.high_watermark)
            values[DERIVED] = 1
    return values


def _describe(address: str) -> tuple[int, int, int, dict[int, int]] | None:
    async def go() -> tuple[int, int, int, dict[int, int]]:
        async with AdminClient(
            address, timeout_ms=_TIMEOUT_MS, request_timeout_ms=_TIMEOUT_MS
        ) as admin:
            info = await admin.describe_quorum()
        ends = {r.replica_id: r.log_end_offset for r in (*info.voters, *info.observers)}
        return info.leader_id, info.leader_epoch, info.high_watermark, ends

    try:
        return asyncio.run(go())
    except (AdminError, OSError, TimeoutError, ConnectionError):
        return None
