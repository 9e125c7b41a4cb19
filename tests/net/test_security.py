"""TLS and SASL on a real listener over loopback (docs/kafka/SECURITY-CONTRACT.md 1-3):
the handshakes Kafka's clients do, the principal each gives, and every failure answered as
Kafka answers it (or closed), counted, with the node's listener unaffected."""

from __future__ import annotations

import asyncio
import base64
import datetime
import hashlib
import hmac
import logging
import re
import socket
import ssl
import struct
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import kio.schema.metadata.v12.request as metadata_v12
import kio.schema.sasl_authenticate.v2.request as sasl_authenticate_v2
import kio.schema.sasl_handshake.v1.request as sasl_handshake_v1
import pytest
from kio.static.protocol import ResponsePayload

from pykraft.interop.certs import LocalCA
from pykraft.net.apis import SERVED_APIS
from pykraft.net.client import Connection
from pykraft.net.errors import SecurityConfigError
from pykraft.net.sasl import ScramCredential
from pykraft.net.sasl_client import SaslAuthenticationError
from pykraft.net.security import (
    ClientSecurity,
    KafkaPrincipal,
    ListenerSecurity,
    PrincipalMapper,
    SaslClientConfig,
    SecurityProtocol,
    Session,
    jaas_options,
    listener_security,
)
from pykraft.net.server import KafkaServer
from pykraft.protocol import ApiKey, DecodedRequest, ErrorCode, encode_request, error_response

TIMEOUT_S = 20
JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_admin="admin-secret" user_alice="a-pw";'
)


def run(coro: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(coro(), TIMEOUT_S))


def scram_credential(password: str, mechanism: str) -> ScramCredential:
    """What a UserScramCredentialRecord holds for ``password`` (RFC 5802 derivation)."""
    digest = "sha512" if mechanism.endswith("512") else "sha256"
    salt, iterations = b"0123456789abcdef", 4096
    salted = hashlib.pbkdf2_hmac(digest, password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", digest).digest()
    stored_key = hashlib.new(digest, client_key).digest()
    server_key = hmac.new(salted, b"Server Key", digest).digest()
    return ScramCredential(salt, stored_key, server_key, iterations)


SCRAM_USERS = {("SCRAM-SHA-512", "bob"): scram_credential("bob-pw", "SCRAM-SHA-512")}


class Seen:
    """A handler answering Metadata with an error and remembering each session it saw."""

    def __init__(self) -> None:
        self.sessions: list[Session] = []

    async def __call__(self, request: DecodedRequest, session: Session) -> ResponsePayload:
        self.sessions.append(session)
        return error_response(request.api_key, request.api_version, ErrorCode.unknown_server_error)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> tuple[LocalCA, Any, Any, LocalCA]:
    base: Path = tmp_path_factory.mktemp("certs")
    ca = LocalCA(base / "ca")
    server = ca.issue("controller")
    client = ca.issue("alice")
    other = LocalCA(base / "other")
    return ca, server, client, other


def security(props: dict[str, str], *, server: bool = True) -> ListenerSecurity:
    return listener_security(
        {"controller.listener.names": "CONTROLLER", **props}, "CONTROLLER", server=server
    )


async def serve(sec: ListenerSecurity, handler: Any) -> KafkaServer:
    server = KafkaServer(
        handler,
        listener_name="CONTROLLER",
        host="127.0.0.1",
        port=0,
        apis=SERVED_APIS,
        security=sec,
        credentials=lambda mech, user: SCRAM_USERS.get((mech, user)),
    )
    await server.start()
    return server


def tls_props(certs: Any, **extra: str) -> dict[str, str]:
    ca, server, _, _ = certs
    return {
        "listener.security.protocol.map": "CONTROLLER:SSL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(server.pem),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(ca.ca_pem),
        **extra,
    }


async def metadata(conn: Connection) -> Any:
    return await conn.request(
        metadata_v12.MetadataRequest(topics=None, include_topic_authorized_operations=False),
        timeout_ms=5000,
    )


def test_tls_handshake_then_requests_and_a_plaintext_client_is_closed(certs: Any) -> None:
    async def main() -> None:
        seen = Seen()
        sec = security(tls_props(certs))
        server = await serve(sec, seen)
        conn = await Connection.open("127.0.0.1", server.port, timeout_ms=5000, security=sec.client)
        assert await metadata(conn) is not None
        assert seen.sessions[-1].security_protocol is SecurityProtocol.SSL
        assert seen.sessions[-1].principal == KafkaPrincipal("User", "ANONYMOUS")
        assert server.stats.successful_authentication_total == 1
        # A PLAINTEXT Kafka client on the TLS port: the handshake fails, nothing is read as
        # a frame (no 369 MB allocation), one count, the connection closed.
        with pytest.raises((ConnectionError, TimeoutError, OSError)):
            await Connection.open("127.0.0.1", server.port, timeout_ms=3000)
        assert server.stats.failed_authentication_total == 1
        # Garbage bytes: the same.
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"\x16\x03\x01garbage" * 100)
        assert await asyncio.wait_for(reader.read(), 5) is not None
        writer.close()
        await asyncio.sleep(0.1)
        assert server.stats.failed_authentication_total == 2
        # The listener still serves.
        assert await metadata(conn) is not None
        conn.close()
        await conn.wait_closed()
        # A client's TLS shutdown: the server answers its close_notify (a blocking unwrap
        # returns only when it has), so closing does not wait out a timeout.
        context = sec.client.ssl_context
        assert context is not None

        def shutdown() -> None:
            raw = socket.create_connection(("127.0.0.1", server.port), timeout=5)
            with raw, context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                tls.unwrap().close()  # TimeoutError if no close_notify comes back

        await asyncio.to_thread(shutdown)
        await server.close()

    run(main)


