"""Who is on the other end of a connection, and how a listener is secured: Kafka's security
protocols, principals and per-listener configs (docs/kafka/SECURITY-CONTRACT.md 1.1-1.6).

Theory of operation. A listener's security is decided once, from the node's properties, by
:func:`listener_security`: the protocol from ``listener.security.protocol.map``, the TLS
contexts (``net/tls.py``) and the SASL settings, each config read as Kafka reads it: the
``listener.name.<listener lower-case>.`` prefixed key first, the plain key as fallback, and
the SASL JAAS configs only in their ``listener.name.<l>.<mechanism>.`` form. Every problem
is a ``ConfigError`` naming the key, before anything listens.

Each connection then carries a :class:`Session`: the listener, its protocol, the client's
address and the :class:`KafkaPrincipal` that the TLS certificate (through
``ssl.principal.mapping.rules``) or the SASL exchange established (``User:ANONYMOUS`` on
PLAINTEXT). Handlers authorize requests against the session (``controller/authorizer.py``).
The same listener settings give the client side: how this node dials the controller listener
(raft between controllers, a controller registering, the admin client).
"""

from __future__ import annotations

import enum
import re
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Protocol

from pykraft.net.errors import SecurityConfigError
from pykraft.net.oauthbearer import UnsecuredValidator

__all__ = [
    "ANONYMOUS",
    "ClientSecurity",
    "KafkaPrincipal",
    "ListenerSecurity",
    "PrincipalMapper",
    "SaslClientConfig",
    "SaslServerConfig",
    "SecurityConfigError",
    "SecurityProtocol",
    "Session",
    "client_security",
    "decode_principal",
    "encode_principal",
    "jaas_options",
    "listener_security",
    "protocol_map",
]


ConfigError = SecurityConfigError


class SecurityProtocol(enum.IntEnum):
    """Kafka's ``SecurityProtocol`` with its ids (as ControllerRegistration sends them)."""

    PLAINTEXT = 0
    SSL = 1
    SASL_PLAINTEXT = 2
    SASL_SSL = 3

    @property
    def uses_tls(self) -> bool:
        return self in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)

    @property
    def uses_sasl(self) -> bool:
        return self in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    """``Type:name`` (Kafka's KafkaPrincipal); a delegation token's owner is marked."""

    principal_type: str
    name: str
    token_authenticated: bool = False

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> KafkaPrincipal:
        """``User:alice`` (Kafka's SecurityUtils.parseKafkaPrincipal); ValueError otherwise."""
        kind, sep, name = text.partition(":")
        if not sep or not kind or not name:
            raise ValueError(f"expected a principal as Type:name, got {text!r}")
        return cls(kind, name)


ANONYMOUS: Final = KafkaPrincipal("User", "ANONYMOUS")
PRINCIPAL_DATA_VERSION: Final = 0


def decode_principal(data: bytes) -> KafkaPrincipal:
    """An Envelope's RequestPrincipal: Kafka's DefaultKafkaPrincipalBuilder serialization
    (int16 version, then DefaultPrincipalData v0); ValueError for anything else."""
    from kio.schema.default_principal_data.v0.data import DefaultPrincipalData

    from pykraft.protocol.codec import decode_data
    from pykraft.protocol.errors import ProtocolError

    if len(data) < 2 or int.from_bytes(data[:2], "big") != PRINCIPAL_DATA_VERSION:
        raise ValueError("unknown principal data version")
    try:
        body = decode_data(DefaultPrincipalData, data, 2)
    except ProtocolError as e:
        raise ValueError(str(e)) from None
    return KafkaPrincipal(body.type_, body.name, bool(body.token_authenticated))


def encode_principal(principal: KafkaPrincipal) -> bytes:
    """What a Kafka broker puts in an Envelope for ``principal``."""
    from kio.schema.default_principal_data.v0.data import DefaultPrincipalData

    from pykraft.protocol.codec import encode_data

    body = DefaultPrincipalData(
        type_=principal.principal_type,
        name=principal.name,
        token_authenticated=principal.token_authenticated,
    )
    return PRINCIPAL_DATA_VERSION.to_bytes(2, "big") + encode_data(body)


@dataclass(frozen=True, slots=True)
class Session:
    """One connection's identity, as every request handler sees it. ``forwarded``: the
    request came inside an Envelope (the principal and host are the broker's client's)."""

    listener_name: str
    security_protocol: SecurityProtocol = SecurityProtocol.PLAINTEXT
    principal: KafkaPrincipal = ANONYMOUS
    client_host: str = "127.0.0.1"
    forwarded: bool = False


