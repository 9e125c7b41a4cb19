"""One local SparkSession for the whole test session (starting Spark costs seconds)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pyspark = pytest.importorskip("pyspark", reason="the pipeline extra (pyspark) is not installed")

from pyspark.sql import SparkSession  # noqa: E402

from pykraft.pipeline.session import build_session  # noqa: E402

TEST_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.driver.memory": "1g",
}


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = build_session("local[2]", TEST_CONF, app_name="pykraft-tests")
    yield session
    session.stop()
