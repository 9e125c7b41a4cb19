"""``pykraft local up --secure``: the README's secure cluster as a user starts it. Real
pykraft controllers and an Apache Kafka broker over SASL_SSL; the printed client settings
work with kafka-python on the broker and with pykraft's admin commands on the controllers
(``--command-config``), and nothing gets in without them."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from kafka import KafkaConsumer, KafkaProducer

from pykraft.interop.kafka import KafkaDist

TIMEOUT_S = 120


def _read_until(process: subprocess.Popen[str], pattern: str, seen: list[str]) -> re.Match[str]:
    assert process.stdout is not None
    deadline = time.monotonic() + TIMEOUT_S
    for line in process.stdout:
        seen.append(line)
        found = re.search(pattern, line)
        if found:
            return found
        assert time.monotonic() < deadline, seen
    raise AssertionError(f"no line matching {pattern!r}: {seen}")


def _pykraft(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pykraft.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_local_up_secure_serves_clients_with_the_printed_settings(
    kafka: KafkaDist, tmp_path: Path
) -> None:
    state = tmp_path / "secure"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pykraft.cli.main",
            "local",
            "up",
            "--secure",
            "--controllers",
            "1",
            "--brokers",
            "1",
            "--dir",
            str(state),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    seen: list[str] = []
    try:
        controllers = _read_until(process, r"bootstrap controllers: (\S+)", seen).group(1)
        bootstrap = _read_until(process, r"bootstrap.servers=(\S+)", seen).group(1)
        controller_props = _read_until(process, r"\(--bootstrap-controller\): (\S+)", seen)
        python = _read_until(process, r"kafka-python: (.*)", seen).group(1)
        # The status line dials the controllers over SASL_SSL and sees the broker unfenced.
        _read_until(process, r"brokers=100:up", seen)

        settings = dict(re.findall(r"(\w+)='([^']*)'", python))
        assert settings["security_protocol"] == "SASL_SSL"
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", **settings)
        producer.send("secure-local", b"hello").get(timeout=60)
        producer.close()
        consumer = KafkaConsumer(
            "secure-local",
            bootstrap_servers=bootstrap,
            auto_offset_reset="earliest",
            consumer_timeout_ms=30_000,
            **settings,
        )
        assert [m.value for m in consumer][:1] == [b"hello"]
        consumer.close()

        # pykraft's admin commands on the controllers' SASL_SSL listener: with the printed
        # file they work; without it the TLS listener refuses the PLAINTEXT client.
        described = _pykraft(
            "topics",
            "--describe",
            "--topic",
            "secure-local",
            "--bootstrap-controller",
            controllers,
            "--command-config",
            controller_props.group(1),
        )
        assert described.returncode == 0, described.stderr
        assert "secure-local" in described.stdout
        refused = _pykraft(
            "topics", "--list", "--bootstrap-controller", controllers, "--timeout-ms", "5000"
        )
        assert refused.returncode != 0
        # The client properties hold a password: readable by their owner only.
        assert (state / "client.properties").stat().st_mode & 0o077 == 0
    finally:
        process.send_signal(signal.SIGINT)
        try:
            rest, _ = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            rest, _ = process.communicate()
    assert process.returncode == 0, "".join(seen) + rest
    assert rest.rstrip().endswith("stopped")
    # The CA is the directory's: a second run keeps it (a client's copy stays valid).
    ca = (state / "certs" / "ca.pem").read_bytes()
    again = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pykraft.cli.main",
            "local",
            "up",
            "--controllers",
            "1",
            "--dir",
            str(state),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    seen = []
    try:
        _read_until(again, r"leader=\d", seen)
    finally:
        again.send_signal(signal.SIGINT)
        again.communicate(timeout=60)
    assert "formatted" not in "".join(seen)
    assert (state / "certs" / "ca.pem").read_bytes() == ca
