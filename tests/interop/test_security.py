"""A secure Kafka cluster on pykraft controllers (issue 27), proven with real Kafka 4.x
brokers, kafka-python and Kafka's own tools: SASL_SSL everywhere (PLAIN on the controller
listener, SCRAM-SHA-512 for clients), SCRAM users bootstrapped with ``storage format
--add-scram``, Kafka's StandardAuthorizer on controllers and brokers.

One cluster for the module (three pykraft controllers, two brokers): every test adds what
it needs (users, ACLs, quotas) under its own names."""

from __future__ import annotations

import asyncio
import socket
import ssl
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kio.schema.create_topics.v7.request as create_v7
import kio.schema.describe_quorum.v2.request as dq_v2
import kio.schema.envelope.v0.request as envelope_v0
import pytest
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    NewTopic,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from kafka.errors import KafkaError as ClientError

from pykraft.interop.cluster import LocalCluster
from pykraft.interop.kafka import KafkaDist
from pykraft.interop.secure import BROKER_LISTENER, SecureSetup
from pykraft.net.client import Connection
from pykraft.net.sasl_client import SaslAuthenticationError
from pykraft.net.security import (
    ClientSecurity,
    KafkaPrincipal,
    SaslClientConfig,
    SecurityProtocol,
    encode_principal,
)
from pykraft.net.tls import TlsSettings, client_context
from pykraft.protocol import ErrorCode, encode_request

ALICE = ("alice", "alice-pw")
REAUTH_MS = 8000


class Secure:
    def __init__(self, setup: SecureSetup, cluster: LocalCluster) -> None:
        self.setup = setup
        self.cluster = cluster

    def admin(
        self, user: str = "admin", password: str = "admin-secret", timeout_ms: int = 30_000
    ) -> KafkaAdminClient:
        return KafkaAdminClient(
            bootstrap_servers=self.cluster.bootstrap,
            request_timeout_ms=timeout_ms,
            **self.setup.kafka_python(user, password),
        )

    def direct_client(self, user: str, password: str, mechanism: str = "PLAIN") -> ClientSecurity:
        """Dial a pykraft controller (PLAIN) or a broker's client listener (SCRAM-SHA-512)
        directly, over SASL_SSL as ``user``."""
        settings = TlsSettings(truststore_type="PEM", truststore_location=str(self.setup.ca.ca_pem))
        return ClientSecurity(
            SecurityProtocol.SASL_SSL,
            client_context(settings),
            SaslClientConfig(mechanism, user, password),
        )


@pytest.fixture(scope="module")
def secure(kafka: KafkaDist, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secure]:
    base: Path = tmp_path_factory.mktemp("secure")
    setup = SecureSetup(base)
    # alice may log in to the controllers directly too (PLAIN), without being a super user.
    setup.passwords["alice"] = ALICE[1]
    cluster = LocalCluster(
        kafka,
        base,
        controllers=3,
        brokers=2,
        # KIP-368: sessions on the controllers' listener last 8 s; brokers re-authenticate.
        controller_config={**setup.controller_config(), "connections.max.reauth.ms": REAUTH_MS},
        broker_config=setup.broker_config(),
        broker_listener=BROKER_LISTENER,
        format_args=setup.format_args({ALICE[0]: ALICE[1]}),
    )
    try:
        cluster.start()
        secure = Secure(setup, cluster)
        _every_broker_sees_every_broker(secure)
        yield secure
    finally:
        cluster.kill()


