"""An outside view of a KRaft quorum that works the same on pykraft and on Kafka's raft: an
observer's Fetch (replica id 9999, wait 0, 1 byte) to each voter. The answer names the leader
and its epoch and, from the leader, the high watermark (-1 until it is known in its epoch).

The failover comparison uses it on both systems: from the SIGKILL of the leader to the first
answer, from a new leader in a higher epoch, whose high watermark is above the highest one
seen before the kill (commits resumed under a light steady load).
"""

from __future__ import annotations

import asyncio
import datetime
import time
import uuid
from dataclasses import dataclass
from typing import Any

import kio.schema.fetch.v13.request as fetch_v13

from pykraft.net.client import Connection

METADATA_TOPIC_ID = uuid.UUID(int=1)  # __cluster_metadata (pykraft, Kafka's controllers)
TEST_RAFT_TOPIC_ID = uuid.UUID(int=2)  # __raft_performance_test (Kafka's TestRaftServer)
OBSERVER_ID = 9999


@dataclass(frozen=True)
class Seen:
    leader_id: int
    epoch: int
    high_watermark: int
    at: float  # time.time()


def _request(topic_id: uuid.UUID, epoch: int) -> Any:
    # Kafka refuses (INVALID_REQUEST) a last fetched epoch below 0 or above the current
    # leader epoch; offset 0 of epoch 0 is always a valid position.
    partition = fetch_v13.FetchPartition(
        partition=0,
        current_leader_epoch=epoch,
        fetch_offset=0,
        last_fetched_epoch=0,
        log_start_offset=-1,
        partition_max_bytes=1,
    )
    return fetch_v13.FetchRequest(
        replica_id=OBSERVER_ID,
        max_wait=datetime.timedelta(0),
        min_bytes=0,
        max_bytes=1,
        topics=(fetch_v13.FetchTopic(topic_id=topic_id, partitions=(partition,)),),
        forgotten_topics_data=(),
    )


async def probe_once(address: tuple[str, int], topic_id: uuid.UUID) -> Seen | None:
    """One Fetch to ``address``; None when it does not answer."""
    try:
        conn = await Connection.open(*address, timeout_ms=500, client_id="probe")
    except (OSError, TimeoutError, ConnectionError):
        return None
    try:
        epoch = 0
        for _ in range(3):  # a stale epoch is answered with the current one: ask again
            answer: Any = await conn.request(_request(topic_id, epoch), timeout_ms=500)
            p = answer.responses[0].partitions[0]
            epoch = int(p.current_leader.leader_epoch)
            if p.error_code == 0:
                break
    except (OSError, TimeoutError, ConnectionError):
        return None
    finally:
        conn.close()
    hwm = int(p.high_watermark) if p.error_code == 0 else -1
    return Seen(int(p.current_leader.leader_id), epoch, hwm, time.time())


async def leader_view(addresses: list[tuple[str, int]], topic_id: uuid.UUID) -> Seen | None:
    """What the leader says of itself (the answer whose sender is the leader it names)."""
    seen = await asyncio.gather(*(probe_once(a, topic_id) for a in addresses))
    for s in seen:
        if s is not None and s.leader_id > 0 and s.high_watermark >= 0:
            return s
    return None


def wait_leader(
    addresses: list[tuple[str, int]], topic_id: uuid.UUID, timeout_s: float = 60
) -> Seen:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        seen = asyncio.run(leader_view(addresses, topic_id))
        if seen is not None:
            return seen
        time.sleep(0.05)
    raise TimeoutError(f"no leader with a high watermark within {timeout_s:.0f} s")


def time_to_new_commit(
    survivors: list[tuple[str, int]],
    topic_id: uuid.UUID,
    old: Seen,
    t_kill: float,
    timeout_s: float = 60,
) -> float:
    """Seconds from ``t_kill`` to the first answer from a leader of a higher epoch whose high
    watermark is above ``old``'s."""

    async def poll() -> float:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            seen = await leader_view(survivors, topic_id)
            if (
                seen is not None
                and seen.epoch > old.epoch
                and seen.high_watermark > old.high_watermark
            ):
                return seen.at - t_kill
            await asyncio.sleep(0.005)
        raise TimeoutError(f"no commit in a new epoch within {timeout_s:.0f} s")

    return asyncio.run(poll())
