"""Session-wide test set-up: one local SparkSession for the whole test session (starting Spark
costs seconds), shared by the pipeline jobs' tests and the migration's dry run, started only
when a test asks for it; a fix for a socket leak in kafka-python; the JVM options of the
Kafka servers the tests start (below).

The tests' own process runs the interpreted core (tests patch the core's functions and
classes to prove the checkers catch a broken one, which compiled modules refuse); the
processes they start -- nodes, fault runs -- use the compiled build when it is current
(``pykraft.native``), and ``tests/sim/test_native.py`` holds the two to the same events."""

from __future__ import annotations

import os

os.environ["PYKRAFT_NATIVE"], _native_env = "0", os.environ.get("PYKRAFT_NATIVE")
import pykraft  # noqa: E402  (installs no compiled module in this process)

if _native_env is None:
    del os.environ["PYKRAFT_NATIVE"]
else:
    os.environ["PYKRAFT_NATIVE"] = _native_env
assert not pykraft.native.status().active
from collections.abc import Iterator  # noqa: E402
from typing import TYPE_CHECKING, Any  # noqa: E402

import pytest  # noqa: E402

from pykraft.interop.cluster import PORT_RANGE_ENV  # noqa: E402
from pykraft.interop.kafka import CDS_ENV, QUICK_SERVER_JVM, SERVER_JVM_ENV  # noqa: E402

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


def _close_kafka_python_sockets_that_fail_to_connect() -> None:
    """kafka-python 3.0.12 (the newest release) leaves a socket open when a connect fails
    (``KafkaNetSocket.sock_connect`` raises without closing it). Tests that restart brokers
    under a live client meet ECONNREFUSED, and the leaked socket's ResourceWarning surfaces,
    as an error under ``filterwarnings = error``, in whichever test the garbage collector
    happens to run in. Close it where it fails, so that pykraft's own leaks still fail."""
    from kafka.net import inet

    original = inet.KafkaNetSocket.sock_connect

    async def sock_connect(
        self: Any, net: Any, sock: Any, sockaddr: Any, timeout_at: Any = None
    ) -> Any:
        try:
            return await original(self, net, sock, sockaddr, timeout_at=timeout_at)
        except BaseException:
            sock.close()
            raise

    inet.KafkaNetSocket.sock_connect = sock_connect  # type: ignore[method-assign]


_close_kafka_python_sockets_that_fail_to_connect()


def _close_kafka_python_sockets_with_unsent_data_at_once() -> None:
    """kafka-python 3.0.12 closes a connection's transport gracefully: with requests still
    buffered it waits for them to be written before closing the socket. A broker cut off by
    a network fault never takes them, and once the client has stopped nothing closes the
    socket: its ResourceWarning fails whichever test the collector runs in (seen after the
    fault checker's run). Kafka's Java client closes the channel at once; so does this, so
    that pykraft's own leaks still fail."""
    from kafka.net.transport import KafkaTCPTransport

    def close(self: Any) -> None:
        if self._write_buffer:
            self.abort()
        else:
            graceful(self)

    graceful = KafkaTCPTransport.close
    KafkaTCPTransport.close = close  # type: ignore[method-assign]


_close_kafka_python_sockets_with_unsent_data_at_once()

# Kafka's brokers and controllers in the tests live seconds to minutes and move little data:
# C1 only and the serial collector (interop/kafka.py QUICK_SERVER_JVM). Measured on a Kafka
# 4.4.0 broker, start plus 20,000 records produced and consumed: 3.6 s of CPU instead of
# 6.7 s with the full JIT. Benchmarks and ``pykraft local up`` keep the full JIT.
os.environ.setdefault(SERVER_JVM_ENV, " ".join(QUICK_SERVER_JVM))
# Their JVMs start from class-data-sharing archives too, as the tools' do (interop/kafka.py
# CDS_ENV): a server to "Kafka Server started" in 0.9-1.1 s instead of 1.8-2.2 s.
os.environ.setdefault(CDS_ENV, "all")


def _ports_of_this_worker() -> str:
    """``lo-hi``: this test process's share of 14000-31999 (below the kernel's ephemeral
    ports), one share per pytest-xdist worker and one for a run without workers, so
    clusters started side by side never pick the same port (``PORT_RANGE_ENV``)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # "gw0", "gw1", ... under xdist
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    share = (18_000 // (workers + 1)) if workers else 18_000
    index = int(worker[2:]) + 1 if worker.startswith("gw") else 0
    lo = 14_000 + index * share
    return f"{lo}-{lo + share - 1}"


# Assigned, not defaulted: pytest-xdist's workers inherit the main process's environment.
os.environ[PORT_RANGE_ENV] = _ports_of_this_worker()


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    from pykraft.pipeline.session import build_session

    session = build_session("local[2]", TEST_CONF, app_name="pykraft-tests")
    yield session
    session.stop()