# -- ssl.principal.mapping.rules ---------------------------------------------------------------

_RULE: Final = re.compile(r"\s*RULE:((?:\\/|[^/])*)/((?:\\/|[^/])*)/([LU]?)\s*(?:,|$)")
_DEFAULT: Final = re.compile(r"\s*DEFAULT\s*(?:,|$)")


@dataclass(frozen=True, slots=True)
class PrincipalMapper:
    """Kafka's SslPrincipalMapper: the first rule whose pattern matches the whole subject DN
    gives the name (``L``/``U`` lower/upper-case it); ``DEFAULT`` keeps the DN. No rule
    matching is an error (the connection fails, as in Kafka)."""

    rules: tuple[tuple[re.Pattern[str], str, str] | None, ...] = (None,)

    @classmethod
    def parse(cls, text: str) -> PrincipalMapper:
        rules: list[tuple[re.Pattern[str], str, str] | None] = []
        rest = text.strip()
        while rest:
            if m := _DEFAULT.match(rest):
                rules.append(None)
            elif m := _RULE.match(rest):
                pattern = m.group(1).replace("\\/", "/")
                # Java's $1 back-references become Python's \1.
                replacement = re.sub(r"\$(\d+)", r"\\\1", m.group(2).replace("\\/", "/"))
                try:
                    rules.append((re.compile(pattern), replacement, m.group(3)))
                except re.error as e:
                    raise ConfigError("ssl.principal.mapping.rules", f"{pattern!r}: {e}") from None
            else:
                raise ConfigError("ssl.principal.mapping.rules", f"invalid rule at {rest!r}")
            rest = rest[m.end() :].strip()
        return cls(tuple(rules) or (None,))

    def name_principal(self, dn: str) -> KafkaPrincipal:
        """``User:<mapped name>`` of a certificate subject (raises ValueError)."""
        return KafkaPrincipal("User", self.name(dn))

    def name(self, dn: str) -> str:
        for rule in self.rules:
            if rule is None:
                return dn
            pattern, replacement, case = rule
            if pattern.fullmatch(dn):
                out = pattern.sub(replacement, dn, count=1)
                return out.lower() if case == "L" else out.upper() if case == "U" else out
        raise ValueError(f"no ssl.principal.mapping.rules rule matches {dn!r}")


# -- SASL settings ------------------------------------------------------------------------------

PLAIN: Final = "PLAIN"
SCRAM_SHA_256: Final = "SCRAM-SHA-256"
SCRAM_SHA_512: Final = "SCRAM-SHA-512"
OAUTHBEARER: Final = "OAUTHBEARER"
SUPPORTED_MECHANISMS: Final = (PLAIN, SCRAM_SHA_256, SCRAM_SHA_512, OAUTHBEARER)


@dataclass(frozen=True, slots=True)
class AuthenticationContext:
    """What a principal builder is told of a connection (Kafka's ``AuthenticationContext``
    and its SSL and SASL kinds): the listener, its protocol, the client's address, and once
    authenticated the TLS peer's subject or the SASL mechanism and authorization id."""

    listener_name: str
    security_protocol: str
    client_address: str
    ssl_subject: str | None = None
    sasl_mechanism: str | None = None
    sasl_authorization_id: str | None = None


class PrincipalBuilder(Protocol):
    """``principal.builder.class``: Kafka's ``KafkaPrincipalBuilder.build``, in Python (a
    ``KafkaPrincipal`` or its ``Type:name`` text)."""

    def build(self, context: AuthenticationContext) -> KafkaPrincipal | str: ...


class PlainCallbackHandler(Protocol):
    """``[listener.name.<l>.plain.]sasl.server.callback.handler.class``: what Kafka's
    ``PlainServerCallbackHandler`` decides, in Python: may ``username`` log in with
    ``password``?"""

    def authenticate(self, username: str, password: str) -> bool: ...


@dataclass(frozen=True, slots=True)
class SaslServerConfig:
    """The server side of SASL on one listener. ``plain_users``: the ``user_<name>``
    options of the listener's PLAIN JAAS entry (never logged)."""

    mechanisms: tuple[str, ...]
    plain_users: Mapping[str, str] = field(default_factory=dict, repr=False)
    # OAUTHBEARER: Kafka's unsecured validator, from the listener's OAUTHBEARER JAAS options
    oauth_validator: UnsecuredValidator | None = None
    # connections.max.reauth.ms per mechanism (KIP-368; 0: sessions do not expire)
    reauth_ms: Mapping[str, int] = field(default_factory=dict)
    max_receive_size: int = 524_288  # sasl.server.max.receive.size
    failed_delay_ms: int = 100  # connection.failed.authentication.delay.ms
    # PLAIN checked by a plug-in instead of the JAAS user_<name> entries
    plain_callback: PlainCallbackHandler | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class SaslClientConfig:
    """How this node authenticates when it dials the listener
    (``sasl.mechanism.controller.protocol`` and the JAAS ``username``/``password``)."""

    mechanism: str
    username: str
    password: str = field(repr=False)
    # the JAAS options (OAUTHBEARER makes its unsecured token from them)
    options: Mapping[str, str] = field(default_factory=dict, repr=False)


