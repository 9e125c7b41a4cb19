"""A secure mixed quorum (issue 27) at Kafka 4.4.0's newest level (issue 28): pykraft
controllers and an Apache Kafka 4.4.0 controller in one quorum at metadata.version 4.4-IV2
over SASL_SSL (PLAIN between controllers, OAUTHBEARER from the broker), each side's
StandardAuthorizer on, a Kafka 4.4.0 broker over SASL_SSL with SCRAM users bootstrapped on
both sides' format (each tool's ``--release-version 4.4``: pykraft's bootstrap.checkpoint,
Kafka's 0-0 checkpoint, KIP-1170).

The two implementations authenticate each other (Vote, Fetch, BeginQuorumEpoch with TLS and
SASL in both directions), and an ACL made under one leader is enforced the same way under a
leader of the other kind: the ACL records mean the same to both."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from kafka import KafkaAdminClient
from kafka.admin import (
    ACL,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    NewTopic,
    ResourcePattern,
    ResourceType,
)
from kafka.errors import KafkaError as ClientError

from pykraft.admin import AdminClient, AdminError
from pykraft.interop.cluster import LocalCluster, Server
from pykraft.interop.kafka import KafkaDist
from pykraft.interop.secure import BROKER_LISTENER, SecureSetup
from pykraft.net.security import ClientSecurity
from pykraft.protocol import ErrorCode

from .test_security import ALICE, Secure, codes, eventually

KINDS = ("pykraft", "kafka-controller")
T = TypeVar("T")


def settle(check: Callable[[], T], timeout_s: float = 60) -> T:
    """``check()`` once it stops failing: leadership moves, clients reconnect."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return check()
        except (AssertionError, ClientError, AdminError, OSError, StopIteration):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


@pytest.fixture(scope="module")
def kafka44() -> KafkaDist:
    return KafkaDist.get("4.4")


@pytest.fixture(scope="module")
def mixed(kafka44: KafkaDist, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secure]:
    base: Path = tmp_path_factory.mktemp("secure-mixed")
    # The broker logs in to the controllers with OAUTHBEARER (Kafka's unsecured tokens):
    # both implementations validate it; the controllers use PLAIN between themselves.
    setup = SecureSetup(base, broker_controller_mechanism="OAUTHBEARER")
    setup.passwords["alice"] = ALICE[1]
    cluster = LocalCluster(
        kafka44,
        base,
        controllers=3,
        controller_kind=["pykraft", "kafka", "pykraft"],
        brokers=1,
        controller_config=setup.controller_config(),
        broker_config=setup.broker_config(),
        broker_listener=BROKER_LISTENER,
        format_args=setup.format_args({ALICE[0]: ALICE[1]}),
        release_version="4.4",
    )
    try:
        cluster.start()
        yield Secure(setup, cluster)
    finally:
        cluster.kill()


def _alice_creates(mixed: Secure, suffix: str) -> dict[str, int]:
    alice: KafkaAdminClient = eventually(lambda: mixed.admin(*ALICE))
    try:
        topics = [NewTopic(f"mixed-{suffix}", 1, 1), NewTopic(f"other-{suffix}", 1, 1)]

        def created() -> dict[str, int]:
            result = codes(alice.create_topics(topics, raise_errors=False))
            assert result[topics[0].name] == 0, result
            return result

        return dict(eventually(created, 60))
    finally:
        alice.close()


def test_acls_hold_under_a_leader_of_either_implementation(mixed: Secure) -> None:
    cluster = mixed.cluster
    security = mixed.direct_client("admin", "admin-secret")
    admin: KafkaAdminClient = eventually(mixed.admin)
    try:
        pattern = ResourcePattern(ResourceType.TOPIC, "mixed-", ACLResourcePatternType.PREFIXED)
        allow = ACL("User:alice", "*", ACLOperation.CREATE, ACLPermissionType.ALLOW, pattern)
        assert admin.create_acls([allow])["failed"] == []
    finally:
        admin.close()

    seen: set[str] = set()
    for _ in range(8):
        leader = settle(lambda: cluster.leader(security))
        if leader.kind not in seen:
            seen.add(leader.kind)
            result = _alice_creates(mixed, leader.kind)
            assert result == {
                f"mixed-{leader.kind}": 0,
                f"other-{leader.kind}": ErrorCode.topic_authorization_failed,
            }
        if seen == set(KINDS):
            break
        # Hand leadership on: kill -9 the leader, wait for another, bring it back.
        leader.kill()

        def moved(old: Server = leader) -> Server:
            now = cluster.leader(security)
            assert now.node_id != old.node_id
            return now

        settle(moved)
        leader.start()
    assert seen == set(KINDS), seen
    # Both implementations ran the cluster at Kafka 4.4.0's newest level.
    finalized = settle(lambda: _finalized(cluster, security))
    assert finalized["metadata.version"] == 33, finalized
    assert finalized["share.version"] == 2 and finalized["eligible.leader.replicas.version"] == 1
    # Every voter, of either kind, caught up with the leader over SASL_SSL.
    deadline = time.monotonic() + 60
    while True:
        lags = _lags(cluster, security)
        if lags and max(lags.values()) == 0 and len(lags) == 3:
            break
        assert time.monotonic() < deadline, lags
        time.sleep(0.5)


def _finalized(cluster: LocalCluster, security: ClientSecurity) -> dict[str, int]:
    async def go() -> dict[str, int]:
        async with AdminClient(
            cluster.bootstrap_controllers,
            bootstrap_controllers=True,
            timeout_ms=10_000,
            request_timeout_ms=2_000,
            security=security,
        ) as admin:
            return {f.name: f.finalized for f in await admin.describe_features() if f.finalized}

    return asyncio.run(go())


def _lags(cluster: LocalCluster, security: ClientSecurity) -> dict[int, int]:
    async def go() -> dict[int, int]:
        async with AdminClient(
            cluster.bootstrap_controllers,
            timeout_ms=10_000,
            request_timeout_ms=2_000,
            security=security,
        ) as admin:
            quorum = await admin.describe_quorum()
        end = max(v.log_end_offset for v in quorum.voters)
        return {v.replica_id: end - v.log_end_offset for v in quorum.voters}

    try:
        return asyncio.run(go())
    except (AdminError, OSError):
        return {}
