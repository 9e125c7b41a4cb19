"""One local SparkSession for the whole test session (starting Spark costs seconds), shared by
the pipeline jobs' tests and the migration's dry run; started only when a test asks for it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

TEST_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.driver.memory": "1g",
    # Tiny data: the C2 JIT compiler's warm-up costs more CPU than it wins back (the driver
    # JVM does the tasks in local mode). Measured on bench_pipeline's 24 MB ingest: driver
    # JVM CPU 25.4 s -> 13.5 s; on 96 MB C2 pays off again, so this is not a default.
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
}


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    from pykraft.pipeline.session import build_session

    session = build_session("local[2]", TEST_CONF, app_name="pykraft-tests")
    yield session
    session.stop()
