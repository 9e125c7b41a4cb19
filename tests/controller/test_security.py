"""The controller's security rules, deterministic (docs/kafka/SECURITY-CONTRACT.md 4-6):
StandardAuthorizer decisions, the ACL, SCRAM and quota requests with Kafka's validation,
``--add-scram`` parsing, and a walk over every controller API as a principal without ACLs:
refused with Kafka's code, nothing written."""

from __future__ import annotations

import base64
import dataclasses
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from pykraft.controller import acls, authorization
from pykraft.controller.acls import Op, Res
from pykraft.controller.authorization import Caller
from pykraft.controller.errors import ApiError
from pykraft.metadata import records as r
from pykraft.metadata.scram import scram_keys
from pykraft.net.apis import NODE_APIS
from pykraft.protocol import ApiKey, ErrorCode
from pykraft.protocol.controller_apis import CONTROLLER_API_VERSIONS
from pykraft.storage.properties import ConfigError
from pykraft.storage.scram import parse_add_scram

from .harness import Harness
from .test_fuzz import requests

ADMIN = Caller("User:admin", "10.0.0.1")
ALICE = Caller("User:alice", "10.0.0.2")


def secured(**config: Any) -> Harness:
    h = Harness(authorizer=True, super_users=("User:admin",), **config)
    for b in (0, 1, 2):
        h.live_broker(b)
    return h


def call(h: Harness, caller: Caller, api: int, version: int, **fields: Any) -> dict[str, Any]:
    ctx = dataclasses.replace(h.context(), caller=caller)
    from pykraft.protocol.apis import request_schema
    from pykraft.protocol.build import make

    request = make(request_schema(api, version), fields)
    result = h.controller.handle(api, version, request, ctx)
    h.write(result.records)
    return result.response


def create_topic(
    h: Harness, caller: Caller, name: str, partitions: int, version: int = 7
) -> dict[str, Any]:
    """CreateTopics of one topic of RF 1 by ``caller``: the response."""
    topic = {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": 1,
        "assignments": [],
        "configs": [],
    }
    return call(
        h, caller, ApiKey.CREATE_TOPICS, version, timeout=1000, validate_only=False, topics=[topic]
    )


def acl(**kw: Any) -> dict[str, Any]:
    base = {
        "resource_type": Res.TOPIC,
        "resource_name": "team-",
        "resource_pattern_type": 4,
        "principal": "User:alice",
        "host": "*",
        "operation": Op.CREATE,
        "permission_type": 3,
    }
    return {**base, **kw}


def allowed(h: Harness, caller: Caller, op: int, res: int, name: str) -> bool:
    return h.controller.allowed(caller, op, res, name)


def test_standard_authorizer_semantics() -> None:
    h = secured()
    assert allowed(h, ADMIN, Op.ALTER, Res.CLUSTER, "kafka-cluster")  # super user
    assert not allowed(h, ALICE, Op.CREATE, Res.TOPIC, "team-a")  # no ACL, default deny
    out = call(
        h,
        ADMIN,
        ApiKey.CREATE_ACLS,
        3,
        creations=[
            acl(),
            acl(resource_name="team-b", resource_pattern_type=3, permission_type=2),
            acl(resource_name="*", resource_pattern_type=3, operation=Op.READ, host="10.0.0.2"),
        ],
    )
    assert [x["error_code"] for x in out["results"]] == [0, 0, 0]
    assert allowed(h, ALICE, Op.CREATE, Res.TOPIC, "team-a")  # prefixed
    assert not allowed(h, ALICE, Op.CREATE, Res.TOPIC, "team-b")  # literal DENY wins
    assert not allowed(h, ALICE, Op.CREATE, Res.TOPIC, "other")
    assert allowed(h, ALICE, Op.DESCRIBE, Res.TOPIC, "anything")  # READ implies DESCRIBE
    assert not allowed(h, dataclasses.replace(ALICE, host="10.9.9.9"), Op.READ, Res.TOPIC, "x")
    assert not allowed(h, ALICE, Op.WRITE, Res.TOPIC, "anything")  # implies only DESCRIBE
    # allow.everyone.if.no.acl.found: only where no ACL names the resource at all.
    open_ = secured(allow_everyone_if_no_acl_found=True)
    assert allowed(open_, ALICE, Op.CREATE, Res.GROUP, "g")
    call(open_, ADMIN, ApiKey.CREATE_ACLS, 3, creations=[acl(resource_type=Res.GROUP)])
    assert not allowed(
        open_, dataclasses.replace(ALICE, principal="User:bob"), Op.READ, Res.GROUP, "team-x"
    )


