"""Mutual TLS with principals from certificates (issue 27), proven with a real Kafka broker:
pykraft controllers on ``CONTROLLER:SSL`` with ``ssl.client.auth=required`` and
``ssl.principal.mapping.rules``, Kafka's StandardAuthorizer with ``super.users`` naming the
mapped principals. The controllers form their quorum over mTLS as ``User:controller``, the
broker registers as ``User:broker``; a certificate the CA signed for someone else is
authenticated but not authorized, and a client without a certificate gets no connection."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from pykraft.admin.describe import describe_quorum_request
from pykraft.interop.certs import LocalCA
from pykraft.interop.cluster import LocalCluster
from pykraft.interop.kafka import KafkaDist
from pykraft.net.client import Connection
from pykraft.net.security import ClientSecurity, SecurityProtocol
from pykraft.net.tls import TlsSettings, client_context
from pykraft.protocol import ApiKey, ErrorCode
from pykraft.protocol.apis import request_schema
from pykraft.protocol.build import make

from .test_security import eventually

RULES = "RULE:^CN=([a-z]+),.*$/$1/,DEFAULT"


class Mtls:
    def __init__(self, ca: LocalCA, cluster: LocalCluster) -> None:
        self.ca = ca
        self.cluster = cluster

    def client(self, name: str | None) -> ClientSecurity:
        """Dial a controller with the certificate of ``name`` (None: no certificate)."""
        settings = TlsSettings(truststore_type="PEM", truststore_location=str(self.ca.ca_pem))
        if name is not None:
            cert = self.ca.issue(name)
            settings = TlsSettings(
                truststore_type="PEM",
                truststore_location=str(self.ca.ca_pem),
                keystore_type="PEM",
                keystore_location=str(cert.pem),
            )
        return ClientSecurity(SecurityProtocol.SSL, client_context(settings), None)


@pytest.fixture(scope="module")
def mtls(kafka: KafkaDist, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mtls]:
    base: Path = tmp_path_factory.mktemp("mtls")
    ca = LocalCA(base / "certs")
    controller, broker = ca.issue("controller"), ca.issue("broker")
    common = {
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": ca.ca_pem,
        "ssl.keystore.type": "PEM",
    }
    cluster = LocalCluster(
        kafka,
        base,
        controllers=3,
        brokers=1,
        controller_config={
            **common,
            "listener.security.protocol.map": "CONTROLLER:SSL",
            "ssl.keystore.location": controller.pem,
            "ssl.client.auth": "required",
            "ssl.principal.mapping.rules": RULES,
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:controller;User:broker",
        },
        broker_config={
            **common,
            "listener.security.protocol.map": "CONTROLLER:SSL,PLAINTEXT:PLAINTEXT",
            "ssl.keystore.location": broker.pem,
        },
    )
    try:
        cluster.start()
        yield Mtls(ca, cluster)
    finally:
        cluster.kill()


def test_broker_and_controllers_authenticate_with_certificates(mtls: Mtls) -> None:
    leader = mtls.cluster.leader(mtls.client("controller"))

    async def grant() -> None:
        """As User:controller (a super user by its certificate): let the broker's ANONYMOUS
        PLAINTEXT clients create ``mtls-`` topics."""
        conn = await Connection.open(
            "127.0.0.1",
            leader.port,
            timeout_ms=10_000,
            security=mtls.client("controller"),
        )
        try:
            acl = {
                "resource_type": 2,
                "resource_name": "mtls-",
                "resource_pattern_type": 4,
                "principal": "User:ANONYMOUS",
                "host": "*",
                "operation": 5,  # CREATE
                "permission_type": 3,
            }
            answer: Any = await conn.request(
                make(request_schema(ApiKey.CREATE_ACLS, 3), {"creations": [acl]}),
                timeout_ms=10_000,
            )
            assert answer.results[0].error_code == ErrorCode.none, answer
        finally:
            conn.close()
            await conn.wait_closed()

    asyncio.run(grant())
    admin = eventually(lambda: KafkaAdminClient(bootstrap_servers=mtls.cluster.bootstrap))
    try:
        # The broker registered (CLUSTER_ACTION as User:broker) and forwards a CreateTopics,
        # authorized as its client by the ACL; other names are refused.
        created = admin.create_topics(
            [NewTopic("mtls-a", 1, 1), NewTopic("other", 1, 1)], raise_errors=False
        )
        codes = {t["name"]: t["error_code"] for t in created["topics"]}
        assert codes == {"mtls-a": 0, "other": ErrorCode.topic_authorization_failed}
    finally:
        admin.close()

    async def main() -> None:
        port = mtls.cluster.controllers[0].port
        # A certificate the CA signed for mallory: authenticated as User:mallory, who may
        # not describe the quorum.
        conn = await Connection.open(
            "127.0.0.1", port, timeout_ms=10_000, security=mtls.client("mallory")
        )
        try:
            quorum: Any = await conn.request(describe_quorum_request(), timeout_ms=10_000)
            assert quorum.error_code == ErrorCode.cluster_authorization_failed
        finally:
            conn.close()
            await conn.wait_closed()
        # As the controller's own principal it may.
        conn = await Connection.open(
            "127.0.0.1", port, timeout_ms=10_000, security=mtls.client("controller")
        )
        try:
            quorum = await conn.request(describe_quorum_request(), timeout_ms=10_000)
            assert quorum.error_code == ErrorCode.none
        finally:
            conn.close()
            await conn.wait_closed()
        # No certificate: ssl.client.auth=required refuses the handshake.
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
            conn = await Connection.open(
                "127.0.0.1", port, timeout_ms=10_000, security=mtls.client(None)
            )
            await conn.request(describe_quorum_request(), timeout_ms=10_000)

    asyncio.run(main())
