"""Rolling operations (issue 47 item 4) on a local cluster of three pykraft controllers and
three Apache Kafka 4.4.0 brokers under a producing workload (acks=all): ``pykraft local roll
--to-build`` upgrades the controllers from pykraft 0.1.0 (the ``v0.1.0`` tag, its source
tree taken from this repository) to this tree one at a time, then restarts the brokers one at
a time with their controlled shutdown. No acknowledged record is lost, no partition is offline
for long, every controller runs the new build at the end; with a voter down the roll refuses
and says why, restarting nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic

from pykraft.admin.roll import ask
from pykraft.interop.kafka import KafkaDist

from ..node.local_up import local_up, read_until, stop

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
OLD = "v0.1.0"
OLD_COMMIT = "3d86179"  # what the tag names


def _old_tree(base: Path) -> Path:
    """pykraft 0.1.0's source tree, from this repository's history: the tag, or the commit
    it names when a checkout came without tags."""
    tree = base / OLD
    tree.mkdir()
    ref = next(
        (
            r
            for r in (OLD, OLD_COMMIT)
            if subprocess.run(
                ["git", "-C", str(ROOT), "cat-file", "-e", f"{r}^{{commit}}"], check=False
            ).returncode
            == 0
        ),
        None,
    )
    assert ref is not None, f"{OLD} ({OLD_COMMIT}) is needed: a checkout with its history"
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], capture_output=True)
    assert archive.returncode == 0, archive.stderr
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    return tree


def _roll(state: Path, *more: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pykraft.cli.main", "local", "roll", "--dir", str(state), *more],
        capture_output=True,
        text=True,
        timeout=900,
    )


class Workload:
    """A producer sending numbered records with acks=all; ``acked`` those acknowledged."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic, self.acked, self.failed = topic, set[int](), 0
        self.producer = KafkaProducer(
            bootstrap_servers=bootstrap, acks="all", retries=2**31 - 1, request_timeout_ms=10_000
        )
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        n = 0
        while not self._stop.is_set():
            future = self.producer.send(self.topic, str(n).encode())
            future.add_callback(lambda _m, n=n: self.acked.add(n))
            future.add_errback(lambda _e: setattr(self, "failed", self.failed + 1))
            n += 1
            time.sleep(0.01)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.producer.flush(timeout=60)
        self.producer.close()


def _offline_watch(endpoint: str, stop_: threading.Event, longest: list[float]) -> None:
    """The longest stretch the active controller counted an offline partition."""
    since: float | None = None
    while not stop_.is_set():
        offline = _offline(endpoint)
        now = time.monotonic()
        if offline:
            since = now if since is None else since
            longest[0] = max(longest[0], now - since)
        else:
            since = None
        time.sleep(0.2)


def _offline(endpoint: str) -> bool:
    from pykraft.interop.cluster import read_metrics

    host, port = endpoint.rsplit(":", 1)
    try:
        values = read_metrics(host, int(port), timeout_s=2)
    except OSError:
        return False
    return values.get("kafka_controller_kafkacontroller_offlinepartitionscount", 0) > 0


def test_rolling_upgrade_under_load_then_refusal_with_a_voter_down(
    kafka: KafkaDist, tmp_path: Path
) -> None:
    old = _old_tree(tmp_path)
    state = tmp_path / "local"
    args = ("--controllers", "3", "--brokers", "3", "--dir", str(state), "--build", str(old))
    process = local_up(*args)
    seen: list[str] = []
    try:
        bootstrap = read_until(process, r"^bootstrap\.servers=(\S+)", seen).group(1)
        health = read_until(process, r"--endpoints (\S+)", seen).group(1).split(",")
        read_until(process, r"brokers=100:up 101:up 102:up", seen)
        assert all("incarnation" not in ask(e, "live", 5)[1] for e in health)  # 0.1.0's
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        admin.create_topics([NewTopic("rolled", 6, 3, topic_configs={"min.insync.replicas": "2"})])
        admin.close()
        work = Workload(bootstrap, "rolled")
        watching, longest = threading.Event(), [0.0]
        watch = threading.Thread(target=_offline_watch, args=(health[0], watching, longest))
        watch.start()
        time.sleep(3)
        rolled = _roll(state, "--to-build", str(ROOT), "--timeout-s", "240")
        time.sleep(3)
        watching.set()
        watch.join()
        work.stop()
        assert rolled.returncode == 0, rolled.stdout + rolled.stderr
        out = rolled.stdout
        assert out.index("restarting controller") < out.index("restarting broker"), out
        assert "rolled 3 controllers and 3 brokers" in out, out
        assert all("incarnation" in ask(e, "live", 5)[1] for e in health)  # this build's
        assert len(work.acked) > 100, len(work.acked)
        consumer = KafkaConsumer(
            "rolled",
            bootstrap_servers=bootstrap,
            auto_offset_reset="earliest",
            consumer_timeout_ms=15_000,
        )
        read = {int(m.value) for m in consumer}
        consumer.close()
        assert work.acked - read == set(), sorted(work.acked - read)[:20]
        assert longest[0] < 10.0, longest  # no partition offline past an election or two

        # A voter down: the roll refuses, says why, restarts nothing.
        found = subprocess.run(
            ["pgrep", "-f", f"{state}/controller-2.properties"], capture_output=True, text=True
        )
        before = {e: ask(e, "live", 5)[1].get("incarnation") for e in (health[0], health[2])}
        os.kill(int(found.stdout.split()[0]), signal.SIGKILL)
        refused = _roll(state, "--timeout-s", "30")
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert "refused" in refused.stderr and "restart" in refused.stderr, refused.stderr
        after = {e: ask(e, "live", 5)[1].get("incarnation") for e in before}
        assert after == before
    finally:
        rest = stop(process)
    assert "Traceback" not in "".join(seen) + rest