def test_create_acls_validation_and_duplicates_and_delete_filters() -> None:
    h = secured()
    out = call(
        h,
        ADMIN,
        ApiKey.CREATE_ACLS,
        3,
        creations=[
            acl(resource_type=Res.CLUSTER, resource_name="foo"),
            acl(resource_name=""),
            acl(operation=Op.ANY),
            acl(principal="alice"),
            acl(),
            acl(),
        ],
    )
    assert [(x["error_code"], x["error_message"]) for x in out["results"]] == [
        (42, "The only valid name for the CLUSTER resource is kafka-cluster"),
        (42, "Invalid empty resource name"),
        (42, f"Invalid operation {Op.ANY}"),
        (42, "Could not parse principal from `alice` (no colon is present)."),
        (0, None),
        (0, None),
    ]
    assert len(list(acls.bindings(h.image))) == 1  # the duplicate written once
    match = {
        "resource_type_filter": Res.TOPIC,
        "resource_name_filter": "team-a",
        "pattern_type_filter": 2,  # MATCH: the prefixed binding covers team-a
        "principal_filter": None,
        "host_filter": None,
        "operation": 1,
        "permission_type": 1,
    }
    # DescribeAcls (served by the controller for --bootstrap-controller) with the same filter.
    described = call(h, ADMIN, ApiKey.DESCRIBE_ACLS, 3, **match)
    assert described["error_code"] == 0
    assert [r["resource_name"] for r in described["resources"]] == ["team-"]
    assert described["resources"][0]["acls"][0]["principal"] == "User:alice"
    nothing = call(h, ADMIN, ApiKey.DESCRIBE_ACLS, 3, **{**match, "principal_filter": "User:bob"})
    assert nothing["resources"] == []
    out = call(h, ADMIN, ApiKey.DELETE_ACLS, 3, filters=[match])
    assert len(out["filter_results"][0]["matching_acls"]) == 1
    assert list(acls.bindings(h.image)) == []
    assert isinstance(h.written[-1][0], r.RemoveAccessControlEntryRecord)
    # Without an authorizer the ACL APIs are SECURITY_DISABLED.
    plain = Harness()
    with pytest.raises(ApiError) as e:
        call(plain, ADMIN, ApiKey.CREATE_ACLS, 3, creations=[acl()])
    assert e.value.code == ErrorCode.security_disabled


def test_alter_user_scram_credentials_validation() -> None:
    h = secured()
    up = {"salt": b"s" * 16, "salted_password": b"p" * 64}
    out = call(
        h,
        ADMIN,
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
        0,
        deletions=[{"name": "ghost", "mechanism": 2}, {"name": "twice", "mechanism": 1}],
        upsertions=[
            {"name": "few", "mechanism": 2, "iterations": 1000, **up},
            {"name": "many", "mechanism": 2, "iterations": 20000, **up},
            {"name": "", "mechanism": 2, "iterations": 4096, **up},
            {"name": "mech", "mechanism": 0, "iterations": 4096, **up},
            {"name": "twice", "mechanism": 2, "iterations": 4096, **up},
            {"name": "ok", "mechanism": 2, "iterations": 8192, **up},
        ],
    )
    got = {x["user"]: (x["error_code"], x["error_message"]) for x in out["results"]}
    assert got == {
        "ghost": (91, "Attempt to delete a user credential that does not exist"),
        "twice": (92, "A user credential cannot be altered twice in the same request"),
        "few": (93, "Too few iterations"),
        "many": (93, "Too many iterations"),
        "": (93, "Username must not be empty"),
        "mech": (33, "Unknown SCRAM mechanism"),
        "ok": (0, None),
    }
    rec = h.image.scram.by_user[("ok", 2)]
    assert (rec.stored_key, rec.server_key) == scram_keys(2, b"p" * 64)


