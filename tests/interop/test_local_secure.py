"""``pykraft local up --secure``: the README's secure cluster as a user starts it. Real
pykraft controllers and an Apache Kafka broker over SASL_SSL; the printed client settings
work with kafka-python on the broker and with pykraft's admin commands on the controllers
(``--command-config``), and nothing gets in without them."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from kafka import KafkaConsumer, KafkaProducer

from pykraft.interop.kafka import KafkaDist

from ..node.local_up import local_up, read_until, stop


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
    process = local_up("--secure", "--controllers", "1", "--brokers", "1", "--dir", str(state))
    seen: list[str] = []
    try:
        controllers = read_until(process, r"bootstrap controllers: (\S+)", seen).group(1)
        bootstrap = read_until(process, r"bootstrap.servers=(\S+)", seen).group(1)
        controller_props = read_until(process, r"\(--bootstrap-controller\): (\S+)", seen)
        python = read_until(process, r"kafka-python: (.*)", seen).group(1)
        # The status line dials the controllers over SASL_SSL and sees the broker unfenced.
        read_until(process, r"brokers=100:up", seen)

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
        # A roll of the secure cluster reads the quorum over SASL_SSL as the admin (the file
        # `local up` wrote), and refuses: its one voter is the whole majority.
        rolled = _pykraft("local", "roll", "--dir", str(state), "--timeout-s", "30")
        assert rolled.returncode == 1, rolled.stdout + rolled.stderr
        assert "controller 1 is not safe to restart" in rolled.stderr, rolled.stderr
        assert "0 caught-up voters" in rolled.stderr, rolled.stderr
        # The client properties hold a password: readable by their owner only.
        assert (state / "client.properties").stat().st_mode & 0o077 == 0
    finally:
        rest = stop(process, 60)
    assert process.returncode == 0, "".join(seen) + rest
    assert rest.rstrip().endswith("stopped")
    # The CA is the directory's: a second run keeps it (a client's copy stays valid).
    ca = (state / "certs" / "ca.pem").read_bytes()
    again = local_up("--controllers", "1", "--dir", str(state))
    seen = []
    try:
        read_until(again, r"leader=\d", seen)
    finally:
        stop(again, 60)
    assert "formatted" not in "".join(seen)
    assert (state / "certs" / "ca.pem").read_bytes() == ca
