"""A metadata controller driven in memory (no I/O, as the node drives it): requests built
as kio messages of any version, records written at increasing offsets through their wire
form (encoded and decoded again), replayed by the active controller (with the encodings, as a
node's) and by a standby (without) whose image must stay equal."""

from __future__ import annotations

import random
import uuid
from typing import Any

from pykraft.controller.config import ControllerConfig
from pykraft.controller.quorum_controller import Context, QuorumController
from pykraft.controller.result import Response, Result
from pykraft.metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE, Image
from pykraft.metadata.serde import decode_record, encode_record
from pykraft.metadata.versions import broker_registration_features
from pykraft.protocol import ApiKey
from pykraft.protocol.apis import request_schema, response_schema
from pykraft.protocol.build import make

__all__ = ["CLUSTER_ID", "Harness"]

CLUSTER_ID = "X5SvYNT7TJu0jYq2_o3_vg"
# A Kafka 4.4.0 broker's features (4.4-IV2 is its newest level).
BROKER_FEATURES = broker_registration_features(33)


class Harness:
    def __init__(
        self, *, seed: int = 1, bootstrap: dict[str, int] | None = None, **config: Any
    ) -> None:
        self.controller = QuorumController(
            ControllerConfig(**config), node_id=1, cluster_id=CLUSTER_ID, rng=random.Random(seed)
        )
        self.standby = Image()
        self.offset = 0
        self.now = 1_000
        self.kraft_version = 0
        self.written: list[tuple[Any, int, int]] = []
        # metadata.version alone unless given (the tests' offsets start from this log).
        self.write(self.controller.activate(self.now, bootstrap or {"metadata.version": 25}))

    @property
    def image(self) -> Image:
        return self.controller.image

    def write(self, records: list[tuple[Any, int]]) -> int:
        """Append ``records`` (through their wire form); returns the last offset."""
        for record, version in records:
            value = encode_record(record, version)
            decoded, decoded_version = decode_record(value)
            assert decoded == record
            # The active controller keeps the encodings (as a node's does); the standby
            # does not, so that both ways of writing a snapshot are exercised.
            self.controller.replay(decoded, decoded_version, self.offset, value)
            self.standby.replay(decoded, decoded_version, self.offset)
            self.written.append((decoded, decoded_version, self.offset))
            self.offset += 1
        if records:
            self.controller.wrote(self.now)
        self.image.check()
        return self.offset - 1

    def revert(self, committed: int) -> None:
        """Leadership lost: the active image back to ``committed``, the log truncated after
        it, and the standby rebuilt from what is left (it had replayed what was reverted)."""
        self.image.revert(committed)
        self.offset = committed + 1
        self.written = [w for w in self.written if w[2] <= committed]
        self.standby = Image()
        for record, version, offset in self.written:
            self.standby.replay(record, version, offset)

    def context(self) -> Context:
        return Context(
            now_ms=self.now,
            next_offset=self.offset,
            kraft_version=self.kraft_version,
            wall_clock_ms=self.now,
        )

    def call(self, api_key: int, version: int, **fields: Any) -> dict[str, Any]:
        """Handle a request built from ``fields``; write its records; the response fields."""
        request = make(request_schema(api_key, version), fields)
        result: Result[Response] = self.controller.handle(api_key, version, request, self.context())
        # Every answer is built as the node builds it: a field no version of the response
        # has (a misspelt error_code) fails here instead of being dropped.
        make(response_schema(api_key, version), result.response)
        last = self.write(result.records)
        if result.on_written is not None and result.records:
            result.on_written(last)
        return result.response

    def tick(self, advance_ms: int = 0) -> list[tuple[Any, int]]:
        self.now += advance_ms
        records = self.controller.tick(self.context())
        self.write(records)
        return records

    def images_equal(self) -> bool:
        mv = self.image.metadata_version or 7
        version = 2 if mv >= 23 else 1
        return self.image.records(version, 3) == self.standby.records(version, 3)

    # -- brokers ----------------------------------------------------------------------------

    def register(
        self,
        broker_id: int,
        *,
        rack: str | None = None,
        incarnation: uuid.UUID | None = None,
        dirs: int = 1,
        features: list[dict[str, Any]] | None = None,
        cluster_id: str = CLUSTER_ID,
        version: int = 4,
        log_dirs: list[uuid.UUID] | None = None,
        previous_broker_epoch: int = -1,
    ) -> dict[str, Any]:
        return self.call(
            ApiKey.BROKER_REGISTRATION,
            version,
            broker_id=broker_id,
            cluster_id=cluster_id,
            incarnation_id=incarnation or uuid.UUID(int=(broker_id << 64) + 1000),
            listeners=[
                {
                    "name": "PLAINTEXT",
                    "host": "127.0.0.1",
                    "port": 9000 + broker_id,
                    "security_protocol": 0,
                }
            ],
            features=BROKER_FEATURES if features is None else features,
            rack=rack,
            log_dirs=log_dirs
            if log_dirs is not None
            else [uuid.UUID(int=(broker_id << 64) + 500 + i) for i in range(dirs)],
            previous_broker_epoch=previous_broker_epoch,
        )

    def heartbeat(
        self,
        broker_id: int,
        *,
        epoch: int | None = None,
        offset: int | None = None,
        want_fence: bool = False,
        want_shut_down: bool = False,
    ) -> dict[str, Any]:
        broker = self.image.brokers.get(broker_id)
        return self.call(
            ApiKey.BROKER_HEARTBEAT,
            1,
            broker_id=broker_id,
            broker_epoch=epoch if epoch is not None else (broker.epoch if broker else -1),
            current_metadata_offset=self.offset - 1 if offset is None else offset,
            want_fence=want_fence,
            want_shut_down=want_shut_down,
        )

    def live_broker(self, broker_id: int, **kw: Any) -> int:
        """Register and unfence ``broker_id``; its epoch."""
        response = self.register(broker_id, **kw)
        assert response["error_code"] == 0, response
        beat = self.heartbeat(broker_id)
        assert beat["is_fenced"] is False, beat
        return int(response["broker_epoch"])

    def create_topic(
        self, name: str, partitions: int = 1, rf: int = 1, **extra: Any
    ) -> dict[str, Any]:
        response = self.call(
            ApiKey.CREATE_TOPICS,
            7,
            topics=[
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": rf,
                    "assignments": extra.pop("assignments", []),
                    "configs": [
                        {"name": k, "value": v} for k, v in extra.pop("configs", {}).items()
                    ],
                }
            ],
            timeout=30_000,
            validate_only=extra.pop("validate_only", False),
        )
        (topic,) = response["topics"]
        return dict(topic)

    def random_requests(self, rng: random.Random, rounds: int) -> None:
        """Requests of every kind that writes: topics, partitions, configs, ISR, fencing,
        producer ids (on brokers 1-3, which must be registered)."""
        for i in range(rounds):
            kind = rng.randrange(7)
            name = f"t{rng.randrange(6)}"
            if kind == 0:
                self.create_topic(name, partitions=rng.randrange(1, 4), rf=2)
            elif kind == 1:
                self.call(ApiKey.DELETE_TOPICS, 6, topics=[{"name": name}], timeout=1000)
            elif kind == 2:
                self.call(
                    ApiKey.INCREMENTAL_ALTER_CONFIGS,
                    1,
                    validate_only=False,
                    resources=[
                        {
                            "resource_type": rng.choice((TOPIC_RESOURCE, BROKER_RESOURCE)),
                            "resource_name": name if rng.random() < 0.5 else "",
                            "configs": [
                                {
                                    "name": "retention.ms",
                                    "config_operation": rng.choice((0, 1)),
                                    "value": str(1000 + i),
                                }
                            ],
                        }
                    ],
                )
            elif kind == 3:
                self.tick(rng.randrange(0, 12_000))  # sessions may expire: fencing
            elif kind == 4:
                broker = rng.randrange(1, 4)
                self.heartbeat(broker)
            elif kind == 5:
                broker = self.image.brokers.get(rng.randrange(1, 4))
                if broker is not None:
                    self.call(
                        ApiKey.ALLOCATE_PRODUCER_IDS,
                        0,
                        broker_id=broker.broker_id,
                        broker_epoch=broker.epoch,
                    )
            else:
                self.call(
                    ApiKey.ELECT_LEADERS,
                    2,
                    election_type=0,
                    topic_partitions=None,
                    timeout=1000,
                )
