"""Talking to ZooKeeper-mode brokers during a migration (KIP-866): the FULL StopReplica,
UpdateMetadata and LeaderAndIsr requests a migrating controller sends them, over one
``LegacyChannel`` per broker address (the RPCs Kafka 3.9's ZooKeeper controller sends).
Runs on the migration's worker thread."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Final

from pykraft.migration import propagator
from pykraft.migration.legacy_channel import LegacyChannel, LegacyChannelError
from pykraft.migration.rpc.leader_and_isr_response import LeaderAndIsrResponse
from pykraft.migration.rpc.stop_replica_response import StopReplicaResponse
from pykraft.migration.rpc.update_metadata_response import UpdateMetadataResponse

__all__ = ["LegacyBrokers", "Send"]

log = logging.getLogger("pykraft.migration")


@dataclass(frozen=True, slots=True)
class Send:
    """The requests for one ZooKeeper-mode broker, on its inter-broker listener."""

    broker_id: int
    host: str
    port: int
    update: Any | None  # None: nothing to tell it (an incremental dual write)
    lisr: Any | None
    stop: Any | None


UPDATE_METADATA: Final = (
    "UpdateMetadata",
    propagator.UPDATE_METADATA_VERSION,
    UpdateMetadataResponse,
)
LEADER_AND_ISR: Final = ("LeaderAndIsr", propagator.LEADER_AND_ISR_VERSION, LeaderAndIsrResponse)
STOP_REPLICA: Final = ("StopReplica", propagator.STOP_REPLICA_VERSION, StopReplicaResponse)


class LegacyBrokers:
    """One channel per broker address, opened on first use."""

    def __init__(self, node_id: int) -> None:
        self.node_id = node_id
        self._channels: dict[tuple[str, int], LegacyChannel] = {}

    def send(self, sends: list[Send]) -> frozenset[int]:
        """StopReplica first (so that the FULL LeaderAndIsr finds no stray log), then FULL
        UpdateMetadata to every broker, then FULL LeaderAndIsr (KAFKA-14656: a broker refuses
        leaders it does not know). Answers and failures are only logged, as Kafka's; a broker
        missed now gets the next FULL requests (every mirrored change), whose LeaderAndIsr
        also makes it drop the logs of partitions it no longer replicates (KAFKA-15605).
        Returns the brokers not reached: the host sends them FULL requests again a second
        later (Kafka's channel manager retries until the broker goes away), so a broker
        that was still binding its listener is not left without partitions."""
        failed: set[int] = set()
        for send in sends:
            if send.stop is not None:
                answer = self._call(send, send.stop, STOP_REPLICA)
                if answer is not None:
                    errors = [
                        (e.topic_name, e.partition_index, e.error_code)
                        for e in answer.partition_errors
                        if e.error_code
                    ]
                    _log_errors("StopReplica", send, answer.error_code, errors)
        reached = []
        for send in sends:
            if send.update is None:
                reached.append(send)
                continue
            answer = self._call(send, send.update, UPDATE_METADATA)
            if answer is None:
                failed.add(send.broker_id)
                continue
            reached.append(send)
            if answer.error_code:
                log.warning(
                    "UpdateMetadata to %s:%d: error %d", send.host, send.port, answer.error_code
                )
        for send in reached:
            if send.lisr is None:
                continue
            answer = self._call(send, send.lisr, LEADER_AND_ISR)
            if answer is None:
                failed.add(send.broker_id)
                continue
            errors = [
                (t.topic_id, e.partition_index, e.error_code)
                for t in answer.topics
                for e in t.partition_errors
                if e.error_code
            ]
            _log_errors("LeaderAndIsr", send, answer.error_code, errors)
        return frozenset(failed)

    def close(self) -> None:
        for channel in self._channels.values():
            channel.close()
        self._channels.clear()

    def _call(self, send: Send, request: Any, api: tuple[str, int, Any]) -> Any:
        name, version, response = api
        try:
            return self._channel(send.host, send.port).call(request, version, response)
        except LegacyChannelError as e:
            log.warning("%s not delivered: %s", name, e)
            return None

    def _channel(self, host: str, port: int) -> LegacyChannel:
        key = (host, port)
        channel = self._channels.get(key)
        if channel is None:
            channel = LegacyChannel(host, port, client_id=f"pykraft-controller-{self.node_id}")
            self._channels[key] = channel
        return channel


def _log_errors(name: str, send: Send, error_code: int, errors: list[Any]) -> None:
    """Answers' errors are only logged, as Kafka's controller does (the first ten)."""
    if error_code or errors:
        log.warning(
            "%s to %s:%d: error %d, partition errors %s",
            name,
            send.host,
            send.port,
            error_code,
            errors[:10],
        )
