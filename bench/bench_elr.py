"""What eligible leader replicas (KIP-966) cost the controller (issue 28):

    .venv/bin/python bench/bench_elr.py [--topics 1000] [--partitions 100] [--repeat 3]

The real metadata controller in memory (no I/O), six brokers, ``--topics`` topics of
``--partitions`` partitions (RF 3, min.insync.replicas 2), once at 4.0-IV3 (25, ELR off) and
once at 4.1-IV1 (27, ELR on). Timed, the best of ``--repeat``: the controller's work for
fencing one broker (its ISR memberships and leaderships move: one PartitionChangeRecord per
partition it is in), then a second (below min ISR: with ELR on, the ELR fills), a third (the
partitions on those three lose their last ISR member), then unfencing the second (leaderless
partitions elect it: from the ELR with ELR on, as their last ISR member without). The time is that of ``handle`` (the records built)
plus their replay, as the active controller does before it appends.
"""

from __future__ import annotations

import argparse
import random
import time
import uuid
from typing import Any

from pykraft.controller.config import ControllerConfig
from pykraft.controller.quorum_controller import Context, QuorumController
from pykraft.metadata.versions import broker_registration_features, release_features
from pykraft.protocol import ApiKey
from pykraft.protocol.apis import request_schema
from pykraft.protocol.build import make

CLUSTER_ID = "X5SvYNT7TJu0jYq2_o3_vg"
BROKERS = 6
PER_REQUEST = 90  # topics per CreateTopics (under MAX_RECORDS_PER_USER_OP)


class Cluster:
    def __init__(self, metadata_version: int) -> None:
        self.c = QuorumController(
            ControllerConfig(broker_session_timeout_ms=10**9),
            node_id=1,
            cluster_id=CLUSTER_ID,
            rng=random.Random(1),
        )
        self.offset = 0
        self.now = 1_000
        self._apply(self.c.activate(self.now, release_features(metadata_version)))

    def _apply(self, records: list[tuple[Any, int]]) -> None:
        for record, version in records:
            self.c.replay(record, version, self.offset)
            self.offset += 1
        if records:
            self.c.wrote(self.now)

    def call(self, api_key: int, version: int, **fields: Any) -> tuple[Any, int]:
        request = make(request_schema(api_key, version), fields)
        result = self.c.handle(api_key, version, request, Context(self.now, self.offset))
        self._apply(result.records)
        return result.response, len(result.records)

    def heartbeat(self, broker: int, *, fence: bool = False) -> int:
        _, written = self.call(
            ApiKey.BROKER_HEARTBEAT,
            1,
            broker_id=broker,
            broker_epoch=self.c.image.brokers[broker].epoch,
            current_metadata_offset=self.offset - 1,
            want_fence=fence,
            want_shut_down=False,
        )
        return written


def build(metadata_version: int, topics: int, partitions: int) -> Cluster:
    cluster = Cluster(metadata_version)
    for b in range(BROKERS):
        response, _ = cluster.call(
            ApiKey.BROKER_REGISTRATION,
            4,
            broker_id=b,
            cluster_id=CLUSTER_ID,
            incarnation_id=uuid.UUID(int=b + 1),
            listeners=[
                {"name": "PLAINTEXT", "host": "h", "port": 9000 + b, "security_protocol": 0}
            ],
            features=broker_registration_features(33),
            rack=None,
            log_dirs=[uuid.UUID(int=(b + 1) << 64)],
        )
        assert response["error_code"] == 0, response
        cluster.heartbeat(b)
    for first in range(0, topics, PER_REQUEST):
        response, _ = cluster.call(
            ApiKey.CREATE_TOPICS,
            7,
            topics=[
                {
                    "name": f"t{n}",
                    "num_partitions": partitions,
                    "replication_factor": 3,
                    "assignments": [],
                    "configs": [{"name": "min.insync.replicas", "value": "2"}],
                }
                for n in range(first, min(first + PER_REQUEST, topics))
            ],
            timeout=30_000,
            validate_only=False,
        )
        assert all(t["error_code"] == 0 for t in response["topics"]), response
    return cluster


def timed(cluster: Cluster, step: Any) -> tuple[float, int]:
    start = time.perf_counter()
    written = step(cluster)
    return (time.perf_counter() - start) * 1000, written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    steps = [
        ("fence broker 0", lambda c: c.heartbeat(0, fence=True)),
        ("fence broker 1 (below min ISR)", lambda c: c.heartbeat(1, fence=True)),
        ("fence broker 2 (some ISRs empty)", lambda c: c.heartbeat(2, fence=True)),
        ("unfence broker 1 (elected where it may)", lambda c: c.heartbeat(1)),
    ]
    total = args.topics * args.partitions
    print(f"{total:,} partitions, RF 3, min.insync.replicas 2, {BROKERS} brokers")
    print("| step | ELR off (4.0-IV3): ms, records | ELR on (4.1-IV1): ms, records |")
    print("|---|---|---|")
    results: dict[str, dict[int, tuple[float, int]]] = {name: {} for name, _ in steps}
    for mv in (25, 27):
        best: dict[str, tuple[float, int]] = {}
        for _ in range(args.repeat):
            cluster = build(mv, args.topics, args.partitions)
            for name, step in steps:
                ms, written = timed(cluster, step)
                if name not in best or ms < best[name][0]:
                    best[name] = (ms, written)
        for name, _ in steps:
            results[name][mv] = best[name]
    for name, _ in steps:
        off, on = results[name][25], results[name][27]
        print(f"| {name} | {off[0]:,.0f} ms, {off[1]:,} | {on[0]:,.0f} ms, {on[1]:,} |")


if __name__ == "__main__":
    main()
