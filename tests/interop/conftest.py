"""Fixtures for the tests against Apache Kafka (the reference peer, SPEC J1).

The Kafka distribution is fetched through ``scripts/kafka.sh`` (Maven Central, once; later
runs are offline). Its version is in every test id (``[kafka-4.3.1]``). Every Kafka process
a test starts is killed when the test (or module) ends, also when it fails.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pykraft.interop.kafka import KafkaDist, KafkaProcess, pom_version


def _dist_id(name: str) -> str:
    return f"kafka-{pom_version(name)}"


@pytest.fixture(scope="session", params=["4"], ids=_dist_id)
def kafka(request: pytest.FixtureRequest) -> KafkaDist:
    """Apache Kafka 4.x (``interop/kafka-4/pom.xml``)."""
    return KafkaDist.get(str(request.param))


@pytest.fixture(scope="session", autouse=True)
def _no_kafka_left_behind() -> Iterator[None]:
    """A safety net: each fixture stops its own processes; none outlives the session."""
    yield
    KafkaProcess.kill_all()
