"""The tests' Kafka cluster on pykraft controllers: ``pykraft.interop.cluster.LocalCluster``
with the test quorum's short timeouts (``procs.FAST_QUORUM``)."""

from __future__ import annotations

from pathlib import Path

from pykraft.interop.cluster import RUNNING, LocalCluster, Server
from pykraft.interop.kafka import KafkaDist

from ..node.procs import CLUSTER_ID, FAST_QUORUM

__all__ = ["RUNNING", "KafkaCluster", "Server"]


def _properties(text: str) -> dict[str, object]:
    pairs = (line.split("=", 1) for line in text.strip().splitlines() if "=" in line)
    return {k.strip(): v.strip() for k, v in pairs}


class KafkaCluster(LocalCluster):
    """``controllers`` pykraft controllers, ``brokers`` Kafka brokers (ids 100, 101, ...)."""

    def __init__(
        self,
        kafka: KafkaDist,
        tmp: Path,
        *,
        controllers: int = 3,
        brokers: int = 1,
        controller_extra: str = "",
        broker_overrides: dict[str, object] | None = None,
        controller_kind: str = "pykraft",
        release_version: str = "4.0-IV3",
        dynamic: bool = False,
    ) -> None:
        config = _properties(FAST_QUORUM) if controller_kind == "pykraft" else {}
        config.update(_properties(controller_extra))
        super().__init__(
            kafka,
            tmp,
            controllers=controllers,
            brokers=brokers,
            controller_kind=controller_kind,
            controller_config=config,
            broker_config=broker_overrides,
            cluster_id=CLUSTER_ID,
            release_version=release_version,
            dynamic=dynamic,
        )