def eventually(check: Any, timeout_s: float = 30) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return check()
        except (AssertionError, ClientError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def _every_broker_sees_every_broker(secure: Secure) -> None:
    """A broker is RUNNING before its metadata cache holds the other brokers; a client
    that bootstraps from it then names a controller it cannot dial (UnknownBrokerIdError).
    Wait until each broker, asked on its own, lists them all."""
    wanted = {b.node_id for b in secure.cluster.brokers}

    def seen(address: str) -> None:
        admin = KafkaAdminClient(
            bootstrap_servers=address, **secure.setup.kafka_python("admin", "admin-secret")
        )
        try:
            described = admin.describe_cluster()["brokers"]
            brokers = {b["broker_id"] for b in described if not b.get("is_fenced")}
        finally:
            admin.close()
        assert brokers == wanted, brokers

    for broker in secure.cluster.brokers:
        eventually(lambda a=broker.address: seen(a), timeout_s=60)


def codes(result: dict[str, Any]) -> dict[str, int]:
    return {t["name"]: t["error_code"] for t in result["topics"]}


def test_brokers_run_over_sasl_ssl_and_bootstrapped_scram_users_log_in(secure: Secure) -> None:
    admin = eventually(secure.admin)
    try:
        assert codes(admin.create_topics([NewTopic("secure-a", 2, 2)], raise_errors=False)) == {
            "secure-a": 0
        }
        assert len(admin.describe_cluster()["brokers"]) == 2
    finally:
        admin.close()
    producer = KafkaProducer(
        bootstrap_servers=secure.cluster.bootstrap,
        acks="all",
        **secure.setup.kafka_python("admin", "admin-secret"),
    )
    producer.send("secure-a", b"x").get(timeout=30)
    producer.close()
    # The controllers counted the brokers' authentications, and nothing failed.
    for controller in secure.cluster.controllers:
        metrics = controller.scrape()
        assert metrics["kafka_server_socket_server_metrics_successful_authentication_total"] >= 1
        assert metrics["kafka_server_socket_server_metrics_failed_authentication_total"] == 0
    # A wrong password: the brokers (from pykraft's UserScramCredentialRecords) refuse it.
    with pytest.raises(ClientError):
        secure.admin("admin", "wrong-password", timeout_ms=5_000)
    # Why, read from each broker's SaslAuthenticate answer by the project's own client:
    # kafka-python logs it only when its read of the answer beats the broker's close.
    for broker in secure.cluster.brokers:
        asyncio.run(_broker_refuses_wrong_password(secure, broker.address))


async def _broker_refuses_wrong_password(secure: Secure, address: str) -> None:
    host, port = address.rsplit(":", 1)

    def scram(password: str) -> ClientSecurity:
        return secure.direct_client("admin", password, "SCRAM-SHA-512")

    with pytest.raises(SaslAuthenticationError) as refused:
        await Connection.open(host, int(port), timeout_ms=10_000, security=scram("wrong"))
    assert "SASL_AUTHENTICATION_FAILED" in str(refused.value)
    assert "invalid credentials with SASL mechanism SCRAM-SHA-512" in str(refused.value)
    conn = await Connection.open(host, int(port), timeout_ms=10_000, security=scram("admin-secret"))
    conn.close()
    await conn.wait_closed()


def test_acls_through_the_brokers_allow_deny_and_delete(secure: Secure) -> None:
    admin, alice = eventually(secure.admin), eventually(lambda: secure.admin(*ALICE))
    try:
        refused = alice.create_topics([NewTopic("team-a", 1, 2)], raise_errors=False)
        assert codes(refused) == {"team-a": ErrorCode.topic_authorization_failed}
        prefixed = ResourcePattern(ResourceType.TOPIC, "team-", ACLResourcePatternType.PREFIXED)
        allow = ACL("User:alice", "*", ACLOperation.CREATE, ACLPermissionType.ALLOW, prefixed)
        assert admin.create_acls([allow])["failed"] == []
        result = eventually(
            lambda: _created(alice, [NewTopic("team-a", 1, 2), NewTopic("other", 1, 2)])
        )
        assert result == {"team-a": 0, "other": ErrorCode.topic_authorization_failed}
        # An explicit DENY on one topic wins over the prefixed ALLOW.
        literal = ResourcePattern(ResourceType.TOPIC, "team-b", ACLResourcePatternType.LITERAL)
        deny = ACL("User:alice", "*", ACLOperation.CREATE, ACLPermissionType.DENY, literal)
        assert admin.create_acls([deny])["failed"] == []
        assert codes(alice.create_topics([NewTopic("team-b", 1, 2)], raise_errors=False)) == {
            "team-b": ErrorCode.topic_authorization_failed
        }
        # alice may not change ACLs (ALTER on the cluster).
        assert alice.create_acls([allow])["failed"]
        # Kafka's own tool lists them through a broker (DescribeAcls).
        props = secure.setup.client_properties(
            secure.setup.base / "admin.properties", "admin", "admin-secret"
        )
        listed = secure.cluster.dist.run(  # type: ignore[union-attr]
            "acls",
            "--bootstrap-server",
            secure.cluster.bootstrap,
            "--command-config",
            str(props),
            "--list",
            "--principal",
            "User:alice",
        ).stdout
        assert "team-" in listed and "PREFIXED" in listed and "DENY" in listed
        # Deleting with a filter removes both; alice is refused again.
        everything = ACLFilter(
            "User:alice",
            None,
            ACLOperation.ANY,
            ACLPermissionType.ANY,
            ResourcePatternFilter(ResourceType.TOPIC, None, ACLResourcePatternType.ANY),
        )
        deleted = admin.delete_acls([everything])
        assert len(deleted[0][1]) == 2
        assert eventually(lambda: _created(alice, [NewTopic("team-c", 1, 2)], expect=29)) == {
            "team-c": ErrorCode.topic_authorization_failed
        }
    finally:
        admin.close()
        alice.close()


def _created(client: KafkaAdminClient, topics: list[NewTopic], expect: int = 0) -> dict[str, int]:
    result = codes(client.create_topics(topics, raise_errors=False))
    assert result[topics[0].name] == expect, result
    return result


def test_scram_credentials_altered_through_the_brokers(secure: Secure) -> None:
    from kafka.admin import ScramMechanism, UserScramCredentialUpsertion

    admin = eventually(secure.admin)
    try:
        upsert = UserScramCredentialUpsertion("carol", ScramMechanism.SCRAM_SHA_512, "carol-pw")
        assert admin.alter_user_scram_credentials([upsert]) == {"carol": None}
        carol = eventually(lambda: secure.admin("carol", "carol-pw"))
        carol.close()
        too_few = UserScramCredentialUpsertion(
            "dave", ScramMechanism.SCRAM_SHA_512, "pw", iterations=1000
        )
        assert admin.alter_user_scram_credentials([too_few]) == {"dave": "Too few iterations"}
    finally:
        admin.close()
    alice = eventually(lambda: secure.admin(*ALICE))
    try:
        refused = alice.alter_user_scram_credentials([upsert])["carol"]
        assert refused == "Cluster authorization failed."
    finally:
        alice.close()


def test_client_quotas_with_kafka_configs(secure: Secure) -> None:
    dist = secure.cluster.dist
    assert dist is not None
    props = secure.setup.client_properties(
        secure.setup.base / "admin.properties", "admin", "admin-secret"
    )
    base = ["--bootstrap-server", secure.cluster.bootstrap, "--command-config", str(props)]
    dist.run(
        "configs",
        *base,
        "--alter",
        "--entity-type",
        "users",
        "--entity-name",
        "alice",
        "--add-config",
        "producer_byte_rate=1024,controller_mutation_rate=5",
    )

    def described() -> str:
        out = dist.run(
            "configs", *base, "--describe", "--entity-type", "users", "--entity-name", "alice"
        ).stdout
        assert "producer_byte_rate=1024" in out, out
        return out

    assert "controller_mutation_rate=5" in eventually(described)
    # The quota holds on the brokers: alice (kafka-python over PLAIN this time), producing
    # 12 KiB at 1 KiB/s, is throttled: the brokers' produce responses carry throttle time once
    # the bytes pass the quota times Kafka's shortest rate window (10 of its 11 1-s samples).
    admin = eventually(secure.admin)
    try:
        codes(admin.create_topics([NewTopic("quota-t", 1, 2)], raise_errors=False))
        pattern = ResourcePattern(ResourceType.TOPIC, "quota-t", ACLResourcePatternType.LITERAL)
        write = ACL("User:alice", "*", ACLOperation.WRITE, ACLPermissionType.ALLOW, pattern)
        assert admin.create_acls([write])["failed"] == []
    finally:
        admin.close()
    producer = eventually(
        lambda: KafkaProducer(
            bootstrap_servers=secure.cluster.bootstrap,
            acks=1,
            batch_size=1024,
            linger_ms=0,
            **secure.setup.kafka_python(*ALICE, mechanism="PLAIN"),
        )
    )
    try:
        for _ in range(12):
            eventually(lambda: producer.send("quota-t", b"q" * 1024).get(timeout=30))
        throttle = producer.metrics()["producer-metrics"]["throttle-time-max"]
        assert throttle > 0, producer.metrics()["producer-metrics"]
    finally:
        producer.close(timeout=5)
    bad = dist.run(
        "configs",
        *base,
        "--alter",
        "--entity-type",
        "users",
        "--entity-name",
        "alice",
        "--add-config",
        "producer_byte_rate=1.5",
        check=False,
    )
    assert bad.returncode != 0
    assert "cannot be a fractional value" in bad.stdout + bad.stderr


def test_a_removed_quota_lets_the_default_user_quota_throttle_create_topics(
    secure: Secure,
) -> None:
    """Issue 46 item 2, with Kafka's kafka-configs through the brokers: a default user
    controller_mutation_rate of 1 partition/s, alice's own of 1,000 set and then removed.
    The default then applies to her, as on Kafka's controller: a CreateTopics of 12
    partitions passes (a strict quota refuses only once it is exceeded) and the next is
    refused THROTTLING_QUOTA_EXCEEDED. Before the fix her removed quota stayed as a 0.0
    tombstone that hid the default, and every create passed."""
    dist = secure.cluster.dist
    assert dist is not None
    props = secure.setup.client_properties(
        secure.setup.base / "admin.properties", "admin", "admin-secret"
    )
    base = ["configs", "--bootstrap-server", secure.cluster.bootstrap, "--command-config"]
    base.append(str(props))
    users = [*base, "--alter", "--entity-type", "users"]
    # alice may create quota-* topics (Kafka's kafka-acls, which waits out any throttling).
    acl = ["acls", *base[1:], "--allow-principal", "User:alice", "--operation", "Create"]
    acl += ["--topic", "quota-", "--resource-pattern-type", "prefixed"]
    dist.run(*acl[:1], "--add", *acl[1:])
    dist.run(*users, "--entity-default", "--add-config", "controller_mutation_rate=1")
    dist.run(*users, "--entity-name", "alice", "--add-config", "controller_mutation_rate=1000")
    dist.run(*users, "--entity-name", "alice", "--delete-config", "controller_mutation_rate")
    alice = eventually(lambda: secure.admin(*ALICE))
    try:
        described = dist.run(
            *base, "--describe", "--entity-type", "users", "--entity-name", "alice"
        ).stdout
        assert "controller_mutation_rate" not in described, described
        first = eventually(lambda: _created(alice, [NewTopic("quota-big", 12, 2)]))
        assert first == {"quota-big": 0}
        # Its answer asked alice's client to back off (kafka-python then refuses to send on
        # that connection): a second client sends the next at once, and is refused.
        with pytest.raises(ClientError, match="throttle"):
            alice.create_topics([NewTopic("quota-one", 1, 2)], raise_errors=False)
        again = secure.admin(*ALICE)
        try:
            second = codes(again.create_topics([NewTopic("quota-one", 1, 2)], raise_errors=False))
        finally:
            again.close()
        assert second == {"quota-one": ErrorCode.throttling_quota_exceeded}, second
    finally:
        alice.close()
        dist.run(*users, "--entity-default", "--delete-config", "controller_mutation_rate")
        dist.run(*acl[:1], "--remove", "--force", *acl[1:])


def test_controller_refuses_what_the_principal_may_not_do(secure: Secure) -> None:
    """Straight to a pykraft controller as alice (PLAIN, not a super user): DescribeQuorum
    needs DESCRIBE on the cluster, an Envelope CLUSTER_ACTION (claiming to carry User:admin
    does not help), CreateTopics CREATE; a wrong password is SASL_AUTHENTICATION_FAILED."""

    async def main() -> None:
        controller = secure.cluster.controllers[0]
        host, port = "127.0.0.1", controller.port
        with pytest.raises(SaslAuthenticationError, match="Invalid username or password"):
            await Connection.open(
                host, port, timeout_ms=10_000, security=secure.direct_client("alice", "x")
            )
        conn = await Connection.open(
            host, port, timeout_ms=10_000, security=secure.direct_client(*ALICE)
        )
        try:
            quorum: Any = await conn.request(
                dq_v2.DescribeQuorumRequest(topics=()), timeout_ms=10_000
            )
            assert quorum.error_code == ErrorCode.cluster_authorization_failed
            inner = create_v7.CreateTopicsRequest(
                topics=(
                    create_v7.CreatableTopic(
                        name="from-alice",
                        num_partitions=1,
                        replication_factor=1,
                        assignments=(),
                        configs=(),
                    ),
                ),
                timeout=create_v7.CreateTopicsRequest.__dataclass_fields__["timeout"].default,
                validate_only=False,
            )
            envelope: Any = await conn.request(
                envelope_v0.EnvelopeRequest(
                    request_data=encode_request(7, "broker", inner)[4:],
                    request_principal=encode_principal(KafkaPrincipal("User", "admin")),
                    client_host_address=bytes([127, 0, 0, 1]),
                ),
                timeout_ms=10_000,
            )
            assert envelope.error_code == ErrorCode.cluster_authorization_failed
        finally:
            conn.close()
            await conn.wait_closed()

    asyncio.run(main())


def test_delegation_tokens_with_kafka_delegation_tokens(secure: Secure) -> None:
    """A token created through a broker authenticates a client (the brokers check it with
    SCRAM over the HMAC) until it is expired."""
    dist = secure.cluster.dist
    assert dist is not None
    props = secure.setup.client_properties(
        secure.setup.base / "admin.properties", "admin", "admin-secret"
    )
    base = ["--bootstrap-server", secure.cluster.bootstrap, "--command-config", str(props)]
    out = dist.run("delegation-tokens", *base, "--create", "--max-life-time-period", "-1").stdout
    # TOKENID HMAC OWNER RENEWERS ISSUEDATE EXPIRYDATE MAXDATE
    row = next(line.split() for line in out.splitlines() if "User:admin" in line)
    token_id, token_hmac = row[0], row[1]
    token_props = secure.setup.token_properties(
        secure.setup.base / "token.properties", token_id, token_hmac
    )

    def listed() -> None:  # once the brokers have the token's record
        result = dist.run(
            "topics",
            "--bootstrap-server",
            secure.cluster.bootstrap,
            "--command-config",
            str(token_props),
            "--list",
            timeout_s=60,
            check=False,
        )
        assert result.returncode == 0, result.stdout + result.stderr

    eventually(listed)
    owned = ("--describe", "--owner-principal", "User:admin")
    described = dist.run("delegation-tokens", *base, *owned).stdout
    assert token_id in described
    dist.run(
        "delegation-tokens", *base, "--expire", "--hmac", token_hmac, "--expiry-time-period", "-1"
    )

    def gone() -> None:
        assert token_id not in dist.run("delegation-tokens", *base, *owned).stdout

    eventually(gone)
    refused = dist.run(
        "topics",
        "--bootstrap-server",
        secure.cluster.bootstrap,
        "--command-config",
        str(token_props),
        "--list",
        timeout_s=120,
        check=False,
    )
    assert refused.returncode != 0
    assert "Authentication failed" in refused.stdout + refused.stderr


def test_brokers_reauthenticate_before_their_sessions_end(secure: Secure) -> None:
    """KIP-368 with real Kafka brokers: ``connections.max.reauth.ms`` on pykraft's
    controller listener gives each session 8 s; the brokers re-authenticate on their open
    connections (Kafka's client side), pykraft counts it, and no connection had to be closed
    for an expired session. pykraft's controllers, dialling each other, renew theirs too."""

    def totals() -> dict[str, float]:
        out: dict[str, float] = {}
        for controller in secure.cluster.controllers:
            for key, value in controller.scrape().items():
                if key.startswith("kafka_server_socket_server_metrics_"):
                    name = key[len("kafka_server_socket_server_metrics_") :]
                    out[name] = out.get(name, 0.0) + value
        return out

    deadline = time.monotonic() + 3 * REAUTH_MS / 1000
    while totals()["successful_reauthentication_total"] < 1:
        assert time.monotonic() < deadline, totals()
        time.sleep(0.5)
    seen = totals()
    assert seen["failed_reauthentication_total"] == 0
    assert seen["expired_connections_killed_count"] == 0
    admin = eventually(secure.admin)
    try:
        assert len(admin.describe_cluster()["brokers"]) == 2
    finally:
        admin.close()


def _served_subject(address: tuple[str, int], ca: Path) -> str:
    """The CN of the certificate a new TLS connection to ``address`` is shown."""
    context = ssl.create_default_context(cafile=str(ca))
    raw = socket.create_connection(address, timeout=10)
    with context.wrap_socket(raw, server_hostname=address[0]) as tls:
        cert = tls.getpeercert()
    assert cert is not None
    return next(value for rdn in cert["subject"] for key, value in rdn if key == "commonName")


def _serves(address: tuple[str, int], ca: Path, name: str) -> None:
    assert _served_subject(address, ca) == name


def _api_versions_answered(tls: ssl.SSLSocket) -> bool:
    """An ApiVersions v0 (allowed before SASL) on an open connection is answered."""
    body = struct.pack(">hhih", 18, 0, 7, -1)  # ApiVersions v0, correlation 7, no client id
    tls.sendall(struct.pack(">i", len(body)) + body)
    size = struct.unpack(">i", tls.recv(4))[0]
    answer = b""
    while len(answer) < size:
        answer += tls.recv(size - len(answer))
    return struct.unpack(">i", answer[:4])[0] == 7


def test_a_controller_certificate_rotated_with_kafka_configs(secure: Secure) -> None:
    """Issue 47 item 5: a controller's key store changed with Kafka's kafka-configs on the
    controller's own node (``--bootstrap-controller ... --entity-type brokers --entity-name
    <id>``), no restart: new TLS connections see the new certificate, an open one goes on,
    the other controllers keep theirs; a key store that does not load is refused by the node
    (it keeps the one it has, and counts it); deleting the config goes back to the file's."""
    setup, cluster = secure.setup, secure.cluster
    dist = cluster.dist
    assert dist is not None
    target, other = cluster.controllers[0], cluster.controllers[1]
    address = ("127.0.0.1", target.port)
    ca = setup.ca.ca_pem
    assert _served_subject(address, ca) == "controller"
    rotated = setup.ca.issue("controller-rotated")
    props = setup.controller_client_properties(
        setup.base / "controller-admin.properties", "admin", "admin-secret"
    )
    configs = ("configs", "--bootstrap-controller", cluster.bootstrap_controllers)
    configs += ("--command-config", str(props), "--entity-type", "brokers")
    configs += ("--entity-name", str(target.node_id), "--alter")
    key = "listener.name.controller.ssl.keystore.location"
    context = ssl.create_default_context(cafile=str(ca))
    with context.wrap_socket(
        socket.create_connection(address, 10), server_hostname="127.0.0.1"
    ) as held:
        dist.run(*configs, "--add-config", f"{key}={rotated.pem}")
        eventually(lambda: _serves(address, ca, "controller-rotated"))
        assert _api_versions_answered(held)  # the connection made before goes on
    assert _served_subject(("127.0.0.1", other.port), ca) == "controller"
    reloads = "pykraft_tls_reloads_total"
    assert target.scrape()[reloads] == 1 and other.scrape()[reloads] == 0

    dist.run(*configs, "--add-config", f"{key}={setup.base / 'missing.pem'}")
    failures = "pykraft_tls_reload_failures_total"

    def refused() -> None:
        assert target.scrape()[failures] == 1

    eventually(refused)
    assert _served_subject(address, ca) == "controller-rotated"  # kept what it had
    line = next(ln for ln in target.text().splitlines() if "TLS not reconfigured" in ln)
    assert "ssl.keystore.location" in line and "admin-secret" not in target.text()

    dist.run(*configs, "--delete-config", key)
    eventually(lambda: _serves(address, ca, "controller"))


def test_kafka_acls_with_bootstrap_controller(secure: Secure) -> None:
    """Kafka 4.3.1's kafka-acls straight to pykraft's controllers (``--bootstrap-controller``,
    SASL_SSL with PLAIN as the admin): CreateAcls, DescribeAcls and DeleteAcls served by the
    controller itself; the brokers' authorizer sees the ACL the controller wrote."""
    props = secure.setup.controller_client_properties(
        secure.setup.base / "controller-admin.properties", "admin", "admin-secret"
    )
    dist = secure.cluster.dist
    assert dist is not None
    common = ("--bootstrap-controller", secure.cluster.bootstrap_controllers)
    common += ("--command-config", str(props))
    topic = ("--topic", "ctl-acl")
    dist.run(
        "acls", *common, "--add", "--allow-principal", "User:dave", "--operation", "Read", *topic
    )
    listed = dist.run("acls", *common, "--list", *topic).stdout
    assert "User:dave" in listed and "READ" in listed and "ALLOW" in listed
    admin = eventually(secure.admin)
    try:
        pattern = ResourcePatternFilter(ResourceType.TOPIC, "ctl-acl", ACLResourcePatternType.ANY)
        seen = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY, pattern)
        acls = eventually(lambda: _acls_of(admin, seen, 1))
        assert [a.principal for a in acls] == ["User:dave"]
        dist.run("acls", *common, "--remove", "--force", *topic)
        assert eventually(lambda: _acls_of(admin, seen, 0)) == []
    finally:
        admin.close()


