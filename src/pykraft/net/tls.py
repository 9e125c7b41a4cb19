"""TLS contexts from Kafka's ``ssl.*`` configs (docs/kafka/SECURITY-CONTRACT.md 1.5): key
stores and trust stores as PEM (files or inline), PKCS12 and JKS, Kafka's default type.

Theory of operation. :meth:`TlsSettings.read` collects a listener's ``ssl.*`` values (with
Kafka's prefix rules, through the getter ``net/security.py`` passes) and checks the pairings
Kafka checks at start-up (a location needs its password; PEM takes no store password).
:func:`server_context` and :func:`client_context` build the standard library's
``ssl.SSLContext`` from them; stores are decoded with ``cryptography`` (PEM, PKCS12) and
``pyjks`` (JKS). Python's ``ssl`` loads a private key only from a file, so the decoded key
is written re-encrypted with a one-time password to a private temporary file that is
removed as soon as it is loaded: no key lies on disk in the clear.

The subject of a peer certificate, in the RFC 2253 form Kafka's principal builder gives
(most specific first, ``CN=broker1,OU=eng,O=acme,C=US``), is :func:`peer_subject`.
"""

from __future__ import annotations

import os
import secrets
import ssl
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from pykraft.net.errors import SecurityConfigError as ConfigError

__all__ = ["TlsSettings", "client_context", "peer_subject", "server_context"]

_PROTOCOLS: Final = {
    "TLSV1.2": ssl.TLSVersion.TLSv1_2,
    "TLSV1.3": ssl.TLSVersion.TLSv1_3,
}
_CLIENT_AUTH: Final = {
    "none": ssl.CERT_NONE,
    "requested": ssl.CERT_OPTIONAL,
    "required": ssl.CERT_REQUIRED,
}


@dataclass(frozen=True, slots=True)
class TlsSettings:
    """A listener's ``ssl.*`` configs; ``keys`` names where each came from (for errors)."""

    keystore_type: str = "JKS"
    keystore_location: str = ""
    keystore_password: str = field(default="", repr=False)
    key_password: str = field(default="", repr=False)
    keystore_key: str = field(default="", repr=False)
    keystore_chain: str = ""
    truststore_type: str = "JKS"
    truststore_location: str = ""
    truststore_password: str = field(default="", repr=False)
    truststore_certificates: str = ""
    client_auth: str = "none"
    endpoint_identification: str = "https"
    enabled_protocols: tuple[str, ...] = ("TLSv1.2", "TLSv1.3")
    cipher_suites: tuple[str, ...] = ()
    key_of: Callable[[str], str] = field(default=lambda k: k, repr=False, compare=False)

    @classmethod
    def read(cls, get: Callable[..., str], key_of: Callable[[str], str]) -> TlsSettings:
        s = cls(
            keystore_type=get("ssl.keystore.type", "JKS").upper(),
            keystore_location=get("ssl.keystore.location"),
            keystore_password=get("ssl.keystore.password"),
            key_password=get("ssl.key.password"),
            keystore_key=get("ssl.keystore.key"),
            keystore_chain=get("ssl.keystore.certificate.chain"),
            truststore_type=get("ssl.truststore.type", "JKS").upper(),
            truststore_location=get("ssl.truststore.location"),
            truststore_password=get("ssl.truststore.password"),
            truststore_certificates=get("ssl.truststore.certificates"),
            client_auth=get("ssl.client.auth", "none").lower(),
            endpoint_identification=get("ssl.endpoint.identification.algorithm", "https"),
            enabled_protocols=tuple(
                p.strip() for p in get("ssl.enabled.protocols", "TLSv1.2,TLSv1.3").split(",")
            ),
            cipher_suites=tuple(c.strip() for c in get("ssl.cipher.suites").split(",") if c),
            key_of=key_of,
        )
        s._check()
        return s

    def _check(self) -> None:
        k = self.key_of
        for kind, key in (
            (self.keystore_type, "ssl.keystore.type"),
            (self.truststore_type, "ssl.truststore.type"),
        ):
            if kind not in ("JKS", "PKCS12", "PEM"):
                raise ConfigError(k(key), f"unknown store type {kind} (JKS, PKCS12, PEM)")
        if self.client_auth not in _CLIENT_AUTH:
            raise ConfigError(k("ssl.client.auth"), "must be none, requested or required")
        for p in self.enabled_protocols:
            if p.upper() not in _PROTOCOLS:
                raise ConfigError(k("ssl.enabled.protocols"), f"{p} is not supported")
        if self.keystore_key or self.keystore_chain:
            if self.keystore_type != "PEM":
                raise ConfigError(k("ssl.keystore.key"), "needs ssl.keystore.type=PEM")
            if not (self.keystore_key and self.keystore_chain):
                raise ConfigError(
                    k("ssl.keystore.key"),
                    "ssl.keystore.key and ssl.keystore.certificate.chain go together",
                )
            if self.keystore_location:
                raise ConfigError(k("ssl.keystore.location"), "not with ssl.keystore.key")
        if self.keystore_type == "PEM" and self.keystore_password:
            raise ConfigError(k("ssl.keystore.password"), "is not used with PEM key stores")
        if self.keystore_type != "PEM" and bool(self.keystore_location) != bool(
            self.keystore_password
        ):
            raise ConfigError(
                k("ssl.keystore.password"),
                "ssl.keystore.location and ssl.keystore.password go together",
            )
        if self.truststore_type == "PEM" and self.truststore_password:
            raise ConfigError(k("ssl.truststore.password"), "is not used with PEM trust stores")

    @property
    def has_keystore(self) -> bool:
        return bool(self.keystore_location or self.keystore_key)

    @property
    def has_truststore(self) -> bool:
        return bool(self.truststore_location or self.truststore_certificates)


