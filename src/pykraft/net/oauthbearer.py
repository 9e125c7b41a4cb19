"""SASL/OAUTHBEARER (RFC 7628, KIP-255) with Kafka's unsecured JWS tokens, both sides.

Kafka's defaults when no callback handler class is configured, and what this module does:

* **Client** (``OAuthBearerUnsecuredLoginCallbackHandler``): the JAAS options of the
  ``OAuthBearerLoginModule`` entry make the token: ``unsecuredLoginStringClaim_<name>``,
  ``unsecuredLoginNumberClaim_<name>``, ``unsecuredLoginListClaim_<name>`` (the first
  character is the separator), ``unsecuredLoginPrincipalClaimName`` (default ``sub``),
  ``unsecuredLoginLifetimeSeconds`` (default 3600), ``unsecuredLoginExtension_<key>``. The
  token is ``base64url({"alg":"none"}) . base64url(claims) .`` with ``iat`` and ``exp`` in
  seconds. The initial response is ``n,[a=authzid],^Aauth=Bearer <token>[^Ak=v...]^A^A``.
* **Server** (``OAuthBearerUnsecuredValidatorCallbackHandler``): the token must be an
  unsecured JWS (``alg`` ``none``, no signature) with the principal claim (option
  ``unsecuredValidatorPrincipalClaimName``, default ``sub``) a string, ``exp`` a number in
  the future (``unsecuredValidatorAllowableClockSkewMs``, default 0), ``iat`` if present not
  in the future and before ``exp``, and every scope of ``unsecuredValidatorRequiredScope`` in
  the scope claim (``unsecuredValidatorScopeClaimName``, default ``scope``). A rejected token
  is answered with Kafka's JSON error (``{"status":"invalid_token"}`` or
  ``insufficient_scope`` with the scope) as a server challenge; the client answers ``^A`` and
  the authentication fails with that JSON as the message. A malformed message fails at once.
  Every extension is accepted, as Kafka's unsecured handler accepts them.

Tokens signed by an identity provider (``OAuthBearerValidatorCallbackHandler`` with a JWKS
endpoint) are refused at configuration time (``security.py``): not offered yet.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

__all__ = [
    "CONTROL_A",
    "InitialResponse",
    "InvalidToken",
    "UnsecuredValidator",
    "client_initial_response",
    "error_json",
    "parse_initial_response",
    "unsecured_token",
]

CONTROL_A: Final = "\x01"
_KEY = r"[A-Za-z]+"
_VALUE = r"[\x21-\x7E \t\r\n]+"
# Kafka's OAuthBearerClientInitialResponse pattern (Java's class intersection written out).
_INITIAL = re.compile(
    r"n,(?:a=(?P<authzid>(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+))?,\x01"
    rf"(?P<kvpairs>(?:{_KEY}={_VALUE}\x01)*)\x01",
    re.DOTALL,
)
_AUTH = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_.a-zA-Z0-9]+)")
_KEY_RE = re.compile(_KEY)
_VALUE_RE = re.compile(_VALUE)


class InvalidToken(Exception):
    """A token the validator refused: ``status`` for the client, ``reason`` for the log."""

    def __init__(self, reason: str, scope: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.scope = scope

    @property
    def status(self) -> str:
        return "insufficient_scope" if self.scope is not None else "invalid_token"


def error_json(error: InvalidToken) -> str:
    """Kafka's server challenge for a refused token (OAuthBearerSaslServer's format)."""
    text = f'{{"status":"{error.status}"'
    if error.scope is not None:
        text += f', "scope":"{error.scope}"'
    return text + "}"


@dataclass(frozen=True, slots=True)
class InitialResponse:
    token: str
    authzid: str = ""
    extensions: Mapping[str, str] = field(default_factory=dict)


def parse_initial_response(data: bytes) -> InitialResponse:
    """The client's first message; ValueError with Kafka's text when malformed."""
    text = data.decode("utf-8", errors="replace")
    found = _INITIAL.fullmatch(text)
    if found is None:
        raise ValueError("Invalid OAUTHBEARER client first message")
    pairs: dict[str, str] = {}
    for item in found.group("kvpairs").split(CONTROL_A):
        if item:
            key, _, value = item.partition("=")
            pairs[key] = value
    auth = pairs.pop("auth", None)
    if auth is None:
        raise ValueError("Invalid OAUTHBEARER client first message: 'auth' not specified")
    scheme = _AUTH.fullmatch(auth)
    if scheme is None:
        raise ValueError("Invalid OAUTHBEARER client first message: invalid 'auth' format")
    if scheme.group("scheme").lower() != "bearer":
        raise ValueError(
            f"Invalid scheme in OAUTHBEARER client first message: {scheme.group('scheme')}"
        )
    return InitialResponse(scheme.group("token"), found.group("authzid") or "", pairs)


def client_initial_response(
    token: str, authzid: str = "", extensions: Mapping[str, str] | None = None
) -> bytes:
    """OAuthBearerClientInitialResponse.toBytes."""
    for key, value in (extensions or {}).items():
        if key == "auth" or not _KEY_RE.fullmatch(key):
            raise ValueError(f"Extension name {key} is invalid")
        if not _VALUE_RE.fullmatch(value):
            raise ValueError(f"Extension value for extension {key} is invalid")
    ext = CONTROL_A.join(f"{k}={v}" for k, v in (extensions or {}).items())
    authz = f"a={authzid}" if authzid else ""
    middle = f"{CONTROL_A}{ext}" if ext else ""
    return f"n,{authz},{CONTROL_A}auth=Bearer {token}{middle}{CONTROL_A}{CONTROL_A}".encode()


def _b64(obj: object) -> str:
    raw = json.dumps(obj, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(part: str) -> object:
    try:
        raw = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError):
        raise InvalidToken("malformed Base64 URL encoded value") from None
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise InvalidToken("malformed JSON") from None


LOGIN_PREFIX: Final = "unsecuredLogin"


def unsecured_token(options: Mapping[str, str], now_ms: int) -> tuple[str, dict[str, str]]:
    """(token, extensions) from the login module's JAAS ``options``; ValueError naming the
    option when one is wrong."""
    claims: dict[str, object] = {}
    for key, value in options.items():
        if key.startswith(LOGIN_PREFIX + "StringClaim_"):
            claims[key[len(LOGIN_PREFIX + "StringClaim_") :]] = value
        elif key.startswith(LOGIN_PREFIX + "NumberClaim_"):
            try:
                claims[key[len(LOGIN_PREFIX + "NumberClaim_") :]] = float(value)
            except ValueError:
                raise ValueError(f"{key}: not a number") from None
        elif key.startswith(LOGIN_PREFIX + "ListClaim_"):
            if not value:
                raise ValueError(f"{key}: a list claim needs its separator first")
            claims[key[len(LOGIN_PREFIX + "ListClaim_") :]] = [
                v for v in value[1:].split(value[0]) if v
            ]
    principal_claim = options.get(LOGIN_PREFIX + "PrincipalClaimName", "sub").strip() or "sub"
    if not isinstance(claims.get(principal_claim), str) or not claims[principal_claim]:
        raise ValueError(f"{LOGIN_PREFIX}StringClaim_{principal_claim} is required")
    try:
        lifetime_s = int(options.get(LOGIN_PREFIX + "LifetimeSeconds", "3600"))
    except ValueError:
        raise ValueError(f"{LOGIN_PREFIX}LifetimeSeconds: not an integer") from None
    claims.setdefault("iat", now_ms / 1000)
    claims.setdefault("exp", now_ms / 1000 + lifetime_s)
    extensions = {
        key[len(LOGIN_PREFIX + "Extension_") :]: value
        for key, value in options.items()
        if key.startswith(LOGIN_PREFIX + "Extension_")
    }
    return f"{_b64({'alg': 'none'})}.{_b64(claims)}.", extensions


VALIDATOR_PREFIX: Final = "unsecuredValidator"


@dataclass(frozen=True, slots=True)
class UnsecuredValidator:
    """Kafka's OAuthBearerUnsecuredValidatorCallbackHandler, from its JAAS options."""

    principal_claim: str = "sub"
    scope_claim: str = "scope"
    required_scope: tuple[str, ...] = ()
    clock_skew_ms: int = 0

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> UnsecuredValidator:
        """ValueError naming the option when one is wrong."""
        skew_text = options.get(VALIDATOR_PREFIX + "AllowableClockSkewMs", "").strip() or "0"
        try:
            skew = int(skew_text)
        except ValueError:
            raise ValueError(f"{VALIDATOR_PREFIX}AllowableClockSkewMs: not an integer") from None
        if skew < 0:
            raise ValueError(f"Allowable clock skew millis must not be negative: {skew_text}")
        return cls(
            options.get(VALIDATOR_PREFIX + "PrincipalClaimName", "").strip() or "sub",
            options.get(VALIDATOR_PREFIX + "ScopeClaimName", "").strip() or "scope",
            tuple(options.get(VALIDATOR_PREFIX + "RequiredScope", "").split()),
            skew,
        )

    def validate(self, token: str, now_ms: int) -> tuple[str, float]:
        """(principal name, expiry in ms); InvalidToken with Kafka's reasons."""
        parts = token.split(".")
        if ".." in token:
            raise InvalidToken("Malformed compact serialization contains '..'")
        if len(parts) != 3:
            raise InvalidToken(
                "Unsecured JWS compact serializations must have 3 dot-separated "
                "Base64URL-encoded values"
            )
        header, claims = _unb64(parts[0]), _unb64(parts[1])
        if not isinstance(header, dict) or not isinstance(claims, dict):
            raise InvalidToken("malformed JSON")
        if "alg" not in header:
            raise InvalidToken("JWS header must have an Algorithm value")
        if header["alg"] != "none":
            raise InvalidToken("Unsecured JWS must have 'none' for an algorithm")
        if parts[2]:
            raise InvalidToken("Unsecured JWS must not contain a digital signature")
        exp = claims.get("exp")
        if exp is None:
            raise InvalidToken("No expiration time in JWT")
        principal = claims.get(self.principal_claim)
        if principal is None:
            raise InvalidToken(f"Required claim missing: {self.principal_claim}")
        if not isinstance(principal, str):
            raise InvalidToken(f"The {self.principal_claim} claim had the incorrect type")
        if not _number(exp):
            raise InvalidToken("The exp claim had the incorrect type")
        iat = claims.get("iat")
        if iat is not None:
            if not _number(iat):
                raise InvalidToken("The iat claim had the incorrect type")
            if iat * 1000 > now_ms + self.clock_skew_ms:
                raise InvalidToken(
                    f"The Issued At value ({iat} seconds) was after the indicated time "
                    f"({now_ms} ms) plus allowable clock skew ({self.clock_skew_ms} ms)"
                )
        if now_ms - self.clock_skew_ms >= exp * 1000:
            raise InvalidToken(
                f"The indicated time ({now_ms} ms) minus allowable clock skew "
                f"({self.clock_skew_ms} ms) was on or after the Expiration Time value "
                f"({exp} seconds)"
            )
        if iat is not None and exp <= iat:
            raise InvalidToken(
                f"The Expiration Time time ({exp} seconds) was not after the Issued At time "
                f"({iat} seconds)"
            )
        scope = claims.get(self.scope_claim)
        have = scope.split() if isinstance(scope, str) else scope if isinstance(scope, list) else []
        for required in self.required_scope:
            if required not in have:
                raise InvalidToken(
                    f"The provided scope ({have}) was missing a required scope ({required})",
                    scope=" ".join(self.required_scope),
                )
        return principal, float(exp) * 1000


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
