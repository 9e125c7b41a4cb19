"""Starting Spark for the pipeline's jobs: master and ``--conf`` pass-through, quiet logs,
and a progress line for long jobs.

Spark's own console output goes to stderr through log4j; we give log4j a configuration at
WARN (and quieter for two loggers that warn on every local start), so the tool's stdout holds
only the tool's answers. Progress is printed to stderr by a daemon thread reading Spark's
status tracker, at most every ``interval_s`` seconds and only while a stage runs.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TextIO

from pyspark import SparkContext
from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"

_LOG4J2 = """\
status = error
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = stderr
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
logger.native.name = org.apache.hadoop.util.NativeCodeLoader
logger.native.level = error
logger.utils.name = org.apache.spark.util.Utils
logger.utils.level = error
# Warns "All paths were ignored" for Kafka's __cluster_metadata-0 directory (a leading "_"
# means hidden to Hadoop) although the files inside it are listed and read.
logger.datasource.name = org.apache.spark.sql.execution.datasources.DataSource
logger.datasource.level = error
"""

# Defaults that keep a local run small and quiet; any ``--conf`` overrides them.
_DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    # The sweep's runs table has ~30 columns; Spark warns when printing plans past 25.
    "spark.sql.debug.maxToStringFields": "100",
}


def parse_conf(pairs: list[str]) -> dict[str, str]:
    """``["k=v", ...]`` from ``--conf`` into a dict; a malformed pair is a ValueError."""
    conf: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--conf expects key=value, got {pair!r}")
        conf[key.strip()] = value
    return conf


def _log4j_file() -> str:
    fd, path = tempfile.mkstemp(prefix="pykraft-log4j2-", suffix=".properties")
    with os.fdopen(fd, "w") as out:
        out.write(_LOG4J2)
    return path


def build_session(
    master: str = DEFAULT_MASTER, conf: Mapping[str, str] | None = None, app_name: str = "pykraft"
) -> SparkSession:
    """A SparkSession for ``master`` with ``conf`` passed through unchanged."""
    settings = dict(_DEFAULTS)
    settings.update(conf or {})
    log_option = f"-Dlog4j2.configurationFile=file:{_log4j_file()}"
    java_options = settings.get("spark.driver.extraJavaOptions", "")
    settings["spark.driver.extraJavaOptions"] = f"{java_options} {log_option}".strip()
    if master.startswith("local"):
        # The driver is the executor too: Spark's 1 GiB heap is short for a 64 MiB segment's
        # decoded tables (given --conf spark.driver.memory wins).
        settings.setdefault("spark.driver.memory", "3g")
        # Otherwise Spark warns on every start that the hostname resolves to loopback.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        # Python workers run this interpreter (with pykraft installed), not the first
        # ``python3`` on PATH. On a cluster, ship pykraft and set spark.pyspark.python.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


@contextmanager
def progress(
    sc: SparkContext, label: str, *, interval_s: float = 5.0, out: TextIO | None = None
) -> Iterator[None]:
    """Print ``label: stage N: done/total tasks`` to stderr while a job runs."""
    stream = out if out is not None else sys.stderr
    stop = threading.Event()
    tracker = sc.statusTracker()

    def report() -> None:
        started = time.monotonic()
        last = ""
        while not stop.wait(interval_s):
            parts = []
            for stage_id in sorted(tracker.getActiveStageIds()):
                info = tracker.getStageInfo(stage_id)
                if info is not None:
                    parts.append(f"stage {stage_id}: {info.numCompletedTasks}/{info.numTasks}")
            line = ", ".join(parts)
            if line and line != last:
                elapsed = time.monotonic() - started
                print(f"[{label} {elapsed:.0f}s] {line} tasks", file=stream, flush=True)
                last = line

    thread = threading.Thread(target=report, name=f"progress-{label}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


@contextmanager
def session_conf(spark: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """Runtime SQL settings in force inside the block, restored after it.

    DataFrames are planned (and run) by actions, so the actions must run inside the block.
    """
    conf = spark.conf
    saved = {key: conf.get(key, None) for key in settings}
    for key, value in settings.items():
        conf.set(key, value)
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                conf.unset(key)
            else:
                conf.set(key, old)


def join_path(base: str, *parts: str) -> str:
    """A child path of a local path or Hadoop URI (``hdfs://``, ``s3a://``, ``file:``)."""
    return "/".join([base.rstrip("/"), *parts])