@dataclass(frozen=True, slots=True)
class ClientSecurity:
    """The dialling side of a listener: TLS context and hostname check, SASL credentials."""

    protocol: SecurityProtocol = SecurityProtocol.PLAINTEXT
    ssl_context: ssl.SSLContext | None = field(default=None, compare=False)
    sasl: SaslClientConfig | None = None


@dataclass(frozen=True, slots=True)
class ListenerSecurity:
    """How one listener is secured, both sides."""

    listener_name: str
    protocol: SecurityProtocol = SecurityProtocol.PLAINTEXT
    server_ssl: ssl.SSLContext | None = field(default=None, compare=False)
    sasl: SaslServerConfig | None = None
    principal_mapper: PrincipalMapper = PrincipalMapper()
    client: ClientSecurity = ClientSecurity()
    principal_builder: PrincipalBuilder | None = field(default=None, compare=False)

    def principal(self, default: KafkaPrincipal, context: AuthenticationContext) -> KafkaPrincipal:
        """The connection's principal: the builder's when one is configured (ValueError for
        an answer that is not a principal), else ``default``, Kafka's default builder's."""
        if self.principal_builder is None:
            return default
        built = self.principal_builder.build(context)
        return built if isinstance(built, KafkaPrincipal) else KafkaPrincipal.parse(str(built))


# -- reading the configs ---------------------------------------------------------------------


def protocol_map(props: Mapping[str, str]) -> dict[str, SecurityProtocol]:
    """``listener.security.protocol.map`` (Kafka's effectiveListenerSecurityProtocolMap):
    unset, every protocol name maps to itself and controller listeners are PLAINTEXT."""
    key = "listener.security.protocol.map"
    raw = props.get(key, "").strip()
    out: dict[str, SecurityProtocol] = {p.name: p for p in SecurityProtocol}
    if not raw:
        for name in props.get("controller.listener.names", "").split(","):
            if name.strip() and name.strip().upper() not in out:
                out[name.strip().upper()] = SecurityProtocol.PLAINTEXT
        return out
    out = {}
    for item in raw.split(","):
        name, sep, proto = item.strip().partition(":")
        if not sep:
            raise ConfigError(key, f"expected NAME:PROTOCOL, got {item.strip()!r}")
        try:
            protocol = SecurityProtocol[proto.strip().upper()]
        except KeyError:
            raise ConfigError(
                key, f"unknown security protocol {proto.strip()!r} for listener {name}"
            ) from None
        if name.strip().upper() in out:
            raise ConfigError(key, f"listener {name.strip()} appears twice")
        out[name.strip().upper()] = protocol
    return out


class _ListenerProps:
    """Kafka's lookup for one listener: ``listener.name.<l>.K``, then ``K``."""

    def __init__(self, props: Mapping[str, str], listener_name: str) -> None:
        self.props = props
        self.prefix = f"listener.name.{listener_name.lower()}."

    def get(self, key: str, default: str = "") -> str:
        value = self.props.get(self.prefix + key)
        if value is None:
            value = self.props.get(key, default)
        return value.strip()

    def key(self, key: str) -> str:
        """The key a value was read from (for error messages)."""
        return self.prefix + key if self.prefix + key in self.props else key

    def prefixed(self, key: str) -> str:
        return self.props.get(self.prefix + key, "").strip()


_JAAS_ENTRY: Final = re.compile(
    r"^\s*(?P<module>[\w.$]+)\s+(?P<flag>required|requisite|sufficient|optional)\s*"
    r"(?P<options>.*?)\s*;\s*$",
    re.S,
)
_JAAS_OPTION: Final = re.compile(r'\s*([\w.-]+)\s*=\s*(?:"((?:\\.|[^"\\])*)"|([^\s;"]+))')