def test_untrusted_certificate_and_wrong_host_fail_the_handshake(certs: Any) -> None:
    _ca, _, _, other = certs

    async def main() -> None:
        sec = security(tls_props(certs))
        server = await serve(sec, Seen())
        distrust = security(
            tls_props(certs, **{"ssl.truststore.location": str(other.ca_pem)}), server=False
        )
        with pytest.raises(ssl.SSLCertVerificationError):
            await Connection.open(
                "127.0.0.1", server.port, timeout_ms=5000, security=distrust.client
            )
        # The certificate is for 127.0.0.1 and localhost: dialled as another name it fails
        # hostname verification (ssl.endpoint.identification.algorithm=https, the default).
        loop = asyncio.get_running_loop()
        assert sec.client.ssl_context is not None
        with pytest.raises(ssl.SSLCertVerificationError):
            await loop.create_connection(
                asyncio.Protocol,
                "127.0.0.1",
                server.port,
                ssl=sec.client.ssl_context,
                server_hostname="broker.example.com",
            )
        await asyncio.sleep(0.1)
        assert server.stats.failed_authentication_total == 2
        await server.close()
        # An expired certificate (trusted CA, right host): the client refuses the handshake,
        # the server counts a failure, and the listener is unaffected.
        ca = certs[0]
        expired = ca.issue("stale", not_after=datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC))
        stale = security(tls_props(certs, **{"ssl.keystore.location": str(expired.pem)}))
        server = await serve(stale, Seen())
        with pytest.raises(ssl.SSLCertVerificationError, match="expired"):
            await Connection.open("127.0.0.1", server.port, timeout_ms=5000, security=sec.client)
        await asyncio.sleep(0.1)
        assert server.stats.failed_authentication_total == 1
        await server.close()

    run(main)


