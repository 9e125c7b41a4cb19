"""Fixtures for the tests against Apache Kafka (the reference peer, SPEC J1).

The Kafka distribution is fetched through ``scripts/kafka.sh`` (Maven Central, once; later
runs are offline). The reference is Kafka 4.4.0 (``kafka``, its version in every test id:
``[kafka-4.4.0]``); ``kafka431`` is Kafka 4.3.1, for the tests that need that release (its
metadata shell: kafka-shell 4.4.0 is not on Maven Central; a 4.3.1 broker in a mixed-version
cluster; the message schemas kio was generated from). Every Kafka process a test starts is
killed when the test (or module) ends, also when it fails.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pykraft.interop.kafka import REFERENCE_DIST, KafkaDist, KafkaProcess, pom_version


def _dist_id(name: str) -> str:
    return f"kafka-{pom_version(name)}"


@pytest.fixture(scope="session", params=[REFERENCE_DIST], ids=_dist_id)
def kafka(request: pytest.FixtureRequest) -> KafkaDist:
    """Apache Kafka 4.4.0 (``interop/kafka-4.4/pom.xml``), the reference."""
    return KafkaDist.get(str(request.param))


@pytest.fixture(scope="session")
def kafka431() -> KafkaDist:
    """Apache Kafka 4.3.1 (``interop/kafka-4/pom.xml``)."""
    return KafkaDist.get("4")


@pytest.fixture(scope="session", autouse=True)
def _no_kafka_left_behind() -> Iterator[None]:
    """A safety net: each fixture stops its own processes; none outlives the session."""
    yield
    KafkaProcess.kill_all()