def test_alter_client_quotas_validation_and_no_op_writes() -> None:
    h = secured()

    def entry(entity: list[tuple[str, str | None]], *ops: tuple[str, float, bool]) -> Any:
        return {
            "entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
            "ops": [{"key": k, "value": v, "remove": rm} for k, v, rm in ops],
        }

    out = call(
        h,
        ADMIN,
        ApiKey.ALTER_CLIENT_QUOTAS,
        1,
        entries=[
            entry([("user", "alice")], ("foo", 1, False)),
            entry([("user", "bob")], ("producer_byte_rate", 1.5, False)),
            entry([("user", "carol"), ("ip", "1.2.3.4")], ("producer_byte_rate", 1, False)),
            entry([("ip", "not-an-ip")], ("connection_creation_rate", 1, False)),
            entry([("user", "dan")], ("consumer_byte_rate", 0, False)),
            entry([("user", None)], ("producer_byte_rate", 1024, False)),
        ],
        validate_only=False,
    )
    messages = [x["error_message"] for x in out["entries"]]
    assert messages == [
        "Invalid configuration key foo",
        "producer_byte_rate cannot be a fractional value.",
        "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId",
        "not-an-ip is not a valid IP or resolvable host.",
        "Quota consumer_byte_rate must be greater than 0",
        None,
    ]
    written = len(h.written)
    call(  # the same value again, and a removal of a key never set: nothing to write
        h,
        ADMIN,
        ApiKey.ALTER_CLIENT_QUOTAS,
        1,
        entries=[
            entry([("user", None)], ("producer_byte_rate", 1024, False)),
            entry([("user", "x")], ("consumer_byte_rate", 0, True)),
        ],
        validate_only=False,
    )
    assert len(h.written) == written


def test_add_scram_is_parsed_as_kafka_storage_and_authenticates() -> None:
    rec = parse_add_scram('SCRAM-SHA-256=[name=alice,password="alice-secret",iterations=8192]')
    assert (rec.name, rec.mechanism, rec.iterations) == ("alice", 1, 8192)
    salt = base64.b64encode(b"0123456789").decode()
    salted = base64.b64encode(b"x" * 32).decode()
    rec2 = parse_add_scram(f"SCRAM-SHA-512=[name=bob,salt={salt},saltedpassword={salted}]")
    assert rec2.salt == b"0123456789" and rec2.stored_key == scram_keys(2, b"x" * 32)[0]
    for bad, text in [
        ("SCRAM-SHA-1=[name=a,password=b]", "is not supported"),
        ("SCRAM-SHA-256=name=a,password=b", "start with \\[ and end with \\]"),
        ("SCRAM-SHA-256=[password=b]", "You must supply 'name'"),
        ("SCRAM-SHA-256=[name=a,password=b,iterations=100]", "must be between 4096 and 16384"),
        ("SCRAM-SHA-256=[name=a,password=b,color=red]", "Unknown SCRAM configurations: color"),
    ]:
        with pytest.raises(ConfigError, match=text):
            parse_add_scram(bad)
    # The record's keys authenticate the password (and only it) with a SCRAM client.
    from scramp import ScramClient, ScramException, ScramMechanism

    def exchange(password: str) -> None:
        client = ScramClient(["SCRAM-SHA-256"], "alice", password)
        server = ScramMechanism("SCRAM-SHA-256").make_server(
            lambda _user: (rec.salt, rec.stored_key, rec.server_key, rec.iterations)
        )
        server.set_client_first(client.get_client_first())
        client.set_server_first(server.get_server_first())
        server.set_client_final(client.get_client_final())
        client.set_server_final(server.get_server_final())

    exchange("alice-secret")
    with pytest.raises(ScramException):
        exchange("wrong")