# -- stores --------------------------------------------------------------------------------


def _read(key: str, location: str) -> bytes:
    try:
        return Path(location).read_bytes()
    except OSError as e:
        raise ConfigError(key, f"cannot read {location}: {e.strerror}") from None


def _key_and_chain(s: TlsSettings) -> tuple[object, list[object]]:
    """The private key and certificate chain of the key store (cryptography objects)."""
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import load_pem_private_key, pkcs12

    key_name = s.key_of("ssl.keystore.location")
    password = (s.key_password or s.keystore_password).encode() or None
    if s.keystore_type == "PEM":
        if s.keystore_key:
            key_pem, chain_pem = s.keystore_key.encode(), s.keystore_chain.encode()
            key_name = s.key_of("ssl.keystore.key")
        else:
            key_pem = chain_pem = _read(key_name, s.keystore_location)
        blocks = key_pem.count(b"PRIVATE KEY-----") // 2
        if blocks != 1:
            raise ConfigError(key_name, f"Expected one private key, but found {blocks}")
        if b"-----BEGIN RSA PRIVATE KEY" in key_pem or b"-----BEGIN EC PRIVATE KEY" in key_pem:
            raise ConfigError(key_name, "Private key could not be loaded: PKCS#8 keys only")
        try:
            key = load_pem_private_key(key_pem, password=s.key_password.encode() or None)
            chain = x509.load_pem_x509_certificates(chain_pem)
        except (ValueError, TypeError) as e:
            raise ConfigError(key_name, f"Private key could not be loaded: {e}") from None
        return key, list(chain)
    data = _read(key_name, s.keystore_location)
    if s.keystore_type == "PKCS12":
        try:
            p12 = pkcs12.load_pkcs12(data, s.keystore_password.encode())
        except ValueError as e:
            raise ConfigError(key_name, f"cannot read the PKCS12 key store: {e}") from None
        if p12.key is None or p12.cert is None:
            raise ConfigError(key_name, "the PKCS12 key store holds no private key entry")
        return p12.key, [p12.cert.certificate, *(c.certificate for c in p12.additional_certs)]
    return _jks_key_and_chain(key_name, data, s.keystore_password, password)


def _jks_key_and_chain(
    key_name: str, data: bytes, store_password: str, key_password: bytes | None
) -> tuple[object, list[object]]:
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import load_der_private_key

    store = _jks_load(key_name, data, store_password)
    entries = list(store.private_keys.values())
    if len(entries) != 1:
        raise ConfigError(key_name, f"Expected one private key, but found {len(entries)}")
    entry = entries[0]
    if not entry.is_decrypted():
        entry.decrypt((key_password or b"").decode())
    key = load_der_private_key(entry.pkey_pkcs8, password=None)
    return key, [x509.load_der_x509_certificate(der) for _, der in entry.cert_chain]


def _jks_load(key_name: str, data: bytes, password: str):  # type: ignore[no-untyped-def]
    try:
        import jks  # pyjks
    except ImportError:  # pragma: no cover - a dependency
        raise ConfigError(
            key_name,
            "JKS stores need pyjks; or convert: keytool -importkeystore -deststoretype PKCS12",
        ) from None
    try:
        return jks.KeyStore.loads(data, password)
    except Exception as e:  # pyjks raises its own types and struct errors for bad input
        raise ConfigError(key_name, f"cannot read the JKS store: {type(e).__name__}: {e}") from None