def _acls_of(admin: KafkaAdminClient, acl_filter: ACLFilter, count: int) -> list[Any]:
    acls, error = admin.describe_acls(acl_filter)
    assert error.errno == 0 and len(acls) == count, (error, acls)
    return list(acls)


def test_group_and_client_metrics_configs_through_the_brokers(secure: Secure) -> None:
    """Issue 28 part 4: Kafka 4.3.1's kafka-configs --entity-type groups and
    kafka-client-metrics through the brokers, stored and validated by pykraft's controller."""
    dist = secure.cluster.dist
    assert dist is not None
    props = secure.setup.client_properties(
        secure.setup.base / "admin.properties", "admin", "admin-secret"
    )
    base = ("--bootstrap-server", secure.cluster.bootstrap, "--command-config", str(props))
    group = ("--entity-type", "groups", "--entity-name", "orders-app")
    dist.run(
        "configs", *base, "--alter", *group, "--add-config", "consumer.session.timeout.ms=50000"
    )

    def described() -> str:
        out = dist.run("configs", *base, "--describe", *group).stdout
        assert "consumer.session.timeout.ms=50000" in out, out
        return out

    eventually(described)
    low = dist.run(
        "configs",
        *base,
        "--alter",
        *group,
        "--add-config",
        "consumer.session.timeout.ms=1000",
        check=False,
    )
    assert low.returncode != 0
    # Kafka 4.4.0's GroupConfig.validate text, with the controller's own group.* bounds
    assert "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive." in (
        low.stdout + low.stderr
    )
    metrics = ("--name", "producers")
    dist.run(
        "client-metrics",
        *base,
        "--alter",
        *metrics,
        "--metrics",
        "org.apache.kafka.producer.",
        "--interval",
        "60000",
    )

    def subscription() -> str:
        out = dist.run("client-metrics", *base, "--describe", *metrics).stdout
        assert "60000" in out and "org.apache.kafka.producer." in out, out
        return out

    eventually(subscription)
    bad = dist.run("client-metrics", *base, "--alter", *metrics, "--interval", "50", check=False)
    assert bad.returncode != 0 and "between 100 and 3600000" in bad.stdout + bad.stderr