def test_every_api_has_an_authorization_rule() -> None:
    """Each API a controller serves is either checked on the cluster, checked per item, or
    one Kafka leaves open (ApiVersions, SASL, Metadata)."""
    open_apis = {
        ApiKey.API_VERSIONS,
        ApiKey.SASL_HANDSHAKE,
        ApiKey.SASL_AUTHENTICATE,
        ApiKey.METADATA,
    }
    own_rules = {
        ApiKey.CREATE_DELEGATION_TOKEN,
        ApiKey.RENEW_DELEGATION_TOKEN,
        ApiKey.EXPIRE_DELEGATION_TOKEN,
    }  # tokens.py: owner, renewers, connection
    per_item = {
        ApiKey.CREATE_TOPICS,
        ApiKey.DELETE_TOPICS,
        ApiKey.CREATE_PARTITIONS,
        ApiKey.ALTER_CONFIGS,
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        ApiKey.DESCRIBE_CONFIGS,
    }
    served = {int(k) for k in CONTROLLER_API_VERSIONS} | {int(a.key) for a in NODE_APIS}
    served.add(int(ApiKey.ENVELOPE))
    for api in served:
        assert (
            api in open_apis
            or api in own_rules
            or api in per_item
            or authorization.cluster_operation(api) is not None
        ), ApiKey(api).name


WALKER = secured()


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(requests())
def test_a_principal_without_acls_is_refused_on_every_api_and_nothing_is_written(
    call_: tuple[int, int, Any],
) -> None:
    key, version, request = call_
    ctx = dataclasses.replace(WALKER.context(), caller=ALICE)
    try:
        result = WALKER.controller.handle(key, version, request, ctx)
    except ApiError as e:
        if authorization.cluster_operation(key) is not None:
            assert e.code == ErrorCode.cluster_authorization_failed
        return
    assert result.records == []
    assert authorization.cluster_operation(key) is None


def test_delegation_tokens_create_renew_expire_and_sweep() -> None:
    from pykraft.controller.tokens import token_hmac

    secret = "s3cret"
    h = secured(
        delegation_token_secret_key=secret,
        delegation_token_expiry_time_ms=10_000,
        delegation_token_max_lifetime_ms=60_000,
        delegation_token_expiry_check_interval_ms=1_000,
    )
    alice = dataclasses.replace(ALICE, protocol="SASL_SSL")
    bob = Caller("User:bob", "10.0.0.3", protocol="SASL_SSL")
    created = call(
        h,
        alice,
        ApiKey.CREATE_DELEGATION_TOKEN,
        3,
        owner_principal_type="User",
        owner_principal_name="",
        renewers=[{"principal_type": "User", "principal_name": "carol"}],
        max_lifetime=-1,
    )
    assert created["error_code"] == 0 and created["principal_name"] == "alice"
    token_id = created["token_id"]
    assert created["hmac"] == token_hmac(secret, token_id)
    rec = h.image.tokens.by_id[token_id]
    assert rec.owner == "User:alice" and rec.renewers == ("User:carol",)
    assert rec.expiration_timestamp == h.now + 10_000 and rec.max_timestamp == h.now + 60_000
    hmac_ = created["hmac"]
    # bob is neither owner nor renewer; carol may renew.
    assert (
        call(h, bob, ApiKey.RENEW_DELEGATION_TOKEN, 2, hmac=hmac_, renew_period=5_000)["error_code"]
        == ErrorCode.delegation_token_owner_mismatch
    )
    carol = Caller("User:carol", "10.0.0.4", protocol="SASL_SSL")
    h.now += 1_000
    renewed = call(h, carol, ApiKey.RENEW_DELEGATION_TOKEN, 2, hmac=hmac_, renew_period=5_000)
    assert renewed["error_code"] == 0
    assert h.image.tokens.by_id[token_id].expiration_timestamp == h.now + 5_000
    assert (
        call(h, alice, ApiKey.RENEW_DELEGATION_TOKEN, 2, hmac=b"nope", renew_period=-1)[
            "error_code"
        ]
        == ErrorCode.delegation_token_not_found
    )
    # Past its expiry: refused, then swept by the active controller's tick.
    h.now += 6_000
    assert (
        call(h, alice, ApiKey.RENEW_DELEGATION_TOKEN, 2, hmac=hmac_, renew_period=-1)["error_code"]
        == ErrorCode.delegation_token_expired
    )
    h.write(h.controller.tick(h.context()))
    assert token_id not in h.image.tokens.by_id
    # Expire with a negative period removes at once.
    second = call(
        h,
        alice,
        ApiKey.CREATE_DELEGATION_TOKEN,
        3,
        owner_principal_type="User",
        owner_principal_name="",
        renewers=[],
        max_lifetime=-1,
    )
    expired = call(
        h, alice, ApiKey.EXPIRE_DELEGATION_TOKEN, 2, hmac=second["hmac"], expiry_time_period=-1
    )
    assert expired["error_code"] == 0
    assert second["token_id"] not in h.image.tokens.by_id
    # The connection rules and the switch.
    plaintext = dataclasses.replace(alice, protocol="PLAINTEXT")
    assert call(
        h,
        plaintext,
        ApiKey.CREATE_DELEGATION_TOKEN,
        3,
        owner_principal_type="User",
        owner_principal_name="",
        renewers=[],
        max_lifetime=-1,
    )["error_code"] == (ErrorCode.delegation_token_request_not_allowed)
    off = secured()
    assert call(
        off,
        alice,
        ApiKey.CREATE_DELEGATION_TOKEN,
        3,
        owner_principal_type="User",
        owner_principal_name="",
        renewers=[],
        max_lifetime=-1,
    )["error_code"] == (ErrorCode.delegation_token_auth_disabled)
    # Owning a token for someone else needs CREATE_TOKENS on that user.
    assert call(
        h,
        alice,
        ApiKey.CREATE_DELEGATION_TOKEN,
        3,
        owner_principal_type="User",
        owner_principal_name="bob",
        renewers=[],
        max_lifetime=-1,
    )["error_code"] == (ErrorCode.delegation_token_authorization_failed)