def test_mutual_tls_principal_from_the_certificate_through_mapping_rules(certs: Any) -> None:
    _ca, _, client, _ = certs

    async def main() -> None:
        seen = Seen()
        rules = "RULE:^CN=([a-z]+),.*$/$1/U,DEFAULT"
        sec = security(
            tls_props(
                certs, **{"ssl.client.auth": "required", "ssl.principal.mapping.rules": rules}
            )
        )
        server = await serve(sec, seen)
        no_keystore = {k: v for k, v in tls_props(certs).items() if "keystore" not in k}
        anonymous = security(no_keystore, server=False)
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
            conn = await Connection.open(
                "127.0.0.1", server.port, timeout_ms=5000, security=anonymous.client
            )
            await metadata(conn)  # TLS 1.3: the refusal of the missing certificate comes here
        mtls = security(
            tls_props(
                certs,
                **{"ssl.keystore.location": str(client.pem)},
            ),
            server=False,
        )
        conn = await Connection.open(
            "127.0.0.1", server.port, timeout_ms=5000, security=mtls.client
        )
        await metadata(conn)
        assert seen.sessions[-1].principal == KafkaPrincipal("User", "ALICE")
        conn.close()
        conn.close()
        conn.abort()  # after a close, even two: asyncio's TLS transport must not be closed twice
        await conn.wait_closed()
        conn.abort()
        await server.close()

    run(main)


def sasl_props(protocol: str = "SASL_PLAINTEXT", **extra: str) -> dict[str, str]:
    return {
        "listener.security.protocol.map": f"CONTROLLER:{protocol}",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
        "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.controller.plain.sasl.jaas.config": JAAS,
        "connection.failed.authentication.delay.ms": "50",
        **extra,
    }


def client(mechanism: str, user: str, password: str) -> ClientSecurity:
    return ClientSecurity(
        SecurityProtocol.SASL_PLAINTEXT, None, SaslClientConfig(mechanism, user, password)
    )