def jaas_options(key: str, text: str) -> tuple[str, dict[str, str]]:
    """One JAAS login module entry (``Module required k="v" ...;``): its module and options.
    Kafka refuses a config with zero or several modules; so does this."""
    m = _JAAS_ENTRY.match(text)
    if m is None or text.count(";") != 1:
        raise ConfigError(key, 'expected one login module entry: <module> required k="v" ...;')
    options: dict[str, str] = {}
    rest = m.group("options")
    while rest.strip():
        o = _JAAS_OPTION.match(rest)
        if o is None:
            raise ConfigError(key, "a JAAS option is not key=value (values in double quotes)")
        value = o.group(2) if o.group(2) is not None else o.group(3)
        options[o.group(1)] = re.sub(r"\\(.)", r"\1", value)
        rest = rest[o.end() :]
    return m.group("module"), options


def _mechanisms(key: str, raw: str) -> tuple[str, ...]:
    names = tuple(m.strip().upper() for m in raw.split(",") if m.strip())
    for name in names:
        if name not in SUPPORTED_MECHANISMS:
            raise ConfigError(
                key,
                f"SASL mechanism {name} is not supported by pykraft "
                f"(supported: {', '.join(SUPPORTED_MECHANISMS)})",
            )
    return names


def _jaas(lp: _ListenerProps, mechanism: str) -> tuple[str, dict[str, str]] | None:
    key = f"{mechanism.lower()}.sasl.jaas.config"
    text = lp.prefixed(key)
    if not text:
        return None
    return jaas_options(lp.prefix + key, text)


def _reauth_ms(props: Mapping[str, str], lp: _ListenerProps, mechanism: str) -> int:
    """``connections.max.reauth.ms`` for ``mechanism`` on the listener: the mechanism's
    listener prefix first (``listener.name.<l>.<mechanism>.``), then the listener's, then
    the plain key, as Kafka resolves it."""
    key = "connections.max.reauth.ms"
    for name in (f"{lp.prefix}{mechanism.lower()}.{key}", f"{lp.prefix}{key}", key):
        raw = props.get(name, "").strip()
        if raw:
            return _int(name, raw)
    return 0


def _sasl_client(
    key: str, mechanism: str, entry: tuple[str, dict[str, str]] | None, why: str
) -> SaslClientConfig:
    """The dialling side's credentials from its JAAS entry: ``username``/``password``, or
    for OAUTHBEARER the unsecured token's options (checked by making one)."""
    options = entry[1] if entry is not None else {}
    if mechanism == OAUTHBEARER:
        from pykraft.net.oauthbearer import unsecured_token

        if entry is None:
            raise ConfigError(key, f"is required {why}".rstrip())
        try:
            unsecured_token(options, 0)
        except ValueError as e:
            raise ConfigError(key, str(e)) from None
        principal_claim = options.get("unsecuredLoginPrincipalClaimName", "sub") or "sub"
        name = options.get(f"unsecuredLoginStringClaim_{principal_claim}", "")
        return SaslClientConfig(mechanism, name, "", options)
    if entry is None or "username" not in options:
        raise ConfigError(key, f"needs username and password {why}".rstrip())
    return SaslClientConfig(mechanism, options["username"], options.get("password", ""), options)


def _oauth_validator(lp: _ListenerProps) -> UnsecuredValidator:
    """OAUTHBEARER on a listener: Kafka's unsecured validator; a configured server callback
    handler (JWKS-validated tokens) is not offered."""
    handler_key = "oauthbearer.sasl.server.callback.handler.class"
    if lp.prefixed(handler_key):
        raise ConfigError(
            lp.prefix + handler_key,
            "is not supported by pykraft: OAUTHBEARER validates Kafka's unsecured JWS tokens "
            "(OAuthBearerUnsecuredValidatorCallbackHandler) only",
        )
    entry = _jaas(lp, OAUTHBEARER)
    if entry is None:
        raise ConfigError(
            f"{lp.prefix}oauthbearer.sasl.jaas.config",
            "is required with OAUTHBEARER enabled on a SASL listener",
        )
    try:
        return UnsecuredValidator.from_options(entry[1])
    except ValueError as e:
        raise ConfigError(f"{lp.prefix}oauthbearer.sasl.jaas.config", str(e)) from None


def _int(key: str, raw: str, minimum: int = 0) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(key, f"expected an integer, got {raw!r}") from None
    if value < minimum:
        raise ConfigError(key, f"must be at least {minimum}")
    return value


