"""One metadata controller driven in memory, without a quorum: requests in, records replayed
at the next offsets at once (benchmarks of the controller's own cost, and large images built
in seconds for scale tests).

Theory of operation. ``StandaloneController`` activates a ``QuorumController`` at a
metadata.version, then hands it requests built from Kafka's schemas (``call``) and replays the
records each returns as if they had committed at once, as the active controller does before it
appends (``Context`` carries the caller's virtual clock; nothing reads the wall clock). Broker
sessions are long enough never to expire. ``build_cluster`` registers ``brokers`` brokers
(unfenced by a heartbeat) and creates ``topics`` topics of ``partitions`` partitions, RF 3,
through CreateTopics as a client would, with the cyclic collector paused (all it builds
lives on). Pure: no I/O.
"""

from __future__ import annotations

import gc
import random
import uuid
from typing import Any, Final

from pykraft.controller.config import ControllerConfig
from pykraft.controller.quorum_controller import Context, QuorumController
from pykraft.metadata.serde import encode_record
from pykraft.metadata.versions import broker_registration_features, release_features
from pykraft.protocol import ApiKey
from pykraft.protocol.apis import request_schema
from pykraft.protocol.build import make

__all__ = ["CLUSTER_ID", "StandaloneController", "build_cluster"]

CLUSTER_ID: Final = "X5SvYNT7TJu0jYq2_o3_vg"
# Topics of 100 partitions per CreateTopics (under MAX_RECORDS_PER_USER_OP).
TOPICS_PER_REQUEST: Final = 90


class StandaloneController:
    """A ``QuorumController`` whose records commit as soon as it writes them."""

    def __init__(self, metadata_version: int, seed: int = 1) -> None:
        self.c = QuorumController(
            ControllerConfig(broker_session_timeout_ms=10**9),
            node_id=1,
            cluster_id=CLUSTER_ID,
            rng=random.Random(seed),
        )
        self.offset = 0  # the next record's offset
        self.now = 1_000
        self._apply(self.c.activate(self.now, release_features(metadata_version)))

    def _apply(self, records: list[tuple[Any, int]]) -> None:
        for record, version in records:
            # Encoded as a controller writes it (``ControllerLogListener.write``).
            self.c.replay(record, version, self.offset, encode_record(record, version))
            self.offset += 1
        if records:
            self.c.wrote(self.now)

    def call(self, api_key: int, version: int, **fields: Any) -> tuple[Any, int]:
        """One request; returns its response fields and how many records it wrote."""
        request = make(request_schema(api_key, version), fields)
        result = self.c.handle(api_key, version, request, Context(self.now, self.offset))
        self._apply(result.records)
        return result.response, len(result.records)

    def register(self, broker: int) -> None:
        response, _ = self.call(
            ApiKey.BROKER_REGISTRATION,
            4,
            broker_id=broker,
            cluster_id=CLUSTER_ID,
            incarnation_id=uuid.UUID(int=broker + 1),
            listeners=[
                {"name": "PLAINTEXT", "host": "h", "port": 9000 + broker, "security_protocol": 0}
            ],
            features=broker_registration_features(33),
            rack=None,
            log_dirs=[uuid.UUID(int=(broker + 1) << 64)],
        )
        assert response["error_code"] == 0, response

    def heartbeat(self, broker: int, *, fence: bool = False) -> int:
        """A heartbeat caught up with the log (``fence``: wanting to be fenced); returns
        how many records it wrote."""
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

    def create_topics(self, names: list[str], partitions: int, configs: dict[str, str]) -> None:
        response, _ = self.call(
            ApiKey.CREATE_TOPICS,
            7,
            topics=[
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": 3,
                    "assignments": [],
                    "configs": [{"name": k, "value": v} for k, v in configs.items()],
                }
                for name in names
            ],
            timeout=30_000,
            validate_only=False,
        )
        assert all(t["error_code"] == 0 for t in response["topics"]), response


def build_cluster(
    metadata_version: int,
    topics: int,
    partitions: int,
    *,
    brokers: int = 6,
    configs: dict[str, str] | None = None,
) -> StandaloneController:
    """``brokers`` unfenced brokers and ``topics`` topics ``t0``, ``t1``, ... of
    ``partitions`` partitions each (RF 3), created through CreateTopics. The cyclic
    collector is paused meanwhile: what is built lives on, and its full passes would walk
    it again and again (a million partitions: 31 -> 20 s)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _build(metadata_version, topics, partitions, brokers, configs)
    finally:
        if collecting:
            gc.enable()


def _build(
    metadata_version: int,
    topics: int,
    partitions: int,
    brokers: int,
    configs: dict[str, str] | None,
) -> StandaloneController:
    cluster = StandaloneController(metadata_version)
    for b in range(brokers):
        cluster.register(b)
        cluster.heartbeat(b)
    per_request = max(1, TOPICS_PER_REQUEST * 100 // max(partitions, 1))
    for first in range(0, topics, per_request):
        names = [f"t{n}" for n in range(first, min(first + per_request, topics))]
        cluster.create_topics(names, partitions, configs or {})
    return cluster
