"""What ``pykraft local up`` prints for its user once the cluster starts: commands to try that
work as printed from any directory (Kafka's console tools over the project's jars, kafka-python
in the project's environment), the health command over the controllers' metrics ports, and on
a secure cluster the client settings to use."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pykraft.interop.secure import SecureSetup
    from pykraft.net.security import ClientSecurity

__all__ = [
    "CONTROLLER_CLIENT_PROPERTIES",
    "print_client_settings",
    "print_examples",
    "print_health",
]


def print_examples(bootstrap: str) -> None:
    """Commands to try, which work as printed from any directory: Kafka's console producer
    over the project's jars, and kafka-python in the project's environment."""
    from pykraft.interop.kafka import repo_root

    tool = repo_root() / "scripts" / "kafka.sh"
    code = (
        "from kafka import KafkaProducer; "
        f"KafkaProducer(bootstrap_servers='{bootstrap}').send('demo', b'hi').get(timeout=60)"
    )
    print(
        f"try: {tool} run kafka-console-producer --bootstrap-server {bootstrap} --topic demo\n"
        f'try: {sys.executable} -c "{code}"\n'
        f"try: {tool} run kafka-console-consumer --bootstrap-server {bootstrap} --topic demo "
        "--from-beginning",
        flush=True,
    )


def print_health(controllers: list[tuple[int, int, Path]]) -> None:
    """The health command over the controllers' metrics ports (configs of a first run made
    since the ports were added have them)."""
    from pykraft.node.config import load_config

    ports = [load_config(path).metrics_port for _, _, path in controllers]
    if all(port is not None for port in ports):
        endpoints = ",".join(f"127.0.0.1:{port}" for port in ports)
        print(
            f"health: {sys.executable} -m pykraft.cli.main cluster health --endpoints {endpoints}"
        )


CONTROLLER_CLIENT_PROPERTIES = "controller-client.properties"  # the admin's, on the controllers


def print_client_settings(directory: Path, secure: SecureSetup | None) -> ClientSecurity | None:
    """On a secure cluster: the client settings printed (the files Kafka's tools take, the
    kafka-python arguments), and the controllers' client security for the status line."""
    if secure is None:
        return None
    from pykraft.net.security import client_security
    from pykraft.storage.properties import load_properties

    admin = secure.passwords["admin"]
    props = secure.client_properties(directory / "client.properties", "admin", admin)
    controller_props = secure.controller_client_properties(
        directory / CONTROLLER_CLIENT_PROPERTIES, "admin", admin
    )
    print(
        f"client properties (Kafka's tools: --command-config): {props}\n"
        f"controller client properties (--bootstrap-controller): {controller_props}\n"
        "kafka-python: security_protocol='SASL_SSL', sasl_mechanism='SCRAM-SHA-512', "
        f"sasl_plain_username='admin', sasl_plain_password='{secure.passwords['admin']}', "
        f"ssl_cafile='{secure.ca.ca_pem}'",
        flush=True,
    )
    # The status line dials the controllers as the admin, as the printed file says.
    return client_security(load_properties(controller_props))