def test_controller_mutation_rate_throttles_topic_creation() -> None:
    """KIP-599: rate 1/s gives a burst of 11 partitions; a 12-partition topic is accepted
    (it drives the bucket below zero), the next one is refused with
    THROTTLING_QUOTA_EXCEEDED and a throttle time; time refills the bucket."""
    h = secured(default_replication_factor=1)
    call(
        h,
        ADMIN,
        ApiKey.ALTER_CLIENT_QUOTAS,
        1,
        validate_only=False,
        entries=[
            {
                "entity": [{"entity_type": "user", "entity_name": "alice"}],
                "ops": [{"key": "controller_mutation_rate", "value": 1.0, "remove": False}],
            }
        ],
    )
    call(
        h, ADMIN, ApiKey.CREATE_ACLS, 3, creations=[acl(resource_name="*", resource_pattern_type=3)]
    )

    def create(name: str, partitions: int, version: int = 7) -> dict[str, Any]:
        return create_topic(h, ALICE, name, partitions, version)

    first = create("big", 12)
    assert first["topics"][0]["error_code"] == 0
    second = create("small", 1)
    assert second["topics"][0]["error_code"] == ErrorCode.throttling_quota_exceeded
    assert second["topics"][0]["error_message"] == "The throttling quota has been exceeded."
    assert 500 <= _ms(second["throttle_time"]) <= 1000
    assert "small" not in h.image.topics_by_name
    assert create("old-client", 1, version=5)["topics"][0]["error_code"] == 0  # not strict
    h.now += 3_000
    assert create("later", 1)["topics"][0]["error_code"] == 0
    # admin has no quota: never throttled.
    out = call(
        h,
        ADMIN,
        ApiKey.CREATE_TOPICS,
        7,
        timeout=1000,
        validate_only=False,
        topics=[
            {
                "name": "admin-big",
                "num_partitions": 30,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
        ],
    )
    assert out["topics"][0]["error_code"] == 0


def test_a_removed_user_quota_lets_the_default_user_quota_apply() -> None:
    """Issue 46: removing alice's own controller_mutation_rate deletes it (Kafka's
    ClientQuotaControlManager), so the default user's 1/s applies to her again: 12 partitions
    then 1 more is refused. The removal used to stay in the image as a 0.0 tombstone that hid
    the default, and she created 12, 1 and 50 partitions unthrottled."""
    h = secured(default_replication_factor=1)

    def quota(user: str | None, value: float, remove: bool) -> None:
        call(
            h,
            ADMIN,
            ApiKey.ALTER_CLIENT_QUOTAS,
            1,
            validate_only=False,
            entries=[
                {
                    "entity": [{"entity_type": "user", "entity_name": user}],
                    "ops": [{"key": "controller_mutation_rate", "value": value, "remove": remove}],
                }
            ],
        )

    quota(None, 1.0, False)
    quota("alice", 1000.0, False)
    quota("alice", 0.0, True)
    assert h.image.client_quotas.value((("user", "alice"),), "controller_mutation_rate") is None
    assert len(h.image.client_quotas) == 1  # no tombstone
    call(
        h, ADMIN, ApiKey.CREATE_ACLS, 3, creations=[acl(resource_name="*", resource_pattern_type=3)]
    )

    def create(name: str, partitions: int) -> int:
        return int(create_topic(h, ALICE, name, partitions)["topics"][0]["error_code"])

    assert create("first", 12) == ErrorCode.none
    assert create("second", 1) == ErrorCode.throttling_quota_exceeded


def _ms(value: Any) -> int:
    return int(value.total_seconds() * 1000) if hasattr(value, "total_seconds") else int(value)


def test_cidr_host_patterns_need_4_4_iv1_and_match_addresses_in_the_network() -> None:
    """Kafka 4.4's CIDR ACL hosts: refused below 4.4-IV1 and when malformed (Kafka's texts);
    from 4.4-IV1 an ACL for ``10.0.0.0/24`` matches 10.0.0.2, not 10.0.1.2."""
    old = secured()
    out = call(old, ADMIN, ApiKey.CREATE_ACLS, 3, creations=[acl(host="10.0.0.0/24")])
    (result,) = out["results"]
    assert result["error_code"] == ErrorCode.invalid_request
    assert "require metadata version 4.4-IV1" in result["error_message"]
    h = secured(bootstrap={"metadata.version": 32})
    out = call(
        h,
        ADMIN,
        ApiKey.CREATE_ACLS,
        3,
        creations=[acl(host="10.0.0.0/24"), acl(host="10.0.0.0/33")],
    )
    ok, bad = out["results"]
    assert ok["error_code"] == 0
    assert bad["error_code"] == ErrorCode.invalid_request
    assert bad["error_message"].startswith("Invalid CIDR notation '10.0.0.0/33'")
    assert allowed(h, ALICE, Op.CREATE, Res.TOPIC, "team-a")  # 10.0.0.2
    assert not allowed(
        h, dataclasses.replace(ALICE, host="10.0.1.2"), Op.CREATE, Res.TOPIC, "team-a"
    )


def test_unregister_controller_at_4_4_iv2() -> None:
    """Kafka 4.4.0's UnregisterController: UNSUPPORTED_VERSION below 4.4-IV2; the active
    controller cannot unregister itself; an unknown id is CONTROLLER_ID_NOT_REGISTERED (137);
    a registered one gets UnregisterControllerRecord and is gone from the image."""
    from pykraft.controller.errors import CONTROLLER_ID_NOT_REGISTERED
    from pykraft.metadata.image import ControllerState

    def unregister(h: Harness, controller_id: int) -> dict[str, Any]:
        return h.call(ApiKey.UNREGISTER_CONTROLLER, 0, controller_id=controller_id)

    old = Harness()
    assert unregister(old, 2)["error_code"] == ErrorCode.unsupported_version
    h = Harness(bootstrap={"metadata.version": 33})
    h.write(
        [
            (
                r.RegisterControllerRecord(
                    controller_id=2,
                    incarnation_id=uuid.UUID(int=2),
                    zk_migration_ready=False,
                    end_points=(),
                    features=(),
                ),
                0,
            )
        ]
    )
    assert isinstance(h.image.controllers[2], ControllerState)
    refused = unregister(h, 1)  # the harness's controller is node 1, the active one
    assert refused["error_code"] == ErrorCode.invalid_request
    assert refused["error_message"] == "Controller cannot unregister itself while it is active."
    unknown = unregister(h, 7)
    assert unknown["error_code"] == CONTROLLER_ID_NOT_REGISTERED
    assert unknown["error_message"] == "Controller ID 7 is not currently registered."
    assert unregister(h, 2)["error_code"] == 0
    assert 2 not in h.image.controllers and 2 not in h.standby.controllers
