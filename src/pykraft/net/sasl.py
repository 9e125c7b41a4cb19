"""SASL on a listener, both sides (docs/kafka/SECURITY-CONTRACT.md 2-3): Kafka's
SaslHandshake v1 / SaslAuthenticate flow with PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and
OAUTHBEARER (Kafka's unsecured JWS tokens, ``oauthbearer.py``).

Server. :class:`SaslServerAuthenticator` is one connection's state machine, sans I/O: the
listener hands it every request until it says the connection is authenticated, and does
what each :class:`Step` says (answer, answer then close after
``connection.failed.authentication.delay.ms``, or close without an answer). The order is
Kafka's: an optional ApiVersions, then SaslHandshake (its mechanism must be enabled), then
SaslAuthenticate rounds; anything else before the handshake closes the connection, anything
but SaslAuthenticate after it gets that API's error response with ILLEGAL_SASL_STATE and a
close. Failures answer SASL_AUTHENTICATION_FAILED with Kafka's texts: PLAIN's own messages,
SCRAM's one generic message (the reason is never sent, and no secret is ever logged).
After a SaslHandshake v0 (pre-KIP-152 clients) the tokens are bare frames
(``raw_tokens``/``raw_token``): answered bare, and a failure closes the connection without
an answer, as Kafka does.
SCRAM runs on ``scramp`` against the credentials the metadata log holds
(UserScramCredentialRecord), looked up through the ``credentials`` callable.

Re-authentication (KIP-368): with ``connections.max.reauth.ms`` (or an OAUTHBEARER token's
expiry) the session gets a lifetime, sent in SaslAuthenticate v1+; a SaslHandshake on the
authenticated connection starts the exchange again (``begin_reauthentication``), which must
keep the mechanism and the principal; the listener closes a connection whose session ended.

The client side of the same exchange is ``net/sasl_client.py``.
"""

from __future__ import annotations

import datetime
import enum
import hmac
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from kio.static.protocol import ResponsePayload

from pykraft.net import oauthbearer
from pykraft.net.security import (
    OAUTHBEARER,
    PLAIN,
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    KafkaPrincipal,
    SaslServerConfig,
)
from pykraft.protocol import ApiKey, DecodedRequest, ErrorCode
from pykraft.protocol.apis import response_schema
from pykraft.protocol.build import make

if TYPE_CHECKING:
    pass

__all__ = [
    "SCRAM_MECHANISM_TYPES",
    "SaslServerAuthenticator",
    "ScramCredential",
    "Step",
]

log = logging.getLogger("pykraft.net.sasl")

# Kafka's ScramMechanism types, as UserScramCredentialRecord stores them.
SCRAM_MECHANISM_TYPES: Final = {SCRAM_SHA_256: 1, SCRAM_SHA_512: 2}
SCRAM_MIN_ITERATIONS: Final = 4096
SCRAM_MAX_ITERATIONS: Final = 16384


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """What the log keeps of a SCRAM user (never the password)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


CredentialLookup = Callable[[str, str], "ScramCredential | None"]
"""``credentials(mechanism, user)``: the user's SCRAM credential, or None."""


class _State(enum.Enum):
    INITIAL = "initial"  # ApiVersions or SaslHandshake
    HANDSHAKE = "handshake"  # after ApiVersions: SaslHandshake
    AUTHENTICATE = "authenticate"  # SaslAuthenticate rounds
    COMPLETE = "complete"
    FAILED = "failed"


class Action(enum.Enum):
    ANSWER = "answer"  # send the response; go on
    ANSWER_AND_CLOSE = "answer-close"  # a failed authentication: respond after the delay
    CLOSE = "close"  # close without a response
    PASS = "pass"  # not an authentication request: the listener dispatches it


@dataclass(frozen=True, slots=True)
class Step:
    action: Action
    response: ResponsePayload | None = None
    reason: str = ""  # for the one log line of a failure (never a secret)
    failed_authentication: bool = False  # counted in failed-authentication-total
    reauthentication: bool = False  # this step ends (or fails) a re-authentication