def _trusted_pem(s: TlsSettings) -> str:
    """Every trusted certificate as PEM text (for ``load_verify_locations(cadata=)``)."""
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import Encoding, pkcs12

    key_name = s.key_of("ssl.truststore.location")
    if s.truststore_certificates:
        return s.truststore_certificates
    data = _read(key_name, s.truststore_location)
    if s.truststore_type == "PEM":
        certs = x509.load_pem_x509_certificates(data)
    elif s.truststore_type == "PKCS12":
        try:
            p12 = pkcs12.load_pkcs12(data, s.truststore_password.encode() or None)
        except ValueError as e:
            raise ConfigError(key_name, f"cannot read the PKCS12 trust store: {e}") from None
        certs = [c.certificate for c in p12.additional_certs]
        if p12.cert is not None:
            certs.append(p12.cert.certificate)
    else:
        store = _jks_load(key_name, data, s.truststore_password)
        certs = [x509.load_der_x509_certificate(c.cert) for c in store.certs.values()]
    if not certs:
        raise ConfigError(key_name, "the trust store holds no certificate")
    return "".join(c.public_bytes(Encoding.PEM).decode() for c in certs)


def _load_key_store(ctx: ssl.SSLContext, s: TlsSettings) -> None:
    from cryptography.hazmat.primitives.serialization import (
        BestAvailableEncryption,
        Encoding,
        PrivateFormat,
    )

    key, chain = _key_and_chain(s)
    once = secrets.token_urlsafe(24).encode()
    pem = key.private_bytes(  # type: ignore[attr-defined]
        Encoding.PEM, PrivateFormat.PKCS8, BestAvailableEncryption(once)
    ) + b"".join(c.public_bytes(Encoding.PEM) for c in chain)  # type: ignore[attr-defined]
    with tempfile.TemporaryDirectory(prefix="pykraft-tls-") as tmp:
        path = os.path.join(tmp, "keystore.pem")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
        try:
            ctx.load_cert_chain(path, password=once)
        except ssl.SSLError as e:
            raise ConfigError(
                s.key_of("ssl.keystore.location"), f"the key does not fit its certificate: {e}"
            ) from None


def _base(ctx: ssl.SSLContext, s: TlsSettings) -> ssl.SSLContext:
    versions = sorted(_PROTOCOLS[p.upper()] for p in s.enabled_protocols)
    ctx.minimum_version, ctx.maximum_version = versions[0], versions[-1]
    if s.cipher_suites:
        try:
            ctx.set_ciphers(":".join(s.cipher_suites))
        except ssl.SSLError:
            raise ConfigError(
                s.key_of("ssl.cipher.suites"),
                "OpenSSL knows none of these cipher suites (give OpenSSL names)",
            ) from None
    if s.has_truststore:
        try:
            ctx.load_verify_locations(cadata=_trusted_pem(s))
        except ssl.SSLError as e:
            raise ConfigError(s.key_of("ssl.truststore.location"), str(e)) from None
    return ctx


def server_context(s: TlsSettings) -> ssl.SSLContext:
    """The listening side: the key store is required; ``ssl.client.auth`` asks for (or
    requires) a client certificate checked against the trust store."""
    if not s.has_keystore:
        raise ConfigError(s.key_of("ssl.keystore.location"), "is required on a TLS listener")
    ctx = _base(ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER), s)
    _load_key_store(ctx, s)
    ctx.verify_mode = _CLIENT_AUTH[s.client_auth]
    if ctx.verify_mode != ssl.CERT_NONE and not s.has_truststore:
        ctx.load_default_certs(ssl.Purpose.CLIENT_AUTH)
    return ctx


def client_context(s: TlsSettings) -> ssl.SSLContext:
    """The dialling side: the server's certificate checked against the trust store (the
    system's when none is set, as Java's default trust); its host name checked unless
    ``ssl.endpoint.identification.algorithm`` is empty; the key store sent if asked."""
    ctx = _base(ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT), s)
    if not s.has_truststore:
        ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
    ctx.check_hostname = s.endpoint_identification.lower() == "https"
    ctx.verify_mode = ssl.CERT_REQUIRED
    if s.has_keystore:
        _load_key_store(ctx, s)
    return ctx


def peer_subject(ssl_object: ssl.SSLObject | ssl.SSLSocket | None) -> str | None:
    """The peer certificate's subject DN (RFC 2253 order), or None without one."""
    if ssl_object is None:
        return None
    der = ssl_object.getpeercert(binary_form=True)
    if not der:
        return None
    from cryptography import x509

    return x509.load_der_x509_certificate(der).subject.rfc4514_string()