def client_security(props: Mapping[str, str]) -> ClientSecurity:
    """A client's settings (Kafka's client configs, as in a tool's ``--command-config``):
    ``security.protocol``, ``ssl.*``, ``sasl.mechanism`` and ``sasl.jaas.config``."""
    from pykraft.net import tls

    key = "security.protocol"
    raw = props.get(key, "PLAINTEXT").strip().upper()
    try:
        protocol = SecurityProtocol[raw]
    except KeyError:
        raise ConfigError(key, f"unknown security protocol {raw}") from None

    def get(name: str, default: str = "") -> str:
        return props.get(name, default).strip()

    context = (
        tls.client_context(tls.TlsSettings.read(get, lambda k: k)) if protocol.uses_tls else None
    )
    sasl: SaslClientConfig | None = None
    if protocol.uses_sasl:
        mechanism = get("sasl.mechanism", "GSSAPI").upper()
        _mechanisms("sasl.mechanism", mechanism)
        text = get("sasl.jaas.config")
        if not text:
            raise ConfigError("sasl.jaas.config", "is required with a SASL security.protocol")
        entry = jaas_options("sasl.jaas.config", text)
        sasl = _sasl_client("sasl.jaas.config", mechanism, entry, "")
    return ClientSecurity(protocol, context, sasl)


def _sasl_server(props: Mapping[str, str], lp: _ListenerProps) -> SaslServerConfig:
    """The listener's SASL server side: its mechanisms, PLAIN's JAAS users, OAUTHBEARER's
    validator, re-authentication and frame limits."""
    enabled_key = "sasl.enabled.mechanisms"
    mechanisms = _mechanisms(lp.key(enabled_key), lp.get(enabled_key, "GSSAPI"))
    if not mechanisms:
        raise ConfigError(lp.key(enabled_key), "no SASL mechanism is enabled")
    plain_users: dict[str, str] = {}
    if PLAIN in mechanisms:
        entry = _jaas(lp, PLAIN)
        if entry is None:
            raise ConfigError(
                f"{lp.prefix}plain.sasl.jaas.config",
                "is required with PLAIN enabled on a SASL listener",
            )
        plain_users = {k[len("user_") :]: v for k, v in entry[1].items() if k.startswith("user_")}
    return SaslServerConfig(
        mechanisms,
        plain_users,
        oauth_validator=_oauth_validator(lp) if OAUTHBEARER in mechanisms else None,
        reauth_ms={m: _reauth_ms(props, lp, m) for m in mechanisms},
        max_receive_size=_int(
            "sasl.server.max.receive.size", lp.get("sasl.server.max.receive.size", "524288"), 1
        ),
        failed_delay_ms=_int(
            "connection.failed.authentication.delay.ms",
            props.get("connection.failed.authentication.delay.ms", "100"),
        ),
    )


def listener_security(
    props: Mapping[str, str], listener_name: str, *, server: bool
) -> ListenerSecurity:
    """The security of ``listener_name`` from Kafka's configs. ``server``: this node listens
    on it (its keystore and SASL server settings are required); the client side (how this
    node dials it) is read either way."""
    from pykraft.net import tls  # the TLS contexts (cryptography only when TLS is used)

    protocols = protocol_map(props)
    protocol = protocols.get(listener_name.upper())
    if protocol is None:
        try:
            protocol = SecurityProtocol[listener_name.upper()]
        except KeyError:
            raise ConfigError(
                "listener.security.protocol.map", f"has no entry for listener {listener_name}"
            ) from None
    lp = _ListenerProps(props, listener_name)
    server_ssl = client_ssl = None
    if protocol.uses_tls:
        settings = tls.TlsSettings.read(lp.get, lp.key)
        if server:
            server_ssl = tls.server_context(settings)
        client_ssl = tls.client_context(settings)
    sasl_server: SaslServerConfig | None = None
    sasl_client: SaslClientConfig | None = None
    if protocol.uses_sasl:
        if server:
            sasl_server = _sasl_server(props, lp)
        mech_key = "sasl.mechanism.controller.protocol"
        mechanism = props.get(mech_key, "GSSAPI").strip().upper()
        _mechanisms(mech_key, mechanism)
        # Controllers dial each other and themselves (registration) on this listener.
        sasl_client = _sasl_client(
            f"{lp.prefix}{mechanism.lower()}.sasl.jaas.config",
            mechanism,
            _jaas(lp, mechanism),
            f"for {mech_key}={mechanism}: this node dials the listener",
        )
    rules = lp.get("ssl.principal.mapping.rules", "DEFAULT")
    return ListenerSecurity(
        listener_name,
        protocol,
        server_ssl,
        sasl_server,
        PrincipalMapper.parse(rules),
        ClientSecurity(protocol, client_ssl, sasl_client),
    )
