"""SASL as a client (Kafka's SaslClientAuthenticator): SaslHandshake v1, then SaslAuthenticate
rounds for PLAIN, SCRAM-SHA-256/512 (scramp) and OAUTHBEARER (Kafka's unsecured tokens), over
whatever sends one request and returns its answer (``net/client.Connection``). The server side
is ``net/sasl.py``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

from pykraft.net import oauthbearer
from pykraft.net.sasl import lifetime_ms, system_clock_ms
from pykraft.net.security import OAUTHBEARER, PLAIN
from pykraft.protocol import ApiKey, ErrorCode
from pykraft.protocol.apis import request_schema
from pykraft.protocol.build import make

if TYPE_CHECKING:
    from kio.static.protocol import RequestPayload

    from pykraft.net.security import SaslClientConfig

__all__ = ["SaslAuthenticationError", "authenticate"]

SASL_AUTHENTICATE_VERSION: Final = 2

Exchange = Callable[["RequestPayload"], Awaitable[Any]]


class SaslAuthenticationError(ConnectionError):
    """The server refused our credentials or mechanism (Kafka's AuthenticationException)."""


async def authenticate(exchange: Exchange, config: SaslClientConfig, server_max: int) -> int:
    """SaslHandshake v1 and SaslAuthenticate rounds as the client (``exchange`` sends one
    request and returns its answer); the session lifetime the server gave (ms, 0: none;
    KIP-368). Raises SaslAuthenticationError."""
    version = min(server_max, SASL_AUTHENTICATE_VERSION)
    handshake: Any = await exchange(
        make(request_schema(ApiKey.SASL_HANDSHAKE, 1), {"mechanism": config.mechanism})
    )
    if handshake.error_code != ErrorCode.none:
        raise SaslAuthenticationError(
            f"SaslHandshake for {config.mechanism}: {handshake.error_code.name.upper()} "
            f"(enabled: {', '.join(handshake.mechanisms)})"
        )

    lifetime = [0]

    async def send(token: bytes) -> bytes:
        answer: Any = await exchange(
            make(request_schema(ApiKey.SASL_AUTHENTICATE, version), {"auth_bytes": token})
        )
        if answer.error_code != ErrorCode.none:
            raise SaslAuthenticationError(
                f"{answer.error_code.name.upper()}: {answer.error_message or ''}".rstrip(": ")
            )
        lifetime[0] = lifetime_ms(getattr(answer, "session_lifetime", 0))
        return bytes(answer.auth_bytes)

    if config.mechanism == PLAIN:
        await send(f"\x00{config.username}\x00{config.password}".encode())
        return lifetime[0]
    if config.mechanism == OAUTHBEARER:
        token, extensions = oauthbearer.unsecured_token(config.options, system_clock_ms())
        reply = await send(oauthbearer.client_initial_response(token, "", extensions))
        if reply:  # the server's JSON error: acknowledge it to get the failure
            await send(oauthbearer.CONTROL_A.encode())
            raise SaslAuthenticationError(f"OAUTHBEARER token refused: {reply.decode()}")
        return lifetime[0]
    from scramp import ScramClient, ScramException

    client = ScramClient([config.mechanism], config.username, config.password)
    try:
        client.set_server_first((await send(client.get_client_first().encode())).decode())
        client.set_server_final((await send(client.get_client_final().encode())).decode())
    except ScramException as e:
        raise SaslAuthenticationError(f"SCRAM exchange failed: {e}") from None
    return lifetime[0]