def _response(api_key: int, version: int, **fields: Any) -> ResponsePayload:
    return make(response_schema(api_key, version), fields)


class SaslServerAuthenticator:
    """One connection's SASL server (Kafka's SaslServerAuthenticator). Invariant: the
    principal is set exactly when the state is COMPLETE."""

    def __init__(
        self,
        config: SaslServerConfig,
        credentials: CredentialLookup,
        wall_clock_ms: Callable[[], int] | None = None,
        monotonic_ms: Callable[[], int] | None = None,
    ) -> None:
        """``wall_clock_ms``: the time OAUTHBEARER tokens are checked against;
        ``monotonic_ms``: the clock sessions expire by (KIP-368)."""
        self.config = config
        self._credentials = credentials
        self.wall_clock_ms = wall_clock_ms or system_clock_ms
        self._monotonic_ms = monotonic_ms or _monotonic_ms
        self._oauth_error: str | None = None  # the JSON error sent as a challenge
        self._token_expiry_ms: float | None = None  # OAUTHBEARER: the token's exp (wall)
        # KIP-368: when the session expires (monotonic ms; None: never), the identity a
        # re-authentication must keep, when the last one started, the client's version.
        self.session_expiry_ms: int | None = None
        # SaslHandshake v0: the tokens that follow are bare frames (``raw_token``)
        self.raw_tokens = False
        self._previous: tuple[KafkaPrincipal, str] | None = None
        self._last_reauth_ms: int | None = None
        self.authenticate_version = 0
        self._state = _State.INITIAL
        self.mechanism: str | None = None
        self._scram: Any = None  # scramp's ScramServer during a SCRAM exchange
        self._scram_round = 0
        self.principal: KafkaPrincipal | None = None

    @property
    def complete(self) -> bool:
        return self._state is _State.COMPLETE

    @property
    def reauthenticating(self) -> bool:
        return self._previous is not None

    def session_expired(self) -> bool:
        """The session's lifetime is over and no re-authentication renewed it: Kafka closes
        the connection at its next request."""
        expiry = self.session_expiry_ms
        return expiry is not None and self._monotonic_ms() >= expiry

    def begin_reauthentication(self) -> bool:
        """A SaslHandshake on an authenticated connection starts a re-authentication
        (Kafka's ``maybeBeginServerReauthentication``) when the session has an expiry and
        the last one began a second or more ago; otherwise the handshake is answered
        ILLEGAL_SASL_STATE as before."""
        now = self._monotonic_ms()
        if self._state is not _State.COMPLETE or self.session_expiry_ms is None:
            return False
        if self._last_reauth_ms is not None and now - self._last_reauth_ms < 1000:
            return False
        assert self.principal is not None and self.mechanism is not None
        self._last_reauth_ms = now
        self._previous = (self.principal, self.mechanism)
        self.principal = None
        self._state = _State.HANDSHAKE
        self._scram = None
        self._scram_round = 0
        self._oauth_error = None
        self._token_expiry_ms = None
        self.failure_detail = ""
        return True

    def step(self, request: DecodedRequest, api_versions: ResponsePayload | None) -> Step:
        """What to do with ``request`` (``api_versions``: the listener's answer to an
        ApiVersions, when that is the request)."""
        api, state = request.api_key, self._state
        if state is _State.COMPLETE:
            return self._after_complete(request)
        if api == ApiKey.API_VERSIONS and state is _State.INITIAL:
            self._state = _State.HANDSHAKE
            return Step(Action.ANSWER, api_versions)
        if state in (_State.INITIAL, _State.HANDSHAKE):
            if api == ApiKey.SASL_HANDSHAKE:
                return self._handshake(request)
            # Kafka 4.3.1: InvalidRequestException, closed without an answer, not counted.
            name = _api_name(api)
            return Step(
                Action.CLOSE,
                reason=f"Unexpected Kafka request of type {name} during SASL handshake.",
            )
        if state is _State.AUTHENTICATE:
            if api == ApiKey.SASL_AUTHENTICATE:
                return self._authenticate(request)
            message = (
                f"Unexpected Kafka request of type {_api_name(api)} during SASL authentication."
            )
            self._state = _State.FAILED
            return Step(
                Action.ANSWER_AND_CLOSE,
                _error_of(request, ErrorCode.illegal_sasl_state, message),
                message,
                failed_authentication=True,
            )
        return Step(Action.CLOSE, reason="request after a failed authentication")

    # -- the handshake --------------------------------------------------------------------

    def _handshake(self, request: DecodedRequest) -> Step:
        message: Any = request.message
        mechanism = str(message.mechanism)
        enabled = list(self.config.mechanisms)
        version = request.api_version
        previous = self._previous
        if mechanism not in enabled or (previous is not None and mechanism != previous[1]):
            self._state = _State.FAILED
            return Step(
                Action.ANSWER_AND_CLOSE,
                _response(
                    ApiKey.SASL_HANDSHAKE,
                    version,
                    error_code=ErrorCode.unsupported_sasl_mechanism,
                    mechanisms=enabled,
                ),
                f"Unsupported SASL mechanism {mechanism}"
                if previous is None
                else f"SASL mechanism '{mechanism}' requested by client is not supported for "
                f"re-authentication of mechanism '{previous[1]}'",
                failed_authentication=True,
                reauthentication=previous is not None,
            )
        self.mechanism = mechanism
        self._state = _State.AUTHENTICATE
        self.raw_tokens = version == 0 and previous is None
        if mechanism in (SCRAM_SHA_256, SCRAM_SHA_512):
            from scramp import ScramMechanism  # a maintained SCRAM implementation

            def auth_info(user: str) -> tuple[bytes, bytes, bytes, int]:
                credential = self._credentials(mechanism, user)
                if credential is None or credential.iterations < SCRAM_MIN_ITERATIONS:
                    raise _AuthenticationFailed("Authentication failed: Invalid user credentials")
                self._scram_user = user
                return (
                    credential.salt,
                    credential.stored_key,
                    credential.server_key,
                    credential.iterations,
                )

            self._scram = ScramMechanism(mechanism).make_server(auth_info)
        return Step(
            Action.ANSWER,
            _response(
                ApiKey.SASL_HANDSHAKE, version, error_code=ErrorCode.none, mechanisms=enabled
            ),
        )

    # -- the exchange ---------------------------------------------------------------------

    def _authenticate(self, request: DecodedRequest) -> Step:
        message: Any = request.message
        token = bytes(message.auth_bytes)
        version = request.api_version
        self.authenticate_version = version
        reauthenticating = self._previous is not None
        try:
            reply, done = self._exchange(token)
        except _AuthenticationFailed as e:
            self._state = _State.FAILED
            return Step(
                Action.ANSWER_AND_CLOSE,
                _response(
                    ApiKey.SASL_AUTHENTICATE,
                    version,
                    error_code=ErrorCode.sasl_authentication_failed,
                    error_message=e.wire,
                    auth_bytes=b"",
                ),
                f"{e.wire} ({self.failure_detail})" if self.failure_detail else e.wire,
                failed_authentication=True,
                reauthentication=reauthenticating,
            )
        lifetime: dict[str, datetime.timedelta] = {}
        if done:
            self._state = _State.COMPLETE
            self._previous = None
            if version >= 1:
                lifetime["session_lifetime"] = datetime.timedelta(
                    milliseconds=self._start_session()
                )
        return Step(
            Action.ANSWER,
            _response(
                ApiKey.SASL_AUTHENTICATE,
                version,
                error_code=ErrorCode.none,
                error_message=None,
                auth_bytes=reply,
                **lifetime,
            ),
            reauthentication=done and reauthenticating,
        )

    def _exchange(self, token: bytes) -> tuple[bytes, bool]:
        """One token of the mechanism's exchange: (reply, done); raises _AuthenticationFailed."""
        if self.mechanism == PLAIN:
            reply, done = self._plain(token), True
        elif self.mechanism == OAUTHBEARER:
            reply, done = self._oauthbearer(token)
        else:
            reply, done = self._scram_step(token)
        if done:
            self._same_principal()
        return reply, done

    def raw_token(self, token: bytes) -> tuple[bytes | None, str]:
        """After a SaslHandshake v0: one bare token, the bare reply (None: the exchange
        failed, the reason in the second item; Kafka closes such a connection without an
        answer). The authenticator is complete once the mechanism is."""
        assert self.raw_tokens and self._state is _State.AUTHENTICATE
        try:
            reply, done = self._exchange(token)
        except _AuthenticationFailed as e:
            self._state = _State.FAILED
            self.raw_tokens = False
            return None, f"{e.wire} ({self.failure_detail})" if self.failure_detail else e.wire
        if done:
            self._state = _State.COMPLETE
            self.raw_tokens = False
            self._start_session()  # no lifetime reaches a v0 client: it cannot re-authenticate
        return reply, ""

    def _same_principal(self) -> None:
        """A re-authentication may not change who the connection is."""
        previous = self._previous
        principal = self.principal
        if previous is None or principal is None or principal == previous[0]:
            return
        old = previous[0]
        raise _AuthenticationFailed(
            "Cannot change principals during re-authentication from "
            f"{old.principal_type}.{old.name}: {principal.principal_type}.{principal.name}"
        )

    def _start_session(self) -> int:
        """The session's lifetime (Kafka's ``calcCompletionTimesAndReturnSessionLifetimeMs``):
        ``connections.max.reauth.ms`` of the mechanism, capped by the credential's expiry
        (an OAUTHBEARER token's); 0 and no expiry when neither is set."""
        assert self.mechanism is not None
        max_reauth = self.config.reauth_ms.get(self.mechanism, 0)
        credential = self._token_expiry_ms
        if credential is None and max_reauth <= 0:
            self.session_expiry_ms = None
            return 0
        left = None if credential is None else max(0, int(credential - self.wall_clock_ms()))
        if left is None:
            lifetime = max_reauth
        elif max_reauth <= 0:
            lifetime = left
        else:
            lifetime = min(left, max_reauth)
        self.session_expiry_ms = self._monotonic_ms() + lifetime
        return lifetime

    def _plain(self, token: bytes) -> bytes:
        """RFC 4616 ``[authzid] NUL authcid NUL passwd`` against the JAAS ``user_`` table."""
        parts = token.decode("utf-8", errors="replace").split("\x00")
        if len(parts) != 3:
            raise _AuthenticationFailed(
                f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}"
            )
        authzid, user, password = parts
        if not user:
            raise _AuthenticationFailed("Authentication failed: username not specified")
        if not password:
            raise _AuthenticationFailed("Authentication failed: password not specified")
        callback = self.config.plain_callback
        if callback is not None:
            try:
                allowed = bool(callback.authenticate(user, password))
            except Exception as e:  # the plug-in's: a failed authentication, not a crash
                raise _AuthenticationFailed(f"Authentication failed: {type(e).__name__}") from None
        else:
            expected = self.config.plain_users.get(user)
            allowed = expected is not None and hmac.compare_digest(
                expected.encode(), password.encode()
            )
        if not allowed:
            raise _AuthenticationFailed("Authentication failed: Invalid username or password")
        if authzid and authzid != user:
            raise _AuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        self.principal = KafkaPrincipal("User", user)
        return b""

    def _oauthbearer(self, token: bytes) -> tuple[bytes, bool]:
        """Kafka's OAuthBearerSaslServer: a refused token is answered with the JSON error as
        a challenge; the client's ^A after it fails the authentication with that text."""
        if token == oauthbearer.CONTROL_A.encode() and self._oauth_error is not None:
            raise _AuthenticationFailed(self._oauth_error)
        self._oauth_error = None
        validator = self.config.oauth_validator
        assert validator is not None  # security.py makes one when OAUTHBEARER is enabled
        try:
            first = oauthbearer.parse_initial_response(token)
        except ValueError:
            raise _AuthenticationFailed(_generic_failure(OAUTHBEARER)) from None
        try:
            principal, self._token_expiry_ms = validator.validate(first.token, self.wall_clock_ms())
        except oauthbearer.InvalidToken as e:
            self._oauth_error = oauthbearer.error_json(e)
            self.failure_detail = e.reason  # logged by the listener, never sent
            return self._oauth_error.encode(), False
        if first.authzid and first.authzid != principal:
            raise _AuthenticationFailed(
                f"Authentication failed: Client requested an authorization id "
                f"({first.authzid}) that is different from the token's principal name "
                f"({principal})"
            )
        self.principal = KafkaPrincipal("User", principal)
        return b"", True

    failure_detail = ""

    def _scram_step(self, token: bytes) -> tuple[bytes, bool]:
        from scramp import ScramException

        server = self._scram
        generic = _generic_failure(str(self.mechanism))
        try:
            text = token.decode("utf-8")
            if self._scram_round == 0:
                self._scram_round = 1
                gs2, _, _ = text.partition(",")
                authzid = text.split(",")[1]
                server.set_client_first(text)
                if gs2 != "n":
                    raise _AuthenticationFailed(generic)
                if authzid.startswith("a=") and authzid[2:] != self._scram_user:
                    raise _AuthenticationFailed(
                        "Authentication failed: Client requested an authorization id that "
                        "is different from username"
                    )
                return server.get_server_first().encode(), False
            server.set_client_final(text)
            final: str = server.get_server_final()
        except _AuthenticationFailed as e:
            if e.wire.startswith("Authentication failed: Client requested"):
                raise
            raise _AuthenticationFailed(generic) from None
        except (ScramException, UnicodeDecodeError, IndexError, ValueError):
            raise _AuthenticationFailed(generic) from None
        self.principal = KafkaPrincipal("User", self._scram_user)
        return final.encode(), True

    _scram_user = ""

    # -- after authentication -------------------------------------------------------------

    def _after_complete(self, request: DecodedRequest) -> Step:
        """Kafka's API layer: a handshake that does not start a re-authentication
        (``begin_reauthentication``), or an authenticate, gets ILLEGAL_SASL_STATE and the
        connection stays."""
        if request.api_key == ApiKey.SASL_HANDSHAKE:
            return Step(Action.ANSWER, illegal_sasl_state(request))
        if request.api_key == ApiKey.SASL_AUTHENTICATE:
            return Step(
                Action.ANSWER,
                illegal_sasl_state(
                    request, "SaslAuthenticate request received after successful authentication"
                ),
            )
        return Step(Action.PASS)