def test_sasl_plain_and_scram_authenticate_and_name_the_principal(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def main() -> None:
        seen = Seen()
        server = await serve(security(sasl_props()), seen)
        for sec, name in (
            (client("PLAIN", "alice", "a-pw"), "alice"),
            (client("SCRAM-SHA-512", "bob", "bob-pw"), "bob"),
        ):
            conn = await Connection.open("127.0.0.1", server.port, timeout_ms=5000, security=sec)
            await metadata(conn)
            assert seen.sessions[-1].principal == KafkaPrincipal("User", name)
            conn.close()
            await conn.wait_closed()
        assert server.stats.successful_authentication_total == 2
        failures = [
            (
                client("PLAIN", "alice", "wrong"),
                "Authentication failed: Invalid username or password",
            ),
            (
                client("SCRAM-SHA-512", "bob", "wrong"),
                "Authentication failed during authentication due to invalid credentials with "
                "SASL mechanism SCRAM-SHA-512",
            ),
            (
                client("SCRAM-SHA-512", "nobody", "x"),
                "invalid credentials with SASL mechanism SCRAM-SHA-512",
            ),
            (client("SCRAM-SHA-256", "bob", "bob-pw"), "UNSUPPORTED_SASL_MECHANISM"),
        ]
        for sec, text in failures:
            with pytest.raises(SaslAuthenticationError, match=text):
                await Connection.open("127.0.0.1", server.port, timeout_ms=5000, security=sec)
        assert server.stats.failed_authentication_total == len(failures)
        await server.close()

    with caplog.at_level(logging.INFO, logger="pykraft.net.server"):
        run(main)
    lines = [r.getMessage() for r in caplog.records if "Failed authentication" in r.getMessage()]
    assert len(lines) == 4
    assert not any("wrong" in line or "bob-pw" in line for line in lines)  # no secret logged


def frame(message: Any, version: int, correlation_id: int = 1) -> bytes:
    return encode_request(correlation_id, "raw", message)


def test_sasl_order_is_enforced_as_kafka_does() -> None:
    async def main() -> None:
        seen = Seen()
        server = await serve(security(sasl_props()), seen)
        # A request before the handshake: closed without an answer, nothing dispatched.
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(
            frame(
                metadata_v12.MetadataRequest(
                    topics=None, include_topic_authorized_operations=False
                ),
                12,
            )
        )
        assert await asyncio.wait_for(reader.read(), 5) == b""
        writer.close()
        # A frame size over sasl.server.max.receive.size before authentication: closed.
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(struct.pack(">i", 369_295_618) + b"\x00" * 16)
        assert await asyncio.wait_for(reader.read(), 5) == b""
        writer.close()
        # ApiVersions first is answered (then a handshake is due).
        conn = await Connection.open("127.0.0.1", server.port, timeout_ms=5000)
        assert ApiKey.SASL_HANDSHAKE in conn.peer_versions
        conn.close()
        await conn.wait_closed()
        assert seen.sessions == []
        await server.close()

    run(main)


def test_sasl_api_on_a_plaintext_listener_is_illegal_state_and_the_connection_stays() -> None:
    async def main() -> None:
        server = await serve(ListenerSecurity("CONTROLLER"), Seen())
        conn = await Connection.open("127.0.0.1", server.port, timeout_ms=5000)
        import kio.schema.sasl_handshake.v1.request as hs

        answer: Any = await conn.request(
            hs.SaslHandshakeRequest(mechanism="PLAIN"), timeout_ms=5000
        )
        assert answer.error_code == ErrorCode.illegal_sasl_state
        assert await metadata(conn) is not None
        conn.close()
        await conn.wait_closed()
        await server.close()

    run(main)


def test_sasl_ssl_with_pkcs12_key_store(certs: Any) -> None:
    ca, server_cert, _, _ = certs

    async def main() -> None:
        seen = Seen()
        props = sasl_props(
            "SASL_SSL",
            **{
                "ssl.keystore.type": "PKCS12",
                "ssl.keystore.location": str(server_cert.p12),
                "ssl.keystore.password": server_cert.password,
                "ssl.truststore.type": "PEM",
                "ssl.truststore.location": str(ca.ca_pem),
            },
        )
        sec = security(props)
        server = await serve(sec, seen)
        conn = await Connection.open("127.0.0.1", server.port, timeout_ms=5000, security=sec.client)
        await metadata(conn)
        assert seen.sessions[-1].principal == KafkaPrincipal("User", "admin")
        assert seen.sessions[-1].security_protocol is SecurityProtocol.SASL_SSL
        conn.close()
        await conn.wait_closed()
        await server.close()

    run(main)


def test_config_errors_name_the_key(certs: Any) -> None:
    _ca, server_cert, _, _ = certs
    bad = [
        ({"listener.security.protocol.map": "CONTROLLER:SSL"}, "ssl.keystore.location"),
        (
            {**tls_props(certs), "ssl.keystore.password": "x"},
            "is not used with PEM key stores",
        ),
        (
            {
                **tls_props(certs),
                "ssl.keystore.type": "PKCS12",
                "ssl.keystore.location": str(server_cert.p12),
                "ssl.keystore.password": "wrong",
            },
            "cannot read the PKCS12 key store",
        ),
        ({**sasl_props(), "sasl.enabled.mechanisms": "GSSAPI"}, "GSSAPI is not supported"),
        (
            {k: v for k, v in sasl_props().items() if "jaas" not in k},
            "plain.sasl.jaas.config",
        ),
        ({"listener.security.protocol.map": "CONTROLLER:TLS"}, "unknown security protocol"),
    ]
    for props, text in bad:
        with pytest.raises(SecurityConfigError, match=text):
            security(props)


def test_principal_mapping_rules_and_jaas() -> None:
    mapper = PrincipalMapper.parse(
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=(.*?),OU=(.*?),O=.*$/$1@$2/L,DEFAULT"
    )
    assert mapper.name("CN=kafka1,OU=ServiceUsers,O=acme") == "kafka1"
    assert mapper.name("CN=Adam,OU=Eng,O=acme") == "adam@eng"
    assert mapper.name("O=acme") == "O=acme"
    strict = PrincipalMapper.parse("RULE:^CN=(.*)$/$1/")
    with pytest.raises(ValueError):
        strict.name("O=acme")
    module, options = jaas_options("k", JAAS)
    assert module.endswith("PlainLoginModule")
    assert options["user_alice"] == "a-pw" and options["username"] == "admin"
    with pytest.raises(SecurityConfigError):
        jaas_options("k", JAAS + JAAS)


OAUTH_SERVER_JAAS = (
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
    'unsecuredLoginStringClaim_sub="controller" unsecuredValidatorRequiredScope="kafka";'
)


def oauth_client(**options: str) -> ClientSecurity:
    config = SaslClientConfig(
        "OAUTHBEARER", options.get("unsecuredLoginStringClaim_sub", ""), "", options
    )
    return ClientSecurity(SecurityProtocol.SASL_PLAINTEXT, None, config)


def test_oauthbearer_unsecured_tokens_as_kafka_validates_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """OAUTHBEARER with Kafka's unsecured JWS handlers: the principal is the token's ``sub``;
    an expired token or one without the required scope gets Kafka's JSON error as a
    challenge and then SASL_AUTHENTICATION_FAILED; a malformed first message fails at once;
    an authorization id that is not the principal is refused."""
    from pykraft.net import oauthbearer

    props = sasl_props(
        **{
            "sasl.enabled.mechanisms": "PLAIN,OAUTHBEARER",
            "listener.name.controller.oauthbearer.sasl.jaas.config": OAUTH_SERVER_JAAS,
        }
    )

    async def raw_authenticate(port: int, token: bytes) -> Any:
        conn = await Connection.open("127.0.0.1", port, timeout_ms=5000)
        try:
            handshake = sasl_handshake_v1.SaslHandshakeRequest(mechanism="OAUTHBEARER")
            answer: Any = await conn.request(handshake, timeout_ms=5000)
            assert answer.error_code == ErrorCode.none
            request = sasl_authenticate_v2.SaslAuthenticateRequest(auth_bytes=token)
            return await conn.request(request, timeout_ms=5000)
        finally:
            conn.close()
            await conn.wait_closed()

    async def main() -> None:
        seen = Seen()
        server = await serve(security(props), seen)
        good = oauth_client(
            unsecuredLoginStringClaim_sub="carol",
            unsecuredLoginListClaim_scope=",kafka,other",
            unsecuredLoginExtension_traceId="abc",
        )
        conn = await Connection.open("127.0.0.1", server.port, timeout_ms=5000, security=good)
        await metadata(conn)
        assert seen.sessions[-1].principal == KafkaPrincipal("User", "carol")
        conn.close()
        await conn.wait_closed()
        refused = [
            (
                oauth_client(
                    unsecuredLoginStringClaim_sub="carol",
                    unsecuredLoginListClaim_scope=",kafka",
                    unsecuredLoginLifetimeSeconds="-5",
                ),
                '{"status":"invalid_token"}',
            ),
            (
                oauth_client(unsecuredLoginStringClaim_sub="carol"),
                '{"status":"insufficient_scope", "scope":"kafka"}',
            ),
        ]
        for sec, text in refused:
            with pytest.raises(SaslAuthenticationError, match=re.escape(text)):
                await Connection.open("127.0.0.1", server.port, timeout_ms=5000, security=sec)
        # Not an OAUTHBEARER message at all: Kafka's generic failure, no challenge.
        answer = await raw_authenticate(server.port, b"\x00alice\x00a-pw")
        assert answer.error_code == ErrorCode.sasl_authentication_failed
        assert answer.error_message.endswith("with SASL mechanism OAUTHBEARER")
        # A signed token (alg other than none) is not an unsecured JWS.
        token, _ = oauthbearer.unsecured_token({"unsecuredLoginStringClaim_sub": "x"}, 0)
        header = base64.urlsafe_b64encode(b'{"alg":"RS256"}').rstrip(b"=").decode()
        signed = header + token[token.index(".") :] + "c2ln"
        answer = await raw_authenticate(server.port, oauthbearer.client_initial_response(signed))
        assert answer.error_code == ErrorCode.none and b"invalid_token" in answer.auth_bytes
        # An authorization id other than the token's principal.
        token, _ = oauthbearer.unsecured_token(
            {"unsecuredLoginStringClaim_sub": "carol", "unsecuredLoginListClaim_scope": ",kafka"},
            int(time.time() * 1000),
        )
        answer = await raw_authenticate(
            server.port, oauthbearer.client_initial_response(token, authzid="admin")
        )
        assert answer.error_code == ErrorCode.sasl_authentication_failed
        assert "different from the token's principal name (carol)" in answer.error_message
        assert server.stats.successful_authentication_total == 1
        assert server.stats.failed_authentication_total == 4
        await server.close()

    with caplog.at_level(logging.INFO, logger="pykraft.net.server"):
        run(main)
    lines = [r.getMessage() for r in caplog.records if "Failed authentication" in r.getMessage()]
    # The reason is in the server's log line, not on the wire.
    assert any("Expiration Time" in line for line in lines), lines


def test_oauthbearer_initial_response_is_kafkas_format() -> None:
    from pykraft.net import oauthbearer

    wire = oauthbearer.client_initial_response("a.b.", "carol", {"traceId": "abc"})
    assert wire == b"n,a=carol,\x01auth=Bearer a.b.\x01traceId=abc\x01\x01"
    parsed = oauthbearer.parse_initial_response(wire)
    assert (parsed.token, parsed.authzid, dict(parsed.extensions)) == (
        "a.b.",
        "carol",
        {"traceId": "abc"},
    )
    for bad in (b"n,,auth=Bearer x", b"y,,\x01auth=Bearer x\x01\x01", b"n,,\x01k=v\x01\x01"):
        with pytest.raises(ValueError, match="OAUTHBEARER client first message"):
            oauthbearer.parse_initial_response(bad)
    with pytest.raises(ValueError, match="Invalid scheme"):
        oauthbearer.parse_initial_response(b"n,,\x01auth=Basic x\x01\x01")
    with pytest.raises(SecurityConfigError, match=r"oauthbearer\.sasl\.jaas\.config"):
        security(sasl_props(**{"sasl.enabled.mechanisms": "OAUTHBEARER"}))
    with pytest.raises(SecurityConfigError, match=r"callback\.handler\.class"):
        security(
            sasl_props(
                **{
                    "sasl.enabled.mechanisms": "OAUTHBEARER",
                    "listener.name.controller.oauthbearer.sasl.jaas.config": OAUTH_SERVER_JAAS,
                    "listener.name.controller.oauthbearer.sasl.server.callback.handler.class": (
                        "org.apache.kafka.common.security.oauthbearer."
                        "OAuthBearerValidatorCallbackHandler"
                    ),
                }
            )
        )
    # The dialling side needs the principal claim to make its token.
    with pytest.raises(SecurityConfigError, match="unsecuredLoginStringClaim_sub"):
        security(
            sasl_props(
                **{
                    "sasl.mechanism.controller.protocol": "OAUTHBEARER",
                    "sasl.enabled.mechanisms": "OAUTHBEARER",
                    "listener.name.controller.oauthbearer.sasl.jaas.config": (
                        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule "
                        "required;"
                    ),
                }
            )
        )


def test_reauthentication_kip368_renews_expires_and_refuses_a_new_identity() -> None:
    """``connections.max.reauth.ms``: SaslAuthenticate gives the session lifetime; a
    SaslHandshake on the authenticated connection re-authenticates it (same mechanism, same
    principal, at most once a second); a request after the session expired closes the
    connection; each counted in Kafka's socket-server metric names."""
    props = sasl_props(**{"listener.name.controller.connections.max.reauth.ms": "1200"})

    async def reauthenticate(conn: Connection, mechanism: str, user: str, pw: str) -> Any:
        handshake = sasl_handshake_v1.SaslHandshakeRequest(mechanism=mechanism)
        answer: Any = await conn.request(handshake, timeout_ms=5000)
        if answer.error_code != ErrorCode.none:
            return answer
        token = f"\x00{user}\x00{pw}".encode()
        request = sasl_authenticate_v2.SaslAuthenticateRequest(auth_bytes=token)
        return await conn.request(request, timeout_ms=5000)

    async def main() -> None:
        seen = Seen()
        server = await serve(security(props), seen)
        sec = client("PLAIN", "alice", "a-pw")
        conn = await Connection.open("127.0.0.1", server.port, timeout_ms=5000, security=sec)
        assert conn.renew_at_s is not None and not conn.renewal_due  # renewed at 85-95 %
        renewed = await reauthenticate(conn, "PLAIN", "alice", "a-pw")
        assert renewed.error_code == ErrorCode.none
        assert renewed.session_lifetime.total_seconds() == 1.2
        assert server.stats.successful_reauthentication_total == 1
        await metadata(conn)
        assert seen.sessions[-1].principal == KafkaPrincipal("User", "alice")
        # Within a second of the last one, a handshake does not start a re-authentication.
        early: Any = await conn.request(
            sasl_handshake_v1.SaslHandshakeRequest(mechanism="PLAIN"), timeout_ms=5000
        )
        assert early.error_code == ErrorCode.illegal_sasl_state
        await asyncio.sleep(1.05)
        # Another identity on the same connection: refused, closed, counted.
        other = await reauthenticate(conn, "PLAIN", "admin", "admin-secret")
        assert other.error_code == ErrorCode.sasl_authentication_failed
        assert "Cannot change principals during re-authentication" in other.error_message
        assert "User.alice: User.admin" in other.error_message
        assert server.stats.failed_reauthentication_total == 1
        await conn.wait_closed()
        # Another mechanism: refused.
        conn = await Connection.open("127.0.0.1", server.port, timeout_ms=5000, security=sec)
        await asyncio.sleep(1.05)
        scram: Any = await conn.request(
            sasl_handshake_v1.SaslHandshakeRequest(mechanism="SCRAM-SHA-512"), timeout_ms=5000
        )
        assert scram.error_code == ErrorCode.unsupported_sasl_mechanism
        assert server.stats.failed_reauthentication_total == 2
        # No re-authentication: the first request after the session's end closes it.
        conn = await Connection.open("127.0.0.1", server.port, timeout_ms=5000, security=sec)
        await asyncio.sleep(1.3)
        assert conn.renewal_due
        with pytest.raises(ConnectionError):
            await metadata(conn)
        assert server.stats.expired_connections_killed_count == 1
        assert server.stats.failed_authentication_total == 0
        await server.close()

    run(main)


def test_an_oauthbearer_session_ends_with_its_token() -> None:
    """Without connections.max.reauth.ms an OAUTHBEARER session still ends when its token
    does (Kafka caps the lifetime by the credential's expiry)."""
    props = sasl_props(
        **{
            "sasl.enabled.mechanisms": "OAUTHBEARER",
            "listener.name.controller.oauthbearer.sasl.jaas.config": OAUTH_SERVER_JAAS,
        }
    )

    async def main() -> None:
        server = await serve(security(props), Seen())
        sec = oauth_client(
            unsecuredLoginStringClaim_sub="carol",
            unsecuredLoginListClaim_scope=",kafka",
            unsecuredLoginLifetimeSeconds="30",
        )
        conn = await Connection.open("127.0.0.1", server.port, timeout_ms=5000, security=sec)
        assert conn.renew_at_s is not None
        left_s = conn.renew_at_s - asyncio.get_running_loop().time()
        assert 30 * 0.85 - 2 < left_s <= 30 * 0.95
        conn.close()
        await conn.wait_closed()
        await server.close()

    run(main)


def test_sasl_handshake_v0_then_bare_tokens() -> None:
    """SaslHandshake v0 (Kafka 0.10 clients): after it, the SASL tokens travel as bare
    frames without a request header, answered bare; then requests as usual. A wrong
    password closes the connection without an answer, counted as a failure."""
    import kio.schema.sasl_handshake.v0.request as sasl_handshake_v0

    async def exchange(port: int, password: str) -> tuple[Any, bytes, asyncio.StreamReader, Any]:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(frame(sasl_handshake_v0.SaslHandshakeRequest(mechanism="PLAIN"), 0))
        size = struct.unpack(">i", await reader.readexactly(4))[0]
        handshake = await reader.readexactly(size)
        token = f"\x00alice\x00{password}".encode()
        writer.write(struct.pack(">i", len(token)) + token)
        return handshake, token, reader, writer

    async def main() -> None:
        seen = Seen()
        server = await serve(security(sasl_props()), seen)
        handshake, _, reader, writer = await exchange(server.port, "a-pw")
        assert struct.unpack(">h", handshake[4:6])[0] == 0  # correlation id, then NONE
        assert struct.unpack(">i", await reader.readexactly(4))[0] == 0  # the bare reply
        writer.write(
            frame(
                metadata_v12.MetadataRequest(
                    topics=None, include_topic_authorized_operations=False
                ),
                12,
                correlation_id=2,
            )
        )
        size = struct.unpack(">i", await reader.readexactly(4))[0]
        await reader.readexactly(size)
        assert seen.sessions[-1].principal == KafkaPrincipal("User", "alice")
        writer.close()
        await writer.wait_closed()
        assert server.stats.successful_authentication_total == 1
        _, _, reader, writer = await exchange(server.port, "wrong")
        assert await asyncio.wait_for(reader.read(), 5) == b""  # closed, no answer
        writer.close()
        await writer.wait_closed()
        assert server.stats.failed_authentication_total == 1
        await server.close()

    run(main)


PLUGIN_MODULE = """
from pykraft.net.security import KafkaPrincipal


class TeamPrincipals:
    def build(self, context):
        if context.sasl_authorization_id is None:
            return KafkaPrincipal("User", "ANONYMOUS")
        team = "ops" if context.sasl_authorization_id.startswith("ops-") else "dev"
        return f"Team:{team}"


class Directory:
    def configure(self, configs):
        self.users = dict(u.split("=") for u in configs["my.directory"].split(","))

    def authenticate(self, username, password):
        if username == "boom":
            raise RuntimeError("directory down")
        return self.users.get(username) == password
"""


def test_python_principal_builder_and_plain_callback_handler(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """principal.builder.class and PLAIN's server callback handler as Python classes in the
    shape of Kafka's interfaces: the handler decides PLAIN logins (a failure or an exception is
    Kafka's invalid-credentials answer), the builder names the session's principal."""
    from pykraft.node.config import NodeConfig
    from tests.node.test_config import BASE

    (tmp_path / "my_plugins.py").write_text(PLUGIN_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    props = {
        **BASE,
        **sasl_props(),
        "principal.builder.class": "my_plugins:TeamPrincipals",
        "listener.name.controller.plain.sasl.server.callback.handler.class": (
            "my_plugins:Directory"
        ),
        "my.directory": "ops-ann=pw1,dev-bo=pw2,boom=x",
    }
    sec = NodeConfig.from_properties(props).security
    assert sec is not None and sec.principal_builder is not None

    async def main() -> None:
        seen = Seen()
        server = await serve(sec, seen)
        for user, password, principal in (
            ("ops-ann", "pw1", "Team:ops"),
            ("dev-bo", "pw2", "Team:dev"),
        ):
            conn = await Connection.open(
                "127.0.0.1", server.port, timeout_ms=5000, security=client("PLAIN", user, password)
            )
            await metadata(conn)
            assert str(seen.sessions[-1].principal) == principal
            conn.close()
            await conn.wait_closed()
        for user, password in (("ops-ann", "wrong"), ("alice", "a-pw"), ("boom", "x")):
            with pytest.raises(SaslAuthenticationError, match=r"Authentication failed"):
                await Connection.open(
                    "127.0.0.1",
                    server.port,
                    timeout_ms=5000,
                    security=client("PLAIN", user, password),
                )
        assert server.stats.failed_authentication_total == 3
        await server.close()

    run(main)