def _generic_failure(mechanism: str) -> str:
    """Kafka's text for a SaslException: the reason stays on the server."""
    return (
        "Authentication failed during authentication due to invalid credentials with "
        f"SASL mechanism {mechanism}"
    )


def system_clock_ms() -> int:
    import time

    return int(time.time() * 1000)


def lifetime_ms(value: object) -> int:
    """SessionLifetimeMs as kio gives it (a timedelta) in ms."""
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    return int(value) if isinstance(value, int) else 0


def _monotonic_ms() -> int:
    import time

    return int(time.monotonic() * 1000)


class _AuthenticationFailed(Exception):
    def __init__(self, wire: str) -> None:
        super().__init__(wire)
        self.wire = wire


def _api_name(api_key: int) -> str:
    try:
        return ApiKey(api_key).name
    except ValueError:
        return str(api_key)


def _error_of(request: DecodedRequest, code: ErrorCode, message: str) -> ResponsePayload:
    from pykraft.protocol import error_response

    return error_response(request.api_key, request.api_version, code, error_message=message)


def illegal_sasl_state(request: DecodedRequest, message: str | None = None) -> ResponsePayload:
    """SaslHandshake/SaslAuthenticate where no exchange is due (a PLAINTEXT or SSL
    listener, or after authentication): ILLEGAL_SASL_STATE, the connection stays."""
    if request.api_key == ApiKey.SASL_HANDSHAKE:
        return _response(
            ApiKey.SASL_HANDSHAKE,
            request.api_version,
            error_code=ErrorCode.illegal_sasl_state,
            mechanisms=[],
        )
    return _response(
        ApiKey.SASL_AUTHENTICATE,
        request.api_version,
        error_code=ErrorCode.illegal_sasl_state,
        error_message=message,
        auth_bytes=b"",
    )
